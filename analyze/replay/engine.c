/*
 * The replay engine (see engine.h).
 *
 * Each thread has one open context at a time: an invalidation window, a
 * fault being handled, a shadow page being torn down or recovered.  An
 * SPTE change is attributed to the context of the thread that made it;
 * any other event of that thread closes the context, and closing is where
 * the model's prediction for the context meets what was traced.
 *
 * Invariants:
 *   - obs holds the last traced SPTE of every entry (the recorded
 *     kernel's state); ovl holds, for entries where the policy diverges,
 *     the leaf the policy kept (present), else 0;
 *   - predicted counts come only from obs before the traced change is
 *     applied, never from the traced changes themselves;
 *   - open_windows holds exactly the threads whose context is a window;
 *   - every traced fault is counted once under the policy: as a fault
 *     or as avoided.
 * The checks (util/assert.h) cover the last two and the bookkeeping;
 * the first two hold by how the code is arranged, not by a check.
 */
#include "replay/engine.h"

#include "model/slots.h"
#include "model/tdp.h"
#include "replay/scan.h"
#include "util/assert.h"
#include "util/log.h"
#include "util/ptrmap.h"

#include <stdlib.h>
#include <string.h>

#define NAME_ENTRY(e, name) [e] = name,

const char *const zap_cause_names[ZAP_CAUSES] = {
	ZAP_CAUSE_LIST(NAME_ENTRY)
};

const char *const mismatch_kind_names[MISMATCH_KINDS] = {
	MISMATCH_KIND_LIST(NAME_ENTRY)
};

static const char *const replay_source_names[REPLAY_SOURCES] = {
	REPLAY_SOURCE_LIST(NAME_ENTRY)
};

const char *replay_source_name(enum replay_source s)
{
	return (unsigned)s < REPLAY_SOURCES ? replay_source_names[s] :
		"unknown";
}

#define NS_PER_S 1000000000LL
/* Worker events further apart than this start a new recovery batch. */
#define BATCH_GAP_NS 50000000LL
#define MAX_RANGES 8
/* Shadow pages the model follows: 4-level TDP, the root is level 4. */
#define SP_MAX_LEVEL 4

enum ctx_kind {
	CTX_NONE = 0,
	CTX_WINDOW,
	CTX_FAULT,
	CTX_RECOVERY,
	CTX_TEARDOWN,
};

struct gfn_range {
	int as_id;
	uint64_t start, end;
};

struct thread_ctx {
	enum ctx_kind kind;
	uint64_t seq;
	int64_t ts;
	uint64_t gfn;                   /* fault gfn / SP gfn */
	int keep;                       /* policy keeps this context's zaps */
	int64_t predicted, observed, policy_zaps;
	struct gfn_range ranges[MAX_RANGES];
	int nranges;
	int sp_level;
	int64_t npf_exit_ts;            /* 0: not in an NPF exit */
	int64_t contention_ts;
	int is_worker;
	int fetch;                      /* the open fault is an exec fault */
	uint64_t hva_start, hva_end;    /* of the open window */
	int in_setregion;
	int measured;                   /* patched: its end event closes it */
	int64_t flushes;                /* measured flushes in the context */
};

struct batch {
	int active;
	int64_t start, last;
	int64_t policy_zaps, observed_zaps, predicted_zaps;
	int read_lock;                  /* measured lock mode (patched) */
	uint64_t first_seq;
	int64_t sps, predicted_sps;     /* SPs recovered: traced, predicted */
	int64_t flushes;                /* measured */
	int64_t policy_quota, policy_taken;
	int64_t policy_pages;           /* L1 SPs the policy recovers */
	int64_t wake;                   /* recorded wake-up index */
	int measured;                   /* opened by a traced begin event */
	int skipped;                    /* the policy's worker sleeps */
};

struct nx_splits {
	struct u64map m;                /* L1 SP gfn + 1 -> 1 while split */
	int64_t count;
};

struct engine {
	const struct replay_opts *o;
	const struct spte_format *f;
	struct replay_result *r;
	const struct scan *scan;        /* the first pass's facts */
	struct slots slots;
	struct tdp obs, ovl, zapmark;
	struct ptrmap threads;
	struct thread_ctx **open_windows;
	int nopen, capopen;
	struct batch batch, last_batch;
	int64_t period_factor;          /* recorded wake-ups per policy's */
	int64_t batches_seen;
	/* NX-split pages KVM tracks for recovery (nx_lpage_splits): L1
	 * SPs created by exec faults outside dirty-logged slots; as traced,
	 * and as they would be under the policy. */
	struct nx_splits nx, nx_policy;
	int setregion_threads;          /* inside KVM_SET_USER_MEMORY_REGION */
	struct thread_ctx *last_thread; /* thread_get()'s last answer */
	int32_t last_tid;
	int nomem;
};

static struct thread_ctx *thread_get(struct engine *e, int32_t tid)
{
	struct thread_ctx *t;
	int i;

