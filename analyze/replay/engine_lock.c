/*
 * vCPU waits for mmu_lock (see engine_int.h): measured (patched
 * lock_wait events, lock contention begin/end) or, on stock kernels, the
 * part of an NPF exit spent inside a write-locked recovery batch.  A
 * wait is removed under a policy that removes the write-locked work it
 * overlapped: a recovery batch recovered under the read lock or not run
 * at all, an invalidation whose zaps the policy keeps; a wait that also
 * overlapped work the policy still does stays whole.
 *
 * An invalidation takes mmu_lock for write only where its range meets a
 * memslot (__kvm_handle_hva_range() locks at the first slot it finds),
 * zapping or not: the walk of a range whose leaves are all gone holds
 * the lock as long as it takes.  A policy that keeps the range's SPTEs
 * (perm-upgrade) still takes the lock, to decide, and returns at once:
 * the hold the recorded kernel spent walking, zapping and flushing is
 * gone, whether the walk found anything or not.  Where the recorded
 * kernel itself kept the range (its decision traced so), the hold was
 * already the short one.
 *
 * When an invalidation releases mmu_lock no event says: after its last
 * zap and the flush that follows (the flush event fires before its
 * IPIs), before the next event of its thread.  Each wait is judged
 * with both ends, giving the waits the policy leaves as a range:
 * lock_wait_ns (held to the last traced zap or flush: the most left)
 * and lock_wait_min_ns (held to the thread's next event: the least).
 */
#include "replay/engine_int.h"
#include "util/assert.h"

#include <string.h>

static int64_t max64(int64_t a, int64_t b)
{
	return a > b ? a : b;
}

static int64_t overlap(int64_t a0, int64_t a1, int64_t b0, int64_t b1)
{
	int64_t lo = a0 > b0 ? a0 : b0, hi = a1 < b1 ? a1 : b1;

	return hi > lo ? hi - lo : 0;
}

/*
 * Time [from, to) spends inside the current and the last recovery batch
 * that held mmu_lock for write; run_only: only batches the policy's
 * worker runs.  A batch traced as read-locked (the patched begin event's
 * lock mode) makes no vCPU wait: faults take the lock for read too.  A
 * batch whose begin was traced and whose end is not yet holds the lock
 * until now: the worker takes it before its begin event and lets it go
 * after its end (a wait traced between two of its pages, after the
 * last one so far, waited for it all the same).
 */
static int64_t recovery_overlap(struct engine *e, int64_t from, int64_t to,
				int run_only)
{
	const struct batch *b[2] = { &e->batch, &e->last_batch };
	int64_t o = 0, end;
	int i;

	for (i = 0; i < 2; i++) {
		if (!b[i]->batch_active || b[i]->batch_read_lock ||
		    (run_only && b[i]->batch_skipped))
			continue;
		end = b[i]->batch_last_ts;
		if (b[i] == &e->batch && b[i]->batch_measured && to > end)
			end = to;
		o += overlap(from, to, b[i]->batch_start_ts, end);
	}
	return o;
}

/*
 * Returns whether window t held mmu_lock for write: it zapped, or its
 * decision was traced (patched), or, where the capture traces no
 * decision, the model's memslots meet its range.
 */
static int window_held_lock(const struct engine *e,
			    const struct thread_ctx *t)
{
	MR_ASSERT_DBG(t->ctx_kind == CTX_WINDOW);
	return t->win_first_ts || t->win_decided ||
		(!e->scan->seen[MEV_UNMAP_DECISION] && t->win_nranges > 0);
}

/*
 * Returns whether the policy takes away (part of) the hold of t, a
 * window or a recovered page: it keeps the context's zaps, and the
 * recorded kernel did work the policy does not (a window: zapped, or
 * walked more than one table of a range that met a memslot; a page:
 * zapped it).  A window that zapped nothing within one 2 MiB block held
 * the lock about as a kept one does: its waits stay for the most left
 * (window_keep_to()), and go for the least (least: a kept invalidation
 * taken to hold the lock not at all; its walk of one table is all the
 * difference, and no event dates the walk's end in the recorded hold).
 */
static int hold_removed(const struct engine *e, const struct thread_ctx *t,
			int least)
{
	if (!t->ctx_keep)
		return 0;
	if (t->ctx_kind != CTX_WINDOW || t->ctx_observed > 0)
		return t->ctx_observed > 0;
	return window_held_lock(e, t) && !t->win_decided_keep &&
		(least || t->win_zapped ||
		 !scan_one_block(t->win_hva_start, t->win_hva_end));
}

void engine_on_unmap_decision(struct thread_ctx *t,
			      const struct model_event *ev)
{
	if (t->ctx_kind != CTX_WINDOW)
		return;
	t->win_decided = 1;
	t->win_decided_keep |= ev->u.unmap.decision == MEV_UNMAP_SKIPPED;
	if (!t->win_first_ts)
		t->win_first_ts = ev->ts;
	/* Traced under the lock, after the walk: held at least until it. */
	if (ev->ts > t->ctx_last_ts)
		t->ctx_last_ts = ev->ts;
}

