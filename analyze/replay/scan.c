/*
 * First pass of the replay (see scan.h).
 */
#include "replay/scan.h"

#include "model/tdp.h"
#include "util/alloc.h"
#include "util/ptrmap.h"

#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>

/* Per-thread state of the pass. */
struct scan_thread {
	int in_madvise;                 /* inside madvise(2) */
	int in_uffd_wp;                 /* inside UFFDIO_WRITEPROTECT */
	int in_mprotect;                /* inside mprotect(2) ... */
	uint64_t mprotect_prot;         /* ... with this prot */
	int in_window;
	uint64_t w_seq, hs, he, gfirst;
	int64_t olo, ohi;               /* the slot offset's bounds */
	int64_t w_zaps;
	size_t w_idx;                   /* index in windows[] */
	int64_t w_ts;                   /* its start */
	int w_held;                     /* its first change under the lock
					 * was seen */
	int in_fault;                   /* from its page fault to its entry */
	int in_setregion;               /* inside KVM_SET_USER_MEMORY_REGION */
	int setregion_swept;
	uint64_t setregion_seq;         /* its entry */
	uint64_t setregion_first;       /* its first SPTE change; 0: none */
};

/*
 * An invalidation window, one 64-bit word: the seq of its start event
 * above the low 8 bits, flags in them.  A window lives until the pass
 * ends (a refault long after it closes still decides it), so they are
 * as many as the capture's invalidations: 6.5 M on a 100 M-event capture,
 * 400 MB as a struct of counters, 50 MB as words.  Only whether a
 * refault came back as upgraded or not was ever asked, not how many.
 */
#define W_MEASURED      0x01u   /* the kernel said (patched events) */
#define W_MEASURED_UP   0x02u   /* ... that it was a permission upgrade */
#define W_BY_SYSCALL    0x04u   /* its syscall said (mprotect, madvise) */
#define W_SYSCALL_UP    0x08u   /* ... an upgrade */
#define W_SAME          0x10u   /* a refault as upgraded */
#define W_DIFFER        0x20u   /* a refault not */
#define W_ZAPPED        0x40u   /* it zapped a leaf */
#define W_UFFD_WP       0x80u   /* inside UFFDIO_WRITEPROTECT */
#define W_SEQ_SHIFT     8
#define W_SEQ(w)        ((w) >> W_SEQ_SHIFT)

struct scan_pass {
	const struct spte_format *fmt;
	struct scan *out;
	struct ptrmap threads;
	uint64_t *windows;              /* W_* words */
	size_t nwindows, capwindows;
	struct tdp pending;             /* gfn -> zapped SPTE (masked) */
	struct tdp pending_win;         /* gfn -> window index + 1 */
	int upgrade_cause;              /* rule upgrade_cause (scan_run()) */
	int dirty_on;
	uint64_t dirty_from;
	/* The first SPTE change of the ioctl that turned it on (0: none
	 * traced): the flags applied right after the memslot swap. */
	uint64_t dirty_seen_from;
	uint64_t setregion_last;        /* the last one's entry; 0: none */
	/* The inference from the MMU events alone (dirty_sweep_note()):
	 * on since sweep_from, turned on by thread sweep_tid; the
	 * intervals found, used when the capture has no syscall. */
	int sweep_rule;                 /* rule dirty_sweep (scan_run()) */
	int sweep_on;
	uint64_t sweep_from;
	int32_t sweep_tid;
	struct scan_interval *swept;
	size_t nswept, capswept;
	/* Windows' start to first change under mmu_lock (keep_hold_ns):
	 * window_held()'s buckets. */
	uint32_t *holds;
	int64_t nholds;
	struct scan_thread *last_thread;        /* thread_get()'s last answer */
	int32_t last_tid;
};


/*
 * The spans of keep_hold_ns: 100 ns buckets to 1 ms, then 10 us buckets
 * to 100 ms; the last holds that long or longer.
 */
#define HOLD_FINE_NS 100
#define HOLD_FINE 10000
#define HOLD_COARSE_NS 10000
#define HOLD_BUCKETS (HOLD_FINE + 9900)

/* Window t's first change under mmu_lock, at ts (see keep_hold_ns):
 * counted for a range within one 2 MiB block (its walk meets one table
 * at most). */
