/*
 * Fidelity metrics from a replay result (see fidelity.h).
 */
#include "metrics/fidelity.h"

#include <stdlib.h>
#include <string.h>

const double fidelity_default_tolerance[FID_METRICS] = {
	0.0, 0.0, 0.10, 0.0,
};

static void metric(struct fidelity_metric *m, const char *name,
		   int64_t observed, int64_t predicted, double tol,
		   const char *how)
{
	int64_t d = llabs(predicted - observed);

	m->name = name;
	m->observed = observed;
	m->predicted = predicted;
	m->rel_error = observed ? (double)d / (double)observed :
		(predicted ? 1.0 : 0.0);
	m->tolerance = tol;
	m->ok = m->rel_error <= tol;
	m->observed_how = how;
}

void fidelity_compute(const struct replay_result *r,
		      const double tol[FID_METRICS], struct fidelity *out)
{
	int i;

	memset(out, 0, sizeof(*out));
	out->policy = r->policy;
	metric(&out->m[FID_FAULTS], "faults", r->faults_observed,
	       r->faults_predicted, tol[FID_FAULTS], "measured");
	metric(&out->m[FID_LEAF_ZAPS], "leaf_zaps", r->zaps_observed,
	       r->zaps_predicted, tol[FID_LEAF_ZAPS], "measured");
	metric(&out->m[FID_TLB_FLUSHES], "flush_contexts", r->flushes_observed,
	       r->flushes_predicted, tol[FID_TLB_FLUSHES],
	       r->flushes_measured ? "measured" : "inferred");
	metric(&out->m[FID_NX_RECOVERED], "nx_recovered",
	       r->nx_recovered_observed, r->nx_recovered_predicted,
	       tol[FID_NX_RECOVERED], r->nx_ratio_known ? "measured" :
	       "unchecked");
	out->ok = 1;
	for (i = 0; i < FID_METRICS; i++)
		out->ok &= out->m[i].ok;
}
