// SPDX-License-Identifier: GPL-2.0
/*
 * nxrecovery - NX huge page splits and their recovery.
 *
 * Guest RAM is THP-backed (MADV_HUGEPAGE, 2 MiB aligned) and filled with
 * `ret` (0xc3): NREGIONS regions of 2 MiB.  The guest first reads one byte
 * of each region (2 MiB mappings, non-executable when
 * kvm.nx_huge_pages=force), then loops calling into regions 1..EXEC: each
 * exec fault splits the NX huge page, and the recovery worker
 * (kvm-nx-lpage-re) zaps ratio-sized batches every period; the guest
 * refaults them.  Phases (host side, the vCPU runs in its own thread):
 *
 *   plain     N seconds
 *   dirty     N seconds with dirty logging on the memory slot
 *   off       KVM_GET_DIRTY_LOG, then dirty logging off
 *   after     N seconds more (--after): the exec faults after the
 *             collapse of the tables dirty logging left split are NX
 *             splits again, which the worker recovers
 *
 * Usage: nxrecovery [--mem MiB] [--exec N] [--plain S] [--dirty S] [--after S]
 *                   [--no-readfirst] [--mergeable] [--hugepage-late] [--collapse]
 *   --mem MiB        guest RAM, multiple of 2 (default 128 = 64 regions)
 *   --exec N         call into regions 1..N (default 47)
 *   --plain S        seconds of the plain phase (default 8)
 *   --dirty S        seconds with dirty logging on (default 8; 0 skips it)
 *   --after S        seconds after dirty logging stops (default 0)
 *   --no-readfirst   do not read every region before executing
 *   --mergeable, --hugepage-late, --collapse  guest RAM options (vmm.h);
 *                    with --hugepage-late RAM is MADV_HUGEPAGE only after
 *                    the read phase (and --collapse collapses it then)
 *
 * Output: phase markers "[monotonic s] MARK NX ..." (plus marker syscalls
 * ioctl(-1, 0x4d52NNNN)), one line per second with the guest pass count
 * and the VM's nx_lpage_splits / pages_4k / pages_2m (KVM debugfs), and
 * an NX RESULT line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "vmm.h"

#define MiB		(1024ull * 1024)
#define REGION		(2 * MiB)

/*
 * esp = stack, ecx = regions, ebp = last exec region + 1, edi = read first.
 * The pass counter is the dword at GUEST_MBOX_GPA.
 */
GUEST_CODE(guest_nx,
	"	test %edi, %edi\n"
	"	jz 3f\n"
	"	xor %ebx, %ebx\n"
	"1:	mov %ebx, %eax\n"
	"	shl $21, %eax\n"
	"	movzbl (%eax), %eax\n"
	"	inc %ebx\n"
	"	cmp %ecx, %ebx\n"
	"	jb 1b\n"
	"	mov $1, %eax\n"
	"	out %eax, $0x11\n"
	"3:	mov $1, %ebx\n"
	"4:	mov %ebx, %eax\n"
	"	shl $21, %eax\n"
	"	call *%eax\n"
	"	inc %ebx\n"
	"	cmp %ebp, %ebx\n"
	"	jb 4b\n"
	"	addl $1, 0x2000\n"
	"	jmp 3b\n");

static struct vm vm;
static uint8_t *mem;
static volatile int stop_vcpu, read_done;
static double t0;

static void on_sigusr1(int sig)
{
	(void)sig;
}

static void *vcpu_thread(void *arg)
{
	int port;

	(void)arg;
	while (!stop_vcpu) {
		port = vm_run(&vm);
		if (port == PORT_PHASE) {
			mark(2, "NX READ_PHASE_DONE");
			read_done = 1;
		} else if (port != -1) {
			die("unexpected exit (port %d)", port);
		}
	}
	return NULL;
}

static uint32_t passes(void)
{
	return __atomic_load_n((uint32_t *)(mem + GUEST_MBOX_GPA), __ATOMIC_RELAXED);
}

static long anon_huge_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/smaps_rollup", "r");

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
			break;
	fclose(f);
	return kb;
}

static void stat_line(const char *what)
{
	printf("[%7.3f] %s pass=%u nx_lpage_splits=%lld pages_4k=%lld pages_2m=%lld "
	       "AnonHugePages=%ldkB\n", now_mono() - t0, what, passes(),
	       vm_stat(&vm, "nx_lpage_splits"), vm_stat(&vm, "pages_4k"),
	       vm_stat(&vm, "pages_2m"), anon_huge_kb());
}