static void window_held(struct scan_pass *p, struct scan_thread *t,
			int64_t ts)
{
	int64_t span, b;

	if (!t->in_window || t->w_held)
		return;
	t->w_held = 1;
	if (!scan_one_block(t->hs, t->he))
		return;
	span = ts > t->w_ts ? ts - t->w_ts : 0;
	b = span < (int64_t)HOLD_FINE * HOLD_FINE_NS ? span / HOLD_FINE_NS :
		HOLD_FINE + (span - (int64_t)HOLD_FINE * HOLD_FINE_NS) /
		HOLD_COARSE_NS;
	p->holds[b < HOLD_BUCKETS ? b : HOLD_BUCKETS - 1]++;
	p->nholds++;
}

/* Returns the 99th percentile of the holds (keep_hold_ns), to the end
 * of its bucket; 0: none. */
static int64_t holds_p99(const struct scan_pass *p)
{
	int64_t seen = 0;
	size_t i;

	for (i = 0; i < HOLD_BUCKETS && p->nholds; i++) {
		seen += p->holds[i];
		if (100 * seen < 99 * p->nholds)
			continue;
		return i < HOLD_FINE ? ((int64_t)i + 1) * HOLD_FINE_NS :
			(int64_t)HOLD_FINE * HOLD_FINE_NS +
			((int64_t)(i - HOLD_FINE) + 1) * HOLD_COARSE_NS;
	}
	return 0;
}

/* Appends [from, to) to the intervals v[0..*n).  0, or -1: no memory. */
static int interval_add(struct scan_interval **v, size_t *n, size_t *cap,
			uint64_t from, uint64_t to)
{
	if (ALLOC_GROW(*v, *n + 1, *cap))
		return -1;
	(*v)[*n].from_seq = (*v)[*n].seen_from = from;
	(*v)[(*n)++].to_seq = to;
	(*v)[*n - 1].seen_to = to;
	return 0;
}

static struct scan_thread *thread_get(struct scan_pass *p, int32_t tid)
{
	struct scan_thread *t;

	/* Runs of events come from one thread: ask the map once a run. */
	if (p->last_thread && p->last_tid == tid)
		return p->last_thread;
	t = ptrmap_get(&p->threads, (uint64_t)tid);
	if (t) {
		p->last_tid = tid;
		p->last_thread = t;
		return t;
	}
	t = calloc(1, sizeof(*t));
	if (t && ptrmap_put(&p->threads, (uint64_t)tid, t) < 0) {
		free(t);
		t = NULL;
	}
	return t;
}

/* The SPTE bits that a permission upgrade would leave unchanged. */
static uint64_t spte_identity(const struct spte_format *f, uint64_t s)
{
	return s & ~(f->accessed | f->dirty);
}

/*
 * A leaf zapped by an invalidation (old, A/D bits masked) came back at
 * the same page with no permission less (write, exec, user): what a
 * pure upgrade gives.  6.1 refaults a read-only leaf as it was; 6.12
 * maps it writable again once the host page is (a read fault on a
 * writable host page), where a restriction's refault has fewer.
 */
static int refault_upgraded(const struct spte_format *f, uint64_t old,
			    uint64_t new)
{
	return spte_pfn(f, old) == spte_pfn(f, new) &&
		(!spte_writable(f, old) || spte_writable(f, new)) &&
		(!spte_executable(f, old) || spte_executable(f, new)) &&
		(!(old & f->user) || (new & f->user));
}

static void window_close(struct scan_pass *p, struct scan_thread *t)
{
	if (!t->in_window)
		return;
	t->in_window = 0;
	if (t->w_zaps)
		slots_infer(&p->out->slots, t->olo, t->ohi, t->gfirst);
}

/*
 * Dirty logging from the MMU events alone, for a capture that recorded
 * no syscall (a tracefs text dump of the kvm and kvmmmu events only):
 * the stock inference's KVM_SET_USER_MEMORY_REGION is not there, but
 * what it does is.  Turning logging on, kvm_mmu_slot_apply_flags()
 * write-protects the slot's leaves (same pfn, writable -> not) and, with
 * eager_page_split, splits its huge leaves into tables in one change
 * each, in the ioctl's thread: outside any fault.
 * No other path changes a present leaf that way there (a fault's split
 * is inside the fault; mprotect, KSM and reclaim come through the
 * notifier, which zaps leaves; reading the log write-protects again
 * while it is on).  Turning it off, kvm_mmu_zap_collapsible_sptes()
 * zaps, in the same kind of ioctl, the tables that could map huge: a
 * present table entry cleared outside a fault by the thread that turned
 * it on (the NX recovery worker clears such entries too, but in a thread of
 * its own; a memslot's deletion or the VM's teardown, by that thread,
 * end the logging as well).  Global, as the stock inference is: which
 * slot is not told.  Rule dirty_sweep.
 */
