/*
 * The policy overlay (see engine_int.h): how each traced SPTE change
 * moves the traced state (tdp_obs) and the policy's (tdp_ovl), and what
 * the policy then does differently: which leaves it zaps (and why),
 * which TLB flushes it keeps, which faults are refaults of its zaps.
 *
 * Invariant: tdp_zapmark holds, for a leaf the policy zapped and no
 * fault has come back for yet, its zap cause + 1 (0: none); only
 * zapmark_of() and zapmark_cause() know the + 1.
 */
#include "replay/engine_int.h"
#include "util/alloc.h"

#include "util/assert.h"

#include <stdlib.h>

static uint64_t zapmark_of(enum zap_cause cause)
{
	return (uint64_t)cause + 1;
}

static enum zap_cause zapmark_cause(uint64_t mark)
{
	MR_ASSERT_DBG(mark >= 1 && mark <= ZAP_CAUSES);
	return (enum zap_cause)(mark - 1);
}

int overlay_kept_leaf(struct engine *e, int as_id, uint64_t gfn,
		      uint64_t *spte)
{
	int level;

	for (level = 1; level <= TDP_MAX_LEAF_LEVEL; level++) {
		uint64_t v = tdp_get(&e->tdp_ovl, as_id, level, gfn);

		if (v && spte_present_leaf(e->fmt, v, level)) {
			*spte = v;
			return level;
		}
	}
	return 0;
}

void overlay_zap(struct engine *e, int64_t ts, enum zap_cause cause,
		 int as_id, int level, uint64_t gfn)
{
	struct replay_second *s = engine_second_at(e, ts);

	MR_ASSERT_DBG((unsigned)cause < ZAP_CAUSES);
	e->res->zaps[cause]++;
	if (s)
		s->zaps++;
	/* A refault is the vCPU's, on its current root. */
	if (tdp_set(&e->tdp_zapmark, roots_orig(e, as_id), level, gfn,
		    zapmark_of(cause)) < 0)
		e->nomem = 1;
}

void overlay_fault(struct engine *e, int64_t ts)
{
	struct replay_second *s = engine_second_at(e, ts);

	e->res->faults++;
	if (s)
		s->faults++;
}

/*
 * The policy kept the leaf kept where the traced kernel has since mapped
 * traced: when the guest wrote through the traced leaf (its dirty bit,
 * set by the CPU) and the kept one is not writable, the policy took a
 * write fault the trace does not have; its leaf is then the writable
 * one, as traced (1: the caller drops the kept leaf).  Without A/D bits
 * no write is seen and none is added.  Nor where KVM set the dirty bit
 * itself: make_spte() makes every writable SPTE dirty, also for a read
 * or exec fault that maps a writable host page writable (6.12 after a
 * uffd-wp unprotect, where 6.1 mapped it read-only).  Whether the guest
 * wrote through such a leaf the trace cannot say: no fault is added
 * (an undercount if it did) and the kept leaf is dropped (the policy's
 * state is the traced one again, which spares no fault).
 */
static int overlay_kept_written(struct engine *e, int64_t ts, uint64_t kept,
				uint64_t traced, int as, int level, uint64_t gfn)
{
	if (!spte_present_leaf(e->fmt, traced, level) ||
	    !spte_dirty(e->fmt, traced) || spte_writable(e->fmt, kept))
		return 0;
	if (tdp_size(&e->tdp_kvmdirty) &&
	    tdp_get(&e->tdp_kvmdirty, as, level, gfn))
		return 1;
	e->res->faults_added++;
	overlay_fault(e, ts);
	return 1;
}

void overlay_flush(struct engine *e, int64_t ts)
{
	struct replay_second *s = engine_second_at(e, ts);

	e->res->flushes++;
	if (s)
		s->flushes++;
}

/* A fault under the policy on gfn: a refault if the policy zapped it. */
void overlay_refault(struct engine *e, uint64_t gfn)
{
	uint64_t mark = 0;
	int level;

	for (level = 1; level <= TDP_MAX_LEAF_LEVEL && !mark &&
	     tdp_size(&e->tdp_zapmark); level++) {
		mark = tdp_get(&e->tdp_zapmark, 0, level, gfn);
		if (mark) {
			e->res->refaults[zapmark_cause(mark)]++;
			tdp_clear(&e->tdp_zapmark, 0, level, gfn);
		}
	}
}

