/*
 * Latency distributions of a capture, the figures the reference mails
 * quote: the paced probe's samples (mmureplay:latency_sample, one
 * distribution per probe phase) and the NPF service time of the vCPUs
 * (a vCPU's NPF exit to its next entry).
 *
 * Percentiles are nearest-rank (the value at rank ceil(p * n) of the
 * sorted samples), exact: SQLite sorts, so memory stays bounded however
 * many samples there are.
 */
#ifndef MMUREPLAY_METRICS_LATENCY_H
#define MMUREPLAY_METRICS_LATENCY_H

#include <sqlite3.h>
#include <stdint.h>

enum latency_pct { LAT_P50 = 0, LAT_P99, LAT_P999, LAT_PCTS };

extern const double latency_pct_value[LAT_PCTS];        /* 0.5, 0.99, ... */
extern const char *const latency_pct_name[LAT_PCTS];    /* "p50", ... */

struct latency_dist {
	int64_t n;
	int64_t pct[LAT_PCTS];          /* ns */
	int64_t max;
};

#define LATENCY_MAX_PROBES 8

struct latency {
	struct latency_dist probe[LATENCY_MAX_PROBES];
	int64_t probe_id[LATENCY_MAX_PROBES];
	int nprobes;
	int64_t probes_dropped;         /* samples of probes beyond the max */
	struct latency_dist npf;        /* NPF exit -> next entry, per vCPU */
};

/* 0, or -1 after an SQL error (logged).  npf_exit_reason: the NPF exit
 * code of the trace's hardware (SVM 0x400, VMX 48). */
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
