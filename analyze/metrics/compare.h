/*
 * Run sets side by side: what a patch cover letter quotes.
 *
 * Captures of policy A and of policy B (several runs each) give, per
 * figure, the median with min and max over the runs, the change of B's
 * median against A's, and whether the two ranges overlap (overlapping
 * ranges: the runs do not tell A and B apart).  The what-if column puts
 * B as the replay predicts it from each A run (the replay of A under B's
 * recorded policy) beside B measured: the median prediction, its error
 * against B's median, and whether it falls inside B's range.
 *
 * Figures per run: rates (faults, leaf zaps, TLB flushes, notifier
 * invalidations, per second of the run) and the counts (the replay
 * predicts counts: a policy changes how long a run takes, which the
 * model does not predict, so the what-if is in counts), NPF service time and probe
 * latency percentiles (us), intervals at or above each threshold (probe
 * samples, NPF service times), NX huge pages recovered, NX batch time and
 * fault lock-wait totals (ms).  A figure a run's source cannot give
 * (metrics/coverage.h) is unknown there (NAN) and left out of its
 * median, which says over how many runs it was taken.
 *
 * Runs of several VMs (the same number in each) are also compared VM by
 * VM: each VM of every run alone, its own events and its own replay
 * (compare.vms), the rows the text gives per VM.
 *
 * Invariants: rows are filled for every run before compare_finish();
 * a row's cells count only known values; the what-if figures come from
 * replays whose self-check passed (the caller runs them), else they are
 * left out and the run is marked.
 */
#ifndef MMUREPLAY_METRICS_COMPARE_H
#define MMUREPLAY_METRICS_COMPARE_H

#include "replay/capture_info.h"
#include "replay/engine.h"

#include <sqlite3.h>

#define COMPARE_MAX_RUNS 32
#define COMPARE_MAX_ROWS 40
#define COMPARE_MAX_THRESHOLDS 4

enum compare_side { COMPARE_A = 0, COMPARE_B, COMPARE_SIDES };

/* Median and range over the runs that gave a value. */
struct compare_cell {
	int n;
	double median, min, max;
};

struct compare_row {
	char key[48];           /* JSON key, e.g. "faults_per_s" */
	char label[32];         /* text label, e.g. "faults/s" */
	int decimals;           /* text: digits after the point */
	double v[COMPARE_SIDES][COMPARE_MAX_RUNS];      /* NAN: unknown */
	double pred[COMPARE_MAX_RUNS];  /* B from A[i]; NAN: none */
	int has_pred;
	/* What the what-if figure is (metrics/compare.c pred_kind()):
	 * "predicted", "restated" (B's policy is A's: the recorded value)
	 * or "not_modelled" (the policy's replay misses part of what the
	 * policy does to it: no figure is given). */
	const char *pred_kind;
	struct compare_cell cell[COMPARE_SIDES], cell_pred;
	double change;          /* (B - A) / A of the medians; NAN */
	int overlap;            /* the ranges overlap (-1: unknown, or a
				 * side with fewer than two runs) */
	double pred_error;      /* (pred - B) / B of the medians; NAN */
	int pred_inside;        /* pred median in B's range (-1: unknown,
				 * or fewer than two B runs) */
};

/* One capture's identity and state. */
struct compare_run {
	const char *path;
	char *kernel, *workload, *knobs;        /* NULL: no manifest */
	const char *policy;                     /* recorded policy */
	int self_check_ok;
	double duration_s;
	/* The capture began while the VM ran (engine.h began_mid_run),
	 * and its warm-up, s from its first event. */
	int began_mid_run;
	double warmup_s;
	int nvms;                               /* its VMs (table vm) */
	char *vm_procname;      /* with compare.vm: that VM's process */
};

struct compare {
	struct compare_run run[COMPARE_SIDES][COMPARE_MAX_RUNS];
	/* Each run's KVM parameters outside the policy ("a=1,b=2"). */
	char *others[COMPARE_SIDES][COMPARE_MAX_RUNS];
	int n[COMPARE_SIDES];
	double threshold_ms[COMPARE_MAX_THRESHOLDS];
	int nthresholds;
	/* VM vm (table vm's id) of every run alone (--vm), or 0. */
	int vm;
	struct compare_row rows[COMPARE_MAX_ROWS];
	int nrows;
	/* Per VM: when every run holds the same number of VMs, two or
	 * more, and no --vm narrowed them, vms[v - 1] compares VM v of
	 * every run alone (its vm = v, its own vms none); else nvms 0. */
	struct compare *vms;
	int nvms;
	/* Why the sets are not comparable, or NULL (compare_check()). */
	char why[512];
};

enum compare_status {
	COMPARE_OK = 0,
	COMPARE_ERR_SQL,        /* logged */
	COMPARE_ERR_NOMEM,
	COMPARE_ERR_MIXED,      /* c->why says which runs differ how */
};

/* Start: thresholds in ms (n <= COMPARE_MAX_THRESHOLDS). */
void compare_init(struct compare *c, const double *thresholds_ms, int n);

/*
 * The figures of run i of a side, from its DB, its capture info, its
 * self-check replay (recorded policy) and, for an A run, its replay under
 * B's recorded policy (NULL: none).
 */
enum compare_status compare_add_run(struct compare *c, enum compare_side side,
				    int i, const char *path, sqlite3 *db,
				    const struct capture_info *ci,
				    const struct replay_result *self,
				    int self_ok,
				    const struct replay_result *whatif);

/* Same kernel and workload everywhere, one knob setting per side. */
enum compare_status compare_check(struct compare *c);

/* Medians, ranges, changes, overlaps, what-if errors. */
void compare_finish(struct compare *c);

/* How many VMs each run holds when all hold the same number, else 0. */
int compare_same_vms(const struct compare *c);
void compare_free(struct compare *c);

#endif