struct leaf_walk {
	struct engine *walk_engine;
	int walk_as_id;
	int64_t walk_leaves;
	int walk_min_level, walk_max_level;     /* the levels it counts */
	enum zap_cause walk_cause;
	int64_t walk_ts;
};

static void count_leaf(void *arg, int level, uint64_t gfn, uint64_t spte)
{
	struct leaf_walk *w = arg;

	(void)gfn;
	(void)spte;
	if (level >= w->walk_min_level && level <= w->walk_max_level)
		w->walk_leaves++;
}

/* A kept leaf where the traced kernel has none: the traced zap that
 * removes it will not come, so the policy's zap is counted here (where
 * the traced kernel has a leaf too, its traced zap counts for both). */
static void zap_kept_leaf(void *arg, int level, uint64_t gfn, uint64_t spte)
{
	struct leaf_walk *w = arg;

	(void)spte;
	if (level < w->walk_min_level || level > w->walk_max_level)
		return;
	if (spte_present_leaf(w->walk_engine->fmt,
			      tdp_get(&w->walk_engine->tdp_obs,
				      w->walk_as_id, level, gfn), level))
		return;
	w->walk_leaves++;
	tdp_clear(&w->walk_engine->tdp_ovl, w->walk_as_id, level, gfn);
	overlay_zap(w->walk_engine, w->walk_ts, w->walk_cause, w->walk_as_id,
		    level, gfn);
}

/*
 * At the start of a context over [start, end): how many leaves of levels
 * min_level to max_level the traced state holds there (the prediction),
 * and the policy's zaps of such leaves only it still holds (unless it
 * keeps this context's leaves).
 */
int64_t overlay_context_range(struct engine *e, struct thread_ctx *t,
			      int as_id, uint64_t start, uint64_t end,
			      int min_level, int max_level,
			      enum zap_cause cause)
{
	struct leaf_walk w = {
		.walk_engine = e, .walk_as_id = as_id,
		.walk_min_level = min_level, .walk_max_level = max_level,
		.walk_cause = cause, .walk_ts = t->ctx_ts,
	};
	int64_t predicted;

	tdp_for_each_leaf(&e->tdp_obs, as_id, start, end, count_leaf, &w);
	/* Under a rule that keeps this context's leaves, none go. */
	predicted = t->ctx_keep ? 0 : w.walk_leaves;
	if (!t->ctx_keep && tdp_size(&e->tdp_ovl)) {
		w.walk_leaves = 0;
		tdp_for_each_leaf(&e->tdp_ovl, as_id, start, end,
				  zap_kept_leaf, &w);
		t->ctx_policy_zaps += w.walk_leaves;
	}
	return predicted;
}

/*
 * TLB flushes of one context (an invalidation, a fault, a teardown, a
 * recovery batch; seq, ts and gfn name it).  The kernel flushes after
 * zapping, how often within a context depends on rescheduling (recovery
 * flushes at every cond_resched), so the self-check compares contexts
 * that flushed with contexts the model says zap: in total, and, where the
 * flushes are traced, context by context (a flush without a zap, or a
 * zap without its flush, is a flush_context mismatch).  Under the policy
 * a context keeps its traced flushes (measured) or one flush (inferred)
 * while it still zaps, and none when the policy removed all its zaps;
 * per_page >= 0: the policy flushes that many times instead (a
 * read-locked recovery flushes after each page).
 */
void overlay_flush_account(struct engine *e, uint64_t seq, int64_t ts,
			   uint64_t gfn, int64_t predicted, int64_t observed,
			   int64_t revealed, int64_t policy_zaps,
			   int64_t flushes, int64_t per_page)
{
	struct replay_result *r = e->res;
	int64_t i, n, flushed;

	flushed = r->flushes_measured ? flushes > 0 : observed + revealed > 0;
	r->flushes_observed += flushed;
	if (!predicted && !observed && revealed) {
		/* Only zaps of entries the model could not know: whether
		 * the context had to flush is not its to say. */
		engine_revealed(e, &r->flushes_revealed, flushed, ts);
	} else {
		r->flushes_predicted += predicted > 0;
		if (r->flushes_measured && (predicted > 0) != (flushes > 0))
			engine_mismatch(e, MISMATCH_FLUSH_CONTEXT, seq, ts,
					gfn, predicted > 0, flushes > 0);
	}
	if (r->flushes_measured)
		/* A context's flushes go only with all of its zaps. */
		n = observed + revealed && !policy_zaps ? 0 : flushes;
	else
		n = policy_zaps > 0;
	if (per_page >= 0)
		n = per_page;
	for (i = 0; i < n; i++)
		overlay_flush(e, ts);
}

