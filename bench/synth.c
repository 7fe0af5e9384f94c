/*
 * synth: a synthetic, kernel-shaped capture for the scale benchmark
 * (bench/scale) and the synthetic test (tests/test_synthetic.py).
 *
 *   synth --events N [--seed S] [--vcpus V] --out DIR
 *
 * writes DIR/trace/kernel (CTF 1.8 through libbabeltrace2: a source
 * component of this file feeding sink.ctf.fs of the ctf plugin),
 * DIR/manifest.json and DIR/event-counts.txt.  Everything about it says
 * synthetic: the environment (tracer_name "mmureplay-synth", synthetic = 1,
 * hostname and trace_name "synthetic"), the manifest ("synthetic": {...})
 * and the stream file names.
 *
 * The layout is a lab capture's of a patched Linux 6.1 kernel (LTTng
 * kernel tracer, AMD NPT): one stream per CPU with cpu_id in the packet
 * context, tid and procname as the common context, the monotonic clock at
 * 1 GHz, and the event classes the ingest reads (schemas/events.json)
 * with LTTng's ids, field names, sizes, signedness and display bases.
 * The lab trace declares some ninety more classes (interrupts, timers,
 * other syscalls) that the ingest does not read; they are left out.
 *
 * The guest model (gen_*):
 *   - one memslot (kvm_memslot_change), page tables installed by the
 *     first fault under them;
 *   - rounds of a background snapshot (QEMU's userfaultfd write
 *     protection): the whole slot write-protected (one invalidation that
 *     zaps every leaf), then a walk unprotecting each page (one
 *     invalidation per page that zaps its leaf, if any); the guest reads
 *     pages before their unprotect (read-only leaves), writes to
 *     protected pages (the fault waits for the unprotect, then installs
 *     writable) and refaults unprotected pages;
 *   - between rounds, dirty logging: the slot's write-protection when it
 *     starts, fast page faults for writes to write-protected leaves, the
 *     slow path for absent ones, KVM_GET_DIRTY_LOG re-protecting the
 *     written pages, and the flag off again.
 *   - a second memslot of THP-backed code with NX huge pages
 *     (nx_huge_pages=Y): reads map 2M leaves, non-executable; an
 *     instruction fetch splits them (the 2M leaf zapped, an L1 table, a
 *     4K leaf), and the recovery worker (kvm-nx-lpage-re) wakes every
 *     NX_PERIOD_MS of trace time to take ceil(split / NX_RATIO) of the
 *     oldest split pages (begin, per page the table unlinked, its SP
 *     freed with its leaves, recover_page; one flush; end).
 * Every event follows the kernel's order for its path (patched
 * tracepoints: the notifier's start and end, the unmap decision after the
 * zaps, the remote TLB flush when something was zapped), and events are
 * strictly ordered in time, so the trace holds exactly the state the
 * model kept: the self-check (mmureplay fidelity) must pass on it.
 * Not made: races (a fault installing inside an open invalidation,
 * a fault waiting for a recovery batch's lock), lock waits, teardown,
 * eager splits, the collapse when dirty logging stops: the self-check's
 * exemptions and those rules stay unexercised here.  The same seed gives
 * the same events, counts and manifest; sink.ctf.fs draws the trace UUID
 * itself.
 * That is what it is for; the counts it prints are true by construction
 * and checked against babeltrace2's CLI, not against a kernel.
 */
#define _GNU_SOURCE
#include <babeltrace2/babeltrace.h>
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum synth_status {
	/* mmureplay's exit codes (README), those that apply here. */
	SYNTH_OK = 0,
	SYNTH_ERR_USAGE = 1,
	SYNTH_ERR_OUTPUT = 4,
	SYNTH_ERR_INTERNAL = 5,
};

/* ---------------------------------------------------------------------
 * Event classes: the lab trace's (patched 6.1.192, lttng-modules 2.13.9).
 */
enum fkind { F_U = 0, F_S = 1 };

struct field_spec {
	const char *name;
	unsigned bits;
	enum fkind sign;
	int hex;
};

#define MAX_FIELDS 9

struct class_spec {
	uint64_t id;
	const char *name;
	struct field_spec f[MAX_FIELDS];
};

enum cls {
	C_SPTE_CHANGED, C_LOCK_WAIT, C_NX_PAGE, C_NX_END, C_NX_BEGIN,
	C_UNMAP_GFN, C_SPLIT_HUGE, C_SPTE_REQ, C_SET_SPTE, C_FAST_PF,
	C_PREP_ZAP, C_GET_PAGE, C_PAGE_FAULT, C_EXIT, C_ENTRY, C_MEMSLOT,
	C_TLB_FLUSH, C_INV_END, C_INV_START, C_UNMAP_HVA, C_SYS_EXIT_IOCTL,
	C_SYS_ENTRY_IOCTL, C_SYS_EXIT_MPROTECT, C_SYS_ENTRY_MPROTECT,
	C_SYS_EXIT_MADVISE, C_SYS_ENTRY_MADVISE, C_N
};

static const struct class_spec classes[C_N] = {
	[C_SPTE_CHANGED] = { 83, "kvm_tdp_mmu_spte_changed", {
		{ "gfn", 64, F_U, 1 }, { "old_spte", 64, F_U, 1 },
		{ "new_spte", 64, F_U, 1 }, { "level", 8, F_U, 0 },
		{ "as_id", 8, F_U, 0 } } },
	[C_LOCK_WAIT] = { 82, "kvm_mmu_fault_lock_wait", {
		{ "gfn", 64, F_U, 1 }, { "wait_ns", 64, F_U, 0 },
		{ "error_code", 32, F_U, 1 }, { "vcpu_id", 32, F_S, 0 },
		{ "lock_mode", 8, F_U, 0 } } },
	[C_NX_PAGE] = { 81, "kvm_mmu_nx_recover_page", {
		{ "gfn", 64, F_U, 1 }, { "level", 8, F_U, 0 },
		{ "as_id", 8, F_U, 0 }, { "tdp_mmu", 8, F_U, 0 },
		{ "lock_mode", 8, F_U, 0 }, { "action", 8, F_U, 0 } } },
	[C_NX_END] = { 80, "kvm_mmu_nx_recovery_end", {
		{ "to_zap", 64, F_U, 0 }, { "zapped", 64, F_U, 0 },
		{ "skipped_dirty", 64, F_U, 0 }, { "raced", 64, F_U, 0 },
		{ "pages", 64, F_U, 0 }, { "lock_mode", 8, F_U, 0 } } },
	[C_NX_BEGIN] = { 79, "kvm_mmu_nx_recovery_begin", {
		{ "pages", 64, F_U, 0 }, { "to_zap", 64, F_U, 0 },
		{ "ratio", 32, F_U, 0 }, { "lock_mode", 8, F_U, 0 } } },
	[C_UNMAP_GFN] = { 78, "kvm_mmu_unmap_gfn_range", {
		{ "start_gfn", 64, F_U, 1 }, { "end_gfn", 64, F_U, 1 },
		{ "slot", 16, F_U, 0 }, { "as_id", 8, F_U, 0 },
		{ "event", 8, F_U, 0 }, { "perm_upgrade", 8, F_U, 0 },
		{ "decision", 8, F_U, 0 }, { "flush", 8, F_U, 0 } } },
	[C_SPLIT_HUGE] = { 77, "kvm_mmu_split_huge_page", {
		{ "gfn", 64, F_U, 1 }, { "spte", 64, F_U, 1 },
		{ "level", 32, F_S, 0 }, { "errno", 32, F_S, 0 } } },
	[C_SPTE_REQ] = { 76, "kvm_mmu_spte_requested", {
		{ "gfn", 64, F_U, 1 }, { "pfn", 64, F_U, 1 },
		{ "level", 8, F_U, 0 } } },
	[C_SET_SPTE] = { 75, "kvm_mmu_set_spte", {
		{ "gfn", 64, F_U, 1 }, { "spte", 64, F_U, 1 },
		{ "sptep", 64, F_U, 1 }, { "level", 8, F_U, 0 } } },
	[C_FAST_PF] = { 74, "kvm_mmu_fast_page_fault", {
		{ "vcpu_id", 32, F_S, 0 }, { "cr2_or_gpa", 64, F_U, 0 },
		{ "error_code", 32, F_U, 0 }, { "sptep", 64, F_U, 1 },
		{ "old_spte", 64, F_U, 0 }, { "new_spte", 64, F_U, 0 },
		{ "ret", 32, F_S, 0 } } },
	[C_PREP_ZAP] = { 71, "kvm_mmu_prepare_zap_page", {
		{ "gfn", 64, F_U, 0 }, { "role", 32, F_U, 0 },
		{ "root_count", 32, F_U, 0 }, { "unsync", 8, F_U, 0 } } },
	[C_GET_PAGE] = { 68, "kvm_mmu_get_page", {
		{ "gfn", 64, F_U, 0 }, { "role", 32, F_U, 0 },
		{ "root_count", 32, F_U, 0 }, { "unsync", 8, F_U, 0 },
		{ "created", 8, F_U, 0 } } },
	[C_PAGE_FAULT] = { 43, "kvm_x86_page_fault", {
		{ "vcpu_id", 32, F_U, 0 }, { "guest_rip", 64, F_U, 1 },
		{ "fault_address", 64, F_U, 1 },
		{ "error_code", 64, F_U, 1 } } },
	[C_EXIT] = { 40, "kvm_x86_exit", {
		{ "exit_reason", 32, F_U, 0 }, { "guest_rip", 64, F_U, 0 },
		{ "isa", 32, F_U, 0 }, { "info1", 64, F_U, 0 },
		{ "info2", 64, F_U, 0 }, { "intr_info", 32, F_U, 0 },
		{ "error_code", 32, F_U, 0 }, { "vcpu_id", 32, F_U, 0 } } },
	[C_ENTRY] = { 34, "kvm_x86_entry", {
		{ "vcpu_id", 32, F_U, 0 }, { "rip", 64, F_U, 1 },
		{ "immediate_exit", 8, F_U, 0 } } },
	[C_MEMSLOT] = { 33, "kvm_memslot_change", {
		{ "base_gfn", 64, F_U, 1 }, { "npages", 64, F_U, 0 },
		{ "hva", 64, F_U, 1 }, { "old_flags", 32, F_U, 1 },
		{ "new_flags", 32, F_U, 1 }, { "as_id", 16, F_U, 0 },
		{ "slot", 16, F_U, 0 }, { "change", 8, F_U, 0 },
		{ "dirty_logging", 8, F_U, 0 } } },
	[C_TLB_FLUSH] = { 32, "kvm_remote_tlb_flush", {
		{ "start_gfn", 64, F_U, 1 }, { "pages", 64, F_U, 0 },
		{ "ranged", 8, F_U, 0 } } },
	[C_INV_END] = { 31, "kvm_invalidate_range_end", {
		{ "hva_start", 64, F_U, 1 }, { "hva_end", 64, F_U, 1 },
		{ "event", 8, F_U, 0 }, { "flags", 32, F_U, 1 },
		{ "blockable", 8, F_U, 0 }, { "perm_upgrade", 8, F_U, 0 } } },
	[C_INV_START] = { 30, "kvm_invalidate_range_start", {
		{ "hva_start", 64, F_U, 1 }, { "hva_end", 64, F_U, 1 },
		{ "event", 8, F_U, 0 }, { "flags", 32, F_U, 1 },
		{ "blockable", 8, F_U, 0 }, { "perm_upgrade", 8, F_U, 0 } } },
	[C_UNMAP_HVA] = { 29, "kvm_unmap_hva_range", {
		{ "start", 64, F_U, 1 }, { "end", 64, F_U, 1 } } },
	[C_SYS_EXIT_IOCTL] = { 13, "syscall_exit_ioctl", {
		{ "ret", 64, F_S, 0 }, { "arg", 64, F_U, 0 } } },
	[C_SYS_ENTRY_IOCTL] = { 12, "syscall_entry_ioctl", {
		{ "fd", 32, F_U, 0 }, { "cmd", 32, F_U, 0 },
		{ "arg", 64, F_U, 0 } } },
	[C_SYS_EXIT_MPROTECT] = { 9, "syscall_exit_mprotect", {
		{ "ret", 64, F_S, 0 } } },
	[C_SYS_ENTRY_MPROTECT] = { 8, "syscall_entry_mprotect", {
		{ "start", 64, F_U, 0 }, { "len", 64, F_U, 0 },
		{ "prot", 64, F_U, 0 } } },
	[C_SYS_EXIT_MADVISE] = { 5, "syscall_exit_madvise", {
		{ "ret", 64, F_S, 0 } } },
	[C_SYS_ENTRY_MADVISE] = { 4, "syscall_entry_madvise", {
		{ "start", 64, F_U, 0 }, { "len_in", 64, F_U, 0 },
		{ "behavior", 32, F_S, 0 } } },
};