	/* Runs of events come from one thread: ask the map once a run. */
	if (e->last_thread && e->last_tid == tid)
		return e->last_thread;
	t = ptrmap_get(&e->threads, (uint64_t)tid + 1);
	if (t) {
		e->last_tid = tid;
		e->last_thread = t;
		return t;
	}
	t = calloc(1, sizeof(*t));
	if (!t || ptrmap_put(&e->threads, (uint64_t)tid + 1, t) < 0) {
		free(t);
		e->nomem = 1;
		return NULL;
	}
	for (i = 0; i < e->o->n_nx_worker_tids; i++)
		if (e->o->nx_worker_tids[i] == tid)
			t->is_worker = 1;
	return t;
}

static struct replay_second *second_at(struct engine *e, int64_t ts)
{
	int64_t s = ts < 0 ? 0 : ts / NS_PER_S;
	struct replay_result *r = e->r;

	if (s >= r->nseconds) {
		int64_t n = s + 1 + 16;
		struct replay_second *g = realloc(r->series, (size_t)n *
						  sizeof(*g));

		if (!g) {
			e->nomem = 1;
			return NULL;
		}
		memset(g + r->nseconds, 0, (size_t)(n - r->nseconds) *
		       sizeof(*g));
		r->series = g;
		r->nseconds = n;
	}
	return &r->series[s];
}

static void mismatch(struct engine *e, enum mismatch_kind kind,
		     uint64_t seq, int64_t ts, uint64_t gfn,
		     int64_t predicted, int64_t observed)
{
	struct replay_result *r = e->r;

	/* Predictions meet the trace only under the recorded rules. */
	if (!e->o->self_check)
		return;
	r->mismatches_total++;
	MR_ASSERT_DBG(r->nmismatches <= REPLAY_MAX_MISMATCHES);
	if (r->nmismatches == REPLAY_MAX_MISMATCHES)
		return;
	r->mismatches[r->nmismatches++] = (struct mismatch){
		kind, seq, ts, gfn, predicted, observed,
	};
}

static int permits(const struct spte_format *f, uint64_t spte, uint64_t err)
{
	if ((err & MEV_PFERR_WRITE) && !spte_writable(f, spte))
		return 0;
	if ((err & MEV_PFERR_FETCH) && !spte_executable(f, spte))
		return 0;
	return 1;
}

/* The leaf mapping gfn under the policy: a kept one, else the traced. */
static int policy_leaf(struct engine *e, int as_id, uint64_t gfn,
		       uint64_t *spte)
{
	int level;

	for (level = 1; level <= TDP_MAX_LEAF_LEVEL; level++) {
		uint64_t v = tdp_get(&e->ovl, as_id, level, gfn);

		if (v && spte_present_leaf(e->f, v, level)) {
			*spte = v;
			return level;
		}
	}
	return tdp_leaf(&e->obs, as_id, gfn, spte);
}

static void policy_zap(struct engine *e, int64_t ts, enum zap_cause cause,
		       int as_id, int level, uint64_t gfn)
{
	struct replay_second *s = second_at(e, ts);

	MR_ASSERT_DBG((unsigned)cause < ZAP_CAUSES);
	e->r->zaps[cause]++;
	if (s)
		s->zaps++;
	if (tdp_set(&e->zapmark, as_id, level, gfn, (uint64_t)cause + 1) < 0)
		e->nomem = 1;
}

static void policy_flush(struct engine *e, int64_t ts)
{
	struct replay_second *s = second_at(e, ts);

	e->r->flushes++;
	if (s)
		s->flushes++;
}

struct leaf_walk {
	struct engine *e;
	int as_id;
	int64_t n;
	int only_level;                 /* 0: any */
	int zap_kept;                   /* ovl walk: zap what the policy kept */
	enum zap_cause cause;
	int64_t ts;
};

static void count_leaf(void *arg, int level, uint64_t gfn, uint64_t spte)
{
	struct leaf_walk *w = arg;

	(void)gfn;
	(void)spte;
	if (!w->only_level || w->only_level == level)
		w->n++;
}

static void zap_kept_leaf(void *arg, int level, uint64_t gfn, uint64_t spte)
{
	struct leaf_walk *w = arg;

	(void)spte;
	if (w->only_level && w->only_level != level)
		return;
	w->n++;
	tdp_set(&w->e->ovl, w->as_id, level, gfn, 0);
	policy_zap(w->e, w->ts, w->cause, w->as_id, level, gfn);
}

/*
 * At the start of a context over [start, end): how many leaves the
 * traced state holds there (the prediction), and the policy's zaps of
 * leaves only it still holds (unless it keeps this context's leaves).
 */
static int64_t context_open_range(struct engine *e, struct thread_ctx *t,
				  int as_id, uint64_t start, uint64_t end,
				  int only_level, enum zap_cause cause)
{
	struct leaf_walk w = { e, as_id, 0, only_level, 0, cause, t->ts };
	int64_t predicted;

	tdp_for_each_leaf(&e->obs, as_id, start, end, count_leaf, &w);
	/* Under a rule that keeps this context's leaves, none go. */
	predicted = t->keep ? 0 : w.n;
	if (!t->keep && tdp_size(&e->ovl)) {
		w.n = 0;
		tdp_for_each_leaf(&e->ovl, as_id, start, end, zap_kept_leaf,
				  &w);
		t->policy_zaps += w.n;
	}
	return predicted;
}