/* Attributed to the flushing thread's context, see
 * overlay_flush_account(); a flush outside any (dirty-log
 * write-protection, ...) stays as it is under every policy. */
void engine_on_tlb_flush(struct engine *e, struct thread_ctx *t,
			 const struct model_event *ev)
{
	int aged = t->aged;

	fault_frozen_begin(e, t, ev);
	t->aged = 0;
	/*
	 * The host's page aging (reclaim's folio_referenced(), in whatever
	 * thread needs memory: a vCPU inside its fault, the VMM) clears
	 * accessed bits through kvm_mmu_notifier_clear_flush_young(),
	 * which flushes when it found a young leaf.  That flush is the
	 * aging's, not the context the thread is in: a fault zaps nothing
	 * and flushes nothing of its own.  Whether a clear flushes depends
	 * on the notifier (clear_young does not), so it is not predicted:
	 * it stays under every policy.
	 */
	if (aged && engine_rule(e, RULE_AGING_FLUSH)) {
		e->res->flushes_other++;
		overlay_flush(e, ev->ts);
		return;
	}
	if (t->is_worker && t->ctx_kind != CTX_TEARDOWN &&
	    e->batch.batch_active) {
		e->batch.flushes_traced++;
	} else if (t->ctx_kind != CTX_NONE) {
		t->ctx_flushes++;
		t->ctx_last_ts = ev->ts;
		/* A teardown keeps its flushes under every policy: each is
		 * counted when it happens (a long teardown spans seconds). */
		if (t->ctx_kind == CTX_TEARDOWN)
			overlay_flush(e, ev->ts);
	} else {
		e->res->flushes_other++;
		overlay_flush(e, ev->ts);
	}
}

static enum zap_cause zap_cause_of(const struct thread_ctx *t)
{
	switch (t->ctx_kind) {
	case CTX_WINDOW:
		return ZAP_NOTIFIER;
	case CTX_FAULT:
		return ZAP_FAULT_PATH;
	case CTX_RECOVERY:
		return ZAP_NX_RECOVERY;
	case CTX_TEARDOWN:
		return t->ctx_collapse ? ZAP_DIRTY_LOG_COLLAPSE : ZAP_TEARDOWN;
	case CTX_NONE:
		break;
	}
	return t->is_worker ? ZAP_NX_RECOVERY : ZAP_OTHER;
}

/*
 * A huge leaf replaced by a table in one change is a split
 * (tdp_mmu_split_huge_page(): eager splitting when dirty logging starts):
 * the new table is filled before it is linked, so its 512 entries are
 * never traced as set.  The model writes them as the kernel does; later
 * changes of them (write-protection, zaps, the collapse when dirty
 * logging stops) then meet the leaves they change.
 */
static void overlay_eager_split(struct engine *e, int as_id, int level,
				uint64_t gfn, uint64_t huge)
{
	uint64_t step = tdp_level_pages(level - 1);
	unsigned i;

	for (i = 0; i < TDP_TABLE_ENTRIES; i++)
		if (tdp_set(&e->tdp_obs, as_id, level - 1, gfn + i * step,
			    spte_split_child(e->fmt, huge, level - 1, i)) < 0)
			e->nomem = 1;
}

/* The leaves below a table being emptied (overlay_table_linked()). */
struct stale_leaf {
	uint64_t gfn;
	int level;
};

struct stale_walk {
	struct engine *sw_engine;
	int sw_level;                   /* of the linked table's entry */
	struct stale_leaf *sw_leaf;
	size_t sw_n, sw_cap;
	int64_t sw_present;             /* of them, present leaves */
};

static void stale_leaf_add(void *arg, int level, uint64_t gfn, uint64_t spte)
{
	struct stale_walk *w = arg;

	if (level >= w->sw_level)
		return;
	w->sw_present += spte_present_leaf(w->sw_engine->fmt, spte, level);
	if (ALLOC_GROW(w->sw_leaf, w->sw_n + 1, w->sw_cap)) {
		w->sw_engine->nomem = 1;
		return;
	}
	w->sw_leaf[w->sw_n++] = (struct stale_leaf){ gfn, level };
}

