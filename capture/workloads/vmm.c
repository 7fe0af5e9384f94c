// SPDX-License-Identifier: GPL-2.0
/*
 * vmm.c - a minimal raw-KVM VMM shared by the lab workloads (see vmm.h).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vmm.h"

/* Marker syscalls: ioctl(-1, MARK_CMD | id) is traced (syscall_entry_ioctl
 * with fd = -1) and fails with EBADF without side effects.
 */
#define MARK_CMD	0x4d520000u

void die(const char *fmt, ...)
{
	int err = errno;
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "FATAL: ");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (err)
		fprintf(stderr, " (%s)", strerror(err));
	fputc('\n', stderr);
	exit(1);
}

void *xmmap_aligned(size_t size, size_t align)
{
	uint8_t *p, *a;
	size_t lead, tail;

	/*
	 * Also align to the size rounded up to a power of two (up to 1 GiB)
	 * so that the range never crosses a 1 GiB (PUD) boundary: mprotect()
	 * or UFFDIO_WRITEPROTECT of a range that does issues one
	 * mmu_notifier invalidation per PUD, and the event counts would
	 * depend on ASLR.
	 */
	while (align < size && align < (1ul << 30))
		align <<= 1;

	p = mmap(NULL, size + align, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	if (p == MAP_FAILED)
		die("mmap %zu bytes", size);
	a = (uint8_t *)(((uintptr_t)p + align - 1) & ~(uintptr_t)(align - 1));
	lead = a - p;
	tail = align - lead;
	if (lead)
		munmap(p, lead);
	if (tail)
		munmap(a + size, tail);
	return a;
}

double now_mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* MADV_COLLAPSE (Linux 6.1): Debian 12's C library headers lack it. */
#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE	25
#endif

static int opt_mergeable, opt_hugepage_late, opt_collapse;

int vmm_mem_opt(const char *arg)
{
	if (!strcmp(arg, "--mergeable"))
		opt_mergeable = 1;
	else if (!strcmp(arg, "--hugepage-late"))
		opt_hugepage_late = 1;
	else if (!strcmp(arg, "--collapse"))
		opt_hugepage_late = opt_collapse = 1;
	else
		return 0;
	return 1;
}

void vmm_mem_advise(void *mem, size_t size)
{
	if (opt_hugepage_late && madvise(mem, size, MADV_NOHUGEPAGE))
		die("madvise NOHUGEPAGE (--hugepage-late)");
	if (opt_mergeable && madvise(mem, size, MADV_MERGEABLE))
		die("madvise MERGEABLE");
}

void vmm_mem_late(void *mem, size_t size)
{
	if (!opt_hugepage_late)
		return;
	mark(9, "VMM MADV_HUGEPAGE_LATE");
	if (madvise(mem, size, MADV_HUGEPAGE))
		die("madvise HUGEPAGE (--hugepage-late)");
	if (!opt_collapse)
		return;
	/* Best effort, as a VMM would: a region whose pages cannot be
	 * isolated stays 4 KiB (EAGAIN, ENOMEM), the rest collapses. */
	mark(10, "VMM MADV_COLLAPSE");
	if (madvise(mem, size, MADV_COLLAPSE))
		printf("  MADV_COLLAPSE: %s (some regions stay 4 KiB)\n",
		       strerror(errno));
	else
		printf("  MADV_COLLAPSE: every region collapsed\n");
}

const char *vmm_mem_desc(void)
{
	static char buf[64];

	snprintf(buf, sizeof(buf), "mergeable=%d hugepage_late=%d collapse=%d",
		 opt_mergeable, opt_hugepage_late, opt_collapse);
	return buf;
}

void mark(unsigned int id, const char *fmt, ...)
{
	va_list ap;

	printf("[%.3f] MARK ", now_mono());
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf(" (marker ioctl cmd=0x%08x)\n", MARK_CMD | id);
	fflush(stdout);
	errno = 0;
	ioctl(-1, MARK_CMD | id, 0);
}

static void set_seg(struct kvm_segment *s, uint16_t sel, uint8_t type)
{
	memset(s, 0, sizeof(*s));
	s->base = 0;
	s->limit = 0xffffffff;
	s->selector = sel;
	s->type = type;
	s->present = 1;
	s->dpl = 0;
	s->db = 1;
	s->s = 1;
	s->l = 0;
	s->g = 1;
}

void vm_create(struct vm *vm, void *mem, uint64_t mem_size)
{
	struct kvm_userspace_memory_region region;
	struct kvm_sregs sregs;
	int ret;

	memset(vm, 0, sizeof(*vm));
	vm->mem = mem;
	vm->mem_size = mem_size;

	vm->kvm_fd = open("/dev/kvm", O_RDWR | O_CLOEXEC);
	if (vm->kvm_fd < 0)
		die("open /dev/kvm");
	ret = ioctl(vm->kvm_fd, KVM_GET_API_VERSION, 0);
	if (ret != KVM_API_VERSION)
		die("KVM_GET_API_VERSION %d", ret);
	vm->vm_fd = ioctl(vm->kvm_fd, KVM_CREATE_VM, 0);
	if (vm->vm_fd < 0)
		die("KVM_CREATE_VM");

	memset(&region, 0, sizeof(region));
	region.slot = 0;
	region.flags = 0;
	region.guest_phys_addr = 0;
	region.memory_size = mem_size;
	region.userspace_addr = (uintptr_t)mem;
	if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		die("KVM_SET_USER_MEMORY_REGION");

	vm->vcpu_fd = ioctl(vm->vm_fd, KVM_CREATE_VCPU, 0);
	if (vm->vcpu_fd < 0)
		die("KVM_CREATE_VCPU");
	ret = ioctl(vm->kvm_fd, KVM_GET_VCPU_MMAP_SIZE, 0);
	if (ret <= 0)
		die("KVM_GET_VCPU_MMAP_SIZE");
	vm->run_size = ret;
	vm->run = mmap(NULL, vm->run_size, PROT_READ | PROT_WRITE, MAP_SHARED,
		       vm->vcpu_fd, 0);
	if (vm->run == MAP_FAILED)
		die("mmap kvm_run");

	if (ioctl(vm->vcpu_fd, KVM_GET_SREGS, &sregs) < 0)
		die("KVM_GET_SREGS");
	set_seg(&sregs.cs, 0x08, 0xb);	/* code, execute/read, accessed */
	set_seg(&sregs.ds, 0x10, 0x3);	/* data, read/write, accessed */
	sregs.es = sregs.ds;
	sregs.fs = sregs.ds;
	sregs.gs = sregs.ds;
	sregs.ss = sregs.ds;
	sregs.cr0 = 0x11;		/* PE | ET, no paging */
	sregs.cr4 = 0;
	sregs.efer = 0;
	if (ioctl(vm->vcpu_fd, KVM_SET_SREGS, &sregs) < 0)
		die("KVM_SET_SREGS");
}

void vm_load_code(struct vm *vm, const struct guest_code *code)
{
	size_t len = code->end - code->start;

	if (len > 0x1000)
		die("guest code too large: %zu bytes", len);
	memcpy((uint8_t *)vm->mem + GUEST_CODE_GPA, code->start, len);
}

void vm_set_regs(struct vm *vm, const struct vm_regs *r)
{
	struct kvm_regs regs;

	memset(&regs, 0, sizeof(regs));
	regs.rflags = 0x2;
	regs.rip = r->eip;
	regs.rsp = r->esp;
	regs.rax = r->eax;
	regs.rbx = r->ebx;
	regs.rcx = r->ecx;
	regs.rdx = r->edx;
	regs.rsi = r->esi;
	regs.rdi = r->edi;
	regs.rbp = r->ebp;
	if (ioctl(vm->vcpu_fd, KVM_SET_REGS, &regs) < 0)
		die("KVM_SET_REGS");
}

void vm_get_regs(struct vm *vm, struct kvm_regs *regs)
{
	if (ioctl(vm->vcpu_fd, KVM_GET_REGS, regs) < 0)
		die("KVM_GET_REGS");
}

void vm_set_dirty_logging(struct vm *vm, int on)
{
	struct kvm_userspace_memory_region region;

	memset(&region, 0, sizeof(region));
	region.slot = 0;
	region.flags = on ? KVM_MEM_LOG_DIRTY_PAGES : 0;
	region.guest_phys_addr = 0;
	region.memory_size = vm->mem_size;
	region.userspace_addr = (uintptr_t)vm->mem;
	if (ioctl(vm->vm_fd, KVM_SET_USER_MEMORY_REGION, &region) < 0)
		die("KVM_SET_USER_MEMORY_REGION flags=%u", region.flags);
	vm->slot_flags = region.flags;
}

uint64_t vm_get_dirty_log(struct vm *vm)
{
	struct kvm_dirty_log log;
	uint64_t npages = vm->mem_size / 4096, n = 0, i;
	uint64_t *bitmap;

	bitmap = calloc((npages + 63) / 64, sizeof(uint64_t));
	if (!bitmap)
		die("calloc");
	memset(&log, 0, sizeof(log));
	log.slot = 0;
	log.dirty_bitmap = bitmap;
	if (ioctl(vm->vm_fd, KVM_GET_DIRTY_LOG, &log) < 0)
		die("KVM_GET_DIRTY_LOG");
	for (i = 0; i < (npages + 63) / 64; i++)
		n += __builtin_popcountll(bitmap[i]);
	free(bitmap);
	return n;
}

int vm_run(struct vm *vm)
{
	struct kvm_regs regs;

	for (;;) {
		if (ioctl(vm->vcpu_fd, KVM_RUN, 0) < 0) {
			if (errno == EINTR || errno == EAGAIN)
				return -1;
			die("KVM_RUN");
		}
		switch (vm->run->exit_reason) {
		case KVM_EXIT_IO:
			if (vm->run->io.direction != KVM_EXIT_IO_OUT)
				die("guest did 'in' on port 0x%x", vm->run->io.port);
			return vm->run->io.port;
		case KVM_EXIT_INTR:
			return -1;
		case KVM_EXIT_HLT:
			die("guest halted");
		case KVM_EXIT_FAIL_ENTRY:
			die("KVM_EXIT_FAIL_ENTRY reason 0x%llx",
			    (unsigned long long)vm->run->fail_entry.hardware_entry_failure_reason);
		case KVM_EXIT_SHUTDOWN:
			vm_get_regs(vm, &regs);
			die("guest shutdown (triple fault) at rip 0x%llx",
			    (unsigned long long)regs.rip);
		default:
			vm_get_regs(vm, &regs);
			die("unexpected exit reason %u at rip 0x%llx",
			    vm->run->exit_reason, (unsigned long long)regs.rip);
		}
	}
}

uint32_t vm_io_value(struct vm *vm)
{
	const uint8_t *p = (const uint8_t *)vm->run + vm->run->io.data_offset;
	uint32_t v = 0;

	memcpy(&v, p, vm->run->io.size < 4 ? vm->run->io.size : 4);
	return v;
}

void vm_destroy(struct vm *vm)
{
	/* No munmap of kvm_run: every munmap is an mmu_notifier invalidation
	 * (a kvm_unmap_hva_range event); process exit tears it down instead.
	 */
	close(vm->vcpu_fd);
	close(vm->vm_fd);
	close(vm->kvm_fd);
}

const char *vm_debugfs_dir(struct vm *vm)
{
	static char path[128];

	snprintf(path, sizeof(path), "/sys/kernel/debug/kvm/%d-%d", getpid(), vm->vm_fd);
	if (access(path, R_OK) != 0)
		return "";
	return path;
}

long long vm_stat(struct vm *vm, const char *name)
{
	char path[256];
	long long v = -1;
	const char *dir = vm_debugfs_dir(vm);
	FILE *f;

	if (!*dir)
		return -1;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%lld", &v) != 1)
		v = -1;
	fclose(f);
	return v;
}