static void open_window_remove(struct engine *e, struct thread_ctx *t)
{
	int i;

	for (i = 0; i < e->nopen; i++)
		if (e->open_windows[i] == t) {
			e->open_windows[i] = e->open_windows[--e->nopen];
			return;
		}
	/* Every window context was added when it opened. */
	MR_UNREACHABLE();
}

/*
 * TLB flushes of one context (an invalidation, a fault, a teardown, a
 * recovery batch).  The kernel flushes after zapping, how often within a
 * context depends on rescheduling (recovery flushes at every
 * cond_resched), so the self-check compares contexts that flushed with
 * contexts the model says zap.  Under the policy a context keeps its
 * traced flushes (measured) or one flush (inferred) while it still zaps,
 * and none when the policy removed all its zaps; per_page >= 0: the
 * policy flushes that many times instead (a read-locked recovery flushes
 * after each page).
 */
static void flush_account(struct engine *e, int64_t ts, int64_t predicted,
			  int64_t observed, int64_t policy_zaps,
			  int64_t flushes, int64_t per_page)
{
	struct replay_result *r = e->r;
	int64_t i, n;

	r->flushes_predicted += predicted > 0;
	if (r->flushes_measured)
		r->flushes_observed += flushes > 0;
	else
		r->flushes_observed += observed > 0;
	if (r->flushes_measured)
		/* A context's flushes go only with all of its zaps. */
		n = observed && !policy_zaps ? 0 : flushes;
	else
		n = policy_zaps > 0;
	if (per_page >= 0)
		n = per_page;
	for (i = 0; i < n; i++)
		policy_flush(e, ts);
}

static void batch_close(struct engine *e)
{
	struct batch *b = &e->batch;

	if (!b->active)
		return;
	e->r->recovery_batches++;
	if (e->o->nx_ratio > 0) {
		e->r->nx_recovered_observed += b->sps;
		e->r->nx_recovered_predicted += b->predicted_sps;
		if (b->sps != b->predicted_sps)
			mismatch(e, MISMATCH_RECOVERY_BATCH, b->first_seq,
				 b->start, 0, b->predicted_sps, b->sps);
	}
	/* Recovery under the read lock (kernel-series patch 8) flushes
	 * the TLB after each page it zaps, under the write lock once per
	 * lock hold. */
	flush_account(e, b->last, b->predicted_zaps, b->observed_zaps,
		      b->policy_zaps, b->flushes,
		      e->o->policy->recovery_read_lock && !b->read_lock ?
		      b->policy_pages : -1);
	e->last_batch = *b;
	memset(b, 0, sizeof(*b));
}

/*
 * Which wake-up of the recorded worker a new batch is, and whether a
 * worker with a period k times longer would have run it.  Wake-ups are
 * counted from the first batch (whose phase the trace cannot tell: it is
 * taken as one the policy's worker runs); the gap to the previous batch,
 * rounded to whole periods, is how many wake-ups passed (the worker
 * sleeps a little longer than its period, so absolute times drift, the
 * gaps do not).
 */
static void batch_wake(struct engine *e, struct batch *b)
{
	int64_t period = e->o->nx_period_ms * 1000000, gap;

	if (e->batches_seen++ && period > 0) {
		gap = (b->start - e->last_batch.start + period / 2) / period;
		b->wake = e->last_batch.wake + (gap > 0 ? gap : 1);
	}
	b->skipped = e->period_factor > 1 && b->wake % e->period_factor;
	if (!b->skipped)
		e->r->recovery_batches_run++;
}

static void batch_touch(struct engine *e, const struct model_event *ev)
{
	struct batch *b = &e->batch;
	int64_t ratio = e->o->nx_ratio;

	/* Without begin/end events (stock kernels) a pause ends a batch;
	 * with them only the end does: a batch that yields the lock, or
	 * flushes per page under the read lock on a busy host, pauses for
	 * longer than any gap rule. */
	if (b->active && !b->measured && ev->ts - b->last > BATCH_GAP_NS)
		batch_close(e);
	if (!b->active) {
		b->active = 1;
		b->start = ev->ts;
		b->first_seq = ev->seq;
		batch_wake(e, b);
		/* kvm_recover_nx_lpages(): to_zap = ceil(splits / ratio). */
		if (ratio > 0) {
			int64_t pr = e->o->policy->nx_ratio ?
				e->o->policy->nx_ratio : ratio;

			b->predicted_sps = (e->nx.count + ratio - 1) / ratio;
			b->policy_quota = (e->nx_policy.count + pr - 1) / pr;
		}
	}
	b->last = ev->ts;
}

static int dirty_logged_at(struct engine *e, uint64_t gfn, uint64_t seq)
{
	return e->slots.measured ? slots_dirty_logged(&e->slots, 0, gfn) :
		scan_dirty_at(e->scan, seq);
}

static void nx_set(struct engine *e, struct nx_splits *l, uint64_t gfn,
		   int split)
{
	uint64_t key = tdp_align(gfn, TDP_LEVEL_4K + 1) + 1;
	int was = u64map_get(&l->m, key) != 0;

	if (was == split)
		return;
	if (u64map_put(&l->m, key, (uint64_t)split) < 0)
		e->nomem = 1;
	l->count += split ? 1 : -1;
	MR_ASSERT_DBG(l->count >= 0);
}

