/*
 * Fidelity metrics and the verdict from a replay result (see
 * fidelity.h).
 */
#include "metrics/fidelity.h"

#include "util/assert.h"

#include <stdlib.h>
#include <string.h>

#define FIDELITY_CHECK_NAME(id, name) [id] = name,
const char *const fidelity_check_kind_names[FID_CHECK_KINDS] = {
	FIDELITY_CHECK_KINDS(FIDELITY_CHECK_NAME)
};
#undef FIDELITY_CHECK_NAME

const double fidelity_default_tolerance[FID_METRICS] = {
	0.0, 0.0, 0.10, 0.0,
};

/* rel_error: of the observed items the model could know (observed -
 * revealed) against the predicted. */
static void metric(struct fidelity_metric *m, const char *name,
		   int64_t observed, int64_t revealed, int64_t predicted,
		   double tol, const char *how,
		   enum fidelity_check_kind check)
{
	int64_t known = observed - revealed;
	int64_t d = llabs(predicted - known);

	MR_ASSERT(revealed >= 0 && revealed <= observed);
	m->name = name;
	m->observed = observed;
	m->revealed = revealed;
	m->predicted = predicted;
	m->rel_error = known ? (double)d / (double)known :
		(predicted ? 1.0 : 0.0);
	m->tolerance = tol;
	m->ok = check == FID_CHECK_UNCHECKED || m->rel_error <= tol;
	m->observed_how = how;
	m->check = check;
}

void fidelity_compute(const struct replay_result *r,
		      const double tol[FID_METRICS], struct fidelity *out)
{
	int64_t capped = 0;
	int i;

	memset(out, 0, sizeof(*out));
	out->policy = r->policy;
	metric(&out->m[FID_FAULTS], "faults", r->faults_observed,
	       r->faults_revealed, r->faults_predicted, tol[FID_FAULTS], "measured",
	       FID_CHECK_ONE_SIDED);
	metric(&out->m[FID_LEAF_ZAPS], "leaf_zaps", r->zaps_observed,
	       r->zaps_revealed, r->zaps_predicted, tol[FID_LEAF_ZAPS], "measured",
	       FID_CHECK_PREDICTED);
	/* Without flush events the observed side is the contexts that
	 * zapped: the zap check again, in other units. */
	metric(&out->m[FID_TLB_FLUSHES], "flush_contexts", r->flushes_observed,
	       r->flushes_revealed, r->flushes_predicted, tol[FID_TLB_FLUSHES],
	       r->flushes_measured ? "measured" : "inferred",
	       r->flushes_measured ? FID_CHECK_PREDICTED :
	       FID_CHECK_RESTATED);
	/* Without a way to tell the worker's zaps from others (no thread
	 * names, no recovery events) the observed side is unknown. */
	metric(&out->m[FID_NX_RECOVERED], "nx_recovered",
	       r->nx_recovered_observed, r->nx_recovered_revealed,
	       r->nx_recovered_predicted,
	       tol[FID_NX_RECOVERED], !r->nx_workers_known ? "unknown" :
	       r->nx_ratio_known ? "measured" : "unchecked",
	       r->nx_ratio_known && r->nx_workers_known ?
	       FID_CHECK_PREDICTED : FID_CHECK_UNCHECKED);
	out->metrics_ok = 1;
	for (i = 0; i < FID_METRICS; i++)
		out->metrics_ok &= out->m[i].ok;
	out->mismatches = r->mismatches_total;
	for (i = 0; i < EXEMPT_REASONS; i++) {
		out->exempt[i] = r->faults_exempt[i];
		out->exempt_total += r->faults_exempt[i];
		if (fidelity_exempt_capped((enum fault_exempt)i))
			capped += r->faults_exempt[i];
	}
	out->exempt_share = r->faults_observed ?
		(double)out->exempt_total / (double)r->faults_observed : 0;
	out->exempt_capped_share = r->faults_observed ?
		(double)capped / (double)r->faults_observed : 0;
	out->exempt_ok = out->exempt_capped_share <=
		FIDELITY_MAX_EXEMPT_SHARE;
	out->vms_ok = !r->vms_failed;
	out->ok = out->metrics_ok && !out->mismatches && out->exempt_ok &&
		out->vms_ok;
	out->began_mid_run = r->began_mid_run;
	out->span_start_s = (double)r->span_start_ts / 1e9;
	out->events_before_span = r->events_before_span;
	out->contexts_before = r->contexts_before;
	out->batches_revealed = r->nx_batches_revealed;
	out->memslots_dumped = r->memslots_dumped;
	out->warmup_s = replay_warmup_s(r);
	if (out->warmup_s > 0)
		out->warmup_share = r->last_ts > r->first_ts ?
			(double)(r->warmup_ts - r->first_ts) /
			(double)(r->last_ts - r->first_ts) : 1.0;
}