/*
 * Returns until when t, a window the policy keeps, still holds mmu_lock:
 * a kept invalidation takes the lock and decides at once, where the
 * recorded kernel went on to walk, zap and flush.  No event dates that
 * decision in a recorded walk; it comes before the window's first change
 * under the lock (its first zap, or its decision after a walk that found
 * nothing).  A range within one 2 MiB block walks one table at most: its
 * span to the first change is the lock, kvm_mmu_invalidate_begin() and
 * the delays the host adds (a notifier thread preempted under the lock
 * holds it for milliseconds), which a kept hold meets as well, so it is
 * kept whole.  A longer range's span is taken as at most the 99th
 * percentile of those (scan.h keep_hold_ns): the rest was its walk.
 * Before, any span was cut to the capture's median, and a single page's
 * walk that found nothing lost its hold after the decision: on fresh run
 * sets whose upgrades zapped nothing (bgsnapshot --access write64), B's
 * waits stayed A's while the what-if took away nine tenths of them, the
 * few long holds of single pages that a host's delays make.
 */
static int64_t window_keep_to(const struct engine *e,
			      const struct thread_ctx *t)
{
	int64_t own = t->win_first_ts > t->ctx_ts ?
		t->win_first_ts - t->ctx_ts : 0;
	int64_t hold = e->scan->keep_hold_ns;

	return t->ctx_ts +
		(!scan_one_block(t->win_hva_start, t->win_hva_end) && hold &&
		 hold < own ? hold : own);
}

void lock_holder_push(struct engine *e, const struct thread_ctx *t)
{
	struct lock_holder *h;

	if (t->ctx_kind == CTX_WINDOW && !window_held_lock(e, t))
		return;
	h = &e->holders[e->nholders++ % LOCK_HOLDERS];

	h->hold_from = t->ctx_ts;
	h->hold_to = t->ctx_last_ts;
	/* Closed by its own thread's next event: held at most until it. */
	h->hold_to_max = e->ev && e->ev->tid == e->last_tid &&
		e->last_thread == t && e->ev->ts > h->hold_to ?
		e->ev->ts : h->hold_to;
	h->hold_page = t->ctx_kind == CTX_RECOVERY;
	/* A window that flushed held the lock through the flush's IPIs,
	 * after its last event: a wait there waited for it. */
	if (!h->hold_page && t->ctx_flushes > 0)
		h->hold_to = h->hold_to_max;
	h->hold_removed = hold_removed(e, t, 0);
	h->hold_removed_least = hold_removed(e, t, 1);
	h->hold_keep_to = h->hold_removed && !h->hold_page ?
		window_keep_to(e, t) : h->hold_from;
}

/* Time one wait spent inside write-locked work, by kind. */
struct wait_overlap {
	int64_t win_removed, win_kept;          /* invalidations */
	int64_t page_removed, page_kept;        /* recovered pages */
	int64_t keep_to;        /* the latest end of a removed window's
				 * short hold it met (0: none) */
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
	int removed;
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
			*((longest ? h->hold_removed_least :
			   h->hold_removed) ? &w->win_removed :
			  &w->win_kept) += o;
		if (o && h->hold_removed && !longest)
			w->keep_to = max64(w->keep_to, h->hold_keep_to);
	}
	for (j = 0; j < e->nopen_windows; j++) {
		t = e->open_windows[j];
		if (!window_held_lock(e, t))
			continue;
		removed = hold_removed(e, t, longest);
		o = overlap(from, to, t->ctx_ts,
			    longest || t->ctx_flushes > 0 ? to : t->ctx_last_ts);
		*(removed ? &w->win_removed : &w->win_kept) += o;
		if (o && removed && !longest)
			w->keep_to = max64(w->keep_to, window_keep_to(e, t));
	}
}

/*
 * A vCPU waited wait_ns for mmu_lock over [from, to).  Inside a recovery
 * batch the wait was for the worker's write lock: gone under a policy
 * that recovers under the read lock, or whose worker does not run that
 * batch; under one that skips some of its pages, shortened by their
 * share of the batch's page time the wait overlapped.  Inside an
 * invalidation it was for the notifier's write lock: when the policy
 * keeps that invalidation's leaves it zaps and flushes nothing under the
 * lock, and the wait is gone, but for (the most left) the part before
 * the short hold it still takes ends (window_keep_to()).  A wait that
 * also overlapped an invalidation the policy still does stays whole.
 */
static int64_t wait_removed(struct engine *e, int64_t wait_ns,
			    int64_t from, int64_t to, int longest)
{
	struct wait_overlap w;
	int64_t in_batch, in_run_batch, left;

	in_batch = recovery_overlap(e, from, to, 0);
	in_run_batch = e->opts->policy->recovery_read_lock ? 0 :
		recovery_overlap(e, from, to, 1);
	holders_overlap(e, from, to, longest, &w);
	if (w.win_kept)
		return 0;
	if (!in_run_batch && (in_batch > 0 || w.win_removed > 0)) {
		if (longest || in_batch || w.keep_to <= from)
			return wait_ns;
		left = (w.keep_to < to ? w.keep_to : to) - from;
		return left < wait_ns ? wait_ns - left : 0;
	}
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
 * the kernel measures it.  What it cannot catch: a wait traced shorter
 * than it was, or longer by less than the time from the fault event to
 * the lock; whether a traced hold covers it (writers no capture traces,
 * the aging notifiers, and time the host did not run the waiting vCPU
 * leave waits no traced span meets: docs/design.md, "The self-check").
 * A wait with no fault of its thread open (a capture begun between
 * them) is not judged.
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