static int dirty_sweep_note(struct scan_pass *p, const struct scan_thread *t,
			    const struct model_event *e)
{
	const struct spte_format *f = p->fmt;
	uint64_t old = e->u.spte.old_spte, new = e->u.spte.new_spte;
	int level = e->u.spte.level;

	/* An invalidation's window does not matter: it zaps leaves (a
	 * stock window has no end event, so a VMM thread that once
	 * invalidated would otherwise never count again). */
	if (!p->sweep_rule || t->in_fault || !spte_present(f, old))
		return 0;
	if (!p->sweep_on) {
		if (!spte_present(f, new) ||
		    !((spte_leaf(f, old, level) && spte_writable(f, old) &&
		       !spte_writable(f, new) &&
		       spte_pfn(f, old) == spte_pfn(f, new)) ||
		      (level > TDP_LEVEL_4K &&
		       spte_present_leaf(f, old, level) &&
		       !spte_leaf(f, new, level))))
			return 0;
		p->sweep_on = 1;
		p->sweep_from = e->seq;
		p->sweep_tid = e->tid;
		return 0;
	}
	if (e->tid != p->sweep_tid || level == TDP_LEVEL_4K ||
	    spte_leaf(f, old, level) || spte_present(f, new))
		return 0;
	p->sweep_on = 0;
	return interval_add(&p->swept, &p->nswept, &p->capswept,
			    p->sweep_from, e->seq);
}

static int on_spte(struct scan_pass *p, struct scan_thread *t,
		   const struct model_event *e)
{
	const struct spte_format *f = p->fmt;
	uint64_t old = e->u.spte.old_spte, new = e->u.spte.new_spte;
	uint64_t gfn = e->u.spte.gfn;
	int level = e->u.spte.level, as = e->u.spte.as_id;
	int64_t span, lo, hi;
	uint64_t w;

	if (dirty_sweep_note(p, t, e) < 0)
		return -1;
	if (t->in_setregion && !t->setregion_first)
		t->setregion_first = e->seq;
	if (t->in_setregion && spte_present(f, old) && spte_present(f, new) &&
	    ((spte_writable(f, old) && !spte_writable(f, new)) ||
	     (spte_present_leaf(f, old, level) && !spte_leaf(f, new, level))))
		t->setregion_swept = 1;
	if (t->in_fault && level > 1 && spte_present_leaf(f, old, level) &&
	    spte_present(f, new) && !spte_leaf(f, new, level))
		p->out->fault_splits_in_place++;
	if (level > TDP_LEVEL_4K && (spte_present_leaf(f, old, level) ||
				     spte_present_leaf(f, new, level)))
		p->out->huge_leaves = 1;
	if (spte_leaf_zapped(f, old, new, level)) {
		if (!t->in_window)
			return 0;
		window_held(p, t, e->ts);
		/*
		 * The slot's offset (hva - gpa) as the leaf bounds it: a 4K
		 * page lies inside the window.  A huge leaf is zapped whole
		 * when the window meets any part of it, but KVM maps one only
		 * where hva and gpa agree modulo its size, so the offset is a
		 * multiple of it: the window's start rounded down, less the
		 * leaf's gpa, is the offset whether the leaf overhangs the
		 * start or not (and the same at the end).
		 */
		span = (int64_t)tdp_level_pages(level) << 12;
		lo = (int64_t)(t->hs - (gfn << 12));
		hi = (int64_t)(t->he - ((gfn + 1) << 12));
		if (level > 1) {
			lo &= -span;
			hi &= -span;
		}
		if (!t->w_zaps || lo > t->olo)
			t->olo = lo;
		if (!t->w_zaps || hi < t->ohi)
			t->ohi = hi;
		if (!t->w_zaps || gfn < t->gfirst)
			t->gfirst = gfn;
		t->w_zaps++;
		p->windows[t->w_idx] |= W_ZAPPED;
		if (tdp_set(&p->pending, as, level, gfn,
			    spte_identity(f, old)) < 0 ||
		    tdp_set(&p->pending_win, as, level, gfn, t->w_idx + 1) < 0)
			return -1;
		return 0;
	}
	if (!spte_present_leaf(f, old, level) &&
	    spte_present_leaf(f, new, level)) {
		w = tdp_get(&p->pending_win, as, level, gfn);
		if (!w)
			return 0;
		if (refault_upgraded(f, tdp_get(&p->pending, as, level, gfn),
				     new))
			p->windows[w - 1] |= W_SAME;
		else
			p->windows[w - 1] |= W_DIFFER;
		tdp_set(&p->pending_win, as, level, gfn, 0);
	}
	return 0;
}

