/*
 * vCPU waits for mmu_lock (see engine_int.h): measured (patched
 * lock_wait events, lock contention begin/end) or, on stock kernels, the
 * part of an NPF exit spent inside a write-locked recovery batch.  A
 * wait for the recovery worker's lock is removed under a policy that
 * recovers under the read lock, or whose worker does not run that batch.
 */
#include "replay/engine_int.h"

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
		if (b[i]->batch_active && !(run_only && b[i]->batch_skipped))
			o += overlap(from, to, b[i]->batch_start_ts,
				     b[i]->batch_last_ts);
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
	    (e->opts->policy->recovery_read_lock ||
	     recovery_overlap(e, from, to, 1) == 0)) {
		e->res->lock_wait_removed_ns += wait_ns;
		return;
	}
	e->res->lock_wait_ns += wait_ns;
	e->res->lock_waits++;
	s = engine_second_at(e, ts);
	if (s)
		s->lock_wait_ns += wait_ns;
}

void engine_on_lock_wait(struct engine *e, const struct model_event *ev)
{
	lock_wait(e, ev->ts, ev->u.lock.wait_ns, ev->ts - ev->u.lock.wait_ns,
		  ev->ts);
}

void engine_on_lock_contention(struct engine *e, struct thread_ctx *t,
			       const struct model_event *ev)
{
	if (t->is_worker || e->res->lock_src != REPLAY_SRC_MEASURED)
		return;
	if (ev->u.contention.phase == MEV_PHASE_START) {
		t->contention_ts = ev->ts;
	} else if (t->contention_ts) {
		lock_wait(e, ev->ts, ev->ts - t->contention_ts,
			  t->contention_ts, ev->ts);
		t->contention_ts = 0;
	}
}

void engine_on_vcpu_entry(struct engine *e, struct thread_ctx *t,
			  const struct model_event *ev)
{
	int64_t o;

	engine_ctx_close(e, t);
	if (!t->npf_exit_ts)
		return;
	/* Stock kernels: the part of an NPF exit that overlaps a
	 * write-locked recovery batch is taken as waiting for it. */
	if (e->res->lock_src == REPLAY_SRC_INFERRED) {
		o = recovery_overlap(e, t->npf_exit_ts, ev->ts, 0);
		if (o)
			lock_wait(e, ev->ts, o, t->npf_exit_ts, ev->ts);
	}
	t->npf_exit_ts = 0;
}
