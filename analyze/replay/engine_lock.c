/*
 * vCPU waits for mmu_lock (see engine_int.h): measured (patched
 * lock_wait events, lock contention begin/end) or, on stock kernels, the
 * part of an NPF exit spent inside a write-locked recovery batch.  A
 * wait is removed under a policy that removes the write-locked work it
 * overlapped: a recovery batch recovered under the read lock or not run
 * at all, an invalidation whose zaps the policy keeps; a wait that also
 * overlapped work the policy still does stays whole.
 *
 * When an invalidation releases mmu_lock no event says: after its last
 * zap and the flush that follows (the flush event fires before its
 * IPIs), before the next event of its thread.  Each wait is judged
 * with both ends, giving the waits the policy leaves as a range:
 * lock_wait_ns (held to the last traced zap or flush: the most left)
 * and lock_wait_min_ns (held to the thread's next event: the least).
 */
#include "replay/engine_int.h"

#include <string.h>

static int64_t overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
	int64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;

	return hi > lo ? hi - lo : 0;
}

/*
 * Time [from, to) spends inside the current and the last recovery batch
 * that held mmu_lock for write; run_only: only batches the policy's
 * worker runs.  A batch traced as read-locked (the patched begin event's
 * lock mode) makes no vCPU wait: faults take the lock for read too.
 */
static int64_t recovery_overlap(struct engine *e, int64_t from, int64_t to,
				int run_only)
{
	const struct batch *b[2] = { &e->batch, &e->last_batch };
	int64_t o = 0;
	int i;

	for (i = 0; i < 2; i++)
		if (b[i]->batch_active && !b[i]->batch_read_lock &&
		    !(run_only && b[i]->batch_skipped))
			o += overlap(from, to, b[i]->batch_start_ts,
				     b[i]->batch_last_ts);
	return o;
}

void lock_holder_push(struct engine *e, const struct thread_ctx *t)
{
	struct lock_holder *h = &e->holders[e->nholders++ % LOCK_HOLDERS];

	h->hold_from = t->ctx_ts;
	h->hold_to = t->ctx_last_ts;
	/* Closed by its own thread's next event: held at most until it. */
	h->hold_to_max = e->ev && e->ev->tid == e->last_tid &&
		e->last_thread == t && e->ev->ts > h->hold_to ?
		e->ev->ts : h->hold_to;
	h->hold_page = t->ctx_kind == CTX_RECOVERY;
	h->hold_removed = t->ctx_keep && t->ctx_observed > 0;
}

/* Time one wait spent inside write-locked work, by kind. */
struct wait_overlap {
	int64_t win_removed, win_kept;          /* invalidations */
	int64_t page_removed, page_kept;        /* recovered pages */
};

/*
 * Time [from, to) spends inside write-locked invalidations and
 * recovered pages (the open windows and the last LOCK_HOLDERS that
 * ended), apart as the policy removes that work or not; longest: each
 * held as long as it may have (an open window until now).
 */
static void holders_overlap(struct engine *e, int64_t from, int64_t to,
			    int longest, struct wait_overlap *w)
{
	unsigned i, n = e->nholders < LOCK_HOLDERS ? e->nholders :
		LOCK_HOLDERS;
	const struct lock_holder *h;
	const struct thread_ctx *t;
	int64_t o;
	size_t j;

	memset(w, 0, sizeof(*w));
	for (i = 0; i < n; i++) {
		h = &e->holders[i];
		o = overlap(from, to, h->hold_from,
			    longest ? h->hold_to_max : h->hold_to);
		if (h->hold_page)
			*(h->hold_removed ? &w->page_removed :
			  &w->page_kept) += o;
		else
			*(h->hold_removed ? &w->win_removed :
			  &w->win_kept) += o;
	}
	for (j = 0; j < e->nopen_windows; j++) {
		t = e->open_windows[j];
		o = overlap(from, to, t->ctx_ts, longest ? to : t->ctx_last_ts);
		*(t->ctx_keep && t->ctx_observed > 0 ? &w->win_removed :
		  &w->win_kept) += o;
	}
}

/*
 * A vCPU waited wait_ns for mmu_lock over [from, to).  Inside a recovery
 * batch the wait was for the worker's write lock: gone under a policy
 * that recovers under the read lock, or whose worker does not run that
 * batch; under one that skips some of its pages, shortened by their
 * share of the batch's page time the wait overlapped.  Inside an
 * invalidation it was for the notifier's write lock: gone when the
 * policy keeps that invalidation's leaves (it zaps and flushes nothing
 * under the lock).  A wait that also overlapped an invalidation the
 * policy still does stays whole.
 */