/* An L1 table made by an exec fault outside dirty logging is an NX
 * split that recovery will come for (account_nx_huge_page()). */
static void on_sp_alloc(struct engine *e, struct thread_ctx *t,
			const struct model_event *ev)
{
	if (mev_role_level(ev->u.sp.role) != TDP_LEVEL_4K ||
	    t->kind != CTX_FAULT || !t->fetch ||
	    dirty_logged_at(e, ev->u.sp.gfn, ev->seq))
		return;
	nx_set(e, &e->nx, ev->u.sp.gfn, 1);
	/* A fault the policy avoided splits nothing under it. */
	if (!t->keep)
		nx_set(e, &e->nx_policy, ev->u.sp.gfn, 1);
}

static void ctx_close(struct engine *e, struct thread_ctx *t)
{
	struct replay_result *r = e->r;
	int64_t i;

	switch (t->kind) {
	case CTX_NONE:
		return;
	case CTX_WINDOW:
		open_window_remove(e, t);
		/* fallthrough */
	case CTX_FAULT:
		flush_account(e, t->ts, t->predicted, t->observed,
			      t->policy_zaps, t->flushes, -1);
		break;
	case CTX_TEARDOWN:
		/* Not predicted (the kernel batches them), kept as traced. */
		e->r->flushes_teardown += t->flushes;
		for (i = 0; i < t->flushes; i++)
			policy_flush(e, t->ts);
		break;
	case CTX_RECOVERY:
		e->batch.predicted_zaps += t->predicted;
		e->batch.observed_zaps += t->observed;
		e->batch.policy_zaps += t->policy_zaps;
		break;
	}
	r->zaps_predicted += t->predicted;
	if (t->predicted != t->observed)
		mismatch(e, MISMATCH_ZAP_COUNT, t->seq, t->ts, t->gfn,
			 t->predicted, t->observed);
	t->kind = CTX_NONE;
}

static void ctx_open(struct engine *e, struct thread_ctx *t,
		     enum ctx_kind kind, const struct model_event *ev,
		     uint64_t gfn)
{
	ctx_close(e, t);
	MR_ASSERT_DBG(t->kind == CTX_NONE);
	t->kind = kind;
	t->seq = ev->seq;
	t->ts = ev->ts;
	t->gfn = gfn;
	t->keep = 0;
	t->predicted = t->observed = t->policy_zaps = 0;
	t->flushes = 0;
	t->nranges = 0;
}

static void add_range(void *arg, int as_id, uint64_t gs, uint64_t ge)
{
	struct thread_ctx *t = arg;

	if (t->nranges < MAX_RANGES)
		t->ranges[t->nranges++] = (struct gfn_range){ as_id, gs, ge };
}

static void on_notifier(struct engine *e, struct thread_ctx *t,
			const struct model_event *ev)
{
	struct replay_invalidation inv;
	int i;

	/* The stock and the patched start event of one invalidation (see
	 * scan.c): the window is already open. */
	if (ev->u.notifier.phase == MEV_PHASE_START && t->kind == CTX_WINDOW &&
	    !t->observed && t->hva_start == ev->u.notifier.hva_start &&
	    t->hva_end == ev->u.notifier.hva_end) {
		t->measured |= ev->u.notifier.has_event;
		return;
	}
	if (ev->u.notifier.phase != MEV_PHASE_START) {
		ctx_close(e, t);
		return;
	}
	ctx_open(e, t, CTX_WINDOW, ev, 0);
	t->measured = ev->u.notifier.has_event;
	t->hva_start = ev->u.notifier.hva_start;
	t->hva_end = ev->u.notifier.hva_end;
	slots_hva_to_gfn(&e->slots, ev->u.notifier.hva_start,
			 ev->u.notifier.hva_end, add_range, t);
	if (t->nranges)
		t->gfn = t->ranges[0].start;
	inv.seq = ev->seq;
	inv.hva_start = ev->u.notifier.hva_start;
	inv.hva_end = ev->u.notifier.hva_end;
	inv.is_upgrade = scan_is_upgrade(e->scan, ev->seq);
	inv.upgrade_src = e->scan->upgrade_src;
	e->r->upgrade_windows += inv.is_upgrade;
	t->keep = e->o->policy->keep_invalidation(&inv);
	for (i = 0; i < t->nranges; i++)
		t->predicted += context_open_range(e, t, t->ranges[i].as_id,
						   t->ranges[i].start,
						   t->ranges[i].end, 0,
						   ZAP_NOTIFIER);
	if (e->nopen == e->capopen) {
		int n = e->capopen ? e->capopen * 2 : 8;
		struct thread_ctx **g = realloc(e->open_windows,
						(size_t)n * sizeof(*g));

		if (!g) {
			e->nomem = 1;
			return;
		}
		e->open_windows = g;
		e->capopen = n;
	}
	e->open_windows[e->nopen++] = t;
}

