/*
 * Latency distributions (see latency.h): each distribution's samples
 * counted per distinct value in one scan, then one walk over the sorted
 * distinct values picks the nearest-rank percentiles.  No SQL sort and
 * no window function: on a 10 M-event capture the NPF service times by
 * a window over vcpu_exit UNION ALL vcpu_entry took 3 s a query (a sort
 * of every exit and entry), the merge of the two tables in seq order
 * takes a tenth of that.
 */
#include "metrics/latency.h"

#include "db/db.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/u64map.h"
#include "util/valcount.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(LAT_PCTS == VALCOUNT_PCTS, "the reported percentiles");
const char *const latency_pct_name[LAT_PCTS] = { "p50", "p99", "p99.9" };

/* The tail quantiles: 1 - 0.5 * 10^(-k / LAT_TAIL_STEP), 0.5 up to
 * 0.99995. */
double latency_tail_quantile(int k)
{
	return 1.0 - 0.5 * pow(10.0, -(double)k / LAT_TAIL_STEP);
}

/*
 * The nearest-rank figures of vc into d: the distinct values in order,
 * each covering the ranks (rank, rank + its count]; a percentile's value
 * is the one whose ranks hold its rank.
 */
static void valcount_dist(struct valcount *vc, struct latency_dist *d)
{
	int64_t n = vc->n, rank = 0, v = 0, tail_rank[LAT_TAIL_POINTS];
	double tail_q[LAT_TAIL_POINTS];
	int k = 0, t = 0, nt = 0;
	size_t i;

	memset(d, 0, sizeof(*d));
	/* The tail's ranks, distinct and increasing: a quantile whose rank
	 * is the previous one's adds nothing for so few samples. */
	for (k = 0; k < LAT_TAIL_POINTS; k++) {
		int64_t r = valcount_rank(latency_tail_quantile(k), n);

		if (r <= n && (nt == 0 || r > tail_rank[nt - 1])) {
			tail_q[nt] = latency_tail_quantile(k);
			tail_rank[nt++] = r;
		}
	}
	k = 0;
	valcount_sort(vc);
	for (i = 0; i < vc->nvals; i++) {
		v = vc->vals[i];
		rank += valcount_of(vc, v);
		while (k < LAT_PCTS &&
		       valcount_rank(valcount_pct[k], n) <= rank)
			d->pct[k++] = v;
		while (t < nt && tail_rank[t] <= rank) {
			d->tail_q[t] = tail_q[t];
			d->tail[t++] = v;
		}
	}
	d->ntail = t;
	d->max = v;
	d->n = n;
}

static int sql_fail(sqlite3 *db)
{
	log_error("%s: %s", sqlite3_db_filename(db, "main"), sqlite3_errmsg(db));
	return -1;
}

/* The last exit/entry event of a thread: armed when it is an NPF exit,
 * at ts. */
struct npf_thread {
	int armed;
	int64_t ts;
};

/*
 * The NPF service times, each passed to fn: an entry whose previous
 * exit/entry event on the same thread (tid NULL being one thread, as
 * SQL's PARTITION BY has it) is an NPF exit.  vcpu_exit and vcpu_entry
 * are read in seq (rowid) order and merged on seq, so nothing is sorted
 * and memory grows with the threads only.  0, or -1 (logged).
 */
static int npf_scan(sqlite3 *db, int64_t npf_exit_reason,
		    int (*fn)(void *arg, int64_t ns), void *arg)
{
	sqlite3_stmt *ex = NULL, *en = NULL, *st;
	struct npf_thread *thr = NULL, null_thr = { 0, 0 }, *th;
	struct u64map idx;      /* tid -> index in thr + 1 */
	size_t nthr = 0, capthr = 0;
	int rx, rn, is_exit, rc = -1;
	uint64_t done = 0, total = (uint64_t)(db_table_rows_hint(db,
		"vcpu_exit") + db_table_rows_hint(db, "vcpu_entry"));

	u64map_init(&idx);
	if (sqlite3_prepare_v2(db, "SELECT seq, ts, tid, exit_reason FROM "
			       "vcpu_exit ORDER BY seq", -1, &ex, NULL) !=
	    SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT seq, ts, tid FROM vcpu_entry "
			       "ORDER BY seq", -1, &en, NULL) != SQLITE_OK)
		goto sql_error;
	rx = sqlite3_step(ex);
	rn = sqlite3_step(en);
	while (rx == SQLITE_ROW || rn == SQLITE_ROW) {
		is_exit = rn != SQLITE_ROW || (rx == SQLITE_ROW &&
			sqlite3_column_int64(ex, 0) <
			sqlite3_column_int64(en, 0));
		st = is_exit ? ex : en;
		if (sqlite3_column_type(st, 2) == SQLITE_NULL) {
			th = &null_thr;
		} else {
			uint64_t tid = (uint64_t)sqlite3_column_int64(st, 2);
			uint64_t i = u64map_get(&idx, tid);

			if (!i) {
				if (ALLOC_GROW(thr, nthr + 1, capthr) < 0 ||
				    u64map_put(&idx, tid, nthr + 1) < 0)
					goto nomem;
				i = ++nthr;
			}
			th = &thr[i - 1];
		}
		if (is_exit) {
			th->armed = sqlite3_column_type(ex, 3) != SQLITE_NULL &&
				sqlite3_column_int64(ex, 3) == npf_exit_reason;
			th->ts = sqlite3_column_int64(ex, 1);
			rx = sqlite3_step(ex);
		} else {
			if (th->armed &&
			    fn(arg, sqlite3_column_int64(en, 1) - th->ts) < 0)
				goto nomem;
			th->armed = 0;
			rn = sqlite3_step(en);
		}
		if (!(++done & 0xffff))
			log_progress_of("latency: NPF exits and entries", done,
					total);
	}
	if (rx != SQLITE_DONE || rn != SQLITE_DONE)
		goto sql_error;
	rc = 0;
	goto end;