/* The kernel's word on window w: an upgrade or not (the last said). */
static void window_measured(uint64_t *w, int upgrade)
{
	*w = (*w & ~(uint64_t)W_MEASURED_UP) | W_MEASURED |
		(upgrade ? W_MEASURED_UP : 0);
}

static int on_notifier(struct scan_pass *p, struct scan_thread *t,
		       const struct model_event *e)
{
	uint64_t *w;

	/*
	 * Patched kernels trace the stock kvm_unmap_hva_range and their
	 * kvm_invalidate_range_start for the same invalidation, back to back
	 * (either order): one window, measured if either event is.
	 */
	if (e->u.notifier.phase == MEV_PHASE_START && t->in_window && !t->w_zaps &&
	    t->hs == e->u.notifier.hva_start &&
	    t->he == e->u.notifier.hva_end) {
		w = &p->windows[t->w_idx];
		if (e->u.notifier.has_event)
			window_measured(w, e->u.notifier.event ==
					MEV_MMU_NOTIFY_PROTECTION_VMA &&
					e->u.notifier.perm_upgrade);
		return 0;
	}
	window_close(p, t);
	if (e->u.notifier.phase != MEV_PHASE_START)
		return 0;
	/* seq counts events: 2^56 of them is beyond any capture. */
	if (W_SEQ(e->seq << W_SEQ_SHIFT) != e->seq ||
	    ALLOC_GROW(p->windows, p->nwindows + 1, p->capwindows))
		return -1;
	w = &p->windows[p->nwindows];
	*w = e->seq << W_SEQ_SHIFT;
	if (t->in_mprotect) {
		/*
		 * mprotect tells the direction itself: keeping PROT_WRITE
		 * loosens (or keeps) what the pages allow, dropping it
		 * restricts them.  A restriction followed by a loosening
		 * before any access refaults identical SPTEs, so the SPTE
		 * evidence alone would call it an upgrade.
		 */
		*w |= W_BY_SYSCALL |
			((t->mprotect_prot & PROT_WRITE) ? W_SYSCALL_UP : 0);
	} else if (t->in_madvise) {
		/*
		 * madvise(2) invalidates to unmap (MADV_DONTNEED, a THP split
		 * or collapse: MMU_NOTIFY_CLEAR), never to loosen; a freed
		 * huge page is often refaulted at the same pfn, identical.
		 */
		*w |= W_BY_SYSCALL;
	} else if (t->in_uffd_wp) {
		/* Protect or unprotect: the mode is in user memory, the
		 * refaults tell. */
		*w |= W_UFFD_WP;
	}
	if (e->u.notifier.has_event)
		window_measured(w, e->u.notifier.event ==
				MEV_MMU_NOTIFY_PROTECTION_VMA &&
				e->u.notifier.perm_upgrade);
	t->in_window = 1;
	t->w_seq = e->seq;
	t->w_idx = p->nwindows++;
	t->hs = e->u.notifier.hva_start;
	t->he = e->u.notifier.hva_end;
	t->w_zaps = 0;
	t->w_ts = e->ts;
	t->w_held = 0;
	return 0;
}