/* Does the open invalidation t cover (as_id, gfn)? */
static int window_covers(const struct thread_ctx *t, int as_id, uint64_t gfn)
{
	int j;

	for (j = 0; j < t->nranges; j++)
		if (t->ranges[j].as_id == as_id && gfn >= t->ranges[j].start &&
		    gfn < t->ranges[j].end)
			return 1;
	return 0;
}

static int in_open_window(struct engine *e, int as_id, uint64_t gfn)
{
	int i;

	for (i = 0; i < e->nopen; i++)
		if (window_covers(e->open_windows[i], as_id, gfn))
			return 1;
	return 0;
}

/*
 * A leaf installed in the range of an open invalidation by another thread
 * (a fault that passed its retry check before the notifier took
 * mmu_lock) is zapped by that invalidation's walk: the kernel emits the
 * notifier tracepoints before mmu_invalidate_begin().  Only windows that
 * the patched end event closes count: a stock window stays open in the
 * model past invalidate_range_end, when faults install again.
 */
static void window_install(struct engine *e, struct thread_ctx *self,
			   int as_id, uint64_t gfn)
{
	struct thread_ctx *w;
	int i;

	for (i = 0; i < e->nopen; i++) {
		w = e->open_windows[i];
		if (w != self && !w->keep && w->measured &&
		    window_covers(w, as_id, gfn))
			w->predicted++;
	}
}

static void on_fault(struct engine *e, struct thread_ctx *t,
		     const struct model_event *ev)
{
	struct replay_result *r = e->r;
	uint64_t gfn = mev_gpa_to_gfn(ev->u.fault.gpa), err = ev->u.fault.error_code;
	uint64_t spte, pspte, mark = 0;
	int level, plevel, allowed, in_window, avoided;
	struct replay_second *s;

	ctx_open(e, t, CTX_FAULT, ev, gfn);
	t->fetch = (err & MEV_PFERR_FETCH) != 0;
	r->faults_observed++;
	in_window = in_open_window(e, 0, gfn);

	/* Self-check: the traced state must require this fault. */
	level = tdp_leaf(&e->obs, 0, gfn, &spte);
	allowed = level && permits(e->f, spte, err);
	/*
	 * A zap writes the SPTE before its tracepoint fires, and a vCPU's
	 * NPF is traced at the exit, before it takes mmu_lock: so during NX
	 * recovery (under either lock; a preempted worker traces its zap
	 * milliseconds late) and the collapse of 4K leaves when dirty
	 * logging stops (zap_collapsible_sptes, inside
	 * KVM_SET_USER_MEMORY_REGION), a vCPU can take its NPF on a page
	 * whose zap is traced just after.  Meanwhile a fault on a mapped
	 * page is not held against the model.
	 */
	if (!allowed || in_window || e->batch.active || e->setregion_threads)
		r->faults_predicted++;
	else
		mismatch(e, MISMATCH_FAULT_NOT_REQUIRED, ev->seq, ev->ts, gfn,
			 0, 1);
	/* A huge leaf that forbids the access is replaced (NX split). */
	if (level > 1 && !allowed)
		t->predicted = 1;

	/* What-if: a leaf the policy kept may permit the access. */
	if (tdp_size(&e->ovl)) {
		plevel = policy_leaf(e, 0, gfn, &pspte);
	} else {
		plevel = level;
		pspte = spte;
	}
	avoided = plevel && permits(e->f, pspte, err) && !in_window;
	t->keep = avoided;
	if (avoided) {
		r->faults_avoided++;
		return;
	}
	r->faults++;
	s = second_at(e, ev->ts);
	if (s)
		s->faults++;
	for (level = 1; level <= TDP_MAX_LEAF_LEVEL && !mark &&
	     tdp_size(&e->zapmark); level++) {
		mark = tdp_get(&e->zapmark, 0, level, gfn);
		if (mark) {
			MR_ASSERT_DBG(mark <= ZAP_CAUSES);
			r->refaults[mark - 1]++;
			tdp_set(&e->zapmark, 0, level, gfn, 0);
		}
	}
}

/*
 * Whether the policy leaves a page the worker recovered.  The policy's
 * own NX list decides, when the ratio is known: each batch takes
 * ceil(policy splits / ratio) pages (the policy's ratio for a sweep),
 * skipped dirty-logged ones included (they are dropped from the list, as
 * upstream's unaccount does); pages beyond that stay split and tracked.
 * Pages a policy batch would take that the traced batch did not are not
 * modelled: a sweep to a smaller ratio than recorded undercounts.
 */
static int recovery_keep(struct engine *e, const struct replay_recovery *rec,
			 int level)
{
	struct batch *b = &e->batch;
	int skip = e->o->policy->skip_recovery(rec);

	/* A batch the policy's (slower) worker does not run keeps all. */
	if (b->skipped)
		return 1;
	/* The recorded policy's batches are the traced ones. */
	if (level != TDP_LEVEL_4K || e->o->self_check)
		return skip;
	if (e->o->nx_ratio > 0 && b->policy_taken >= b->policy_quota)
		return 1;
	b->policy_taken++;
	nx_set(e, &e->nx_policy, rec->gfn, 0);
	return skip;
}

