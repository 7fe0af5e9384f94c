/*
 * Fidelity: the replay under the policy a trace was recorded with,
 * compared with what the trace shows.  A metric is ok when its relative
 * error is within its tolerance; the whole is ok when every metric is.
 * What-if results of other policies are only presented when it is.
 */
#ifndef MMUREPLAY_METRICS_FIDELITY_H
#define MMUREPLAY_METRICS_FIDELITY_H

#include "replay/engine.h"

enum fidelity_metric_id {
	FID_FAULTS = 0,
	FID_LEAF_ZAPS,
	FID_TLB_FLUSHES,
	FID_NX_RECOVERED,       /* checked only when the ratio is known */
	FID_METRICS
};

struct fidelity_metric {
	const char *name;
	int64_t observed, predicted;
	double rel_error, tolerance;
	int ok;
	const char *observed_how;       /* "measured" / "inferred" */
};

struct fidelity {
	const char *policy;             /* the recorded policy replayed */
	struct fidelity_metric m[FID_METRICS];
	int ok;
	/* The capture's own damage (capture_info): the model misses what
	 * lost events did, so mismatches after them are expected; said
	 * beside the verdict, never hidden in it. */
	int64_t lost_events, lost_ranges;
	int truncated;
};

/* Default tolerances: exact for faults, leaf zaps and recovered pages,
 * 10% for flushes (inferred on stock kernels). */
extern const double fidelity_default_tolerance[FID_METRICS];

void fidelity_compute(const struct replay_result *r,
		      const double tolerance[FID_METRICS],
		      struct fidelity *out);

#endif
