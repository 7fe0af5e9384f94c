/*
 * synth: the guest model (see synth.c for what it makes and why).
 *
 * Episodes become events here, in the kernel's order for their paths,
 * with no hardware encoding of their own: an access is a kind (read,
 * write, fetch), a leaf a set of attributes, a table a page frame, and
 * the model's ISA (synth_isa.c) makes the exit, the fault code and the
 * SPTE value of each.  Every decision (what the guest does, where, on
 * which vCPU, how long each step takes) comes from the seeded generator
 * and the model's own state, never from an encoded value: one seed gives
 * one sequence of events whatever the ISA.
 */
#include "synth.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* NX huge pages: NX_RATIO, NX_PERIOD_MS in synth.h. */
#define NX_PERIOD_NS (NX_PERIOD_MS * 1000000ULL)
#define PFN_NX_BASE 0x4000000ULL
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

/* A 4K page of the first slot: its leaf, if any. */
enum page_state { PG_NONE = 0, PG_RO, PG_W, PG_WD, PG_WP };

/*
 * The leaf of each state:
 *   PG_RO  a read fault on a userfaultfd-protected page: no write
 *          permission anywhere (the host PTE is write-protected);
 *   PG_W   writable; PG_WD written (a write fault, or the fast path);
 *   PG_WP  write-protected for dirty logging: the fast path may restore
 *          W.
 */
static const unsigned page_leaf[] = {
	[PG_RO] = 0,
	[PG_W] = LEAF_W | LEAF_MMU_W,
	[PG_WD] = LEAF_W | LEAF_D | LEAF_MMU_W,
	[PG_WP] = LEAF_MMU_W,
};

/* A 2M region of the NX slot. */
enum nx_state { NX_EMPTY = 0, NX_HUGE, NX_SPLIT };

struct nx_region {
	unsigned char state;            /* enum nx_state */
	uint64_t table_pfn;             /* NX_SPLIT: its L1 table */
	uint64_t leaves[8];             /* NX_SPLIT: present 4K leaves */
};

enum model_step_id {
	ST_SETUP = 0, ST_ROUND_WP, ST_ROUND_WP_ZAP, ST_ROUND_PAGE, ST_DIRTY_ON,
	ST_DIRTY_WRPROT, ST_DIRTY_WRITE,
};

struct model {
	const struct synth_isa *isa;
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

static uint64_t leaf_spte(const struct model *m, uint64_t gfn,
			  enum page_state s)
{
	return m->isa->leaf_spte(PFN_BASE + gfn, page_leaf[s]);
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
 * The TDP fault exit and kvm_page_fault of vCPU v at gfn, an access a at
 * rip that hit the entry hit (0: none present): the first half of every
 * fault; gen_install() or the fast path (gen_dirty_write()) ends it.
 * Returns the traced error_code.
 */
static uint64_t gen_fault_begin(struct model *m, unsigned v, uint64_t gfn,
				uint64_t rip, enum synth_access a,
				uint64_t hit)
{
	const struct synth_isa *isa = m->isa;
	uint64_t gpa = gfn << 12, code = isa->fault_code(a, hit);
	uint64_t info1, info2;

	isa->fault_exit_info(code, gpa, &info1, &info2);
	EMIT(m, v, C_EXIT, isa->exit_npf, rip, isa->isa, info1, info2, 0, 0,
	     v);
	EMIT(m, v, C_PAGE_FAULT, v, rip, gpa, code);
	return code;
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
		     m->isa->table_spte(m->next_table_pfn++), 4, 0);
		m->l4_linked = 1;
	}
	if (!m->l3_child[g1 & 511]) {
		m->l3_child[g1 & 511] = m->next_table_pfn++;
		EMIT(m, v, C_SPTE_CHANGED, g1 << 18, 0,
		     m->isa->table_spte(m->l3_child[g1 & 511]), 3, 0);
	}
}

/* The slow path's walk: tables linked where none was, then the leaf. */
static void gen_install(struct model *m, unsigned v, uint64_t gfn,
		       enum page_state s)
{
	uint64_t spte = leaf_spte(m, gfn, s);