static void on_sp_free(struct engine *e, struct thread_ctx *t,
		       const struct model_event *ev)
{
	int level = mev_role_level(ev->u.sp.role);
	uint64_t gfn = ev->u.sp.gfn;
	struct replay_recovery rec;
	enum ctx_kind kind;

	/* Freed inside an invalidation or a fault: part of that context. */
	if (t->kind == CTX_WINDOW || t->kind == CTX_FAULT)
		return;
	if (level < 1 || level > SP_MAX_LEVEL)
		return;
	kind = t->is_worker ? CTX_RECOVERY : CTX_TEARDOWN;
	ctx_open(e, t, kind, ev, gfn);
	t->sp_level = level;
	if (kind == CTX_RECOVERY) {
		batch_touch(e, ev);
		e->batch.sps += level == TDP_LEVEL_4K;
		rec.gfn = gfn;
		rec.dirty_logged = dirty_logged_at(e, gfn, ev->seq);
		rec.dirty_src = e->slots.measured ? REPLAY_SRC_MEASURED :
			e->scan->dirty_src;
		t->keep = recovery_keep(e, &rec, level);
		e->batch.policy_pages += level == TDP_LEVEL_4K && !t->keep;
	} else if (level == TDP_LEVEL_4K) {
		nx_set(e, &e->nx_policy, gfn, 0);
	}
	if (level == TDP_LEVEL_4K)
		nx_set(e, &e->nx, gfn, 0);
	t->predicted = context_open_range(e, t, 0, gfn, gfn +
					  tdp_level_pages(level + 1), level,
					  kind == CTX_RECOVERY ?
					  ZAP_NX_RECOVERY : ZAP_TEARDOWN);
}

static enum zap_cause zap_cause_of(const struct thread_ctx *t)
{
	switch (t->kind) {
	case CTX_WINDOW:
		return ZAP_NOTIFIER;
	case CTX_FAULT:
		return ZAP_FAULT_PATH;
	case CTX_RECOVERY:
		return ZAP_NX_RECOVERY;
	case CTX_TEARDOWN:
		return ZAP_TEARDOWN;
	default:
		return t->is_worker ? ZAP_NX_RECOVERY : ZAP_OTHER;
	}
}

static void on_spte(struct engine *e, struct thread_ctx *t,
		    const struct model_event *ev)
{
	const struct spte_format *f = e->f;
	uint64_t old = ev->u.spte.old_spte, new = ev->u.spte.new_spte;
	uint64_t gfn = ev->u.spte.gfn;
	int level = ev->u.spte.level, as = ev->u.spte.as_id;
	enum zap_cause cause;

	if (t->is_worker)
		batch_touch(e, ev);
	if (spte_present_leaf(f, old, level) && !spte_present(f, new)) {
		e->r->zaps_observed++;
		cause = zap_cause_of(t);
		t->observed++;
		if (t->kind == CTX_WINDOW) {
			if (!window_covers(t, as, gfn))
				mismatch(e, MISMATCH_ZAP_OUTSIDE, ev->seq,
					 ev->ts, gfn, 0, 1);
		} else if (t->kind == CTX_NONE) {
			mismatch(e, MISMATCH_ZAP_UNEXPLAINED, ev->seq, ev->ts,
				 gfn, 0, 1);
		}
		if (t->keep) {
			e->r->zaps_kept++;
			if (tdp_set(&e->ovl, as, level, gfn, old) < 0)
				e->nomem = 1;
		} else {
			t->policy_zaps++;
			policy_zap(e, ev->ts, cause, as, level, gfn);
		}
	} else if (!spte_present_leaf(f, old, level) &&
		   spte_present_leaf(f, new, level)) {
		/* The traced kernel re-installed what the policy kept. */
		if (tdp_get(&e->ovl, as, level, gfn))
			tdp_set(&e->ovl, as, level, gfn, 0);
		window_install(e, t, as, gfn);
	}
	if (tdp_set(&e->obs, as, level, gfn, new) < 0)
		e->nomem = 1;
}

/* The fast path fixes a leaf in place without a spte_changed event. */
static void on_fast_fault(struct engine *e, const struct model_event *ev)
{
	uint64_t gfn = mev_gpa_to_gfn(ev->u.fault.gpa), spte;
	int level = tdp_leaf(&e->obs, 0, gfn, &spte);

	if (level && spte == ev->fast_old)
		tdp_set(&e->obs, 0, level, gfn, ev->fast_new);
}

/* A vCPU's wait for mmu_lock: removed if the policy frees the lock. */
static int64_t overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
	int64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;

	return hi > lo ? hi - lo : 0;
}

/* Time [from, to) spends inside the current and the last recovery batch;
 * run_only: only batches the policy's worker runs. */
static int64_t recovery_overlap(struct engine *e, int64_t from, int64_t to,
				int run_only)
{
	const struct batch *b[2] = { &e->batch, &e->last_batch };
	int64_t o = 0;
	int i;

	for (i = 0; i < 2; i++)
		if (b[i]->active && !(run_only && b[i]->skipped))
			o += overlap(from, to, b[i]->start, b[i]->last);
	return o;
}