nomem:
	log_error("%s: out of memory", sqlite3_db_filename(db, "main"));
	goto end;
sql_error:
	sql_fail(db);
end:
	log_progress_end();
	sqlite3_finalize(ex);
	sqlite3_finalize(en);
	u64map_free(&idx);
	free(thr);
	return rc;
}

static int npf_add(void *arg, int64_t ns)
{
	return valcount_add(arg, ns);
}

struct npf_at_least {
	int64_t ns, n;
};

static int npf_count(void *arg, int64_t ns)
{
	struct npf_at_least *c = arg;

	c->n += ns >= c->ns;
	return 0;
}

/* Does the probe column of st (column 0) hold probe id (NULL: null)? */
static int probe_is(sqlite3_stmt *st, int null, int64_t id)
{
	if (sqlite3_column_type(st, 0) == SQLITE_NULL)
		return null;
	return !null && sqlite3_column_int64(st, 0) == id;
}

int latency_compute(sqlite3 *db, int64_t npf_exit_reason,
		    struct latency *out)
{
	sqlite3_stmt *ids = NULL, *vals = NULL;
	struct valcount vc[LATENCY_MAX_PROBES], npf, all;
	int null_id[LATENCY_MAX_PROBES];
	int rc = -1, i, r;

	memset(out, 0, sizeof(*out));
	valcount_init(&npf);
	valcount_init(&all);
	for (i = 0; i < LATENCY_MAX_PROBES; i++)
		valcount_init(&vc[i]);
	if (sqlite3_prepare_v2(db, "SELECT probe, count(*) FROM "
			       "latency_sample GROUP BY probe ORDER BY probe",
			       -1, &ids, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, "SELECT probe, ns FROM latency_sample",
			       -1, &vals, NULL) != SQLITE_OK)
		goto sql_error;
	while ((r = sqlite3_step(ids)) == SQLITE_ROW) {
		if (out->nprobes == LATENCY_MAX_PROBES) {
			out->probes_dropped += sqlite3_column_int64(ids, 1);
			continue;
		}
		null_id[out->nprobes] = sqlite3_column_type(ids, 0) ==
			SQLITE_NULL;
		out->probe_id[out->nprobes++] = sqlite3_column_int64(ids, 0);
	}
	if (r != SQLITE_DONE)
		goto sql_error;
	/* One scan for every probe: the samples of the probes kept. */
	while (out->nprobes && (r = sqlite3_step(vals)) == SQLITE_ROW) {
		for (i = 0; i < out->nprobes &&
		     !probe_is(vals, null_id[i], out->probe_id[i]); i++)
			;
		if ((i < out->nprobes &&
		     valcount_add(&vc[i], sqlite3_column_int64(vals, 1)) < 0) ||
		    valcount_add(&all, sqlite3_column_int64(vals, 1)) < 0)
			goto nomem;
	}
	if (out->nprobes && r != SQLITE_DONE)
		goto sql_error;
	for (i = 0; i < out->nprobes; i++)
		valcount_dist(&vc[i], &out->probe[i]);
	valcount_dist(&all, &out->probe_all);
	if (npf_exit_reason != LATENCY_NPF_NONE) {
		if (npf_scan(db, npf_exit_reason, npf_add, &npf) < 0)
			goto end;
		valcount_dist(&npf, &out->npf);
	}
	rc = 0;
	goto end;
nomem:
	log_error("%s: out of memory", sqlite3_db_filename(db, "main"));
	goto end;
sql_error:
	sql_fail(db);
end:
	sqlite3_finalize(ids);
	sqlite3_finalize(vals);
	for (i = 0; i < LATENCY_MAX_PROBES; i++)
		valcount_free(&vc[i]);
	valcount_free(&npf);
	valcount_free(&all);
	return rc;
}

int latency_count_at_least(sqlite3 *db, int64_t npf_exit_reason,
			   int64_t ns, int64_t *probe, int64_t *npf)
{
	sqlite3_stmt *st = NULL;
	struct npf_at_least c = { ns, 0 };
	int rc = -1;

	*probe = *npf = 0;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM latency_sample "
			       "WHERE ns >= ?1", -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int64(st, 1, ns) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_ROW) {
		sql_fail(db);
		goto end;
	}
	*probe = sqlite3_column_int64(st, 0);
	if (npf_scan(db, npf_exit_reason, npf_count, &c) < 0)
		goto end;
	*npf = c.n;
	rc = 0;
end:
	sqlite3_finalize(st);
	return rc;
}