	EMIT(m, v, C_SPTE_REQ, gfn, PFN_BASE + gfn, 1);
	gen_upper(m, v, gfn);
	if (!m->l2_linked[gfn >> 9]) {
		EMIT(m, v, C_SPTE_CHANGED, gfn & ~511ULL, 0,
		     m->isa->table_spte(TABLE_PFN_BASE + (gfn >> 9)), 2, 0);
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
	gen_fault_begin(m, v, gfn, GUEST_RIP, write ? SA_WRITE : SA_READ, 0);
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
		     leaf_spte(m, g, (enum page_state)m->page[g]), 0, 1, 0);
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
	EMIT(m, v, C_EXIT, m->isa->exit_intr, GUEST_RIP, m->isa->isa, 0, 0,
	     m->isa->intr_info, 0, v);
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
	     leaf_spte(m, g, (enum page_state)m->page[g]),
	     leaf_spte(m, g, PG_WP), 1, 0);
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
	uint64_t code;

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
		 * spte_changed event); its error_code is the PFERR value
		 * KVM built. */
		code = gen_fault_begin(m, v, gfn, GUEST_RIP, SA_WRITE,
				       leaf_spte(m, gfn, s));
		EMIT(m, v, C_FAST_PF, v, gfn << 12, m->isa->fault_pferr(code),
		     sptep_of(gfn), leaf_spte(m, gfn, s),
		     leaf_spte(m, gfn, PG_WD), 1);
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
static uint64_t nx_leaf_spte(const struct model *m, uint64_t gfn)
{
	return m->isa->leaf_spte(nx_pfn(gfn), page_leaf[PG_WD]);
}

/* A 2M leaf of the NX slot: mapped non-executable (nx_huge_pages=Y). */
static uint64_t nx_huge_spte(const struct model *m, uint64_t gfn2m)
{
	return m->isa->leaf_spte(nx_pfn(gfn2m),
				 page_leaf[PG_WD] | LEAF_LARGE | LEAF_NX);
}

/* Link an L1 table under the region's L2 entry: a new shadow page,
 * accounted as an NX huge page when an exec fault made it. */