static void on_syscall(struct scan_pass *p, struct scan_thread *t,
		       const struct model_event *e)
{
	window_close(p, t);
	if (e->u.sys.call == MSYS_MPROTECT) {
		t->in_mprotect = e->u.sys.entry;
		t->mprotect_prot = e->u.sys.a2;
		return;
	}
	if (e->u.sys.call == MSYS_MADVISE) {
		t->in_madvise = e->u.sys.entry;
		return;
	}
	if (e->u.sys.call != MSYS_IOCTL)
		return;
	t->in_uffd_wp = e->u.sys.entry &&
		e->u.sys.a1 == UFFDIO_WRITEPROTECT;
	/*
	 * A VMM reads the dirty log only while logging is on: a dirty-log
	 * ioctl while the inference says off reveals it was on since the
	 * last KVM_SET_USER_MEMORY_REGION, or since the capture began (one
	 * that began mid-run, or a slot created with logging on, which no
	 * write-protect sweep announces: the dirty ring's, reset with
	 * KVM_RESET_DIRTY_RINGS).
	 */
	if (e->u.sys.entry && !p->dirty_on &&
	    kvm_ioctl_reads_dirty_log(e->u.sys.a1)) {
		p->dirty_on = 1;
		p->dirty_from = p->setregion_last;
	}
	if (e->u.sys.entry) {
		t->in_setregion = kvm_ioctl_sets_memslot(e->u.sys.a1);
		t->setregion_swept = 0;
		t->setregion_seq = e->seq;
		t->setregion_first = 0;
		return;
	}
	if (!t->in_setregion)
		return;
	t->in_setregion = 0;
	p->setregion_last = t->setregion_seq;
	/*
	 * The new memslot flags take effect early in the ioctl, before its
	 * write-protect sweep or collapse (which vCPUs race with), so the
	 * change dates from the ioctl's entry; its direction shows at exit.
	 */
	if (!p->dirty_on && t->setregion_swept) {
		p->dirty_on = 1;
		p->dirty_from = t->setregion_seq;
		p->dirty_seen_from = t->setregion_first;
	} else if (p->dirty_on) {
		struct scan *sc = p->out;

		/* Out of memory, the interval is lost, not the pass. */
		if (interval_add(&sc->dirty, &sc->ndirty, &sc->capdirty,
				 p->dirty_from, t->setregion_seq) == 0) {
			struct scan_interval *i = &sc->dirty[sc->ndirty - 1];

			if (p->dirty_seen_from > i->from_seq)
				i->seen_from = p->dirty_seen_from;
			if (t->setregion_first > i->to_seq)
				i->seen_to = t->setregion_first;
		}
		p->dirty_on = 0;
		p->dirty_seen_from = 0;
	}
}

/* A measured memslot event: a dirty-logging flip inside the thread's
 * KVM_SET_USER_MEMORY_REGION is seen by vCPUs from its entry on. */
static int on_memslot(struct scan_pass *p, const struct scan_thread *t,
		      const struct model_event *e)
{
	struct scan *sc = p->out;
	struct slots *had[] = { &sc->slots_start, &sc->slots };
	int was, now = (e->u.memslot.new_flags & KVM_MEM_LOG_DIRTY_PAGES) != 0;
	int change = e->u.memslot.change;
	size_t i;

	/* A slot the trace has not seen created, changed in place or
	 * deleted: it was there from the start, as the event's old flags
	 * say (a move's old place the event does not give), or as the
	 * state dump lists it (a change between the session's start and
	 * the dump is traced before it, so the slot is then known). */
	if ((change == KVM_MR_FLAGS_ONLY || change == KVM_MR_DELETE ||
	     change == MEMSLOT_STATE_DUMP) &&
	    !slots_traced(&sc->slots, e->u.memslot.as_id,
			  e->u.memslot.slot)) {
		for (i = 0; i < sizeof(had) / sizeof(had[0]); i++)
			slots_apply_event(had[i], e->u.memslot.as_id,
					  e->u.memslot.slot, KVM_MR_CREATE,
					  e->u.memslot.base_gfn,
					  e->u.memslot.npages,
					  e->u.memslot.hva,
					  e->u.memslot.old_flags);
		sc->slots_dumped += change == MEMSLOT_STATE_DUMP;
	}
	was = slots_dirty_logged(&sc->slots, e->u.memslot.as_id,
				 e->u.memslot.base_gfn);
	if (t->in_setregion && was != now) {
		if (ALLOC_GROW(sc->flips, sc->nflips + 1, sc->capflips))
			return -1;
		sc->flips[sc->nflips++] = (struct scan_flip){
			.from_seq = t->setregion_seq, .to_seq = e->seq,
			.as_id = e->u.memslot.as_id, .dirty = now,
			.base_gfn = e->u.memslot.base_gfn,
			.npages = e->u.memslot.npages,
		};
	}
	slots_apply_event(&sc->slots, e->u.memslot.as_id, e->u.memslot.slot,
			  e->u.memslot.change, e->u.memslot.base_gfn,
			  e->u.memslot.npages, e->u.memslot.hva,
			  e->u.memslot.new_flags);
	return 0;
}

