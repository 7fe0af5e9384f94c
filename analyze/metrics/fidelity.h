/*
 * Fidelity: the replay under the policy a trace was recorded with,
 * compared with what the trace shows.
 *
 * Each metric says what kind of check it is (enum fidelity_check_kind):
 * a figure that can fail both ways, one that can fail only one way, one
 * that restates another, or none.  The verdict holds when
 *   - every checked metric is within its tolerance,
 *   - no context mismatched (a zap count per invalidation, fault,
 *     recovery or teardown, a zap outside its range or with no cause,
 *     an unexplained fault, a recovery batch size): totals alone would
 *     let mismatches of opposite sign cancel, and
 *   - at most FIDELITY_MAX_EXEMPT_SHARE of the traced faults needed a
 *     race the kernel allows (enum fault_exempt) to be explained by a
 *     span (an open window, a batch, an ioctl): every exempt fault is
 *     in the share shown, the capped share counts the spans' alone
 *     (fidelity_exempt_capped()).
 * What-if results of other policies are only presented when it holds.
 *
 * On a capture that began while the VM ran, what the trace only
 * revealed (state from before the capture) is counted apart in each
 * metric and judged by nothing: the verdict judges the rest.
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

/*
 * What a metric's agreement proves (docs/design.md, "The self-check"):
 *   PREDICTED   derived from causes and model state before the traced
 *               change is applied: can fail both ways;
 *   ONE_SIDED   can fail one way only (faults: a traced fault on a
 *               present, permitting leaf fails; a fault the state
 *               requires that never came cannot be seen: the guest's
 *               accesses are not traced);
 *   RESTATED    both sides derive from another metric (stock kernels:
 *               flushing contexts are inferred from the zaps);
 *   UNCHECKED   no prediction (the NX recovery ratio is unknown).
 */
#define FIDELITY_CHECK_KINDS(X) \
	X(FID_CHECK_PREDICTED, "predicted") \
	X(FID_CHECK_ONE_SIDED, "one_sided") \
	X(FID_CHECK_RESTATED, "restated") \
	X(FID_CHECK_UNCHECKED, "unchecked")

#define FIDELITY_CHECK_ENUM(id, name) id,
enum fidelity_check_kind {
	FIDELITY_CHECK_KINDS(FIDELITY_CHECK_ENUM)
	FID_CHECK_KINDS
};
#undef FIDELITY_CHECK_ENUM

extern const char *const fidelity_check_kind_names[FID_CHECK_KINDS];

/* The share of traced faults that may rest on an exemption. */
#define FIDELITY_MAX_EXEMPT_SHARE 0.05
/*
 * Whether faults exempt for reason r count against that share.  The cap
 * stops an exemption from hiding a model error, and a span can: a fault
 * anywhere in an open invalidation window, a recovery batch or an ioctl
 * is excused by whatever change that span traces later.  A fault tied
 * to a traced change of its own entry cannot hide much, and its count
 * measures the race, not the model's slack: another vCPU's grant of the
 * very leaf after this vCPU entered (racing_vcpu: 2.6-3.2% of the faults
 * of kvm_page_table_test with 2 vCPUs, 5.3% of a late cut of it), or the
 * zap of the entry a read-locked flush froze (frozen_entry: 40-85% of
 * the faults of the lab's 6.12 read-locked recovery captures, a vCPU
 * faulting again for as long as the flush runs), or, without flush
 * events, the change of its own entry its changing thread traced next
 * after the fault (write_gap: a zapping thread stalled between its write
 * and its tracepoint under the lab's emulation, 6.12's frozen
 * collapse).  Those are shown in the share, not capped.
 */
static inline int fidelity_exempt_capped(enum fault_exempt r)
{
	return r != EXEMPT_FROZEN_ENTRY && r != EXEMPT_RACING_VCPU &&
		r != EXEMPT_WRITE_GAP;
}

struct fidelity_metric {
	const char *name;
	/* revealed: of the observed, the items a capture that began
	 * mid-run only revealed (engine.h began_mid_run); the prediction
	 * meets the rest. */
	int64_t observed, revealed, predicted;
	double rel_error, tolerance;
	int ok;
	const char *observed_how;       /* "measured" / "inferred" */
	enum fidelity_check_kind check;
};

struct fidelity {
	const char *policy;             /* the recorded policy replayed */
	struct fidelity_metric m[FID_METRICS];
	int metrics_ok;                 /* every metric within tolerance */
	int64_t mismatches;             /* per-context mismatches */
	int64_t exempt[EXEMPT_REASONS]; /* faults explained by a race */
	int64_t exempt_total;
	double exempt_share;            /* of the traced faults */
	double exempt_capped_share;     /* ... of the capped reasons */
	int exempt_ok;
	/* Several VMs, each replayed alone: every one passes its own
	 * self-check (1 when the capture was replayed as one state). */
	int vms_ok;
	int ok;                         /* the verdict */
	/* The capture's own damage (capture_info): the model misses what
	 * lost events did, so mismatches after them are expected; said
	 * beside the verdict, never hidden in it. */
	int64_t lost_events, lost_ranges;
	int truncated;
	/* The capture began while the VM ran: the verdict judges what
	 * could be predicted; warmup_s is when the model last met an entry
	 * it could not know (s from the capture's first event), and
	 * warmup_share that time as a share of the capture's span. */
	int began_mid_run;
	double warmup_s, warmup_share;
	/* Some stream lost its beginning (a snapshot): the replay began
	 * where every stream holds data, span_start_s into the capture,
	 * and left the events_before_span before it out. */
	double span_start_s;
	int64_t events_before_span;
	int64_t contexts_before;        /* engine.h */
	int64_t batches_revealed;       /* engine.h nx_batches_revealed */
	int64_t memslots_dumped;        /* engine.h */
};

/* Default tolerances: exact for faults, leaf zaps and recovered pages,
 * 10% for flushes (inferred on stock kernels). */
extern const double fidelity_default_tolerance[FID_METRICS];

void fidelity_compute(const struct replay_result *r,
		      const double tolerance[FID_METRICS],
		      struct fidelity *out);

#endif
