/*
 * The capture on one time axis: what the MMU did, binned.
 *
 * For the HTML report's timeline: the capture's span cut into at most
 * TIMELINE_BINS equal bins (one per microsecond-or-more: a short capture
 * gets bins as fine as 1 us, near event resolution), and per bin the
 * count of NPF faults, leaf zaps (a present leaf SPTE made non-present),
 * invalidation starts, NX recovery pages (the patched kernel's page
 * events, else the SPTE changes of the recovery worker), fault lock
 * waits and remote TLB flushes.  Memory and output are bounded by the
 * bin count, not the trace: a 100 M-event capture gives the same
 * TIMELINE_SERIES x TIMELINE_BINS numbers.
 *
 * A series whose events the source does not have is marked absent
 * (metrics/coverage.h), never drawn as zeros.
 */
#ifndef MMUREPLAY_METRICS_TIMELINE_H
#define MMUREPLAY_METRICS_TIMELINE_H

#include "model/spte.h"

#include <sqlite3.h>
#include <stdint.h>

#define TIMELINE_BINS 1000

/* X(id, label) */
#define TIMELINE_SERIES_LIST(X) \
	X(TL_FAULTS, "NPF faults") \
	X(TL_LEAF_ZAPS, "leaf zaps") \
	X(TL_INVALIDATIONS, "invalidations") \
	X(TL_NX_PAGES, "NX recovery pages") \
	X(TL_LOCK_WAITS, "fault lock waits") \
	X(TL_TLB_FLUSHES, "TLB flushes")

#define TIMELINE_ENUM(id, label) id,
enum timeline_series {
	TIMELINE_SERIES_LIST(TIMELINE_ENUM)
	TIMELINE_SERIES
};
#undef TIMELINE_ENUM

extern const char *const timeline_series_names[TIMELINE_SERIES];

struct timeline {
	int nbins;
	int64_t bin_ns;                 /* width of a bin */
	int64_t span_ns;                /* the capture's (last_ts) */
	int present[TIMELINE_SERIES];   /* the source has the events */
	int64_t count[TIMELINE_SERIES][TIMELINE_BINS];
	int64_t max[TIMELINE_SERIES];
	/*
	 * Series a caller binned in its own scans between timeline_init()
	 * and timeline_fill() (the report's summary reads the same tables):
	 * their scans are not made again.  Leaf zaps count only when
	 * decoded with the fill's format (zaps_fmt) and when the NX series
	 * does not need the recovery worker's zaps.
	 */
	int filled[TIMELINE_SERIES];
	const struct spte_format *zaps_fmt;
};

/* 0, or -1 after an SQL error (logged).  fmt decodes the SPTEs; workers:
 * the NX recovery threads (capture_info).  timeline_init() then
 * timeline_fill(). */
int timeline_compute(sqlite3 *db, const struct spte_format *fmt,
		     const int32_t *workers, int nworkers,
		     struct timeline *out);
/* The bins (from meta last_ts), every count 0, nothing filled. */
void timeline_init(sqlite3 *db, struct timeline *out);
/* The bin of an event at ts. */
int timeline_bin(const struct timeline *t, int64_t ts);
/* The series not filled yet, and the maxima.  0, or -1 (logged). */
int timeline_fill(sqlite3 *db, const struct spte_format *fmt,
		  const int32_t *workers, int nworkers, struct timeline *out);

#endif