/*
 * Under the read lock, vCPUs walk down one path at once: one links a
 * new table (tdp_mmu_link_sp(), a cmpxchg of the parent entry), another
 * walks through it and links or installs beneath, and the first one's
 * tracepoint, which fires after its cmpxchg, can come after the
 * second's.  An entry installed while the model's parent entry is known
 * and not present is such an install: the parent's link, when it is
 * traced, links the table that holds it (RULE_LATE_LINK).
 */
static void late_link_note(struct engine *e, int as_id, int level,
			   uint64_t gfn)
{
	int plevel = level + 1;
	uint64_t pgfn = tdp_align(gfn, plevel);
	unsigned i, n = e->nlate_links < LATE_LINKS ? e->nlate_links :
		LATE_LINKS;

	if (plevel > SP_MAX_LEVEL || !engine_rule(e, RULE_LATE_LINK) ||
	    !tdp_known(&e->tdp_obs, as_id, plevel, pgfn) ||
	    spte_present(e->fmt, tdp_get(&e->tdp_obs, as_id, plevel, pgfn)))
		return;
	for (i = 0; i < n; i++)
		if (e->late_links[i].as_id == as_id &&
		    e->late_links[i].level == plevel &&
		    e->late_links[i].gfn == pgfn)
			return;
	e->late_links[e->nlate_links++ % LATE_LINKS] = (struct late_link){
		.as_id = as_id, .level = plevel, .gfn = pgfn,
	};
}

/* Returns 1 when the link of (as_id, level, gfn) was noted late (its
 * note ends), else 0. */
static int late_link_take(struct engine *e, int as_id, int level,
			  uint64_t gfn)
{
	unsigned i, n = e->nlate_links < LATE_LINKS ? e->nlate_links :
		LATE_LINKS;

	for (i = 0; i < n; i++) {
		struct late_link *l = &e->late_links[i];

		if (l->level == level && l->gfn == gfn && l->as_id == as_id) {
			l->level = 0;
			return 1;
		}
	}
	return 0;
}

/*
 * A table linked where the parent entry held none is new and empty
 * (tdp_mmu_link_sp() links a zeroed page table).  Leaves the model still
 * holds below it are the removed table's, whose entries a teardown
 * under the read lock traces after a fault linked the new one
 * (engine_teardown.c): they no longer map.  Their number is kept for
 * that teardown's prediction (teardown_replaced()).
 */
static void overlay_table_linked(struct engine *e, int as_id, int level,
				 uint64_t gfn)
{
	struct stale_walk w = { .sw_engine = e, .sw_level = level };
	uint64_t known[TDP_TABLE_ENTRIES / 64];
	size_t i;

	if (late_link_take(e, as_id, level, gfn))
		return;
	/* What the model knew of the removed table, before its leaves go. */
	tdp_table_known(&e->tdp_obs, as_id, level - 1, gfn, 1, known);
	tdp_for_each_leaf(&e->tdp_obs, as_id, gfn,
			  gfn + tdp_level_pages(level), stale_leaf_add, &w);
	teardown_replaced(e, as_id, level, gfn, w.sw_present, known);
	for (i = 0; i < w.sw_n; i++)
		tdp_clear(&e->tdp_obs, as_id, w.sw_leaf[i].level,
			  w.sw_leaf[i].gfn);
	free(w.sw_leaf);
}

/* Whether the leaf at (as, level, gfn) carries KVM's dirty bit rather
 * than the guest's (overlay_kept_written()): mapped writable and dirty
 * by a fault that did not write, and still that page and dirty. */
static void overlay_kvm_dirty(struct engine *e, const struct thread_ctx *t,
			      int as, int level, uint64_t gfn, uint64_t old,
			      uint64_t new)
{
	const struct spte_format *f = e->fmt;
	int mark;

	if (!spte_present_leaf(f, old, level))
		mark = t->ctx_kind == CTX_FAULT && !t->fault_write &&
			spte_present_leaf(f, new, level) &&
			spte_writable(f, new) && spte_dirty(f, new);
	else
		mark = spte_present_leaf(f, new, level) && spte_dirty(f, new) &&
			spte_pfn(f, old) == spte_pfn(f, new) &&
			tdp_size(&e->tdp_kvmdirty) &&
			tdp_get(&e->tdp_kvmdirty, as, level, gfn);
	if ((mark || (tdp_size(&e->tdp_kvmdirty) &&
		      tdp_get(&e->tdp_kvmdirty, as, level, gfn))) &&
	    tdp_set(&e->tdp_kvmdirty, as, level, gfn, mark) < 0)
		e->nomem = 1;
}

