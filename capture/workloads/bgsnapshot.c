// SPDX-License-Identifier: GPL-2.0
/*
 * bgsnapshot - QEMU background snapshot in miniature.
 *
 * Guest RAM is anonymous private memory, pre-populated.  After a warm-up,
 * the whole RAM is write-protected with userfaultfd (UFFDIO_REGISTER with
 * UFFDIO_REGISTER_MODE_WP, then UFFDIO_WRITEPROTECT); a saver thread copies
 * each page and then unprotects it, page by page (UFFDIO_WRITEPROTECT
 * mode 0, 4 KiB), while the vCPU keeps running its access pattern.  Write
 * faults on still-protected pages are served by a handler thread (copy,
 * then unprotect), as QEMU does.  On Linux 6.1 every 4 KiB unprotect is an
 * mmu_notifier PROTECTION_VMA invalidation that zaps the leaf SPTE.
 *
 * Usage: bgsnapshot [options]
 *   --access read|write64|randset|latprobe   guest pattern (default read)
 *       read      read one dword per 4 KiB page per pass
 *       write64   write one 64-bit word per 4 KiB page per pass
 *       randset   set one byte in a pseudo-random page, (data pages) times
 *                 per pass
 *       latprobe  paced latency probe: read one byte per page, timed with
 *                 rdtsc in the guest; one sample (exit) per page
 *   --mode perpage|whole   unprotect each page after copying it (default),
 *                          or the whole range once after copying all
 *   --mem MiB              guest RAM (default 32); data is [1 MiB, mem)
 *   --warmup N / --after N passes before the snapshot / after it (3 / 3)
 *   --pace-us N            saver sleeps N us after each page (default 0)
 *   --probe-pace-us N      latprobe: host sleeps N us between samples
 *                          (default 200)
 *   --lat-out FILE         latprobe: write samples there (default stdout)
 *   --mergeable            guest RAM MADV_MERGEABLE (vmm.h); --hugepage-late
 *                          is refused (RAM stays 4 KiB pages)
 *
 * Output: phase markers "[monotonic s] MARK BGSNAP ..." (plus marker
 * syscalls ioctl(-1, 0x4d52NNNN)), a BGSNAP RESULT line, and for latprobe
 * "LAT phase page tsc_cycles guest_ns run_ns" samples and a per-phase
 * summary.
 *
 * Built with -DMMUREPLAY_UST (bgsnapshot-ust: dynamically linked with
 * liblttng-ust and the capture/ust provider), latprobe also emits one
 * LTTng-UST event mmureplay:latency_sample per sample: probe = phase
 * (0 warmup, 1 snapshot, 2 after), ns = guest_ns, gfn = page, the values
 * of its LAT line.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "vmm.h"

#ifdef MMUREPLAY_UST
#include "mmureplay_tp.h"
#define LAT_TRACEPOINT(probe, ns, gfn) \
	lttng_ust_tracepoint(mmureplay, latency_sample, (probe), (ns), (gfn))
#define UST_EVENTS	"mmureplay:latency_sample"
#else
#define LAT_TRACEPOINT(probe, ns, gfn) do { } while (0)
#define UST_EVENTS	"no"
#endif

#define MiB		(1024ull * 1024)
#define DATA_GPA	(1 * MiB)
#define PAGE		4096ull

/* esi = data start, ebp = data end, edx = stride */
GUEST_CODE(guest_read,
	"1:	mov %esi, %edi\n"
	"2:	mov (%edi), %eax\n"
	"	add %edx, %edi\n"
	"	cmp %ebp, %edi\n"
	"	jb 2b\n"
	"	out %al, $0x10\n"
	"	jmp 1b\n");

/* esi = data start, ebp = data end, edx = stride, eax = pass, ecx = tag */
GUEST_CODE(guest_write64,
	"1:	mov %esi, %edi\n"
	"2:	mov %eax, (%edi)\n"
	"	mov %ecx, 4(%edi)\n"
	"	add %edx, %edi\n"
	"	cmp %ebp, %edi\n"
	"	jb 2b\n"
	"	out %al, $0x10\n"
	"	inc %eax\n"
	"	jmp 1b\n");

