/*
 * Latency distributions of a capture, the figures the reference mails
 * quote: the paced probe's samples (mmureplay:latency_sample, one
 * distribution per probe phase) and the NPF service time of the vCPUs
 * (a vCPU's NPF exit to its next entry).
 *
 * Percentiles are nearest-rank (the value at rank ceil(p * n) of the
 * sorted samples), exact: the samples are counted per distinct value, so
 * memory grows with the distinct values (bounded by the range of the
 * latencies), not with the number of samples.
 */
#ifndef MMUREPLAY_METRICS_LATENCY_H
#define MMUREPLAY_METRICS_LATENCY_H

#include <sqlite3.h>
#include <stdint.h>

enum latency_pct { LAT_P50 = 0, LAT_P99, LAT_P999, LAT_PCTS };

/* Their values: util/valcount.h valcount_pct[]. */
extern const char *const latency_pct_name[LAT_PCTS];    /* "p50", ... */

/*
 * The tail as points for a chart: values at the quantiles
 * latency_tail_quantile(k) = 1 - 0.5 * 10^(-k / LAT_TAIL_STEP) (0.5 up to
 * 0.99995), nearest-rank like the percentiles.  For n samples only the
 * quantiles of distinct ranks are kept: tail[0 .. ntail), with
 * tail_q[] their quantiles.  Bounded: at most LAT_TAIL_POINTS a
 * distribution, however long the capture.
 */
#define LAT_TAIL_STEP 8
#define LAT_TAIL_POINTS 33
double latency_tail_quantile(int k);

struct latency_dist {
	int64_t n;
	int64_t pct[LAT_PCTS];          /* ns */
	int64_t max;
	int64_t tail[LAT_TAIL_POINTS];  /* ns */
	double tail_q[LAT_TAIL_POINTS]; /* the quantile of tail[i] */
	int ntail;
};

#define LATENCY_MAX_PROBES 8

struct latency {
	struct latency_dist probe[LATENCY_MAX_PROBES];
	int64_t probe_id[LATENCY_MAX_PROBES];
	int nprobes;
	int64_t probes_dropped;         /* samples of probes beyond the max */
	/* Every sample of every probe, dropped ones included: what the
	 * replay's latency what-if predicts (engine.h replay_latency). */
	struct latency_dist probe_all;
	struct latency_dist npf;        /* NPF exit -> next entry, per vCPU */
};

/* 0, or -1 after an SQL error (logged).  npf_exit_reason: the NPF exit
 * code of the trace's hardware (SVM 0x400, VMX 48), or LATENCY_NPF_NONE:
 * the probes only (out->npf left empty). */
#define LATENCY_NPF_NONE INT64_MIN
int latency_compute(sqlite3 *db, int64_t npf_exit_reason,
		    struct latency *out);

/*
 * Intervals of at least ns: probe samples (every probe) and NPF service
 * times, the count the nx-readlock mail quotes ("intervals >= 3 ms").
 * 0, or -1 after an SQL error (logged).
 */
int latency_count_at_least(sqlite3 *db, int64_t npf_exit_reason,
			   int64_t ns, int64_t *probe, int64_t *npf);

#endif
