/* SPDX-License-Identifier: GPL-2.0 */
/*
 * vmm.h - a minimal raw-KVM VMM shared by the lab workloads.
 *
 * One VM, one memory slot at guest physical 0 backed by caller-provided
 * host memory, one vCPU in flat 32-bit protected mode (no paging), code
 * copied into guest memory by the caller.  Guests talk to the host with
 * `out` to a port (KVM_EXIT_IO); the port number says what happened.
 */
#ifndef MMUREPLAY_VMM_H
#define MMUREPLAY_VMM_H

#include <stddef.h>
#include <stdint.h>
#include <linux/kvm.h>

struct vm {
	int kvm_fd;
	int vm_fd;
	int vcpu_fd;
	struct kvm_run *run;
	size_t run_size;
	void *mem;
	uint64_t mem_size;
	uint32_t slot_flags;
};

/* Guest registers set before the first KVM_RUN. */
struct vm_regs {
	uint32_t eip;
	uint32_t esp;
	uint32_t eax, ebx, ecx, edx, esi, edi, ebp;
};

/* Guest code lives in a .rodata blob between two labels (see GUEST_CODE). */
struct guest_code {
	const uint8_t *start;
	const uint8_t *end;
};

/*
 * GUEST_CODE(name, "asm") emits 32-bit code between name##_start and
 * name##_end; it must be position independent (relative jumps only) since
 * it is copied to GUEST_CODE_GPA.
 */
#define GUEST_CODE(name, body)						\
	extern const uint8_t name##_start[], name##_end[];		\
	__asm__(".pushsection .rodata\n"				\
		".balign 16\n"						\
		#name "_start:\n"					\
		".code32\n"						\
		body							\
		".code64\n"						\
		#name "_end:\n"						\
		".popsection\n")

#define GUEST_CODE_GPA	0x1000u		/* code page */
#define GUEST_STACK_TOP	0x1000u		/* stack grows down in page 0 */
#define GUEST_MBOX_GPA	0x2000u		/* host <-> guest words */

/* I/O ports used by the guests. */
#define PORT_PASS	0x10	/* one pass over the data done */
#define PORT_PHASE	0x11	/* guest phase change (eax = phase) */
#define PORT_SAMPLE	0x12	/* latency sample: eax = tsc delta, ebx = page */

void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* Anonymous private mapping aligned to align and to the next power of two
 * of size (up to 1 GiB), so that it never crosses a 1 GiB boundary.
 */
void *xmmap_aligned(size_t size, size_t align);
double now_mono(void);
/*
 * Guest RAM options every workload takes (the lab's host memory
 * management runs, capture/lab/run.sh --ksm, --khugepaged):
 *   --mergeable       MADV_MERGEABLE on guest RAM: KSM (ksmd) may merge
 *                     its identical pages while the guest runs
 *   --hugepage-late   guest RAM first MADV_NOHUGEPAGE (filled as 4 KiB
 *                     pages), then MADV_HUGEPAGE once the guest runs:
 *                     khugepaged collapses it under the running VM
 *                     (workloads that allow THP: basic, nxrecovery)
 *   --collapse        as --hugepage-late, then MADV_COLLAPSE of the whole
 *                     of guest RAM at that point, in the calling thread:
 *                     the process collapses its own 4 KiB pages into
 *                     THPs under the running VM (Linux 6.1 and later)
 * vmm_mem_opt(arg) says whether arg is one of them (and takes it);
 * vmm_mem_advise() applies them to guest RAM right after the
 * workload's own madvise, vmm_mem_late() makes it MADV_HUGEPAGE under
 * --hugepage-late and --collapse (and collapses it under --collapse; a
 * no-op otherwise).
 */
#define VMM_MEM_USAGE	"[--mergeable] [--hugepage-late] [--collapse]"
int vmm_mem_opt(const char *arg);
void vmm_mem_advise(void *mem, size_t size);
void vmm_mem_late(void *mem, size_t size);
/* The options taken, for the workload's first line ("mergeable=0 ..."). */
const char *vmm_mem_desc(void);
/* Print "[mono] MARK <what>" and issue a traced marker syscall. */
void mark(unsigned int id, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void vm_create(struct vm *vm, void *mem, uint64_t mem_size);
void vm_load_code(struct vm *vm, const struct guest_code *code);
void vm_set_regs(struct vm *vm, const struct vm_regs *r);
void vm_get_regs(struct vm *vm, struct kvm_regs *regs);
void vm_set_dirty_logging(struct vm *vm, int on);
/* KVM_GET_DIRTY_LOG of slot 0; returns the number of dirty pages. */
uint64_t vm_get_dirty_log(struct vm *vm);
/*
 * Run until the guest does `out` (returns the port) or KVM_RUN is
 * interrupted by a signal (returns -1).  Any other exit is fatal.
 */
int vm_run(struct vm *vm);
/* Value the guest wrote with `out` (al/ax/eax). */
uint32_t vm_io_value(struct vm *vm);
void vm_destroy(struct vm *vm);

/* Path of this VM's KVM debugfs directory ("" if not found). */
const char *vm_debugfs_dir(struct vm *vm);
/* Read a KVM debugfs stat of this VM (-1 if unavailable). */
long long vm_stat(struct vm *vm, const char *name);

#endif /* MMUREPLAY_VMM_H */