static void close_each(void *arg, void *t)
{
	window_close(arg, t);
}

/*
 * The stock inference of an upgrade: only where the trace shows a
 * cause that can loosen a page's protection on the invalidating thread
 * (rule upgrade_cause): mprotect(2) keeping PROT_WRITE, or
 * UFFDIO_WRITEPROTECT whose zapped leaves all came back as they were
 * (an unprotect; a protect's refaults are read-only).  Reclaim,
 * khugepaged, ksmd, compaction, migration and NUMA hinting invalidate
 * with no such syscall, and a page they left in place also refaults
 * identical: without the rule that alone made an upgrade.
 */
static int window_inferred_up(const struct scan_pass *p, uint64_t w)
{
	int same = (w & (W_SAME | W_DIFFER)) == W_SAME;

	if (w & W_BY_SYSCALL)
		return (w & W_SYSCALL_UP) != 0;
	return same && ((w & W_UFFD_WP) || !p->upgrade_cause);
}

static int finish(struct scan_pass *p, uint64_t last_seq)
{
	struct scan *sc = p->out;
	size_t i;
	int measured = 0;

	if (p->dirty_on && interval_add(&sc->dirty, &sc->ndirty,
					&sc->capdirty, p->dirty_from,
					last_seq + 1) < 0)
		return -1;
	if (p->dirty_on && p->dirty_seen_from > p->dirty_from)
		sc->dirty[sc->ndirty - 1].seen_from = p->dirty_seen_from;
	if (p->sweep_on && interval_add(&p->swept, &p->nswept, &p->capswept,
					p->sweep_from, last_seq + 1) < 0)
		return -1;
	/* No syscall recorded: the MMU events' own inference stands in
	 * for the ioctls' (dirty_sweep_note()). */
	if (!sc->seen[MEV_SYSCALL] && !sc->slots.measured && !sc->ndirty &&
	    p->nswept) {
		free(sc->dirty);
		sc->dirty = p->swept;
		sc->ndirty = p->nswept;
		sc->capdirty = p->capswept;
		p->swept = NULL;
		p->nswept = p->capswept = 0;
	}
	for (i = 0; i < p->nwindows; i++) {
		uint64_t w = p->windows[i];
		int inferred = window_inferred_up(p, w);
		int m_up = (w & W_MEASURED_UP) != 0;
		int up = (w & W_MEASURED) ? m_up : inferred;

		measured |= (w & W_MEASURED) != 0;
		/* Only where the decision changes a figure: it zapped. */
		if ((w & W_MEASURED) && (w & W_ZAPPED))
			sc->upgrade_infer[inferred][m_up]++;
		if (!up)
			continue;
		if (ALLOC_GROW(sc->upgrade_seqs, sc->nupgrades + 1,
			       sc->capupgrades))
			return -1;
		sc->upgrade_seqs[sc->nupgrades++] = W_SEQ(w);
	}
	sc->upgrade_src = measured ? REPLAY_SRC_MEASURED :
		p->nwindows ? REPLAY_SRC_INFERRED : REPLAY_SRC_NONE;
	if (sc->slots.measured)
		sc->dirty_src = REPLAY_SRC_MEASURED;
	else
		sc->dirty_src = sc->ndirty ? REPLAY_SRC_INFERRED :
			REPLAY_SRC_NONE;
	return 0;
}