/* esi = data start, ecx = data pages, ebx = seed, ebp = stores per pass */
GUEST_CODE(guest_randset,
	"1:	mov %ebp, %edi\n"
	"2:	imul $1103515245, %ebx, %ebx\n"
	"	add $12345, %ebx\n"
	"	mov %ebx, %eax\n"
	"	shr $16, %eax\n"
	"	imul %ecx, %eax\n"
	"	shr $16, %eax\n"
	"	shl $12, %eax\n"
	"	add %esi, %eax\n"
	"	mov %bl, (%eax)\n"
	"	dec %edi\n"
	"	jnz 2b\n"
	"	out %al, $0x10\n"
	"	jmp 1b\n");

/* esi = data start, ebp = data end; one `out` to PORT_SAMPLE per page */
GUEST_CODE(guest_latprobe,
	"1:	mov %esi, %edi\n"
	"2:	lfence\n"
	"	rdtsc\n"
	"	mov %eax, %ebx\n"
	"	movzbl (%edi), %eax\n"
	"	lfence\n"
	"	rdtsc\n"
	"	sub %ebx, %eax\n"
	"	mov %edi, %ebx\n"
	"	out %eax, $0x12\n"
	"	add $0x1000, %edi\n"
	"	cmp %ebp, %edi\n"
	"	jb 2b\n"
	"	out %al, $0x10\n"
	"	jmp 1b\n");

enum access { ACC_READ, ACC_WRITE64, ACC_RANDSET, ACC_LATPROBE };
static const char *const access_names[] = { "read", "write64", "randset", "latprobe" };

static struct vm vm;
static uint8_t *mem, *snap;
static uint64_t mem_size = 32 * MiB, npages;
static uint8_t *copied;		/* page claimed for copying */
static int uffd;
static enum access access_mode = ACC_READ;
static int perpage = 1;
static long pace_us, probe_pace_us = 200;
static FILE *lat_out;
static double tsc_ns_per_cycle;

static volatile int saver_done, handler_stop;
static unsigned long wp_faults, handler_unprotects, snap_unprotects, other_msgs;

/* Latency samples of the current phase (ns), for the summary. */
static double *lat_ns;
static size_t lat_n, lat_cap;
static const char *phase_name = "warmup";
static uint32_t phase_id;	/* latency_sample probe: 0 warmup, 1 snapshot, 2 after */

static void uffd_wp(uint64_t off, uint64_t len, int protect)
{
	struct uffdio_writeprotect wp;

	memset(&wp, 0, sizeof(wp));
	wp.range.start = (uintptr_t)mem + off;
	wp.range.len = len;
	wp.mode = protect ? UFFDIO_WRITEPROTECT_MODE_WP : 0;
	if (ioctl(uffd, UFFDIO_WRITEPROTECT, &wp) < 0)
		die("UFFDIO_WRITEPROTECT off=0x%llx len=0x%llx mode=%llu",
		    (unsigned long long)off, (unsigned long long)len,
		    (unsigned long long)wp.mode);
}

static int claim_copy(uint64_t page)
{
	if (__atomic_exchange_n(&copied[page], 1, __ATOMIC_SEQ_CST))
		return 0;
	memcpy(snap + page * PAGE, mem + page * PAGE, PAGE);
	return 1;
}

static void *handler_thread(void *arg)
{
	struct pollfd pfd = { .fd = uffd, .events = POLLIN };
	struct uffd_msg msg;

	(void)arg;
	while (!handler_stop) {
		if (poll(&pfd, 1, 50) <= 0)
			continue;
		if (read(uffd, &msg, sizeof(msg)) != sizeof(msg))
			continue;
		if (msg.event != UFFD_EVENT_PAGEFAULT ||
		    !(msg.arg.pagefault.flags & UFFD_PAGEFAULT_FLAG_WP)) {
			other_msgs++;
			continue;
		}
		wp_faults++;
		{
			uint64_t off = (msg.arg.pagefault.address - (uintptr_t)mem) & ~(PAGE - 1);

			claim_copy(off / PAGE);
			uffd_wp(off, PAGE, 0);	/* also wakes the faulting thread */
			handler_unprotects++;
		}
	}
	return NULL;
}