/*
 * A vCPU waited wait_ns for mmu_lock over [from, to).  Inside a recovery
 * batch the wait was for the worker's write lock: gone under a policy
 * that recovers under the read lock, or whose worker does not run that
 * batch.
 */
static void lock_wait(struct engine *e, int64_t ts, int64_t wait_ns,
		      int64_t from, int64_t to)
{
	struct replay_second *s;

	if (wait_ns <= 0)
		return;
	if (recovery_overlap(e, from, to, 0) > 0 &&
	    (e->o->policy->recovery_read_lock ||
	     recovery_overlap(e, from, to, 1) == 0)) {
		e->r->lock_wait_removed_ns += wait_ns;
		return;
	}
	e->r->lock_wait_ns += wait_ns;
	e->r->lock_waits++;
	s = second_at(e, ts);
	if (s)
		s->lock_wait_ns += wait_ns;
}

static void on_entry(struct engine *e, struct thread_ctx *t,
		     const struct model_event *ev)
{
	int64_t o;

	ctx_close(e, t);
	if (!t->npf_exit_ts)
		return;
	/* Stock kernels: the part of an NPF exit that overlaps a
	 * write-locked recovery batch is taken as waiting for it. */
	if (e->r->lock_src == REPLAY_SRC_INFERRED) {
		o = recovery_overlap(e, t->npf_exit_ts, ev->ts, 0);
		if (o)
			lock_wait(e, ev->ts, o, t->npf_exit_ts, ev->ts);
	}
	t->npf_exit_ts = 0;
}

static void handle(struct engine *e, const struct model_event *ev)
{
	struct thread_ctx *t = thread_get(e, ev->tid);

	if (!t)
		return;
	e->r->events++;
	switch (ev->kind) {
	case MEV_SPTE_CHANGE:
		on_spte(e, t, ev);
		break;
	case MEV_FAULT:
		on_fault(e, t, ev);
		break;
	case MEV_FAST_FAULT:
		on_fast_fault(e, ev);
		break;
	case MEV_NOTIFIER:
		on_notifier(e, t, ev);
		break;
	case MEV_SP_ALLOC:
		on_sp_alloc(e, t, ev);
		break;
	case MEV_SP_FREE:
		on_sp_free(e, t, ev);
		break;
	case MEV_VCPU_EXIT:
		ctx_close(e, t);
		if (ev->u.vcpu.reason == e->o->npf_exit_reason)
			t->npf_exit_ts = ev->ts;
		break;
	case MEV_VCPU_ENTRY:
		on_entry(e, t, ev);
		break;
	case MEV_SYSCALL:
		ctx_close(e, t);
		if (ev->u.sys.call != MSYS_IOCTL)
			break;
		if (ev->u.sys.entry && ev->u.sys.a1 ==
		    KVM_SET_USER_MEMORY_REGION && !t->in_setregion) {
			t->in_setregion = 1;
			e->setregion_threads++;
		} else if (!ev->u.sys.entry && t->in_setregion) {
			t->in_setregion = 0;
			e->setregion_threads--;
			MR_ASSERT_DBG(e->setregion_threads >= 0);
		}
		break;
	case MEV_TLB_FLUSH:
		/* Attributed to the flushing thread's context, see
		 * flush_account(); a flush outside any (dirty-log
		 * write-protection, ...) stays as it is under every policy. */
		if (t->is_worker && e->batch.active) {
			e->batch.flushes++;
		} else if (t->kind != CTX_NONE) {
			t->flushes++;
		} else {
			e->r->flushes_other++;
			policy_flush(e, ev->ts);
		}
		break;
	case MEV_NX_RECOVERY:
		ctx_close(e, t);
		if (ev->u.nx.phase == MEV_NX_BEGIN)
			batch_close(e);         /* a begin without its end */
		batch_touch(e, ev);
		e->batch.measured |= ev->u.nx.phase == MEV_NX_BEGIN;
		e->batch.read_lock = ev->u.nx.lock_mode == MEV_LOCK_READ;
		/* Patched: a page the recorded kernel skipped (dirty-logged)
		 * uses up the batch and leaves the list, without an SP free. */
		if (ev->u.nx.phase == MEV_NX_PAGE &&
		    ev->u.nx.action == MEV_NX_SKIPPED_DIRTY) {
			e->batch.sps++;
			nx_set(e, &e->nx, ev->u.nx.gfn, 0);
			nx_set(e, &e->nx_policy, ev->u.nx.gfn, 0);
		}
		if (ev->u.nx.phase == MEV_NX_END)
			batch_close(e);
		break;
	case MEV_LOCK_WAIT:
		lock_wait(e, ev->ts, ev->u.lock.wait_ns,
			  ev->ts - ev->u.lock.wait_ns, ev->ts);
		break;
	case MEV_LOCK_CONTENTION:
		if (t->is_worker || e->r->lock_src != REPLAY_SRC_MEASURED)
			break;
		if (ev->u.contention.phase == MEV_PHASE_START) {
			t->contention_ts = ev->ts;
		} else if (t->contention_ts) {
			lock_wait(e, ev->ts, ev->ts - t->contention_ts,
				  t->contention_ts, ev->ts);
			t->contention_ts = 0;
		}
		break;
	case MEV_MEMSLOT:
		slots_apply_event(&e->slots, ev->u.memslot.as_id,
				  ev->u.memslot.slot, ev->u.memslot.change,
				  ev->u.memslot.base_gfn, ev->u.memslot.npages,
				  ev->u.memslot.hva, ev->u.memslot.new_flags);
		break;
	default:
		break;
	}
}