enum scan_status scan_run(struct source *src, const struct spte_format *fmt,
			  int upgrade_cause, int dirty_sweep, struct scan *out)
{
	enum scan_status st = SCAN_ERR_NOMEM;
	struct scan_pass p;
	struct model_event e;
	struct scan_thread *t;
	enum source_status ss;
	uint64_t last_seq = 0;

	memset(out, 0, sizeof(*out));
	memset(&p, 0, sizeof(p));
	slots_init(&out->slots);
	slots_init(&out->slots_start);
	p.fmt = fmt;
	p.upgrade_cause = upgrade_cause;
	p.sweep_rule = dirty_sweep;
	p.out = out;
	ptrmap_init(&p.threads);
	tdp_init(&p.pending, fmt);
	tdp_init(&p.pending_win, fmt);
	p.holds = calloc(HOLD_BUCKETS, sizeof(*p.holds));
	if (!p.holds)
		goto end;
	if (source_rewind(src) != SOURCE_OK) {
		st = SCAN_ERR_SOURCE;
		goto end;
	}
	source_progress(src, "replay: first pass");
	while ((ss = source_next(src, &e)) == SOURCE_OK) {
		last_seq = e.seq;
		out->seen[e.kind] = 1;
		t = thread_get(&p, e.tid);
		if (!t)
			goto end;
		switch (e.kind) {
		case MEV_SPTE_CHANGE:
			if (on_spte(&p, t, &e) < 0)
				goto end;
			break;
		case MEV_NOTIFIER:
			if (on_notifier(&p, t, &e) < 0)
				goto end;
			break;
		case MEV_UNMAP_DECISION:
			if (t->in_window)
				p.windows[t->w_idx] |= W_MEASURED |
					(e.u.unmap.perm_upgrade ?
					 W_MEASURED_UP : 0);
			window_held(&p, t, e.ts);
			break;
		case MEV_SYSCALL:
			on_syscall(&p, t, &e);
			break;
		case MEV_MEMSLOT:
			if (on_memslot(&p, t, &e) < 0)
				goto end;
			break;
		case MEV_FAULT:
		case MEV_VCPU_EXIT:
		case MEV_VCPU_ENTRY:
			window_close(&p, t);
			t->in_fault = e.kind == MEV_FAULT;
			break;
		default:
			break;
		}
	}
	if (ss != SOURCE_END) {
		st = SCAN_ERR_SOURCE;
		goto end;
	}
	ptrmap_each(&p.threads, close_each, &p);
	if (finish(&p, last_seq) < 0)
		goto end;
	out->keep_hold_ns = holds_p99(&p);
	st = SCAN_OK;
end:
	ptrmap_free_values(&p.threads);
	tdp_free(&p.pending);
	tdp_free(&p.pending_win);
	free(p.windows);
	free(p.swept);
	free(p.holds);
	if (st != SCAN_OK)
		scan_free(out);
	return st;
}

void scan_free(struct scan *sc)
{
	free(sc->upgrade_seqs);
	free(sc->dirty);
	free(sc->flips);
	memset(sc, 0, sizeof(*sc));
}

int scan_is_upgrade(const struct scan *sc, uint64_t seq)
{
	size_t lo = 0, hi = sc->nupgrades;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (sc->upgrade_seqs[mid] == seq)
			return 1;
		if (sc->upgrade_seqs[mid] < seq)
			lo = mid + 1;
		else
			hi = mid;
	}
	return 0;
}

int scan_flip_at(const struct scan *sc, int as_id, uint64_t gfn,
		 uint64_t seq, int *dirty)
{
	size_t i;

	for (i = 0; i < sc->nflips; i++) {
		const struct scan_flip *f = &sc->flips[i];

		if (seq >= f->from_seq && seq < f->to_seq &&
		    f->as_id == as_id && gfn >= f->base_gfn &&
		    (!f->npages || gfn < f->base_gfn + f->npages)) {
			*dirty = f->dirty;
			return (int)i + 1;
		}
	}
	return 0;
}

/* Whether seq lies in a dirty-logging interval, as its entry and exit
 * (seen: as its first SPTE changes) bound it. */
static int dirty_in(const struct scan *sc, uint64_t seq, int seen)
{
	const struct scan_interval *d;
	size_t i;

	for (i = 0; i < sc->ndirty; i++) {
		d = &sc->dirty[i];
		if (seen ? seq >= d->seen_from && seq < d->seen_to :
		    seq >= d->from_seq && seq < d->to_seq)
			return 1;
	}
	return 0;
}

int scan_dirty_at(const struct scan *sc, uint64_t seq)
{
	return dirty_in(sc, seq, 0);
}

int scan_dirty_seen_at(const struct scan *sc, uint64_t seq)
{
	return dirty_in(sc, seq, 1);
}
