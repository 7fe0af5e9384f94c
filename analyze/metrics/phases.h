/*
 * A capture cut at its workload's phase markers, with each phase's probe
 * latency and MMU activity: what lets the spikes of one run be set
 * against what another run did in the same phase of the same workload.
 *
 * The workloads mark their phases with ioctl(-1, 0x4d520000 | N) (the
 * capture/lab README); phase N runs from its marker to the next one,
 * phase 0 from the first event to the first marker.  Per phase: the
 * probe samples, their nearest-rank p99, how many are at or above a
 * given threshold, and the NPF faults, leaf zaps (the SPTE decoder) and
 * invalidation starts.  Memory: one row per phase.
 */
#ifndef MMUREPLAY_METRICS_PHASES_H
#define MMUREPLAY_METRICS_PHASES_H

#include "model/spte.h"

#include <sqlite3.h>
#include <stdint.h>

#define PHASES_MAX 64

struct phase_stats {
	int id;                         /* N of the marker, 0: before any */
	int64_t begin_ts, end_ts;       /* ns from the capture's time base */
	int64_t samples, p99_ns, at_least;
	int64_t faults, leaf_zaps, invalidations;
};

struct phases {
	struct phase_stats p[PHASES_MAX];
	int n;
	int64_t threshold_ns;
};

/* 0, or -1 after an SQL error (logged). */
int phases_compute(sqlite3 *db, const struct spte_format *fmt,
		   int64_t threshold_ns, struct phases *out);
/* The nearest-rank p99 of every probe sample (0: none). */
int64_t phases_overall_p99(sqlite3 *db);
/* The phase with marker id, or NULL. */
const struct phase_stats *phases_find(const struct phases *ph, int id);

#endif