/* ---------------------------------------------------------------------
 * The guest model.
 */

/* NPT SPTE bits (Linux 6.1 arch/x86/kvm/mmu/spte.h, AMD). */
#define SPTE_P          (1ULL << 0)
#define SPTE_W          (1ULL << 1)
#define SPTE_U          (1ULL << 2)
#define SPTE_A          (1ULL << 5)
#define SPTE_D          (1ULL << 6)
#define SPTE_HOST_W     (1ULL << 9)
#define SPTE_MMU_W      (1ULL << 10)
#define SPTE_MMU_PRESENT (1ULL << 11)
/* A non-leaf entry as the TDP MMU links it (make_nonleaf_spte()). */
#define SPTE_TABLE (SPTE_P | SPTE_W | SPTE_U | SPTE_A | SPTE_MMU_PRESENT)
/* A leaf of a read fault on a userfaultfd-protected page: no write
 * permission anywhere (the host PTE is write-protected). */
#define SPTE_LEAF_RO (SPTE_P | SPTE_U | SPTE_A | SPTE_MMU_PRESENT)
/* A writable leaf; _D: written (a write fault, or the fast path). */
#define SPTE_LEAF_W (SPTE_P | SPTE_W | SPTE_U | SPTE_A | SPTE_HOST_W | \
		     SPTE_MMU_W | SPTE_MMU_PRESENT)
#define SPTE_LEAF_WD (SPTE_LEAF_W | SPTE_D)
/* Write-protected for dirty logging: the fast path may restore W. */
#define SPTE_LEAF_WP (SPTE_LEAF_W & ~SPTE_W)

#define PFERR_PRESENT   (1ULL << 0)
#define PFERR_WRITE     (1ULL << 1)
#define PFERR_USER      (1ULL << 2)
#define PFERR_FETCH     (1ULL << 4)
#define PFERR_GUEST_FINAL (1ULL << 32)

#define SVM_EXIT_INTR   0x060
#define SVM_EXIT_NPF    0x400
#define ISA_SVM         2

/* ioctl numbers (include/uapi/linux/{kvm,userfaultfd}.h). */
#define KVM_SET_USER_MEMORY_REGION 0x4020ae46u
#define KVM_GET_DIRTY_LOG 0x4010ae42u
#define UFFDIO_WRITEPROTECT 0xc018aa06u
/* The lab's phase marker: ioctl(-1, 0x4d52NNNN) fails with EBADF. */
#define MARK_CMD 0x4d520000u

#define MMU_NOTIFY_PROTECTION_VMA 2
#define MMU_NOTIFIER_RANGE_BLOCKABLE 0x1
/* The patched kernel's own flag bit: a pure permission upgrade. */
#define MMU_NOTIFIER_RANGE_PERM_UPGRADE 0x2

/* NX huge pages (the manifest's kvm parameters say the same). */
#define NX_RATIO 4
#define NX_PERIOD_MS 50
#define NX_PERIOD_NS (NX_PERIOD_MS * 1000000ULL)
#define PFN_NX_BASE 0x4000000ULL
#define SPTE_NX (1ULL << 63)
#define SPTE_LARGE (1ULL << 7)
#define REMOVED_SPTE 0x5a0ULL
/* kvm_mmu_page_role of a TDP MMU page: level in bits 0-3 (the rest as
 * the lab captures show it: direct, access 7, ...). */
#define SP_ROLE(level) (0x3780u | (level))

#define KVM_MR_CREATE 0
#define KVM_MR_FLAGS_ONLY 3
#define KVM_MEM_LOG_DIRTY_PAGES 0x1

#define FD_VM 5
#define FD_UFFD 7
#define HVA_BASE 0x7f3a40000000ULL
#define HVA_NX_BASE 0x7f2a00000000ULL
#define PFN_BASE 0x100000ULL
#define TABLE_PFN_BASE 0x2a00000ULL
#define GUEST_RIP 0x1002ULL

enum page_state { PG_NONE = 0, PG_RO, PG_W, PG_WD, PG_WP };

/* A 2M region of the NX slot. */
enum nx_state { NX_EMPTY = 0, NX_HUGE, NX_SPLIT };

struct nx_region {
	unsigned char state;            /* enum nx_state */
	uint64_t table_pfn;             /* NX_SPLIT: its L1 table */
	uint64_t leaves[8];             /* NX_SPLIT: present 4K leaves */
};

struct thread {
	int64_t tid;
	unsigned cpu;
	char procname[24];  /* at most 15 characters used, as the kernel */
};

enum model_step_id {
	ST_SETUP = 0, ST_ROUND_WP, ST_ROUND_WP_ZAP, ST_ROUND_PAGE, ST_DIRTY_ON,
	ST_DIRTY_WRPROT, ST_DIRTY_WRITE,
};

/* One event as the model made it; the iterator turns it into a message. */
struct rec {
	uint64_t ts;
	uint64_t v[MAX_FIELDS];
	uint16_t cls;
	uint16_t thread;
};

struct model {
	uint64_t rng;
	unsigned vcpus, ncpus, nthreads;
	struct thread *threads;
	unsigned th_vmm, th_uffd, th_nx;        /* thread indexes */

	uint64_t npages;                /* the memslot, from gfn 0 */
	unsigned char *page;            /* enum page_state per gfn */
	unsigned char *l2_linked;       /* per 2M region: table linked */
	int l4_linked;                  /* the one level 4 entry */
	/* Per 1G region: the table its level 3 entry links (0: none). */
	uint64_t l3_child[512];
	uint64_t next_table_pfn;

	/* The second memslot: THP-backed code, NX huge pages. */
	uint64_t nx_base;               /* first gfn, 1G aligned */
	unsigned nx_regions;            /* 2M regions in it */
	struct nx_region *nx;
	unsigned *nx_fifo;              /* split regions, oldest first */
	unsigned nx_head, nx_len;       /* ring over nx_regions entries */
	uint64_t nx_next_ts;            /* the worker's next wake-up */

	uint64_t ts;
	uint64_t target, emitted;
	uint64_t counts[C_N];
	unsigned round, phase;
	enum model_step_id step;
	uint64_t cursor, nzap;          /* the step's page, leaves changed */
	uint64_t *dirty;                /* written since KVM_GET_DIRTY_LOG */
	size_t ndirty, capdirty;
	int done;
	int nomem;                      /* an allocation failed: stop */

	/* The queue of made events the iterator drains. */
	struct rec *q;
	size_t qlen, qhead, qcap;
};

