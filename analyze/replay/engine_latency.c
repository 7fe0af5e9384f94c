/*
 * The latency what-if (docs/design.md, "Latency under a policy").
 *
 * The policy changes a vCPU's timeline in two ways the replay sees: an
 * NPF exit whose every traced fault it avoids is not taken (its service
 * time, exit to entry, is given back), and a lock wait it removes or
 * shortens inside an exit it keeps shortens that exit by what it
 * removes (engine_lock.c decides how much).  Everything else in the
 * exit is kept as traced.  What it gives back leaves the NPF service
 * distribution and the probe samples whose window held it: a probe
 * sample, traced by the vCPU's thread after the KVM_RUN that held the
 * timed access, covers the ns before the exit that ended that KVM_RUN
 * (the guest reports the sample with it; the VMM traces the sample
 * later, after work of its own); the time given back by exits that
 * began in that window (LAT_SLACK_NS wider: the guest reads its clock
 * around the access, not at the exits) comes off the sample, never
 * more than the sample.
 *
 * What it assumes, said with the figures: a removed exit gives back its
 * service time, not the world switch around it; the faults the policy
 * adds (engine_overlay.c: a write through a leaf it kept read-only)
 * cost the median of the service times it leaves, and are put in no
 * probe window (the trace does not say when they would come).
 *
 * Invariant: npf.n is the traced NPF exits (with an entry) less
 * npf_exits_removed; under the recorded policy nothing is given back,
 * so the figures are the trace's (metrics/latency.h computes the same
 * from the tables).
 */
#include "replay/engine_int.h"

#include "util/assert.h"

#include <string.h>

const int64_t replay_lat_long_ns[REPLAY_LAT_LONG] = { 1000000, 3000000 };

/* A sample's window opens this much earlier than its ns says: the
 * guest's clock reads and its exit around the access. */
#define LAT_SLACK_NS 20000

void latency_npf_exit(struct thread_ctx *t)
{
	t->npf_faults = t->npf_kept = 0;
	t->npf_wait_removed = 0;
}

void latency_on_fault(struct thread_ctx *t, int avoided)
{
	if (!t->npf_exit_ts)
		return;
	t->npf_faults++;
	t->npf_kept += avoided != 0;
}

void latency_wait_removed(struct thread_ctx *t, int64_t ns)
{
	if (t && t->npf_exit_ts && ns > 0)
		t->npf_wait_removed += ns;
}

/* ns of thread t's time, from an exit at ts, given back. */
static void gone(struct thread_ctx *t, int64_t ts, int64_t ns)
{
	struct lat_gone *g = &t->lat_gone[t->nlat_gone++ % LAT_GONE];

	g->ts = ts;
	g->ns = ns;
}

void latency_npf_entry(struct engine *e, struct thread_ctx *t, int64_t ts)
{
	struct replay_latency *l = &e->res->lat;
	int64_t s = ts - t->npf_exit_ts, cut;

	MR_ASSERT(t->npf_exit_ts);
	if (s < 0)
		return;
	if (t->npf_faults && t->npf_kept == t->npf_faults) {
		l->npf_exits_removed++;
		l->npf_removed_ns += s;
		gone(t, t->npf_exit_ts, s);
		return;
	}
	cut = t->npf_wait_removed < s ? t->npf_wait_removed : s;
	if (valcount_add(&l->npf, s - cut) < 0) {
		e->nomem = 1;
		return;
	}
	if (cut) {
		l->npf_shortened_ns += cut;
		gone(t, t->npf_exit_ts, cut);
	}
}

void engine_on_latency_sample(struct engine *e, struct thread_ctx *t,
			      const struct model_event *ev)
{
	struct replay_latency *l = &e->res->lat;
	int64_t ns = ev->u.lat.ns, end, cut = 0;
	unsigned i, n;

	if (ns < 0)
		return;
	if (t) {
		end = t->exit_ts ? t->exit_ts : ev->ts;
		n = t->nlat_gone < LAT_GONE ? t->nlat_gone : LAT_GONE;
		for (i = 0; i < n; i++)
			if (t->lat_gone[i].ts >= end - ns - LAT_SLACK_NS &&
			    t->lat_gone[i].ts <= end)
				cut += t->lat_gone[i].ns;
		t->nlat_gone = 0;
		if (cut > ns)
			cut = ns;
	}
	l->probe_removed_ns += cut;
	if (valcount_add(&l->probe, ns - cut) < 0)
		e->nomem = 1;
}

int replay_latency_settle(struct replay_result *r)
{
	struct replay_latency *l = &r->lat;
	struct valcount with_added;
	int i, rc = 0;

	l->npf_added = r->faults_added;
	valcount_quantiles(&l->npf, valcount_pct, REPLAY_LAT_PCTS,
			   l->npf_pct, &l->npf_max);
	/* The added faults at the median of the rest. */
	if (l->npf_added && l->npf.n) {
		valcount_init(&with_added);
		if (valcount_merge(&with_added, &l->npf) < 0 ||
		    valcount_add_n(&with_added, l->npf_pct[0], l->npf_added) < 0)
			rc = -1;
		else
			valcount_quantiles(&with_added, valcount_pct,
					   REPLAY_LAT_PCTS, l->npf_pct,
					   &l->npf_max);
		valcount_free(&with_added);
	}
	valcount_quantiles(&l->probe, valcount_pct, REPLAY_LAT_PCTS,
			   l->probe_pct, &l->probe_max);
	for (i = 0; i < REPLAY_LAT_LONG; i++)
		l->probe_long[i] = valcount_at_least(&l->probe,
						     replay_lat_long_ns[i]);
	return rc;
}