/*
 * Whether the model knew the entry a change of thread t meets (tdp.h).
 * An entry of the table t tears down or recovers belongs to that table,
 * which a new one may have replaced at the same place before the change
 * was traced (engine_teardown.c): what the model knows of the new table
 * says nothing of the old one's entries.  A 4K table's are judged by
 * what the model knew when its removal began; a larger table's by the
 * entries the trace stored (a new table's birth does not count).
 */
static int entry_known(const struct engine *e, const struct thread_ctx *t,
		       int as, int level, uint64_t gfn)
{
	size_t i;

	if (tdp_size(&e->tdp_doubt) && tdp_get(&e->tdp_doubt, as, level, gfn))
		return 0;

	if ((t->ctx_kind == CTX_TEARDOWN || t->ctx_kind == CTX_RECOVERY) &&
	    level <= t->sp_level && t->sp_level < SP_MAX_LEVEL &&
	    gfn - t->ctx_gfn < tdp_level_pages(t->sp_level + 1)) {
		if (t->sp_level == TDP_LEVEL_4K) {
			i = (size_t)(gfn - t->ctx_gfn);
			return (t->sp_known[i / 64] >> (i % 64)) & 1;
		}
		return tdp_stored(&e->tdp_obs, as, level, gfn);
	}
	return tdp_known(&e->tdp_obs, as, level, gfn);
}

/*
 * The transition is named once, as handle_changed_spte() names it:
 * was_present / is_present, and was_leaf / is_leaf (present leaves).
 * A leaf zap is was_leaf && !is_present (spte_leaf_zapped()).
 */
