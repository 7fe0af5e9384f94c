/*
 * Latency distributions (see latency.h): one sorted walk per
 * distribution, picking the nearest-rank percentiles on the way.
 */
#include "metrics/latency.h"

#include "util/log.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

const double latency_pct_value[LAT_PCTS] = { 0.5, 0.99, 0.999 };
const char *const latency_pct_name[LAT_PCTS] = { "p50", "p99", "p99.9" };

/* The tail quantiles: 1 - 0.5 * 10^(-k / LAT_TAIL_STEP), 0.5 up to
 * 0.99995. */
double latency_tail_quantile(int k)
{
	return 1.0 - 0.5 * pow(10.0, -(double)k / LAT_TAIL_STEP);
}

/* Rank (1-based) of percentile p among n samples. */
static int64_t pct_rank(double p, int64_t n)
{
	int64_t r = (int64_t)ceil(p * (double)n - 1e-9);

	return r < 1 ? 1 : r;
}

/*
 * Walk the sorted values of st (column 0), n of them, into d.  One pass:
 * the percentile ranks increase with p.
 */
static int dist_walk(sqlite3 *db, sqlite3_stmt *st, int64_t n,
		     struct latency_dist *d)
{
	int64_t rank = 0, v = 0, tail_rank[LAT_TAIL_POINTS];
	double tail_q[LAT_TAIL_POINTS];
	int k = 0, t = 0, nt = 0, rc;

	memset(d, 0, sizeof(*d));
	d->n = n;
	/* The tail's ranks, distinct and increasing: a quantile whose rank
	 * is the previous one's adds nothing for so few samples. */
	for (k = 0; k < LAT_TAIL_POINTS; k++) {
		int64_t r = pct_rank(latency_tail_quantile(k), n);

		if (r <= n && (nt == 0 || r > tail_rank[nt - 1])) {
			tail_q[nt] = latency_tail_quantile(k);
			tail_rank[nt++] = r;
		}
	}
	k = 0;
	while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
		v = sqlite3_column_int64(st, 0);
		rank++;
		while (k < LAT_PCTS && rank == pct_rank(latency_pct_value[k], n))
			d->pct[k++] = v;
		if (t < nt && rank == tail_rank[t]) {
			d->tail_q[t] = tail_q[t];
			d->tail[t++] = v;
		}
	}
	d->ntail = t;
	d->max = v;
	if (rc != SQLITE_DONE) {
		log_error("%s: %s", sqlite3_db_filename(db, "main"),
			  sqlite3_errmsg(db));
		return -1;
	}
	d->n = rank;
	return 0;
}

static int64_t count_of(sqlite3 *db, sqlite3_stmt *st)
{
	int64_t n = sqlite3_step(st) == SQLITE_ROW ?
		sqlite3_column_int64(st, 0) : -1;

	if (n < 0)
		log_error("%s: %s", sqlite3_db_filename(db, "main"),
			  sqlite3_errmsg(db));
	sqlite3_reset(st);
	return n;
}

/* The NPF service times: an entry whose previous exit/entry event on the
 * same thread is an NPF exit. */
static const char npf_sql[] =
	"WITH ev AS (SELECT seq, tid, ts, exit_reason AS r, 1 AS x FROM "
	"vcpu_exit UNION ALL SELECT seq, tid, ts, NULL, 0 FROM vcpu_entry), "
	"p AS (SELECT x, ts, lag(x) OVER w AS px, lag(r) OVER w AS pr, "
	"lag(ts) OVER w AS pts FROM ev WINDOW w AS (PARTITION BY tid ORDER "
	"BY seq)) SELECT %s FROM p WHERE x = 0 AND px = 1 AND pr = ?1%s";

int latency_compute(sqlite3 *db, int64_t npf_exit_reason,
		    struct latency *out)
{
	sqlite3_stmt *ids = NULL, *cnt = NULL, *vals = NULL;
	char sql[sizeof(npf_sql) + 64];
	int64_t n;
	int rc = -1;

	memset(out, 0, sizeof(*out));
	if (sqlite3_prepare_v2(db, "SELECT probe, count(*) FROM "
			       "latency_sample GROUP BY probe ORDER BY probe",
			       -1, &ids, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT ns FROM latency_sample WHERE "
			       "probe IS ?1 ORDER BY ns", -1, &vals, NULL) !=
	    SQLITE_OK)
		goto sql_error;
	while (sqlite3_step(ids) == SQLITE_ROW) {
		if (out->nprobes == LATENCY_MAX_PROBES) {
			out->probes_dropped += sqlite3_column_int64(ids, 1);
			continue;
		}
		out->probe_id[out->nprobes] = sqlite3_column_int64(ids, 0);
		sqlite3_bind_value(vals, 1, sqlite3_column_value(ids, 0));
		if (dist_walk(db, vals, sqlite3_column_int64(ids, 1),
			      &out->probe[out->nprobes]) < 0)
			goto end;
		sqlite3_reset(vals);
		out->nprobes++;
	}
	sqlite3_finalize(vals);
	vals = NULL;
	snprintf(sql, sizeof(sql), npf_sql, "count(*)", "");
	if (sqlite3_prepare_v2(db, sql, -1, &cnt, NULL) != SQLITE_OK)
		goto sql_error;
	sqlite3_bind_int64(cnt, 1, npf_exit_reason);
	if ((n = count_of(db, cnt)) < 0)
		goto end;
	snprintf(sql, sizeof(sql), npf_sql, "ts - pts", " ORDER BY 1");
	if (sqlite3_prepare_v2(db, sql, -1, &vals, NULL) != SQLITE_OK)
		goto sql_error;
	sqlite3_bind_int64(vals, 1, npf_exit_reason);
	if (dist_walk(db, vals, n, &out->npf) < 0)
		goto end;
	rc = 0;
	goto end;
sql_error:
	log_error("%s: %s", sqlite3_db_filename(db, "main"), sqlite3_errmsg(db));
end:
	sqlite3_finalize(ids);
	sqlite3_finalize(cnt);
	sqlite3_finalize(vals);
	return rc;
}

int latency_count_at_least(sqlite3 *db, int64_t npf_exit_reason,
			   int64_t ns, int64_t *probe, int64_t *npf)
{
	sqlite3_stmt *st = NULL;
	char sql[sizeof(npf_sql) + 64];
	int rc = -1;

	*probe = *npf = 0;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM latency_sample "
			       "WHERE ns >= ?1", -1, &st, NULL) != SQLITE_OK)
		goto sql_error;
	sqlite3_bind_int64(st, 1, ns);
	if ((*probe = count_of(db, st)) < 0)
		goto end;
	sqlite3_finalize(st);
	st = NULL;
	snprintf(sql, sizeof(sql), npf_sql, "count(*)", " AND ts - pts >= ?2");
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		goto sql_error;
	sqlite3_bind_int64(st, 1, npf_exit_reason);
	sqlite3_bind_int64(st, 2, ns);
	if ((*npf = count_of(db, st)) < 0)
		goto end;
	rc = 0;
	goto end;
sql_error:
	log_error("%s: %s", sqlite3_db_filename(db, "main"), sqlite3_errmsg(db));
end:
	sqlite3_finalize(st);
	return rc;
}
