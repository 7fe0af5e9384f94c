/*
 * The binned timeline (see timeline.h): one scan per table, binned here
 * (a GROUP BY on the bin sorted every row: 0.3-0.6 s a table on a 10 M-event
 * capture), and one scan of spte_change for the leaf zaps (the SPTE
 * decoder decides).
 */
#include "metrics/timeline.h"

#include "db/db.h"
#include "metrics/coverage.h"
#include "util/log.h"

#include <stdio.h>
#include <string.h>

#define TIMELINE_NAME(id, label) [id] = label,
const char *const timeline_series_names[TIMELINE_SERIES] = {
	TIMELINE_SERIES_LIST(TIMELINE_NAME)
};
#undef TIMELINE_NAME

int timeline_bin(const struct timeline *t, int64_t ts)
{
	int64_t b = ts < 0 ? 0 : ts / t->bin_ns;

	return b >= t->nbins ? t->nbins - 1 : (int)b;
}

/* count[s][bin] += the rows of table (of that phase, unless phase < 0),
 * read in rowid order: binned here, as a GROUP BY would sort them first.
 * The filter is here too, so that the progress counts the table's rows. */
static int add_rows(sqlite3 *db, struct timeline *t, enum timeline_series s,
		    const char *table, int phase)
{
	sqlite3_stmt *st = NULL;
	uint64_t n = 0, total = (uint64_t)db_table_rows_hint(db, table);
	char what[64];
	int rc;

	snprintf(what, sizeof(what), "SELECT ts, %s FROM \"%s\"",
		 phase < 0 ? "NULL" : "phase", table);
	if (sqlite3_prepare_v2(db, what, -1, &st, NULL) != SQLITE_OK)
		goto error;
	snprintf(what, sizeof(what), "timeline: %s", table);
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		if (!(++n & 0xffff))
			log_progress_of(what, n, total);
		/* phase is NOT NULL in the schema. */
		if (phase >= 0 && sqlite3_column_int64(st, 1) != phase)
			continue;
		t->count[s][timeline_bin(t, sqlite3_column_int64(st, 0))]++;
	}
	log_progress_end();
	if (rc != SQLITE_DONE)
		goto error;
	sqlite3_finalize(st);
	return 0;
error:
	log_error("%s: timeline: %s", sqlite3_db_filename(db, "main"),
		  sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return -1;
}

void timeline_init(sqlite3 *db, struct timeline *out)
{
	memset(out, 0, sizeof(*out));
	out->span_ns = db_meta_get_int(db, "last_ts", 0);
	/* Bins of 1 us at least: finer says nothing a trace can show. */
	out->bin_ns = out->span_ns / TIMELINE_BINS + 1;
	if (out->bin_ns < 1000)
		out->bin_ns = 1000;
	out->nbins = (int)(out->span_ns / out->bin_ns) + 1;
	if (out->nbins > TIMELINE_BINS)
		out->nbins = TIMELINE_BINS;
}

int timeline_compute(sqlite3 *db, const struct spte_format *fmt,
		     const int32_t *workers, int nworkers,
		     struct timeline *out)
{
	timeline_init(db, out);
	return timeline_fill(db, fmt, workers, nworkers, out);
}

/* add_rows() unless a caller filled the series. */
static int add_unfilled(sqlite3 *db, struct timeline *t,
			enum timeline_series s, const char *table, int phase)
{
	return t->filled[s] ? 0 : add_rows(db, t, s, table, phase);
}

int timeline_fill(sqlite3 *db, const struct spte_format *fmt,
		  const int32_t *workers, int nworkers, struct timeline *out)
{
	struct coverage cov;
	sqlite3_stmt *st = NULL;
	int rc = -1, i, s, w, nx_pages;
	uint64_t n = 0, total;
	int64_t tid;

	if (coverage_load(db, &cov) != COVERAGE_OK)
		return -1;
	out->present[TL_FAULTS] = coverage_has(&cov, "fault");
	out->present[TL_LEAF_ZAPS] = coverage_has(&cov, "spte_change");
	out->present[TL_INVALIDATIONS] = coverage_has(&cov, "notifier");
	out->present[TL_NX_PAGES] = coverage_has(&cov, "nx_recovery") ||
		(nworkers > 0 && coverage_has(&cov, "spte_change"));
	out->present[TL_LOCK_WAITS] = coverage_has(&cov, "lock_wait");
	out->present[TL_TLB_FLUSHES] = coverage_has(&cov, "tlb_flush");
	if (add_unfilled(db, out, TL_FAULTS, "fault", -1) < 0 ||
	    add_unfilled(db, out, TL_INVALIDATIONS, "notifier", 0) < 0 ||
	    add_unfilled(db, out, TL_LOCK_WAITS, "lock_wait", -1) < 0 ||
	    add_unfilled(db, out, TL_TLB_FLUSHES, "tlb_flush", -1) < 0 ||
	    (coverage_has(&cov, "nx_recovery") &&
	     add_unfilled(db, out, TL_NX_PAGES, "nx_recovery", 2) < 0))
		goto end;
	nx_pages = coverage_has(&cov, "nx_recovery");
	/* A caller's leaf zaps stand when they are the ones this scan
	 * would count: the same decoder, no worker zaps to count aside. */
	if (out->filled[TL_LEAF_ZAPS] && out->zaps_fmt == fmt &&
	    (nx_pages || nworkers == 0))
		goto done;
	memset(out->count[TL_LEAF_ZAPS], 0, sizeof(out->count[TL_LEAF_ZAPS]));
	/* Leaf zaps by the decoder; without the patched page events, the
	 * recovery worker's zaps are its pages. */
	if (sqlite3_prepare_v2(db, "SELECT ts, old_spte, new_spte, level, tid "
			       "FROM spte_change", -1, &st, NULL) != SQLITE_OK)
		goto sql_error;
	total = (uint64_t)db_table_rows_hint(db, "spte_change");
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		uint64_t old = (uint64_t)sqlite3_column_int64(st, 1);
		uint64_t new = (uint64_t)sqlite3_column_int64(st, 2);

		if (!(++n & 0xffff))
			log_progress_of("timeline: leaf zaps", n, total);
		if (!spte_leaf_zapped(fmt, old, new, sqlite3_column_int(st, 3)))
			continue;
		i = timeline_bin(out, sqlite3_column_int64(st, 0));
		out->count[TL_LEAF_ZAPS][i]++;
		if (nx_pages)
			continue;
		tid = sqlite3_column_int64(st, 4);
		for (w = 0; w < nworkers; w++)
			if (workers[w] == tid)
				out->count[TL_NX_PAGES][i]++;
	}
	log_progress_end();
	if (rc != SQLITE_DONE)
		goto sql_error;
done:
	for (s = 0; s < TIMELINE_SERIES; s++)
		for (i = 0; i < out->nbins; i++)
			if (out->count[s][i] > out->max[s])
				out->max[s] = out->count[s][i];
	rc = 0;
	goto end;
sql_error:
	log_error("%s: timeline: %s", sqlite3_db_filename(db, "main"),
		  sqlite3_errmsg(db));
	rc = -1;
end:
	sqlite3_finalize(st);
	coverage_free(&cov);
	return rc;
}