static void gen_nx_link(struct model *m, unsigned v, unsigned ri)
{
	struct nx_region *r = &m->nx[ri];
	uint64_t g2 = m->nx_base + (uint64_t)ri * 512;

	r->table_pfn = m->next_table_pfn++;
	EMIT(m, v, C_GET_PAGE, g2, SP_ROLE(1), 0, 0, 1);
	EMIT(m, v, C_SPTE_CHANGED, g2, 0, m->isa->table_spte(r->table_pfn),
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

	EMIT(m, v, C_SPTE_CHANGED, gfn, 0, nx_leaf_spte(m, gfn), 1, 0);
	EMIT(m, v, C_SET_SPTE, gfn, nx_leaf_spte(m, gfn),
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

	if ((r->state == NX_HUGE && !fetch) ||
	    (r->state == NX_SPLIT && nx_leaf_has(r, i)))
		return;
	gen_fault_begin(m, v, gfn, gfn << 12, fetch ? SA_FETCH : SA_READ,
			r->state == NX_HUGE ? nx_huge_spte(m, g2) : 0);
	if (r->state == NX_EMPTY && !fetch) {
		EMIT(m, v, C_SPTE_REQ, g2, nx_pfn(g2), 2);
		gen_upper(m, v, g2);
		EMIT(m, v, C_SPTE_CHANGED, g2, 0, nx_huge_spte(m, g2), 2, 0);
		EMIT(m, v, C_SET_SPTE, g2, nx_huge_spte(m, g2),
		     (m->l3_child[(g2 >> 18) & 511] << 12) +
		     ((g2 >> 9) & 511) * 8, 2);
		r->state = NX_HUGE;
		gen_entry(m, v);
		return;
	}
	/* The goal level as kvm_mmu_spte_requested traces it, before
	 * disallowed_hugepage_adjust(): a fetch's is 4K (the NX
	 * workaround), a read's the host's 2M even where a split table
	 * makes it map 4K. */
	EMIT(m, v, C_SPTE_REQ, gfn, nx_pfn(gfn), fetch ? 1 : 2);
	if (r->state == NX_HUGE) {
		EMIT(m, v, C_SPTE_CHANGED, g2, nx_huge_spte(m, g2),
		     REMOVED_SPTE, 2, 0);
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
 * remote flush for the batch.  The worker then sleeps a whole period
 * from the batch's end (kvm_nx_lpage_recovery_worker() takes its start
 * time after kvm_recover_nx_lpages() returns), never less: a schedule of
 * fixed wake-up times made a late batch's next one come early, which
 * the replay rightly refuses (recovery_period).
 */
static void gen_nx_batch(struct model *m)
{
	unsigned th = m->th_nx, k, i, ri;
	uint64_t to_zap = (m->nx_len + NX_RATIO - 1) / NX_RATIO, zapped = 0;
	uint64_t g2, leaves = 0;
	struct nx_region *r;

	if (!m->nx_len) {
		m->nx_next_ts = m->ts + NX_PERIOD_NS;
		return;
	}
	EMIT(m, th, C_NX_BEGIN, m->nx_len, to_zap, NX_RATIO, 0);
	for (k = 0; k < to_zap; k++) {
		ri = m->nx_fifo[m->nx_head];
		m->nx_head = (m->nx_head + 1) % m->nx_regions;
		m->nx_len--;
		r = &m->nx[ri];
		g2 = m->nx_base + (uint64_t)ri * 512;
		EMIT(m, th, C_SPTE_CHANGED, g2,
		     m->isa->table_spte(r->table_pfn), 0, 2, 0);
		EMIT(m, th, C_PREP_ZAP, g2, SP_ROLE(1), 0, 0);
		for (i = 0; i < 512; i++) {
			if (!nx_leaf_has(r, i))
				continue;
			EMIT(m, th, C_SPTE_CHANGED, g2 + i,
			     nx_leaf_spte(m, g2 + i), REMOVED_SPTE, 1, 0);
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
	m->nx_next_ts = m->ts + NX_PERIOD_NS;
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
		gen_fault_begin(m, v, p, GUEST_RIP, SA_WRITE,
				m->page[p] != PG_NONE ?
				leaf_spte(m, p, (enum page_state)m->page[p]) :
				0);
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
	/* kvm_mmu_load(): vCPU 0 allocates the root before it first runs
	 * (the analyzer takes a capture without it as one that began
	 * while the VM ran). */
	EMIT(m, 0, C_GET_PAGE, 0, SP_ROLE(4), 0, 0, 1);
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

/* ---------------------------------------------------------------------
 * The model's face (synth.h).
 */
enum model_status model_new(struct model **mp, uint64_t target,
			    uint64_t seed, unsigned vcpus,
			    const struct synth_isa *isa)
{
	struct model *m = calloc(1, sizeof(*m));
	unsigned i;

	*mp = m;
	if (!m)
		return MODEL_NOMEM;
	m->isa = isa;
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

void model_free(struct model *m)
{
	if (!m)
		return;
	free(m->page);
	free(m->l2_linked);
	free(m->threads);
	free(m->nx);
	free(m->nx_fifo);
	free(m->dirty);
	free(m->q);
	free(m);
}

void model_view(const struct model *m, struct model_view *v)
{
	v->isa = m->isa;
	v->vcpus = m->vcpus;
	v->ncpus = m->ncpus;
	v->threads = m->threads;
	v->target = m->target;
	v->emitted = m->emitted;
	v->npages = m->npages;
	v->rounds = m->round;
	v->counts = m->counts;
}

/* The queue's next event, making the next episode's when it is empty. */
int model_next(struct model *m, const struct rec **r)
{
	while (m->qhead == m->qlen) {
		m->qhead = m->qlen = 0;
		if (m->done)
			return 0;
		if (model_step(m) != MODEL_OK)
			return -1;
	}
	*r = &m->q[m->qhead++];
	return 1;
}