static void *saver_thread(void *arg)
{
	struct timespec ts = { 0, pace_us * 1000 };
	uint64_t p;

	(void)arg;
	for (p = 0; p < npages; p++) {
		int mine = claim_copy(p);

		if (perpage && mine) {
			uffd_wp(p * PAGE, PAGE, 0);
			snap_unprotects++;
		}
		if (pace_us)
			nanosleep(&ts, NULL);
	}
	if (!perpage) {
		uffd_wp(0, mem_size, 0);
		snap_unprotects++;
	}
	__atomic_store_n(&saver_done, 1, __ATOMIC_SEQ_CST);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void lat_summary(void)
{
	if (access_mode != ACC_LATPROBE || !lat_n)
		return;
	qsort(lat_ns, lat_n, sizeof(double), cmp_double);
	printf("LATSUM phase=%s samples=%zu p50=%.0fns p99=%.0fns p99.9=%.0fns max=%.0fns\n",
	       phase_name, lat_n, lat_ns[lat_n / 2], lat_ns[lat_n * 99 / 100],
	       lat_ns[lat_n * 999 / 1000], lat_ns[lat_n - 1]);
	lat_n = 0;
}

static void set_phase(const char *name, uint32_t id)
{
	lat_summary();
	phase_name = name;
	phase_id = id;
}

/* Run the guest until it finishes one pass; handles latency samples. */
static void pass(void)
{
	struct timespec ts = { 0, probe_pace_us * 1000 };
	double t_run = now_mono();
	int port;

	for (;;) {
		port = vm_run(&vm);
		if (port == PORT_PASS)
			return;
		if (port != PORT_SAMPLE)
			die("unexpected exit (port %d)", port);
		{
			struct kvm_regs regs;
			uint32_t cycles = vm_io_value(&vm);
			double t = now_mono(), ns = cycles * tsc_ns_per_cycle;
			uint64_t ns_int = (uint64_t)(ns + 0.5), gfn;

			vm_get_regs(&vm, &regs);
			gfn = regs.rbx / PAGE;
			fprintf(lat_out, "LAT %s %llu %u %llu %.0f\n", phase_name,
				(unsigned long long)gfn, cycles,
				(unsigned long long)ns_int, (t - t_run) * 1e9);
			LAT_TRACEPOINT(phase_id, ns_int, gfn);
			if (lat_n == lat_cap) {
				lat_cap = lat_cap ? 2 * lat_cap : 65536;
				lat_ns = realloc(lat_ns, lat_cap * sizeof(double));
				if (!lat_ns)
					die("realloc");
			}
			lat_ns[lat_n++] = ns;
			if (probe_pace_us)
				nanosleep(&ts, NULL);
			t_run = now_mono();
		}
	}
}

static void calibrate_tsc(void)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	double t0 = now_mono(), t1;
	uint64_t c0 = __rdtsc(), c1;

	nanosleep(&ts, NULL);
	c1 = __rdtsc();
	t1 = now_mono();
	tsc_ns_per_cycle = (t1 - t0) * 1e9 / (double)(c1 - c0);
}

static void usage(void)
{
	die("usage: bgsnapshot [--access read|write64|randset|latprobe] [--mode perpage|whole] "
	    "[--mem MiB] [--warmup N] [--after N] [--pace-us N] [--probe-pace-us N] "
	    "[--lat-out FILE] [--mergeable]");
}