static int64_t wait_removed(struct engine *e, int64_t wait_ns,
			    int64_t from, int64_t to, int longest)
{
	struct wait_overlap w;
	int64_t in_batch, in_run_batch;

	in_batch = recovery_overlap(e, from, to, 0);
	in_run_batch = e->opts->policy->recovery_read_lock ? 0 :
		recovery_overlap(e, from, to, 1);
	holders_overlap(e, from, to, longest, &w);
	if (w.win_kept)
		return 0;
	if (!in_run_batch && (in_batch > 0 || w.win_removed > 0))
		return wait_ns;
	if (in_run_batch && w.page_removed)
		return (int64_t)((double)wait_ns * (double)w.page_removed /
				 (double)(w.page_removed + w.page_kept));
	return 0;
}

/* A wait of thread t (NULL: not known whose) of wait_ns over [from, to),
 * traced at ts: what the policy leaves of it is counted, what it
 * removes is given back to t (engine_latency.c). */
static void lock_wait(struct engine *e, struct thread_ctx *t, int64_t ts,
		      int64_t wait_ns, int64_t from, int64_t to)
{
	struct replay_second *s;
	int64_t removed;

	if (wait_ns <= 0)
		return;
	e->res->lock_wait_min_ns += wait_ns -
		wait_removed(e, wait_ns, from, to, 1);
	removed = wait_removed(e, wait_ns, from, to, 0);
	e->res->lock_wait_removed_ns += removed;
	latency_wait_removed(t, removed);
	wait_ns -= removed;
	if (!wait_ns)
		return;
	e->res->lock_wait_ns += wait_ns;
	e->res->lock_waits++;
	s = engine_second_at(e, ts);
	if (s)
		s->lock_wait_ns += wait_ns;
}

/*
 * The patched kernel times a fault's wait for mmu_lock with
 * ktime_get_ns() from the failed trylock to the acquisition in
 * direct_page_fault(), and traces it there; the fault itself is traced
 * before (kvm_page_fault, at the NPF exit's handler), on the same
 * CLOCK_MONOTONIC as the trace.  So the wait began after its fault's
 * event, at the fault's gfn: one that began sooner was not measured as
 * the kernel measures it (every wait of the patched fixtures began 7.9
 * us or more after its fault).  What it cannot catch: a wait traced
 * shorter than it was, or longer by less than the time from the fault
 * event to the lock; whether a traced hold covers it (a waiter the
 * scheduler did not run counts that time as waiting: the scheduler's
 * events would tell).  A wait with no fault of its thread open (a
 * capture begun between them) is not judged.
 */
static void lock_wait_check(struct engine *e, const struct thread_ctx *t,
			    const struct model_event *ev)
{
	int64_t since = ev->ts - t->ctx_ts;

	if (t->ctx_kind != CTX_FAULT)
		return;
	if (ev->u.lock.wait_ns > since ||
	    ev->u.lock.gfn != t->ctx_gfn)
		engine_mismatch(e, MISMATCH_LOCK_WAIT, ev->seq, ev->ts,
				ev->u.lock.gfn, since,
				ev->u.lock.wait_ns);
}

void engine_on_lock_wait(struct engine *e, struct thread_ctx *t,
			 const struct model_event *ev)
{
	lock_wait_check(e, t, ev);
	/* The patched kernel traces the wait of the fault it belongs to:
	 * a fault the policy avoids never waited. */
	if (t->ctx_kind == CTX_FAULT && t->ctx_keep) {
		e->res->lock_wait_removed_ns += ev->u.lock.wait_ns;
		return;
	}
	lock_wait(e, t, ev->ts, ev->u.lock.wait_ns,
		  ev->ts - ev->u.lock.wait_ns, ev->ts);
}

void engine_on_lock_contention(struct engine *e, struct thread_ctx *t,
			       const struct model_event *ev)
{
	if (t->is_worker || e->res->lock_src != REPLAY_SRC_MEASURED)
		return;
	if (ev->u.contention.phase == MEV_PHASE_START) {
		t->contention_ts = ev->ts;
	} else if (t->contention_ts) {
		lock_wait(e, t, ev->ts, ev->ts - t->contention_ts,
			  t->contention_ts, ev->ts);
		t->contention_ts = 0;
	}
}

void engine_on_vcpu_entry(struct engine *e, struct thread_ctx *t,
			  const struct model_event *ev)
{
	int64_t o;

	engine_ctx_close(e, t);
	fault_vcpu_seen(e, t);
	t->entry_seq = ev->seq;
	if (!t->npf_exit_ts)
		return;
	/* Stock kernels: the part of an NPF exit that overlaps a
	 * write-locked recovery batch is taken as waiting for it. */
	if (e->res->lock_src == REPLAY_SRC_INFERRED) {
		o = recovery_overlap(e, t->npf_exit_ts, ev->ts, 0);
		if (o)
			lock_wait(e, t, ev->ts, o, t->npf_exit_ts, ev->ts);
	}
	latency_npf_entry(e, t, ev->ts);
	t->npf_exit_ts = 0;
}