static uint64_t rng_next(struct model *m)
{
	/* splitmix64: a fixed sequence per seed. */
	uint64_t z = (m->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static unsigned rng_below(struct model *m, unsigned n)
{
	return (unsigned)(rng_next(m) % n);
}

/* Strictly increasing time: the muxed order is the order made here. */
static void tick(struct model *m, unsigned lo, unsigned spread)
{
	m->ts += lo + rng_below(m, spread + 1);
}

static void emit(struct model *m, unsigned thread, enum cls c,
		const uint64_t *v, unsigned n)
{
	struct rec *r;

	if (m->qlen == m->qcap) {
		size_t cap = m->qcap ? m->qcap * 2 : 4096;
		struct rec *q = realloc(m->q, cap * sizeof(*q));

		if (!q) {
			m->nomem = 1;
			return;
		}
		m->q = q;
		m->qcap = cap;
	}
	tick(m, 300, 2000);
	r = &m->q[m->qlen++];
	memset(r, 0, sizeof(*r));
	r->ts = m->ts;
	r->cls = (uint16_t)c;
	r->thread = (uint16_t)thread;
	memcpy(r->v, v, n * sizeof(*v));
	m->counts[c]++;
	m->emitted++;
}

#define EMIT(m, th, c, ...) do { \
	const uint64_t v_[] = { __VA_ARGS__ }; \
	emit((m), (th), (c), v_, sizeof(v_) / sizeof(v_[0])); \
} while (0)

static uint64_t hva_of(uint64_t gfn)
{
	return HVA_BASE + (gfn << 12);
}

static uint64_t sptep_of(uint64_t gfn)
{
	return ((TABLE_PFN_BASE + (gfn >> 9)) << 12) + (gfn & 511) * 8;
}

static uint64_t leaf_spte(uint64_t gfn, enum page_state s)
{
	uint64_t bits = s == PG_RO ? SPTE_LEAF_RO : s == PG_W ? SPTE_LEAF_W :
		s == PG_WD ? SPTE_LEAF_WD : SPTE_LEAF_WP;

	return ((PFN_BASE + gfn) << 12) | bits;
}

static void gen_syscall_ioctl(struct model *m, unsigned th, uint32_t fd,
			     uint32_t cmd, uint64_t arg, int entry, int64_t ret)
{
	if (entry)
		EMIT(m, th, C_SYS_ENTRY_IOCTL, fd, cmd, arg);
	else
		EMIT(m, th, C_SYS_EXIT_IOCTL, (uint64_t)ret, arg);
}

static void gen_mark(struct model *m, unsigned phase)
{
	gen_syscall_ioctl(m, m->th_vmm, UINT32_MAX, MARK_CMD | phase, 0, 1, 0);
	gen_syscall_ioctl(m, m->th_vmm, UINT32_MAX, MARK_CMD | phase, 0, 0, -EBADF);
}

/*
 * The NPF exit and kvm_page_fault of vCPU v at gfn: the first half of
 * every fault; gen_install() or the fast path (gen_dirty_write()) ends
 * it.
 */
static void gen_fault_begin(struct model *m, unsigned v, uint64_t gfn,
			   uint64_t err)
{
	uint64_t gpa = gfn << 12;

	EMIT(m, v, C_EXIT, SVM_EXIT_NPF, GUEST_RIP, ISA_SVM, err, gpa, 0, 0,
	     v);
	EMIT(m, v, C_PAGE_FAULT, v, GUEST_RIP, gpa, err);
}

static void gen_entry(struct model *m, unsigned v)
{
	EMIT(m, v, C_ENTRY, v, GUEST_RIP, 0);
}

/* The level 4 and 3 entries above gfn, linked by the first walk. */
static void gen_upper(struct model *m, unsigned v, uint64_t gfn)
{
	uint64_t g1 = gfn >> 18;

	if (!m->l4_linked) {
		EMIT(m, v, C_SPTE_CHANGED, 0, 0,
		     (m->next_table_pfn++ << 12) | SPTE_TABLE, 4, 0);
		m->l4_linked = 1;
	}
	if (!m->l3_child[g1 & 511]) {
		m->l3_child[g1 & 511] = m->next_table_pfn++;
		EMIT(m, v, C_SPTE_CHANGED, g1 << 18, 0,
		     (m->l3_child[g1 & 511] << 12) | SPTE_TABLE, 3, 0);
	}
}

/* The slow path's walk: tables linked where none was, then the leaf. */
static void gen_install(struct model *m, unsigned v, uint64_t gfn,
		       enum page_state s)
{
	uint64_t spte = leaf_spte(gfn, s);

	EMIT(m, v, C_SPTE_REQ, gfn, PFN_BASE + gfn, 1);
	gen_upper(m, v, gfn);
	if (!m->l2_linked[gfn >> 9]) {
		EMIT(m, v, C_SPTE_CHANGED, gfn & ~511ULL, 0,
		     ((TABLE_PFN_BASE + (gfn >> 9)) << 12) | SPTE_TABLE, 2, 0);
		m->l2_linked[gfn >> 9] = 1;
	}
	EMIT(m, v, C_SPTE_CHANGED, gfn, 0, spte, 1, 0);
	EMIT(m, v, C_SET_SPTE, gfn, spte, sptep_of(gfn), 1);
	m->page[gfn] = (unsigned char)s;
	gen_entry(m, v);
}

/* A whole slow-path fault on an absent page. */
static void gen_fault(struct model *m, unsigned v, uint64_t gfn, int write,
		     enum page_state s)
{
	uint64_t err = PFERR_GUEST_FINAL | PFERR_USER |
		(write ? PFERR_WRITE : 0);

	gen_fault_begin(m, v, gfn, err);
	gen_install(m, v, gfn, s);
}

/*
 * One mmu_notifier invalidation over [gs, ge) by thread th, as the
 * patched kernel traces it: the stock unmap_hva_range and the patched
 * start (gen_inv_open()), the leaf zaps (gen_inv_zap(), in chunks for a
 * large range), the unmap decision (after the walk, with its flush
 * result), the remote flush when something went, the end
 * (gen_inv_close()).
 */
static uint64_t inv_flags(int perm_upgrade)
{
	return MMU_NOTIFIER_RANGE_BLOCKABLE |
		(perm_upgrade ? MMU_NOTIFIER_RANGE_PERM_UPGRADE : 0);
}

static void gen_inv_open(struct model *m, unsigned th, uint64_t gs,
			uint64_t ge, int perm_upgrade)
{
	EMIT(m, th, C_UNMAP_HVA, hva_of(gs), hva_of(ge));
	EMIT(m, th, C_INV_START, hva_of(gs), hva_of(ge),
	     MMU_NOTIFY_PROTECTION_VMA, inv_flags(perm_upgrade), 1,
	     (uint64_t)perm_upgrade);
}

/* Zap the leaves of [gs, ge); adds their number to *n. */
static void gen_inv_zap(struct model *m, unsigned th, uint64_t gs,
		       uint64_t ge, uint64_t *n)
{
	uint64_t g;

	for (g = gs; g < ge; g++) {
		if (m->page[g] == PG_NONE)
			continue;
		EMIT(m, th, C_SPTE_CHANGED, g,
		     leaf_spte(g, (enum page_state)m->page[g]), 0, 1, 0);
		m->page[g] = PG_NONE;
		(*n)++;
	}
}

static void gen_inv_close(struct model *m, unsigned th, uint64_t gs,
			 uint64_t ge, int perm_upgrade, uint64_t n)
{
	EMIT(m, th, C_UNMAP_GFN, gs, ge, 0, 0, MMU_NOTIFY_PROTECTION_VMA,
	     (uint64_t)perm_upgrade, 0, n > 0);
	if (n)
		EMIT(m, th, C_TLB_FLUSH, 0, 0, 0);
	EMIT(m, th, C_INV_END, hva_of(gs), hva_of(ge),
	     MMU_NOTIFY_PROTECTION_VMA, inv_flags(perm_upgrade), 1,
	     (uint64_t)perm_upgrade);
}

/* UFFDIO_WRITEPROTECT's entry and exit around an invalidation. */
static void gen_uffd_ioctl(struct model *m, int entry)
{
	gen_syscall_ioctl(m, m->th_uffd, FD_UFFD, UFFDIO_WRITEPROTECT,
			  0x7ffd5e3a1000ULL, entry, 0);
}

/* Unprotect one page: the whole ioctl. */
static void gen_unprotect(struct model *m, uint64_t p)
{
	uint64_t n = 0;

	gen_uffd_ioctl(m, 1);
	gen_inv_open(m, m->th_uffd, p, p + 1, 1);
	gen_inv_zap(m, m->th_uffd, p, p + 1, &n);
	gen_inv_close(m, m->th_uffd, p, p + 1, 1, n);
	gen_uffd_ioctl(m, 0);
}

/* A vCPU exit that is not a fault (an interrupt), for the exit mix. */
static void gen_intr_exit(struct model *m, unsigned v)
{
	EMIT(m, v, C_EXIT, SVM_EXIT_INTR, GUEST_RIP, ISA_SVM, 0, 0, 0, 0, v);
	gen_entry(m, v);
}

static void gen_setregion_exit(struct model *m)
{
	gen_syscall_ioctl(m, m->th_vmm, FD_VM, KVM_SET_USER_MEMORY_REGION,
			  0x7ffd5e3a2000ULL, 0, 0);
}

/* KVM_SET_USER_MEMORY_REGION's entry and the memslot change (slot 0:
 * the snapshotted RAM, slot 1: the NX slot); the caller ends the call. */
static void gen_memslot(struct model *m, unsigned slot, uint32_t old_flags,
		       uint32_t new_flags, unsigned change)
{
	gen_syscall_ioctl(m, m->th_vmm, FD_VM, KVM_SET_USER_MEMORY_REGION,
			  0x7ffd5e3a2000ULL, 1, 0);
	if (slot == 0)
		EMIT(m, m->th_vmm, C_MEMSLOT, 0, m->npages, HVA_BASE,
		     old_flags, new_flags, 0, 0, change,
		     (new_flags & KVM_MEM_LOG_DIRTY_PAGES) != 0);
	else
		EMIT(m, m->th_vmm, C_MEMSLOT, m->nx_base,
		     (uint64_t)m->nx_regions * 512, HVA_NX_BASE, old_flags,
		     new_flags, 0, slot, change,
		     (new_flags & KVM_MEM_LOG_DIRTY_PAGES) != 0);
}

/* A leaf written while the slot is dirty-logged: KVM_GET_DIRTY_LOG
 * write-protects it again. */
static void dirty_note(struct model *m, uint64_t gfn)
{
	if (m->ndirty == m->capdirty) {
		size_t cap = m->capdirty ? m->capdirty * 2 : 256;
		uint64_t *d = realloc(m->dirty, cap * sizeof(*d));

		if (!d) {
			m->nomem = 1;
			return;
		}
		m->dirty = d;
		m->capdirty = cap;
	}
	m->dirty[m->ndirty++] = gfn;
	m->page[gfn] = PG_WD;
}

/* Write-protect the leaf at g for dirty logging (not a zap: it stays
 * present, the fast path may make it writable again). */
static void gen_wrprot_leaf(struct model *m, uint64_t g)
{
	EMIT(m, m->th_vmm, C_SPTE_CHANGED, g,
	     leaf_spte(g, (enum page_state)m->page[g]), leaf_spte(g, PG_WP),
	     1, 0);
	m->page[g] = PG_WP;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* KVM_GET_DIRTY_LOG: the pages written since the last call, in gfn
 * order (the bitmap's), write-protected again, one flush. */
static void gen_get_dirty_log(struct model *m)
{
	size_t i;

	gen_syscall_ioctl(m, m->th_vmm, FD_VM, KVM_GET_DIRTY_LOG,
			  0x7ffd5e3a3000ULL, 1, 0);
	qsort(m->dirty, m->ndirty, sizeof(*m->dirty), cmp_u64);
	for (i = 0; i < m->ndirty; i++)
		gen_wrprot_leaf(m, m->dirty[i]);
	if (m->ndirty)
		EMIT(m, m->th_vmm, C_TLB_FLUSH, 0, 0, 0);
	m->ndirty = 0;
	gen_syscall_ioctl(m, m->th_vmm, FD_VM, KVM_GET_DIRTY_LOG,
			  0x7ffd5e3a3000ULL, 0, 0);
}

/* A write by vCPU v to gfn while the slot is dirty-logged. */
static void gen_dirty_write(struct model *m, unsigned v, uint64_t gfn)
{
	enum page_state s = (enum page_state)m->page[gfn];
	uint64_t err = PFERR_GUEST_FINAL | PFERR_USER | PFERR_WRITE;

	switch (s) {
	case PG_WD:
		break;
	case PG_W:              /* the CPU sets D: no exit */
		dirty_note(m, gfn);
		break;
	case PG_NONE:
		gen_fault(m, v, gfn, 1, PG_WD);
		dirty_note(m, gfn);
		break;
	default:
		/* PG_WP (PG_RO is not left after a snapshot round): the fast
		 * path fixes it in place (fast_pf_fix_direct_spte(), no
		 * spte_changed event). */
		err |= PFERR_PRESENT;
		gen_fault_begin(m, v, gfn, err);
		EMIT(m, v, C_FAST_PF, v, gfn << 12, err, sptep_of(gfn),
		     leaf_spte(gfn, s), leaf_spte(gfn, PG_WD), 1);
		dirty_note(m, gfn);
		gen_entry(m, v);
	}
}

static uint64_t nx_pfn(uint64_t gfn)
{
	return PFN_NX_BASE + gfn;
}

static int nx_leaf_has(const struct nx_region *r, unsigned i)
{
	return (r->leaves[i / 64] >> (i % 64)) & 1;
}

/* A 4K leaf of the NX slot: executable (the NX workaround is for huge
 * pages only), writable. */
static uint64_t nx_leaf_spte(uint64_t gfn)
{
	return (nx_pfn(gfn) << 12) | SPTE_LEAF_WD;
}

/* A 2M leaf of the NX slot: mapped non-executable (nx_huge_pages=Y). */
static uint64_t nx_huge_spte(uint64_t gfn2m)
{
	return (nx_pfn(gfn2m) << 12) | SPTE_LEAF_WD | SPTE_LARGE | SPTE_NX;
}

/* Link an L1 table under the region's L2 entry: a new shadow page,
 * accounted as an NX huge page when an exec fault made it. */
static void gen_nx_link(struct model *m, unsigned v, unsigned ri)
{
	struct nx_region *r = &m->nx[ri];
	uint64_t g2 = m->nx_base + (uint64_t)ri * 512;

	r->table_pfn = m->next_table_pfn++;
	EMIT(m, v, C_GET_PAGE, g2, SP_ROLE(1), 0, 0, 1);
	EMIT(m, v, C_SPTE_CHANGED, g2, 0, (r->table_pfn << 12) | SPTE_TABLE,
	     2, 0);
	memset(r->leaves, 0, sizeof(r->leaves));
	r->state = NX_SPLIT;
	m->nx_fifo[(m->nx_head + m->nx_len++) % m->nx_regions] = ri;
}

static void gen_nx_leaf(struct model *m, unsigned v, unsigned ri,
		       unsigned i)
{
	struct nx_region *r = &m->nx[ri];
	uint64_t gfn = m->nx_base + (uint64_t)ri * 512 + i;

	EMIT(m, v, C_SPTE_CHANGED, gfn, 0, nx_leaf_spte(gfn), 1, 0);
	EMIT(m, v, C_SET_SPTE, gfn, nx_leaf_spte(gfn),
	     (r->table_pfn << 12) + i * 8, 1);
	r->leaves[i / 64] |= 1ULL << (i % 64);
}

/*
 * A guest access to the NX slot: an instruction fetch (half of them) or
 * a read of a random page.  Faults only where the state requires one:
 *   empty region, read   -> a 2M leaf, non-executable;
 *   empty region, fetch  -> an L1 table (NX split) and the 4K leaf;
 *   2M leaf, fetch       -> the 2M leaf zapped (flushed), a table, the
 *                           4K leaf (kvm_tdp_mmu_map(): the huge SPTE
 *                           above the goal level goes);
 *   split region, absent -> the 4K leaf.
 */
static void gen_nx_access(struct model *m)
{
	unsigned v = rng_below(m, m->vcpus), ri = rng_below(m, m->nx_regions);
	unsigned i = rng_below(m, 512);
	int fetch = rng_below(m, 2);
	struct nx_region *r = &m->nx[ri];
	uint64_t g2 = m->nx_base + (uint64_t)ri * 512, gfn = g2 + i;
	uint64_t err = PFERR_GUEST_FINAL | PFERR_USER |
		(fetch ? PFERR_FETCH : 0);

	if ((r->state == NX_HUGE && !fetch) ||
	    (r->state == NX_SPLIT && nx_leaf_has(r, i)))
		return;
	if (r->state == NX_HUGE)
		err |= PFERR_PRESENT;
	EMIT(m, v, C_EXIT, SVM_EXIT_NPF, gfn << 12, ISA_SVM, err, gfn << 12,
	     0, 0, v);
	EMIT(m, v, C_PAGE_FAULT, v, gfn << 12, gfn << 12, err);
	if (r->state == NX_EMPTY && !fetch) {
		EMIT(m, v, C_SPTE_REQ, g2, nx_pfn(g2), 2);
		gen_upper(m, v, g2);
		EMIT(m, v, C_SPTE_CHANGED, g2, 0, nx_huge_spte(g2), 2, 0);
		EMIT(m, v, C_SET_SPTE, g2, nx_huge_spte(g2),
		     (m->l3_child[(g2 >> 18) & 511] << 12) +
		     ((g2 >> 9) & 511) * 8, 2);
		r->state = NX_HUGE;
		gen_entry(m, v);
		return;
	}
	EMIT(m, v, C_SPTE_REQ, gfn, nx_pfn(gfn), 1);
	if (r->state == NX_HUGE) {
		EMIT(m, v, C_SPTE_CHANGED, g2, nx_huge_spte(g2), REMOVED_SPTE,
		     2, 0);
		EMIT(m, v, C_TLB_FLUSH, g2, 512, 0);
	} else if (r->state == NX_EMPTY) {
		gen_upper(m, v, g2);
	}
	if (r->state != NX_SPLIT)
		gen_nx_link(m, v, ri);
	gen_nx_leaf(m, v, ri, i);
	gen_entry(m, v);
}

/*
 * The recovery worker's wake-up (kvm_recover_nx_lpages(), write lock):
 * ceil(split pages / ratio) of the oldest split regions, each one's L2
 * entry cleared, its shadow page zapped with the leaves under it, one
 * remote flush for the batch.
 */
static void gen_nx_batch(struct model *m)
{
	unsigned th = m->th_nx, k, i, ri;
	uint64_t to_zap = (m->nx_len + NX_RATIO - 1) / NX_RATIO, zapped = 0;
	uint64_t g2, leaves = 0;
	struct nx_region *r;

	m->nx_next_ts += NX_PERIOD_NS;
	if (m->nx_next_ts <= m->ts)
		m->nx_next_ts = m->ts + NX_PERIOD_NS;
	if (!m->nx_len)
		return;
	EMIT(m, th, C_NX_BEGIN, m->nx_len, to_zap, NX_RATIO, 0);
	for (k = 0; k < to_zap; k++) {
		ri = m->nx_fifo[m->nx_head];
		m->nx_head = (m->nx_head + 1) % m->nx_regions;
		m->nx_len--;
		r = &m->nx[ri];
		g2 = m->nx_base + (uint64_t)ri * 512;
		EMIT(m, th, C_SPTE_CHANGED, g2,
		     (r->table_pfn << 12) | SPTE_TABLE, 0, 2, 0);
		EMIT(m, th, C_PREP_ZAP, g2, SP_ROLE(1), 0, 0);
		for (i = 0; i < 512; i++) {
			if (!nx_leaf_has(r, i))
				continue;
			EMIT(m, th, C_SPTE_CHANGED, g2 + i,
			     nx_leaf_spte(g2 + i), REMOVED_SPTE, 1, 0);
			leaves++;
		}
		EMIT(m, th, C_NX_PAGE, g2, 2, 0, 1, 0, 0);
		memset(r->leaves, 0, sizeof(r->leaves));
		r->state = NX_EMPTY;
		zapped++;
	}
	if (leaves)
		EMIT(m, th, C_TLB_FLUSH, 0, 0, 0);
	EMIT(m, th, C_NX_END, to_zap, zapped, 0, 0, m->nx_len, 0);
}

/*
 * One page of a snapshot round's unprotect walk, with what the guest
 * does around it.
 */
static void gen_snapshot_page(struct model *m, uint64_t p)
{
	unsigned v = rng_below(m, m->vcpus), r = rng_below(m, 100);

	if (r < 30 && m->page[p] == PG_NONE) {
		/* A read before the unprotect: read-only leaf. */
		gen_fault(m, v, p, 0, PG_RO);
	} else if (r >= 30 && r < 50) {
		/* A write to the protected page: the fault waits in
		 * userfaultfd until the unprotect, then installs. */
		uint64_t err = PFERR_GUEST_FINAL | PFERR_USER | PFERR_WRITE |
			(m->page[p] != PG_NONE ? PFERR_PRESENT : 0);

		gen_fault_begin(m, v, p, err);
		gen_unprotect(m, p);
		gen_install(m, v, p, PG_WD);
		goto guest;
	}
	gen_unprotect(m, p);
	/* The guest comes back for some of the pages it lost. */
	if (rng_below(m, 100) < 40 && m->page[p] == PG_NONE)
		gen_fault(m, rng_below(m, m->vcpus), p, 0, PG_W);
guest:
	if (p % 8 == 7)
		gen_intr_exit(m, rng_below(m, m->vcpus));
	if (rng_below(m, 100) < 6)
		gen_nx_access(m);
	if (m->ts >= m->nx_next_ts)
		gen_nx_batch(m);
}

static void gen_setup(struct model *m)
{
	gen_mark(m, 0);
	gen_memslot(m, 0, 0, 0, KVM_MR_CREATE);
	gen_setregion_exit(m);
	gen_memslot(m, 1, 0, 0, KVM_MR_CREATE);
	gen_setregion_exit(m);
	m->nx_next_ts = m->ts + NX_PERIOD_NS;
}

/*
 * Make the next episode's events, a bounded number of them (a walk over
 * the whole slot goes in chunks of WALK_CHUNK pages), so that the queue
 * stays small at any size; m->done once the target is reached, at the
 * end of a step that leaves no context open.
 *
 *   SETUP -> ROUND_WP -> ROUND_WP_ZAP ... -> ROUND_PAGE ... (a round:
 *   the slot write-protected, unprotected page by page) -> DIRTY_ON ->
 *   DIRTY_WRPROT ... -> DIRTY_WRITE ... -> back to ROUND_WP
 */
#define WALK_CHUNK 8192

enum model_status {
	MODEL_OK = 0,
	MODEL_NOMEM,
};

static enum model_status model_step(struct model *m)
{
	uint64_t end;
	unsigned v;

	switch (m->step) {
	case ST_SETUP:
		gen_setup(m);
		m->step = ST_ROUND_WP;
		break;
	case ST_ROUND_WP:
		if (m->emitted >= m->target) {
			m->done = 1;
			break;
		}
		m->round++;
		gen_mark(m, ++m->phase);
		gen_uffd_ioctl(m, 1);
		gen_inv_open(m, m->th_uffd, 0, m->npages, 0);
		m->cursor = m->nzap = 0;
		m->step = ST_ROUND_WP_ZAP;
		break;
	case ST_ROUND_WP_ZAP:
		end = m->cursor + WALK_CHUNK < m->npages ?
			m->cursor + WALK_CHUNK : m->npages;
		gen_inv_zap(m, m->th_uffd, m->cursor, end, &m->nzap);
		m->cursor = end;
		if (end < m->npages)
			break;
		gen_inv_close(m, m->th_uffd, 0, m->npages, 0, m->nzap);
		gen_uffd_ioctl(m, 0);
		m->cursor = 0;
		m->step = ST_ROUND_PAGE;
		break;
	case ST_ROUND_PAGE:
		gen_snapshot_page(m, m->cursor++);
		if (m->emitted >= m->target)
			m->done = 1;
		else if (m->cursor == m->npages)
			m->step = ST_DIRTY_ON;
		break;
	case ST_DIRTY_ON:
		gen_mark(m, ++m->phase);
		gen_memslot(m, 0, 0, KVM_MEM_LOG_DIRTY_PAGES, KVM_MR_FLAGS_ONLY);
		m->cursor = m->nzap = 0;
		m->step = ST_DIRTY_WRPROT;
		break;
	case ST_DIRTY_WRPROT:
		/* Every writable leaf write-protected, one flush. */
		end = m->cursor + WALK_CHUNK < m->npages ?
			m->cursor + WALK_CHUNK : m->npages;
		for (; m->cursor < end; m->cursor++)
			if (m->page[m->cursor] == PG_W ||
			    m->page[m->cursor] == PG_WD) {
				m->nzap++;
				gen_wrprot_leaf(m, m->cursor);
			}
		if (end < m->npages)
			break;
		if (m->nzap)
			EMIT(m, m->th_vmm, C_TLB_FLUSH, 0, 0, 0);
		gen_setregion_exit(m);
		m->cursor = 0;
		m->ndirty = 0;
		m->step = ST_DIRTY_WRITE;
		break;
	case ST_DIRTY_WRITE:
		/* One draw after the other (argument order is the compiler's). */
		v = rng_below(m, m->vcpus);
		gen_dirty_write(m, v, rng_next(m) % m->npages);
		if (++m->cursor % 64 == 0)
			gen_get_dirty_log(m);
		if (m->emitted < m->target && m->cursor < m->npages / 2 + 1)
			break;
		/* Off: 4K host pages, nothing to collapse, the leaves stay. */
		gen_memslot(m, 0, KVM_MEM_LOG_DIRTY_PAGES, 0, KVM_MR_FLAGS_ONLY);
		gen_setregion_exit(m);
		m->ndirty = 0;
		m->step = ST_ROUND_WP;
		break;
	}
	return m->nomem ? MODEL_NOMEM : MODEL_OK;
}

static enum model_status model_init(struct model *m, uint64_t target, uint64_t seed,
		      unsigned vcpus)
{
	unsigned i;

	memset(m, 0, sizeof(*m));
	m->rng = seed;
	m->target = target;
	m->vcpus = vcpus;
	m->ncpus = vcpus + 1;
	/* Some three snapshot rounds (about 18 events per page each). */
	m->npages = (target / 60 + 511) & ~511ULL;
	if (m->npages < 1024)
		m->npages = 1024;
	if (m->npages > (1ULL << 22))
		m->npages = 1ULL << 22;
	m->nx_regions = (unsigned)(m->npages / 256);
	if (m->nx_regions < 16)
		m->nx_regions = 16;
	if (m->nx_regions > 4096)
		m->nx_regions = 4096;
	m->nx_base = (m->npages + (1ULL << 18) - 1) & ~((1ULL << 18) - 1);
	m->nthreads = vcpus + 3;
	m->page = calloc(m->npages, 1);
	m->l2_linked = calloc(m->npages / 512 + 1, 1);
	m->threads = calloc(m->nthreads, sizeof(*m->threads));
	m->nx = calloc(m->nx_regions, sizeof(*m->nx));
	m->nx_fifo = calloc(m->nx_regions, sizeof(*m->nx_fifo));
	if (!m->page || !m->l2_linked || !m->threads || !m->nx || !m->nx_fifo)
		return MODEL_NOMEM;
	for (i = 0; i < vcpus; i++) {
		m->threads[i].tid = 4100 + i;
		m->threads[i].cpu = i;
		snprintf(m->threads[i].procname,
			 sizeof(m->threads[i].procname), "synth-vcpu%u", i);
	}
	m->th_vmm = vcpus;
	m->threads[m->th_vmm].tid = 4000;
	m->threads[m->th_vmm].cpu = vcpus;
	snprintf(m->threads[m->th_vmm].procname,
		 sizeof(m->threads[0].procname), "synth-vmm");
	m->th_uffd = vcpus + 1;
	m->threads[m->th_uffd].tid = 4001;
	m->threads[m->th_uffd].cpu = vcpus;
	snprintf(m->threads[m->th_uffd].procname,
		 sizeof(m->threads[0].procname), "synth-vmm");
	/* The kernel's recovery worker: kvm_vm_create_worker_thread()
	 * names it "kvm-nx-lpage-recovery", cut to 15 characters. */
	m->th_nx = vcpus + 2;
	m->threads[m->th_nx].tid = 4002;
	m->threads[m->th_nx].cpu = vcpus;
	snprintf(m->threads[m->th_nx].procname,
		 sizeof(m->threads[0].procname), "kvm-nx-lpage-re");
	m->next_table_pfn = TABLE_PFN_BASE - 4096;
	/* 2026-01-01T00:00:00Z plus a little: the clock's offset holds
	 * the date, timestamps count from boot. */
	m->ts = 1000000000ULL;
	return MODEL_OK;
}

static void model_free(struct model *m)
{
	free(m->page);
	free(m->l2_linked);
	free(m->threads);
	free(m->nx);
	free(m->nx_fifo);
	free(m->dirty);
	free(m->q);
}

/* ---------------------------------------------------------------------
 * The babeltrace2 source: one state struct for the component and its
 * one message iterator.
 */
#define PACKET_EVENTS 65536
#define CLOCK_OFFSET_S 1767225600LL     /* 2026-01-01T00:00:00Z */

struct synth_stream {
	bt_stream *stream;
	bt_packet *packet;              /* open, or NULL */
	uint64_t packet_events;
	uint64_t last_ts;
	int begun;
};

struct synth_source {
	struct model *m;
	uint64_t seed;
	bt_trace *trace;
	bt_stream_class *sc;
	bt_event_class *ec[C_N];
	struct synth_stream *streams;
	unsigned nstreams;
	int began, ending, ended;
	unsigned end_stream;            /* stream to close next */
};

static bt_field_class *int_class(bt_trace_class *tc,
				 const struct field_spec *f)
{
	bt_field_class *fc = f->sign == F_S ?
		bt_field_class_integer_signed_create(tc) :
		bt_field_class_integer_unsigned_create(tc);

	if (!fc)
		return NULL;
	bt_field_class_integer_set_field_value_range(fc, f->bits);
	if (f->hex)
		bt_field_class_integer_set_preferred_display_base(fc,
			BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_HEXADECIMAL);
	return fc;
}

static int struct_append(bt_field_class *st, const char *name,
			 bt_field_class *fc)
{
	int rc = -1;

	if (fc && bt_field_class_structure_append_member(st, name, fc) ==
	    BT_FIELD_CLASS_STRUCTURE_APPEND_MEMBER_STATUS_OK)
		rc = 0;
	bt_field_class_put_ref(fc);
	return rc;
}

static int source_classes(struct synth_source *s, bt_self_component *self)
{
	bt_trace_class *tc = bt_trace_class_create(self);
	bt_clock_class *cc = bt_clock_class_create(self);
	bt_field_class *pc = NULL, *cx = NULL, *pl = NULL;
	static const struct field_spec cpu_id = { "cpu_id", 32, F_U, 0 };
	static const struct field_spec tid = { "tid", 32, F_S, 0 };
	uint8_t uuid[16];
	unsigned i, j;
	int rc = -1;

	if (!tc || !cc)
		goto end;
	bt_trace_class_set_assigns_automatic_stream_class_id(tc, BT_FALSE);
	if (bt_clock_class_set_name(cc, "monotonic") ||
	    bt_clock_class_set_description(cc, "Monotonic Clock"))
		goto end;
	bt_clock_class_set_frequency(cc, 1000000000ULL);
	bt_clock_class_set_offset(cc, CLOCK_OFFSET_S, 0);
	bt_clock_class_set_origin_is_unix_epoch(cc, BT_TRUE);
	for (i = 0; i < 16; i++)
		uuid[i] = (uint8_t)(0xc7 ^ (s->seed >> (8 * (i % 8))) ^ i);
	bt_clock_class_set_uuid(cc, uuid);
	s->sc = bt_stream_class_create_with_id(tc, 0);
	if (!s->sc)
		goto end;
	bt_stream_class_set_assigns_automatic_event_class_id(s->sc, BT_FALSE);
	bt_stream_class_set_assigns_automatic_stream_id(s->sc, BT_FALSE);
	if (bt_stream_class_set_default_clock_class(s->sc, cc))
		goto end;
	bt_stream_class_set_supports_packets(s->sc, BT_TRUE, BT_TRUE, BT_TRUE);
	bt_stream_class_set_supports_discarded_events(s->sc, BT_TRUE, BT_TRUE);
	bt_stream_class_set_supports_discarded_packets(s->sc, BT_TRUE,
						       BT_TRUE);
	pc = bt_field_class_structure_create(tc);
	cx = bt_field_class_structure_create(tc);
	if (!pc || !cx ||
	    struct_append(pc, cpu_id.name, int_class(tc, &cpu_id)) ||
	    bt_stream_class_set_packet_context_field_class(s->sc, pc) ||
	    struct_append(cx, tid.name, int_class(tc, &tid)) ||
	    struct_append(cx, "procname", bt_field_class_string_create(tc)) ||
	    bt_stream_class_set_event_common_context_field_class(s->sc, cx))
		goto end;
	for (i = 0; i < C_N; i++) {
		s->ec[i] = bt_event_class_create_with_id(s->sc, classes[i].id);
		pl = bt_field_class_structure_create(tc);
		if (!s->ec[i] || !pl ||
		    bt_event_class_set_name(s->ec[i], classes[i].name))
			goto end;
		for (j = 0; j < MAX_FIELDS && classes[i].f[j].name; j++)
			if (struct_append(pl, classes[i].f[j].name,
					  int_class(tc, &classes[i].f[j])))
				goto end;
		if (bt_event_class_set_payload_field_class(s->ec[i], pl))
			goto end;
		BT_FIELD_CLASS_PUT_REF_AND_RESET(pl);
	}
	s->trace = bt_trace_create(tc);
	if (!s->trace)
		goto end;
	rc = 0;
end:
	bt_field_class_put_ref(pl);
	bt_field_class_put_ref(pc);
	bt_field_class_put_ref(cx);
	bt_clock_class_put_ref(cc);
	bt_trace_class_put_ref(tc);
	return rc;
}

static int source_trace(struct synth_source *s)
{
	bt_trace *t = s->trace;
	uint8_t uuid[16];
	char name[32];
	unsigned i;

	for (i = 0; i < 16; i++)
		uuid[i] = (uint8_t)(0x5d ^ (s->seed >> (8 * (i % 8))) ^ (i * 7));
	bt_trace_set_uuid(t, uuid);
	if (bt_trace_set_name(t, "synthetic") ||
	    bt_trace_set_environment_entry_string(t, "hostname", "synthetic") ||
	    bt_trace_set_environment_entry_string(t, "domain", "kernel") ||
	    bt_trace_set_environment_entry_string(t, "sysname", "Linux") ||
	    bt_trace_set_environment_entry_string(t, "kernel_release",
						  "6.1.192+") ||
	    bt_trace_set_environment_entry_string(t, "kernel_version",
						  "#1 SMP PREEMPT_DYNAMIC (synthetic)") ||
	    bt_trace_set_environment_entry_string(t, "tracer_name",
						  "mmureplay-synth") ||
	    bt_trace_set_environment_entry_integer(t, "tracer_major", 2) ||
	    bt_trace_set_environment_entry_integer(t, "tracer_minor", 13) ||
	    bt_trace_set_environment_entry_integer(t, "tracer_patchlevel", 9) ||
	    bt_trace_set_environment_entry_string(t, "trace_buffering_scheme",
						  "global") ||
	    bt_trace_set_environment_entry_string(t, "trace_name",
						  "synthetic") ||
	    bt_trace_set_environment_entry_string(t, "trace_creation_datetime",
						  "20260101T000000+0000") ||
	    bt_trace_set_environment_entry_integer(t, "synthetic", 1) ||
	    bt_trace_set_environment_entry_integer(t, "synthetic_seed",
						   (int64_t)s->seed))
		return -1;
	s->nstreams = s->m->ncpus;
	s->streams = calloc(s->nstreams, sizeof(*s->streams));
	if (!s->streams)
		return -1;
	for (i = 0; i < s->nstreams; i++) {
		s->streams[i].stream = bt_stream_create_with_id(s->sc, t, i);
		snprintf(name, sizeof(name), "synthetic_%u", i);
		if (!s->streams[i].stream ||
		    bt_stream_set_name(s->streams[i].stream, name))
			return -1;
	}
	return 0;
}

static bt_component_class_initialize_method_status
source_initialize(bt_self_component_source *self,
		  bt_self_component_source_configuration *config,
		  const bt_value *params, void *data)
{
	bt_component_class_initialize_method_status st =
		BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	struct synth_source *s = data;

	(void)config;
	(void)params;
	if (source_classes(s, bt_self_component_source_as_self_component(
				   self)) < 0 ||
	    source_trace(s) < 0)
		goto end;
	if (bt_self_component_source_add_output_port(self, "out", NULL, NULL)
	    != BT_SELF_COMPONENT_ADD_PORT_STATUS_OK)
		goto end;
	bt_self_component_set_data(
		bt_self_component_source_as_self_component(self), s);
	st = BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;
end:
	return st;
}

static bt_message_iterator_class_initialize_method_status
iter_initialize(bt_self_message_iterator *it,
		bt_self_message_iterator_configuration *config,
		bt_self_component_port_output *port)
{
	(void)config;
	(void)port;
	bt_self_message_iterator_set_data(it,
		bt_self_component_get_data(
			bt_self_message_iterator_borrow_component(it)));
	return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_OK;
}

static bt_message *packet_open(struct synth_source *s,
			       bt_self_message_iterator *it, unsigned i,
			       uint64_t ts)
{
	struct synth_stream *ss = &s->streams[i];

	ss->packet = bt_packet_create(ss->stream);
	if (!ss->packet)
		return NULL;
	bt_field_integer_unsigned_set_value(
		bt_field_structure_borrow_member_field_by_index(
			bt_packet_borrow_context_field(ss->packet), 0), i);
	ss->packet_events = 0;
	return bt_message_packet_beginning_create_with_default_clock_snapshot(
		it, ss->packet, ts);
}

static bt_message *packet_close(struct synth_source *s,
				bt_self_message_iterator *it, unsigned i)
{
	struct synth_stream *ss = &s->streams[i];
	bt_message *msg =
		bt_message_packet_end_create_with_default_clock_snapshot(
			it, ss->packet, ss->last_ts);

	BT_PACKET_PUT_REF_AND_RESET(ss->packet);
	return msg;
}

static bt_message *event_message(struct synth_source *s,
				 bt_self_message_iterator *it,
				 const struct rec *r)
{
	const struct thread *th = &s->m->threads[r->thread];
	const struct class_spec *c = &classes[r->cls];
	struct synth_stream *ss = &s->streams[th->cpu];
	bt_message *msg;
	bt_event *ev;
	bt_field *pl, *cx, *f;
	unsigned j;

	msg = bt_message_event_create_with_packet_and_default_clock_snapshot(
		it, s->ec[r->cls], ss->packet, r->ts);
	if (!msg)
		return NULL;
	ev = bt_message_event_borrow_event(msg);
	cx = bt_event_borrow_common_context_field(ev);
	bt_field_integer_signed_set_value(
		bt_field_structure_borrow_member_field_by_index(cx, 0),
		th->tid);
	if (bt_field_string_set_value(
		    bt_field_structure_borrow_member_field_by_index(cx, 1),
		    th->procname)) {
		bt_message_put_ref(msg);
		return NULL;
	}
	pl = bt_event_borrow_payload_field(ev);
	for (j = 0; j < MAX_FIELDS && c->f[j].name; j++) {
		f = bt_field_structure_borrow_member_field_by_index(pl, j);
		if (c->f[j].sign == F_S)
			bt_field_integer_signed_set_value(f,
							  (int64_t)r->v[j]);
		else
			bt_field_integer_unsigned_set_value(f, r->v[j]);
	}
	ss->packet_events++;
	ss->last_ts = r->ts;
	return msg;
}

/*
 * Up to capacity messages: the streams' beginnings, then the model's
 * events with their packets (a packet per PACKET_EVENTS events of a
 * stream), then each stream's last packet end and its end.
 */
static bt_message_iterator_class_next_method_status
iter_next(bt_self_message_iterator *it, bt_message_array_const msgs,
	  uint64_t capacity, uint64_t *count)
{
	struct synth_source *s = bt_self_message_iterator_get_data(it);
	struct model *m = s->m;
	bt_message_iterator_class_next_method_status st =
		BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_ERROR;
	const struct rec *r;
	struct synth_stream *ss;
	bt_message *msg;
	uint64_t n = 0;

	if (s->ended)
		return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_END;
	while (!s->began && n < capacity) {
		msg = bt_message_stream_beginning_create(
			it, s->streams[s->end_stream].stream);
		if (!msg)
			goto end;
		msgs[n++] = msg;
		if (++s->end_stream == s->nstreams) {
			s->began = 1;
			s->end_stream = 0;
		}
	}
	while (!s->ending && n + 3 <= capacity) {
		if (m->qhead == m->qlen) {
			m->qhead = m->qlen = 0;
			if (m->done) {
				s->ending = 1;
				break;
			}
			if (model_step(m) != MODEL_OK)
				goto end;
			continue;
		}
		r = &m->q[m->qhead];
		ss = &s->streams[m->threads[r->thread].cpu];
		if (ss->packet && ss->packet_events >= PACKET_EVENTS) {
			msg = packet_close(s, it, m->threads[r->thread].cpu);
			if (!msg)
				goto end;
			msgs[n++] = msg;
		}
		if (!ss->packet) {
			msg = packet_open(s, it, m->threads[r->thread].cpu,
					  r->ts);
			if (!msg)
				goto end;
			msgs[n++] = msg;
		}
		msg = event_message(s, it, r);
		if (!msg)
			goto end;
		msgs[n++] = msg;
		m->qhead++;
	}
	while (s->ending && n + 2 <= capacity && s->end_stream < s->nstreams) {
		ss = &s->streams[s->end_stream];
		if (ss->packet) {
			msg = packet_close(s, it, s->end_stream);
			if (!msg)
				goto end;
			msgs[n++] = msg;
		}
		msg = bt_message_stream_end_create(it, ss->stream);
		if (!msg)
			goto end;
		msgs[n++] = msg;
		s->end_stream++;
	}
	if (s->ending && s->end_stream == s->nstreams)
		s->ended = 1;
	st = BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_OK;
end:
	*count = n;
	if (st != BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_OK) {
		while (n)
			bt_message_put_ref(msgs[--n]);
		*count = 0;
	}
	return st;
}

static void source_release(struct synth_source *s)
{
	unsigned i;

	for (i = 0; s->streams && i < s->nstreams; i++) {
		bt_packet_put_ref(s->streams[i].packet);
		bt_stream_put_ref(s->streams[i].stream);
	}
	free(s->streams);
	for (i = 0; i < C_N; i++)
		bt_event_class_put_ref(s->ec[i]);
	bt_stream_class_put_ref(s->sc);
	bt_trace_put_ref(s->trace);
	memset(s, 0, sizeof(*s));
}

static void source_finalize(bt_self_component_source *self)
{
	struct synth_source *s = bt_self_component_get_data(
		bt_self_component_source_as_self_component(self));

	if (s)
		source_release(s);
}

/* ---------------------------------------------------------------------
 * The graph: this source -> sink.ctf.fs.
 */
static char *bt_error_text(void)
{
	const bt_error *err = bt_current_thread_take_error();
	const char *msg = "unknown babeltrace2 error";
	char *out, *nl;

	if (err && bt_error_get_cause_count(err))
		msg = bt_error_cause_get_message(
			bt_error_borrow_cause_by_index(err, 0));
	out = strdup(msg);
	for (nl = out; nl && *nl; nl++)
		if (*nl == '\n')
			*nl = ' ';
	if (err)
		bt_error_release(err);
	return out;
}

static enum synth_status graph_write(struct model *m, uint64_t seed,
				     const char *trace_dir)
{
	enum synth_status st = SYNTH_ERR_INTERNAL;
	struct synth_source src = { .m = m, .seed = seed };
	bt_message_iterator_class *ic = NULL;
	bt_component_class_source *cls = NULL;
	const bt_plugin *ctf = NULL;
	const bt_component_class_sink *sink_cls;
	const bt_component_source *so;
	const bt_component_sink *si;
	bt_value *params = NULL;
	bt_graph *g = NULL;
	bt_graph_run_status rs;
	char *why;

	if (bt_plugin_find("ctf", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE,
			   &ctf) != BT_PLUGIN_FIND_STATUS_OK) {
		fprintf(stderr, "synth: babeltrace2 plugin 'ctf' not found "
			"(install babeltrace2)\n");
		goto end;
	}
	sink_cls = bt_plugin_borrow_sink_component_class_by_name_const(ctf,
								       "fs");
	ic = bt_message_iterator_class_create(iter_next);
	if (!sink_cls || !ic ||
	    bt_message_iterator_class_set_initialize_method(ic,
			iter_initialize) !=
	    BT_MESSAGE_ITERATOR_CLASS_SET_METHOD_STATUS_OK)
		goto end;
	cls = bt_component_class_source_create("synthetic", ic);
	if (!cls ||
	    bt_component_class_source_set_initialize_method(cls,
			source_initialize) !=
	    BT_COMPONENT_CLASS_SET_METHOD_STATUS_OK ||
	    bt_component_class_source_set_finalize_method(cls,
			source_finalize) !=
	    BT_COMPONENT_CLASS_SET_METHOD_STATUS_OK)
		goto end;
	params = bt_value_map_create();
	if (!params ||
	    bt_value_map_insert_string_entry(params, "path", trace_dir) ||
	    bt_value_map_insert_bool_entry(params, "assume-single-trace",
					   BT_TRUE) ||
	    bt_value_map_insert_bool_entry(params, "quiet", BT_TRUE))
		goto end;
	g = bt_graph_create(0);
	if (!g ||
	    bt_graph_add_source_component_with_initialize_method_data(g, cls,
			"synthetic", NULL, &src, BT_LOGGING_LEVEL_WARNING, &so)
	    != BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
	    bt_graph_add_sink_component(g, sink_cls, "ctf-fs", params,
					BT_LOGGING_LEVEL_WARNING, &si) !=
	    BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
	    bt_graph_connect_ports(g,
		bt_component_source_borrow_output_port_by_index_const(so, 0),
		bt_component_sink_borrow_input_port_by_index_const(si, 0),
		NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK)
		goto fail;
	do {
		rs = bt_graph_run(g);
		if (rs == BT_GRAPH_RUN_STATUS_AGAIN)
			usleep(1000);
	} while (rs == BT_GRAPH_RUN_STATUS_AGAIN);
	if (rs != BT_GRAPH_RUN_STATUS_OK) {
		st = SYNTH_ERR_OUTPUT;
		goto fail;
	}
	st = SYNTH_OK;
	goto end;
fail:
	why = bt_error_text();
	fprintf(stderr, "synth: %s: cannot write the trace: %s\n", trace_dir,
		why);
	free(why);
end:
	bt_graph_put_ref(g);
	bt_value_put_ref(params);
	bt_component_class_source_put_ref(cls);
	bt_message_iterator_class_put_ref(ic);
	bt_plugin_put_ref(ctf);
	return st;
}

/* ---------------------------------------------------------------------
 * The manifest and the counts beside the trace (temp name + rename).
 */
static int file_commit(const char *dir, const char *name, const char *text)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	FILE *f;
	int rc = -1;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	snprintf(tmp, sizeof(tmp), "%s/.%s.tmp", dir, name);
	f = fopen(tmp, "w");
	if (!f)
		goto end;
	if (fputs(text, f) < 0) {
		fclose(f);
		goto end;
	}
	if (fclose(f) == 0 && rename(tmp, path) == 0)
		rc = 0;
end:
	if (rc < 0) {
		fprintf(stderr, "synth: %s: %s\n", path, strerror(errno));
		unlink(tmp);
	}
	return rc;
}

static int cmp_counts(const void *a, const void *b, void *arg)
{
	const uint64_t *c = arg;
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;

	if (c[x] != c[y])
		return c[x] < c[y] ? 1 : -1;
	return strcmp(classes[x].name, classes[y].name);
}

static int counts_write(const struct model *m, const char *dir)
{
	unsigned order[C_N], i;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int rc;

	if (!f)
		return -1;
	for (i = 0; i < C_N; i++)
		order[i] = i;
	qsort_r(order, C_N, sizeof(order[0]), cmp_counts,
		(void *)m->counts);
	/* The babeltrace2 CLI's counts, as tests/data/<fixture>/ has. */
	for (i = 0; i < C_N; i++)
		if (m->counts[order[i]])
			fprintf(f, "%7" PRIu64 " %s:\n", m->counts[order[i]],
				classes[order[i]].name);
	fclose(f);
	rc = file_commit(dir, "event-counts.txt", text);
	free(text);
	return rc;
}

static int manifest_write(const struct model *m, uint64_t seed,
			  const char *dir)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	int rc;

	if (!f)
		return -1;
	fprintf(f,
		"{\n"
		"  \"manifest_version\": 1,\n"
		"  \"hostname\": \"synthetic\",\n"
		"  \"kernel_release\": \"6.1.192+\",\n"
		"  \"kernel_version\": \"synthetic: bench/synth, no kernel ran\",\n"
		"  \"cpu\": { \"vendor\": \"AuthenticAMD\", "
		"\"model\": \"synthetic\", \"count\": %u },\n"
		"  \"kvm\": {\n"
		"    \"params\": {\n"
		"      \"kvm.eager_page_split\": \"Y\",\n"
		"      \"kvm.nx_huge_pages\": \"Y\",\n"
		"      \"kvm.nx_huge_pages_recovery_period_ms\": \"%d\",\n"
		"      \"kvm.nx_huge_pages_recovery_ratio\": \"%d\",\n"
		"      \"kvm.nx_huge_pages_recovery_read_lock\": \"N\",\n"
		"      \"kvm.nx_huge_pages_recovery_skip_dirty\": \"N\",\n"
		"      \"kvm.perm_upgrade_skip_zap\": \"N\",\n"
		"      \"kvm.tdp_mmu\": \"Y\",\n"
		"      \"kvm_amd.npt\": \"Y\"\n"
		"    }\n"
		"  },\n"
		"  \"vms\": [],\n"
		"  \"workload\": \"synthetic: bgsnapshot rounds, dirty logging, "
		"NX huge page recovery\",\n"
		"  \"trace\": {\n"
		"    \"kernel_events\": [\"kvm_*\"],\n"
		"    \"missing_events\": [],\n"
		"    \"ust\": false,\n"
		"    \"discarded_events\": 0\n"
		"  },\n"
		"  \"synthetic\": {\n"
		"    \"generator\": \"bench/synth\",\n"
		"    \"seed\": %" PRIu64 ",\n"
		"    \"vcpus\": %u,\n"
		"    \"target_events\": %" PRIu64 ",\n"
		"    \"events\": %" PRIu64 ",\n"
		"    \"guest_pages\": %" PRIu64 ",\n"
		"    \"snapshot_rounds\": %u\n"
		"  }\n"
		"}\n",
		m->ncpus, NX_PERIOD_MS, NX_RATIO, seed, m->vcpus, m->target,
		m->emitted, m->npages,
		m->round);
	fclose(f);
	rc = file_commit(dir, "manifest.json", text);
	free(text);
	return rc;
}

/* The partial trace of a failed run goes (its directory is flat). */
static void dir_remove(const char *dir)
{
	char path[PATH_MAX + 256];
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			unlink(path);
		}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* ---------------------------------------------------------------------
 * Command line.
 */
static void usage(FILE *f)
{
	fprintf(f,
		"usage: synth --events N --out DIR [--seed S] [--vcpus V]\n"
		"\n"
		"Writes a synthetic capture (no kernel ran): a CTF trace with\n"
		"the layout of a patched Linux 6.1 LTTng kernel capture\n"
		"(DIR/trace/kernel), DIR/manifest.json and DIR/event-counts.txt,\n"
		"made by a guest model (background snapshot rounds, dirty\n"
		"logging, NX huge page recovery) that keeps the kernel's\n"
		"rules, so that `mmureplay\n"
		"fidelity` passes on it.  Named synthetic in its environment\n"
		"(tracer_name mmureplay-synth, synthetic = 1), manifest and\n"
		"stream files.  The same seed gives the same events, counts\n"
		"and manifest (sink.ctf.fs draws the trace UUID itself).\n"
		"\n"
		"  --events N   about N events (the last episode is finished;\n"
		"               1000 .. 10000000000)\n"
		"  --seed S     model seed (default 1)\n"
		"  --vcpus V    vCPUs, one CPU stream each, plus one for the\n"
		"               VMM's threads (1 .. 64, default 4)\n"
		"  --out DIR    output directory (created; must not hold a\n"
		"               trace already)\n"
		"  --help       this text\n"
		"\n"
		"Prints the number of events written.  Exit status (as\n"
		"mmureplay's): 0 written, 1 bad command line, 4 DIR cannot be\n"
		"written (nothing is left half-written), 5 internal error.\n");
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s || *end || s[0] == '-' || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "events", required_argument, NULL, 'n' },
		{ "seed", required_argument, NULL, 's' },
		{ "vcpus", required_argument, NULL, 'v' },
		{ "out", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t events = 0, seed = 1, vcpus = 4;
	const char *out = NULL;
	char trace_dir[PATH_MAX], tmp_dir[PATH_MAX + 16], path[PATH_MAX + 16];
	enum synth_status st = SYNTH_ERR_USAGE;
	struct model m = { 0 };
	struct stat sb;
	int c;

	while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
		switch (c) {
		case 'n':
			if (parse_u64(optarg, 1000, 10000000000ULL, &events)) {
				fprintf(stderr, "synth: --events: %s: not an "
					"integer in 1000 .. 10000000000\n",
					optarg);
				return SYNTH_ERR_USAGE;
			}
			break;
		case 's':
			if (parse_u64(optarg, 0, UINT64_MAX, &seed)) {
				fprintf(stderr, "synth: --seed: %s: not an "
					"unsigned integer\n", optarg);
				return SYNTH_ERR_USAGE;
			}
			break;
		case 'v':
			if (parse_u64(optarg, 1, 64, &vcpus)) {
				fprintf(stderr, "synth: --vcpus: %s: not an "
					"integer in 1 .. 64\n", optarg);
				return SYNTH_ERR_USAGE;
			}
			break;
		case 'o':
			out = optarg;
			break;
		case 'h':
			usage(stdout);
			return SYNTH_OK;
		default:
			usage(stderr);
			return SYNTH_ERR_USAGE;
		}
	}
	if (!events || !out || optind != argc) {
		usage(stderr);
		return SYNTH_ERR_USAGE;
	}
	if (snprintf(trace_dir, sizeof(trace_dir), "%s/trace/kernel", out) >=
	    (int)sizeof(trace_dir)) {
		fprintf(stderr, "synth: %s: path too long\n", out);
		return SYNTH_ERR_USAGE;
	}
	snprintf(path, sizeof(path), "%s/metadata", trace_dir);
	if (stat(path, &sb) == 0) {
		fprintf(stderr, "synth: %s: a trace is already there\n", out);
		return SYNTH_ERR_OUTPUT;
	}
	/* Written under a temporary name, renamed when complete. */
	snprintf(tmp_dir, sizeof(tmp_dir), "%s/trace/.kernel.partial", out);
	dir_remove(tmp_dir);
	snprintf(path, sizeof(path), "%s/trace", out);
	if ((mkdir(out, 0777) < 0 && errno != EEXIST) ||
	    (mkdir(path, 0777) < 0 && errno != EEXIST)) {
		fprintf(stderr, "synth: %s: %s\n", path, strerror(errno));
		return SYNTH_ERR_OUTPUT;
	}
	st = SYNTH_ERR_INTERNAL;
	if (model_init(&m, events, seed, (unsigned)vcpus) != MODEL_OK) {
		fprintf(stderr, "synth: out of memory\n");
		goto end;
	}
	st = graph_write(&m, seed, tmp_dir);
	if (st != SYNTH_OK) {
		dir_remove(tmp_dir);
		goto end;
	}
	if (rename(tmp_dir, trace_dir) < 0) {
		fprintf(stderr, "synth: %s: %s\n", trace_dir, strerror(errno));
		dir_remove(tmp_dir);
		st = SYNTH_ERR_OUTPUT;
		goto end;
	}
	if (counts_write(&m, out) < 0 || manifest_write(&m, seed, out) < 0) {
		st = SYNTH_ERR_OUTPUT;
		goto end;
	}
	printf("%" PRIu64 "\n", m.emitted);
end:
	model_free(&m);
	return st;
}