void engine_on_spte(struct engine *e, struct thread_ctx *t,
		    const struct model_event *ev)
{
	const struct spte_format *f = e->fmt;
	uint64_t old = ev->u.spte.old_spte, new = ev->u.spte.new_spte;
	uint64_t gfn = ev->u.spte.gfn;
	int level = ev->u.spte.level, as = ev->u.spte.as_id, span;
	int was_present = spte_present(f, old);
	int is_present = spte_present(f, new);
	int was_leaf = was_present && spte_leaf(f, old, level);
	int is_leaf = is_present && spte_leaf(f, new, level);
	enum zap_cause cause;
	int held;
	uint64_t kept = 0;
	/* Whether the thread's context began before a mid-run capture did
	 * (its start is not in the trace; a teardown begun before it,
	 * engine_roots.c): its zaps are revealed, not judged, as are zaps
	 * of entries the model did not know. */
	int unknown_ctx = (t->fresh || t->teardown_before) &&
		e->res->began_mid_run;

	/*
	 * An invalidation zaps leaves only (tdp_mmu_zap_leafs() skips
	 * every entry that is not a present leaf), so a table its thread
	 * removes is no part of it.  A stock start event has no end: the
	 * window ended before this change, whatever the thread runs now
	 * (the VM's teardown when its mm goes, for one).
	 */
	if (t->ctx_kind == CTX_WINDOW && !t->win_measured && was_present &&
	    !was_leaf && !is_present && engine_rule(e, RULE_WINDOW_LEAVES))
		engine_ctx_close(e, t);
	/* Nor a leaf outside its range (tdp_mmu_zap_leafs() walks only
	 * the range): the window ended too.  On 6.12 the VM's zap at its
	 * exit takes every 4K leaf before any table, so a thread whose
	 * last work was a reclaim's invalidation zaps leaves first. */
	if (t->ctx_kind == CTX_WINDOW && !t->win_measured && was_leaf &&
	    !is_present && engine_rule(e, RULE_WINDOW_EXIT) &&
	    !window_covers(t, roots_orig(e, as), gfn, level))
		engine_ctx_close(e, t);
	/* A fault's leaf over a present table: it flushes
	 * (fault_ctx_close()). */
	if (t->ctx_kind == CTX_FAULT && was_present && !was_leaf && is_leaf)
		t->fault_flush_due = 1;
	/* The accessed bit alone cleared: the host aged the page (see
	 * engine_on_tlb_flush()). */
	if (was_leaf && is_leaf && spte_aged(f, old, new))
		t->aged = 1;
	/* A known context's change of the entry ends its doubt (see
	 * below): a zap's is judged by what the doubt says first. */
	if (!unknown_ctx && !(was_leaf && !is_present) &&
	    tdp_size(&e->tdp_doubt))
		tdp_clear(&e->tdp_doubt, as, level, gfn);
	if (was_leaf && !is_present && !unknown_ctx &&
	    teardown_zap_all_starts(e, t, ev))
		teardown_zap_all_open(e, t, ev);
	/* The worker's recovery, not a teardown it runs. */
	if (t->is_worker && t->ctx_kind != CTX_TEARDOWN)
		nx_batch_touch(e, ev);
	if (e->npending)
		fault_pending_explain(e, t, as, level, gfn, old, new);
	/* The traced leaf changes under one the policy kept: was it
	 * written meanwhile? */
	if (tdp_size(&e->tdp_ovl) && was_leaf &&
	    (kept = tdp_get(&e->tdp_ovl, as, level, gfn)) &&
	    overlay_kept_written(e, ev->ts, kept, old, as, level, gfn)) {
		tdp_clear(&e->tdp_ovl, as, level, gfn);
		kept = 0;
	}
	/* The kernel write-protects the leaf in place (dirty logging's
	 * KVM_GET_DIRTY_LOG, a write-protect walk): the walk meets the
	 * leaf the policy kept there as well, which maps the same page;
	 * both are then the traced one. */
	if (kept && was_leaf && is_leaf && spte_writable(f, old) &&
	    !spte_writable(f, new) && spte_pfn(f, kept) == spte_pfn(f, new)) {
		tdp_clear(&e->tdp_ovl, as, level, gfn);
		kept = 0;
	}
	if (was_leaf && !is_present) {
		e->res->zaps_observed++;
		t->ctx_last_ts = ev->ts;
		if (t->ctx_kind == CTX_WINDOW) {
			t->win_zapped = 1;
			if (!t->win_first_ts)
				t->win_first_ts = ev->ts;
		}
		if (t->ctx_kind == CTX_TEARDOWN ||
		    t->ctx_kind == CTX_RECOVERY) {
			t->ctx_walk_next = gfn + tdp_level_pages(level);
			t->ctx_walk_level = level;
			t->ctx_walk_as = as;
		}
		cause = zap_cause_of(t);
		if (!e->res->began_mid_run ||
		    (!unknown_ctx && entry_known(e, t, as, level, gfn) &&
		     !window_unknown_at_open(e, t, roots_orig(e, as), level,
					     gfn))) {
			t->ctx_observed++;
		} else {
			t->ctx_revealed++;
			engine_revealed(e, &e->res->zaps_revealed, 1, ev->ts);
		}
		/*
		 * A context begun before the capture (unknown_ctx) that zaps
		 * a leaf the model holds may be zapping another root's copy
		 * of it: a root invalidated before the capture, still being
		 * zapped, holds the same (level, gfn) with the same value
		 * (the vCPUs refaulted it into the new root), and the
		 * tracepoint does not name the root (engine_roots.c).  The
		 * model cannot tell the two apart, so the entry is in doubt:
		 * its later zap (the new root's, once retired) is revealed,
		 * not judged.
		 */
		if (unknown_ctx && engine_rule(e, RULE_UNKNOWN_ZAP) &&
		    tdp_set(&e->tdp_doubt, as, level, gfn, 1) < 0)
			e->nomem = 1;
		/*
		 * So is an entry whose zap went to this VM on a guess: a
		 * window of a VM process's thread that another VM's state
		 * fitted as well (replay/vm_attr.h).  If the zap was the
		 * other VM's, this VM's leaf there is still present, and
		 * its own later zap of it is revealed, not judged.
		 */
		if (e->opts->zaps_in_doubt && engine_rule(e, RULE_VM_DOUBT) &&
		    u64map_get(e->opts->zaps_in_doubt, ev->seq) &&
		    tdp_set(&e->tdp_doubt, as, level, gfn, 1) < 0)
			e->nomem = 1;
		if (t->ctx_kind == CTX_WINDOW) {
			span = engine_rule(e, RULE_HUGE_SPAN) ? level :
				TDP_LEVEL_4K;
			if (!window_covers(t, roots_orig(e, as), gfn, span))
				engine_mismatch(e, MISMATCH_ZAP_OUTSIDE,
						ev->seq, ev->ts, gfn, 0, 1);
			window_walked(t, roots_orig(e, as), level, gfn);
		} else if (t->ctx_kind == CTX_NONE && !unknown_ctx) {
			engine_mismatch(e, MISMATCH_ZAP_UNEXPLAINED, ev->seq,
					ev->ts, gfn, 0, 1);
		}
		/*
		 * A leaf the model did not hold was no window's count, nor
		 * a whole root's zap's: another thread's removal of it (on
		 * a capture begun mid-run, a reclaim of pages the capture
		 * had not shown, ahead of an exiting VM's zap) takes
		 * nothing off their predictions.
		 */
		held = spte_present_leaf(f, tdp_get(&e->tdp_obs, as, level, gfn),
					 level);
		if (held && e->nopen_windows &&
		    engine_rule(e, RULE_WINDOW_REMOVAL))
			window_removal(e, t, roots_orig(e, as), level, gfn);
		if (held && e->nopen_zap_alls &&
		    engine_rule(e, RULE_TEARDOWN_REMOVAL))
			teardown_removal(e, t, as, level, gfn);
		if (t->ctx_keep) {
			e->res->zaps_kept++;
			engine_whatif(e, REPLAY_WHATIF_ZAP_KEPT, ev, level, gfn);
			replay_kept_by_add(e->res, ev->tid, 1);
			/* Kept on the stock inference of an upgrade. */
			e->res->zaps_kept_inferred +=
				t->ctx_kind == CTX_WINDOW &&
				e->scan->upgrade_src == REPLAY_SRC_INFERRED;
			/* The policy keeps its own leaf, if it has one. */
			if (!kept && tdp_set(&e->tdp_ovl, as, level, gfn,
					     old) < 0)
				e->nomem = 1;
		} else {
			t->ctx_policy_zaps++;
			overlay_zap(e, ev->ts, cause, as, level, gfn);
			if (kept)
				tdp_clear(&e->tdp_ovl, as, level, gfn);
		}
	} else if (!was_leaf && is_leaf) {
		/* The traced kernel re-installed what the policy kept,
		 * unless in a fault the policy did not take: its leaf
		 * stays. */
		if (!(t->ctx_kind == CTX_FAULT && t->ctx_keep) &&
		    tdp_get(&e->tdp_ovl, as, level, gfn))
			tdp_clear(&e->tdp_ovl, as, level, gfn);
		if (engine_rule(e, RULE_WINDOW_INSTALL))
			window_install(e, t, as, level, gfn);
	} else if (level > TDP_LEVEL_4K && was_leaf && is_present &&
		   !is_leaf && engine_rule(e, RULE_EAGER_SPLIT)) {
		overlay_eager_split(e, as, level, gfn, old);
	} else if (level > TDP_LEVEL_4K && !was_present && is_present &&
		   !is_leaf && engine_rule(e, RULE_REMOVED_TABLE)) {
		overlay_table_linked(e, as, level, gfn);
	} else if (level > TDP_LEVEL_4K && was_present && !was_leaf &&
		   !is_present) {
		teardown_unlinked(e, ev->tid, as, level, gfn);
	}
	if (!was_present && is_present)
		late_link_note(e, as, level, gfn);
	/* A table linked where none was (zeroed) or in a huge leaf's place
	 * (a split, filled before it was linked) is new: every entry of it
	 * is known. */
	if (level > TDP_LEVEL_4K && is_present && !is_leaf &&
	    (!was_present || was_leaf) &&
	    tdp_mark_born(&e->tdp_obs, as, level - 1, gfn) < 0)
		e->nomem = 1;
	if (e->res->began_mid_run && level == TDP_LEVEL_4K &&
	    (was_leaf || is_leaf) &&
	    tdp_flag_set(&e->tdp_obs, as, level, gfn) < 0)
		e->nomem = 1;
	overlay_kvm_dirty(e, t, as, level, gfn, old, new);
	if (as == 0)
		nx_table_spte(e, t, level, gfn, old, new);
	if (as == 0 && is_leaf)
		fault_leaf_granted(e, ev->tid, ev->seq, level, gfn, was_leaf,
				   old, new);
	/* A removed table's entry whose place a new table took: the
	 * model's entry is the new table's. */
	if (!teardown_entry_replaced(e, t, as, level, gfn, old) &&
	    tdp_set(&e->tdp_obs, as, level, gfn, new) < 0)
		e->nomem = 1;
}