static void run_phase(const char *what, int seconds)
{
	double end = now_mono() + seconds, next = now_mono() + 1;
	struct timespec ts = { 0, 20 * 1000 * 1000 };

	while (now_mono() < end) {
		nanosleep(&ts, NULL);
		if (now_mono() >= next) {
			stat_line(what);
			next += 1;
		}
	}
}

int main(int argc, char **argv)
{
	struct guest_code code = { guest_nx_start, guest_nx_end };
	struct sigaction sa;
	struct vm_regs regs;
	pthread_t vcpu;
	uint64_t mem_size = 128 * MiB, nregions, dirty = 0;
	int exec_last = 47, plain_s = 8, dirty_s = 8, after_s = 0;
	int readfirst = 1, i;
	double deadline;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--no-readfirst")) {
			readfirst = 0;
			continue;
		}
		if (vmm_mem_opt(a))
			continue;
		if (!v)
			die("usage: nxrecovery [--mem MiB] [--exec N] [--plain S] [--dirty S] "
			    "[--after S] [--no-readfirst] " VMM_MEM_USAGE);
		if (!strcmp(a, "--mem"))
			mem_size = strtoull(v, NULL, 0) * MiB;
		else if (!strcmp(a, "--exec"))
			exec_last = atoi(v);
		else if (!strcmp(a, "--plain"))
			plain_s = atoi(v);
		else if (!strcmp(a, "--dirty"))
			dirty_s = atoi(v);
		else if (!strcmp(a, "--after"))
			after_s = atoi(v);
		else
			die("unknown option %s", a);
		i++;
	}
	nregions = mem_size / REGION;
	if (mem_size % REGION || nregions < 2 || nregions > 2048 || exec_last < 1 ||
	    (uint64_t)exec_last >= nregions)
		die("bad --mem/--exec");
	setvbuf(stdout, NULL, _IOLBF, 0);

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sigusr1;	/* no SA_RESTART: KVM_RUN returns EINTR */
	sigaction(SIGUSR1, &sa, NULL);

	mem = xmmap_aligned(mem_size, REGION);
	if (madvise(mem, mem_size, MADV_HUGEPAGE))
		die("madvise HUGEPAGE");
	vmm_mem_advise(mem, mem_size);
	memset(mem, 0xc3, mem_size);		/* ret */
	memset(mem + GUEST_MBOX_GPA, 0, 4096);
	vm_create(&vm, mem, mem_size);
	vm_load_code(&vm, &code);
	memset(&regs, 0, sizeof(regs));
	regs.eip = GUEST_CODE_GPA;
	regs.esp = GUEST_STACK_TOP;
	regs.ecx = nregions;
	regs.ebp = exec_last + 1;
	regs.edi = readfirst;
	vm_set_regs(&vm, &regs);
	t0 = now_mono();
	printf("nxhuge mem=%lluMiB regions=%llu exec_regions=1..%d readfirst=%d thp=1 "
	       "statdir=%s pid=%d %s\n", (unsigned long long)(mem_size / MiB),
	       (unsigned long long)nregions, exec_last, readfirst, vm_debugfs_dir(&vm),
	       getpid(), vmm_mem_desc());
	stat_line("start");

	mark(1, "NX START");
	if (pthread_create(&vcpu, NULL, vcpu_thread, NULL))
		die("pthread_create");
	deadline = now_mono() + 60;
	while (readfirst && !read_done && now_mono() < deadline)
		usleep(10000);
	if (readfirst && !read_done)
		die("guest did not finish the read phase");
	vmm_mem_late(mem, mem_size);

	run_phase("plain", plain_s);
	if (dirty_s > 0) {
		mark(3, "NX DIRTY_LOG_ON pass=%u", passes());
		vm_set_dirty_logging(&vm, 1);
		stat_line("dirtylog-on");
		run_phase("dirty", dirty_s);
		dirty = vm_get_dirty_log(&vm);
		vm_set_dirty_logging(&vm, 0);
		mark(4, "NX DIRTY_LOG_OFF pass=%u dirty=%llu", passes(),
		     (unsigned long long)dirty);
		stat_line("dirtylog-off");
	}
	if (after_s > 0) {
		mark(6, "NX AFTER pass=%u", passes());
		run_phase("after", after_s);
	}

	mark(5, "NX STOP pass=%u", passes());
	stop_vcpu = 1;
	vm.run->immediate_exit = 1;
	for (;;) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		pthread_kill(vcpu, SIGUSR1);
		nanosleep(&ts, NULL);
		if (pthread_tryjoin_np(vcpu, NULL) == 0)
			break;
	}
	printf("NX RESULT passes=%u total=%.3fs read_done=%d dirty=%llu\n", passes(),
	       now_mono() - t0, read_done, (unsigned long long)dirty);
	vm_destroy(&vm);
	return passes() ? 0 : 1;
}
