/*
 * Per-phase figures (see phases.h): the marker rows once, then a few
 * range queries per phase (ts is indexed through seq order: the tables
 * are small per phase, and the capture is read once per figure).
 */
#include "metrics/phases.h"

#include "db/db.h"
#include "util/log.h"

#include <string.h>

static const char markers_sql[] =
	"SELECT s.ts, s.a1 & 65535 FROM syscall s JOIN raw_event r ON "
	"r.id = s.raw_id WHERE r.name IN ('syscall_entry_ioctl', "
	"'syscalls:sys_enter_ioctl') AND (s.a0 = 4294967295 OR s.a0 = -1) "
	"AND (s.a1 & 4294901760) = 1297219584 ORDER BY s.seq";

static int64_t one(sqlite3 *db, const char *sql, int64_t a, int64_t b,
		   int64_t c, int *err)
{
	sqlite3_stmt *st = NULL;
	int64_t v = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
		*err = 1;
		goto end;
	}
	sqlite3_bind_int64(st, 1, a);
	sqlite3_bind_int64(st, 2, b);
	sqlite3_bind_int64(st, 3, c);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	else
		*err |= sqlite3_errcode(db) != SQLITE_DONE;
end:
	sqlite3_finalize(st);
	return v;
}

static int64_t leaf_zaps(sqlite3 *db, const struct spte_format *fmt,
			 int64_t lo, int64_t hi, int *err)
{
	sqlite3_stmt *st = NULL;
	int64_t n = 0;

	if (sqlite3_prepare_v2(db, "SELECT old_spte, new_spte, level FROM "
			       "spte_change WHERE ts >= ?1 AND ts < ?2", -1,
			       &st, NULL) != SQLITE_OK) {
		*err = 1;
		return 0;
	}
	sqlite3_bind_int64(st, 1, lo);
	sqlite3_bind_int64(st, 2, hi);
	while (sqlite3_step(st) == SQLITE_ROW)
		n += spte_leaf_zapped(fmt, (uint64_t)sqlite3_column_int64(st, 0),
				      (uint64_t)sqlite3_column_int64(st, 1),
				      sqlite3_column_int(st, 2));
	sqlite3_finalize(st);
	return n;
}

int phases_compute(sqlite3 *db, const struct spte_format *fmt,
		   int64_t threshold_ns, struct phases *out)
{
	sqlite3_stmt *st = NULL;
	struct phase_stats *p;
	int64_t last = db_meta_get_int(db, "last_ts", 0), rank;
	int i, err = 0;

	memset(out, 0, sizeof(*out));
	out->threshold_ns = threshold_ns;
	out->p[0].id = 0;
	out->n = 1;
	if (sqlite3_prepare_v2(db, markers_sql, -1, &st, NULL) != SQLITE_OK)
		goto sql_error;
	while (sqlite3_step(st) == SQLITE_ROW && out->n < PHASES_MAX) {
		p = &out->p[out->n++];
		p->begin_ts = sqlite3_column_int64(st, 0);
		p->id = sqlite3_column_int(st, 1);
		out->p[out->n - 2].end_ts = p->begin_ts;
	}
	sqlite3_finalize(st);
	st = NULL;
	out->p[out->n - 1].end_ts = last + 1;
	for (i = 0; i < out->n; i++) {
		p = &out->p[i];
		p->samples = one(db, "SELECT count(*) FROM latency_sample WHERE "
				 "ts >= ?1 AND ts < ?2", p->begin_ts, p->end_ts,
				 0, &err);
		rank = (p->samples * 99 + 99) / 100;    /* ceil(0.99 n) */
		p->p99_ns = p->samples ? one(db, "SELECT ns FROM latency_sample "
					     "WHERE ts >= ?1 AND ts < ?2 ORDER "
					     "BY ns LIMIT 1 OFFSET ?3",
					     p->begin_ts, p->end_ts, rank - 1,
					     &err) : 0;
		p->at_least = one(db, "SELECT count(*) FROM latency_sample "
				  "WHERE ts >= ?1 AND ts < ?2 AND ns >= ?3",
				  p->begin_ts, p->end_ts, threshold_ns, &err);
		p->faults = one(db, "SELECT count(*) FROM fault WHERE ts >= ?1 "
				"AND ts < ?2", p->begin_ts, p->end_ts, 0, &err);
		p->invalidations = one(db, "SELECT count(*) FROM notifier WHERE "
				       "phase = 0 AND ts >= ?1 AND ts < ?2",
				       p->begin_ts, p->end_ts, 0, &err);
		p->leaf_zaps = leaf_zaps(db, fmt, p->begin_ts, p->end_ts, &err);
	}
	if (err)
		goto sql_error;
	return 0;
sql_error:
	log_error("%s: phases: %s", sqlite3_db_filename(db, "main"),
		  sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return -1;
}

const struct phase_stats *phases_find(const struct phases *ph, int id)
{
	int i;

	for (i = 0; i < ph->n; i++)
		if (ph->p[i].id == id)
			return &ph->p[i];
	return NULL;
}

int64_t phases_overall_p99(sqlite3 *db)
{
	int err = 0;
	int64_t n = one(db, "SELECT count(*) FROM latency_sample", 0, 0, 0,
			&err);

	return n ? one(db, "SELECT ns FROM latency_sample ORDER BY ns LIMIT 1 "
		       "OFFSET ?1", (n * 99 + 99) / 100 - 1, 0, 0, &err) : 0;
}