int main(int argc, char **argv)
{
	struct guest_code codes[] = {
		{ guest_read_start, guest_read_end },
		{ guest_write64_start, guest_write64_end },
		{ guest_randset_start, guest_randset_end },
		{ guest_latprobe_start, guest_latprobe_end },
	};
	struct uffdio_api api;
	struct uffdio_register reg;
	struct vm_regs regs;
	pthread_t handler, saver;
	int warmup = 3, after = 3, i, passes_snap = 0;
	uint64_t p, mismatch = 0, data_pages;
	double t0, t_warm, t_wp, t_snap, t_snap_end;
	const char *lat_path = NULL;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--hugepage-late"))
			die("bgsnapshot: --hugepage-late: its RAM stays 4 KiB pages "
			    "(MADV_NOHUGEPAGE, per-page uffd-wp)");
		if (vmm_mem_opt(a))
			continue;
		if (!strcmp(a, "--access") && v) {
			for (access_mode = 0; access_mode <= ACC_LATPROBE; access_mode++)
				if (!strcmp(v, access_names[access_mode]))
					break;
			if (access_mode > ACC_LATPROBE)
				usage();
		} else if (!strcmp(a, "--mode") && v) {
			if (!strcmp(v, "perpage"))
				perpage = 1;
			else if (!strcmp(v, "whole"))
				perpage = 0;
			else
				usage();
		} else if (!strcmp(a, "--mem") && v) {
			mem_size = strtoull(v, NULL, 0) * MiB;
		} else if (!strcmp(a, "--warmup") && v) {
			warmup = atoi(v);
		} else if (!strcmp(a, "--after") && v) {
			after = atoi(v);
		} else if (!strcmp(a, "--pace-us") && v) {
			pace_us = atol(v);
		} else if (!strcmp(a, "--probe-pace-us") && v) {
			probe_pace_us = atol(v);
		} else if (!strcmp(a, "--lat-out") && v) {
			lat_path = v;
		} else {
			usage();
		}
		i++;
	}
	if (mem_size < 2 * MiB || pace_us < 0 || pace_us >= 1000000 ||
	    probe_pace_us < 0 || probe_pace_us >= 1000000)
		usage();
	setvbuf(stdout, NULL, _IOLBF, 0);
	lat_out = stdout;
	if (lat_path) {
		lat_out = fopen(lat_path, "w");
		if (!lat_out)
			die("open %s", lat_path);
	}
	npages = mem_size / PAGE;
	data_pages = (mem_size - DATA_GPA) / PAGE;
	calibrate_tsc();

	/* Anonymous private RAM, 4 KiB pages, pre-populated (uffd-wp on 6.1
	 * only protects present PTEs).
	 */
	mem = xmmap_aligned(mem_size, 2 * MiB);
	if (madvise(mem, mem_size, MADV_NOHUGEPAGE))
		die("madvise NOHUGEPAGE");
	vmm_mem_advise(mem, mem_size);
	for (p = 0; p < npages; p++)
		memset(mem + p * PAGE, 0x5a, PAGE);
	snap = malloc(mem_size);
	copied = calloc(npages, 1);
	if (!snap || !copied)
		die("malloc");

	vm_create(&vm, mem, mem_size);
	vm_load_code(&vm, &codes[access_mode]);
	memset(&regs, 0, sizeof(regs));
	regs.eip = GUEST_CODE_GPA;
	regs.esp = GUEST_STACK_TOP;
	regs.esi = DATA_GPA;
	regs.ebp = mem_size;
	regs.edx = PAGE;
	regs.eax = 1;
	regs.ecx = 0x600dcafe;
	if (access_mode == ACC_RANDSET) {
		if (data_pages > 65535)
			die("randset supports at most 65535 data pages");
		regs.ecx = data_pages;
		regs.ebx = 12345;
		regs.ebp = data_pages;
	}
	vm_set_regs(&vm, &regs);

	uffd = syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
	if (uffd < 0)
		die("userfaultfd");
	memset(&api, 0, sizeof(api));
	api.api = UFFD_API;
	if (ioctl(uffd, UFFDIO_API, &api) < 0)
		die("UFFDIO_API");
	printf("uffd features 0x%llx\n", (unsigned long long)api.features);
	if (!(api.features & UFFD_FEATURE_PAGEFAULT_FLAG_WP))
		die("kernel has no userfaultfd write-protect");
	printf("bgsnap mode=%s access=%s mem=%lluMiB pages=%llu pace_us=%ld pid=%d tsc_ns=%.4f ust=%s %s\n",
	       perpage ? "perpage" : "whole", access_names[access_mode],
	       (unsigned long long)(mem_size / MiB), (unsigned long long)npages, pace_us,
	       getpid(), tsc_ns_per_cycle, UST_EVENTS, vmm_mem_desc());

	t0 = now_mono();
	mark(1, "BGSNAP WARMUP mode=%s access=%s", perpage ? "perpage" : "whole",
	     access_names[access_mode]);
	set_phase("warmup", 0);
	for (i = 0; i < warmup; i++)
		pass();
	t_warm = now_mono() - t0;
	printf("warm-up: %d passes in %.3fs\n", warmup, t_warm);

	memset(&reg, 0, sizeof(reg));
	reg.range.start = (uintptr_t)mem;
	reg.range.len = mem_size;
	reg.mode = UFFDIO_REGISTER_MODE_WP;
	if (ioctl(uffd, UFFDIO_REGISTER, &reg) < 0)
		die("UFFDIO_REGISTER WP");
	if (!(reg.ioctls & (1ull << _UFFDIO_WRITEPROTECT)))
		die("UFFDIO_WRITEPROTECT not available on this range");
	mark(2, "BGSNAP WP_ALL pass=%d", warmup);
	t_wp = now_mono();
	uffd_wp(0, mem_size, 1);
	t_wp = now_mono() - t_wp;
	if (pthread_create(&handler, NULL, handler_thread, NULL))
		die("pthread_create handler");

	mark(3, "BGSNAP SNAP_BEGIN");
	set_phase("snapshot", 1);
	t_snap = now_mono();
	if (pthread_create(&saver, NULL, saver_thread, NULL))
		die("pthread_create saver");
	while (!__atomic_load_n(&saver_done, __ATOMIC_SEQ_CST)) {
		pass();
		passes_snap++;
	}
	pthread_join(saver, NULL);
	t_snap_end = now_mono();
	mark(4, "BGSNAP SNAP_END passes=%d unprotects=%lu wp_faults=%lu", passes_snap,
	     snap_unprotects, wp_faults);

	set_phase("after", 2);
	for (i = 0; i < after; i++)
		pass();
	set_phase("end", 3);
	mark(5, "BGSNAP STOP");
	handler_stop = 1;
	pthread_join(handler, NULL);

	if (access_mode == ACC_READ || access_mode == ACC_LATPROBE)
		for (p = 0; p < npages; p++)
			if (memcmp(snap + p * PAGE, mem + p * PAGE, PAGE))
				mismatch++;
	printf("BGSNAP RESULT mode=%s access=%s pages=%llu warmup=%.3fs wp_all_ioctl=%.4fs "
	       "snapshot_loop=%.3fs (%.1f us/page) passes: warm=%d during_snap=%d after=%d "
	       "wp_faults=%lu handler_unprotects=%lu snap_unprotects=%lu other_msgs=%lu "
	       "snapshot_mismatch=%llu total=%.3fs pages_4k=%lld\n",
	       perpage ? "perpage" : "whole", access_names[access_mode],
	       (unsigned long long)npages, t_warm, t_wp, t_snap_end - t_snap,
	       (t_snap_end - t_snap) * 1e6 / npages, warmup, passes_snap, after, wp_faults,
	       handler_unprotects, snap_unprotects, other_msgs,
	       (unsigned long long)mismatch, now_mono() - t0, vm_stat(&vm, "pages_4k"));
	if (lat_path)
		fclose(lat_out);
	vm_destroy(&vm);
	return mismatch ? 1 : 0;
}