static void close_each(void *arg, void *t)
{
	ctx_close(arg, t);
}

/* Which events the capture has decides how facts are known. */
static void sources_decide(struct engine *e)
{
	const int *seen = e->scan->seen;

	e->r->flushes_measured = seen[MEV_TLB_FLUSH];
	e->r->lock_src = seen[MEV_LOCK_WAIT] || seen[MEV_LOCK_CONTENTION] ?
		REPLAY_SRC_MEASURED : e->o->n_nx_worker_tids ?
		REPLAY_SRC_INFERRED : REPLAY_SRC_NONE;
}

enum replay_status replay_run_scanned(struct source *src,
				      const struct replay_opts *opts,
				      const struct scan *scan,
				      struct replay_result *res)
{
	enum replay_status st = REPLAY_ERR_NOMEM;
	struct engine e;
	struct model_event ev;
	enum source_status ss;

	memset(res, 0, sizeof(*res));
	memset(&e, 0, sizeof(e));
	res->policy = opts->policy->name;
	res->limits = opts->policy->limits;
	res->nx_ratio_known = opts->nx_ratio > 0;
	e.period_factor = policy_period_factor(opts->policy,
					       opts->nx_period_ms);
	if (!e.period_factor)
		return REPLAY_ERR_POLICY;
	e.o = opts;
	e.f = opts->fmt;
	e.r = res;
	ptrmap_init(&e.threads);
	tdp_init(&e.obs, e.f);
	tdp_init(&e.ovl, e.f);
	tdp_init(&e.zapmark, e.f);
	u64map_init(&e.nx.m);
	u64map_init(&e.nx_policy.m);
	e.scan = scan;
	sources_decide(&e);
	/* Measured memslots are replayed as they change; inferred ones
	 * hold from the start. */
	if (e.scan->slots.measured)
		slots_init(&e.slots);
	else
		e.slots = e.scan->slots;
	res->slots_src = e.scan->slots.measured ? REPLAY_SRC_MEASURED :
		e.scan->slots.n ? REPLAY_SRC_INFERRED : REPLAY_SRC_NONE;
	res->upgrade_src = e.scan->upgrade_src;
	res->dirty_src = e.scan->dirty_src;
	if (source_rewind(src) != SOURCE_OK) {
		st = REPLAY_ERR_SOURCE;
		goto end;
	}
	while ((ss = source_next(src, &ev)) == SOURCE_OK && !e.nomem) {
		handle(&e, &ev);
		if (!(res->events & 0xfffff))
			log_progress("replay: events", (uint64_t)res->events);
		if (tdp_size(&e.obs) + tdp_size(&e.ovl) >
		    (size_t)res->peak_tdp_entries)
			res->peak_tdp_entries = (int64_t)(tdp_size(&e.obs) +
							  tdp_size(&e.ovl));
	}
	log_progress_end();
	if (e.nomem)
		goto end;
	if (ss != SOURCE_END) {
		st = REPLAY_ERR_SOURCE;
		goto end;
	}
	ptrmap_each(&e.threads, close_each, &e);
	batch_close(&e);
	MR_ASSERT(e.nopen == 0);
	MR_ASSERT(res->faults + res->faults_avoided == res->faults_observed);
	MR_ASSERT(res->recovery_batches_run <= res->recovery_batches);
	st = e.nomem ? REPLAY_ERR_NOMEM : REPLAY_OK;
end:
	ptrmap_free_values(&e.threads);
	free(e.open_windows);
	tdp_free(&e.obs);
	tdp_free(&e.ovl);
	tdp_free(&e.zapmark);
	u64map_free(&e.nx.m);
	u64map_free(&e.nx_policy.m);
	if (st != REPLAY_OK)
		replay_result_free(res);
	return st;
}

enum replay_status replay_prepare(struct source *src,
				  const struct replay_opts *opts,
				  struct scan *scan)
{
	switch (scan_run(src, opts->fmt, scan)) {
	case SCAN_OK:
		return REPLAY_OK;
	case SCAN_ERR_SOURCE:
		return REPLAY_ERR_SOURCE;
	default:
		return REPLAY_ERR_NOMEM;
	}
}

enum replay_status replay_run(struct source *src,
			      const struct replay_opts *opts,
			      struct replay_result *res)
{
	enum replay_status st;
	struct scan scan;

	memset(res, 0, sizeof(*res));
	st = replay_prepare(src, opts, &scan);
	if (st == REPLAY_OK)
		st = replay_run_scanned(src, opts, &scan, res);
	scan_free(&scan);
	return st;
}

void replay_result_free(struct replay_result *res)
{
	free(res->series);
	res->series = NULL;
	res->nseconds = 0;
}
