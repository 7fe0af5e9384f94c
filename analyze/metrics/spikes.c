/*
 * Latency spikes and the MMU activity in their windows (see spikes.h).
 *
 * Per window [t0, t1] and table, the rows are those with seq in
 * [first seq at or after t0, the sample's seq): seq is the position in
 * the time-ordered capture, so a bisection on seq (a B-tree seek per
 * step) finds where t0 starts, and the rest are rowid range scans.
 */
#include "metrics/spikes.h"

#include "db/db.h"
#include "metrics/latency.h"
#include "util/assert.h"
#include "util/log.h"
#include "util/valcount.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const spike_activity_name[SPIKE_ACTIVITIES] = {
	"npf_page", "zap_page", "invalidate", "nx_recovery", "lock_wait",
	"tlb_flush",
};

enum { T_FAULT, T_SPTE, T_NOTIFIER, T_NX, T_SPFREE, T_LOCK, T_FLUSH, T_N };

static const char *const table_name[T_N] = {
	"fault", "spte_change", "notifier", "nx_recovery", "sp_free",
	"lock_wait", "tlb_flush",
};

/*
 * Does a row of the table in [s0, s1) show the activity?  ?1 s0, ?2 s1,
 * ?3 the probed gfn, ?4 the sample's VM: the rows of that VM and of no
 * VM (kernel threads, which may be what hit it), as --vm narrows; 0:
 * every row (a sample of no VM).
 */
#define OF_VM " AND (?4 = 0 OR vm = ?4 OR vm IS NULL)"
static const char *const table_any[T_N] = {
	"SELECT 1 FROM fault WHERE seq >= ?1 AND seq < ?2 AND (gpa >> 12) = ?3"
	OF_VM " LIMIT 1",
	"SELECT old_spte, new_spte, level FROM spte_change WHERE seq >= ?1 AND "
	"seq < ?2 AND ((level = 1 AND gfn = ?3) OR (level = 2 AND gfn = ?3 & "
	"~511) OR (level = 3 AND gfn = ?3 & ~262143))" OF_VM,
	"SELECT 1 FROM notifier WHERE seq >= ?1 AND seq < ?2 AND phase = 0"
	OF_VM " LIMIT 1",
	"SELECT 1 FROM nx_recovery WHERE seq >= ?1 AND seq < ?2" OF_VM
	" LIMIT 1",
	"SELECT tid FROM sp_free WHERE seq >= ?1 AND seq < ?2" OF_VM,
	"SELECT 1 FROM lock_wait WHERE seq >= ?1 AND seq < ?2" OF_VM " LIMIT 1",
	"SELECT 1 FROM tlb_flush WHERE seq >= ?1 AND seq < ?2" OF_VM " LIMIT 1",
};
#undef OF_VM

struct spike_ctx {
	sqlite3 *db;
	const struct spte_format *fmt;
	const int32_t *workers;
	int nworkers;
	sqlite3_stmt *seek[T_N], *any[T_N];
	int64_t end[T_N];               /* max seq + 1 */
};

static int sql_fail(sqlite3 *db)
{
	log_error("%s: %s", sqlite3_db_filename(db, "main"), sqlite3_errmsg(db));
	return -1;
}

/* The seq of the table's first row at or after t (end[] when none). */
static int64_t seq_at(struct spike_ctx *c, int t, int64_t ts)
{
	sqlite3_stmt *st = c->seek[t];
	int64_t lo = 0, hi = c->end[t], mid, found = c->end[t];

	/* Invariant: rows before lo are before ts; found is the first row
	 * at or after ts seen so far. */
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		sqlite3_bind_int64(st, 1, mid);
		if (sqlite3_step(st) != SQLITE_ROW) {
			hi = mid;
		} else if (sqlite3_column_int64(st, 1) >= ts) {
			found = sqlite3_column_int64(st, 0);
			hi = mid;
		} else {
			lo = sqlite3_column_int64(st, 0) + 1;
		}
		sqlite3_reset(st);
	}
	return found;
}

static int is_worker(const struct spike_ctx *c, int64_t tid)
{
	int i;

	for (i = 0; i < c->nworkers; i++)
		if (c->workers[i] == tid)
			return 1;
	return 0;
}

/* The activity bits of the window [t0, the sample at seq1] of a sample
 * of VM vm (0: none). */
static unsigned window_activity(struct spike_ctx *c, int64_t t0,
				int64_t seq1, uint64_t gfn, int vm)
{
	unsigned bits = 0;
	int t, a;

	for (t = 0; t < T_N; t++) {
		sqlite3_stmt *st = c->any[t];

		sqlite3_bind_int64(st, 1, seq_at(c, t, t0));
		sqlite3_bind_int64(st, 2, seq1);
		if (t == T_FAULT || t == T_SPTE)
			sqlite3_bind_int64(st, 3, (int64_t)gfn);
		sqlite3_bind_int(st, 4, vm);
		a = -1;
		while (sqlite3_step(st) == SQLITE_ROW && a < 0) {
			switch (t) {
			case T_FAULT:
				a = SPIKE_NPF_PAGE;
				break;
			case T_SPTE:
				if (spte_leaf_zapped(c->fmt, (uint64_t)
						     sqlite3_column_int64(st, 0),
						     (uint64_t)
						     sqlite3_column_int64(st, 1),
						     sqlite3_column_int(st, 2)))
					a = SPIKE_ZAP_PAGE;
				break;
			case T_NOTIFIER:
				a = SPIKE_INVALIDATE;
				break;
			case T_NX:
				a = SPIKE_NX_RECOVERY;
				break;
			case T_SPFREE:
				if (is_worker(c, sqlite3_column_int64(st, 0)))
					a = SPIKE_NX_RECOVERY;
				break;
			case T_LOCK:
				a = SPIKE_LOCK_WAIT;
				break;
			default:
				a = SPIKE_TLB_FLUSH;
				break;
			}
		}
		sqlite3_reset(st);
		if (a >= 0)
			bits |= 1U << a;
	}
	return bits;
}

/* Keep the largest spikes, largest first (ties: the earlier first). */
static void top_insert(struct spikes *s, int top, const struct spike *sp)
{
	int i;

	if (top <= 0)
		return;
	if (s->ntop == top) {
		if (s->top[top - 1].ns >= sp->ns)
			return;
		i = top - 1;
	} else {
		i = s->ntop++;
	}
	while (i > 0 && s->top[i - 1].ns < sp->ns) {
		s->top[i] = s->top[i - 1];
		i--;
	}
	s->top[i] = *sp;
}

static void count_bits(unsigned bits, int64_t *with, int64_t *none)
{
	int a;

	for (a = 0; a < SPIKE_ACTIVITIES; a++)
		with[a] += (bits >> a) & 1;
	*none += bits == 0;
}

/*
 * The VMs' rows (vms[0]: no VM's): the table vm's ids, so an id past
 * the last is a row the canonical tables cannot hold.  Returns 0, or
 * -1 (logged).
 */
static int vms_alloc(sqlite3 *db, struct spikes *out, struct valcount **vc)
{
	sqlite3_stmt *st = NULL;
	int i, n = -1;

	if (sqlite3_prepare_v2(db, "SELECT coalesce(max(id), 0) FROM vm", -1,
			       &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (n < 0)
		return sql_fail(db);
	out->vms = calloc((size_t)n + 1, sizeof(*out->vms));
	*vc = calloc((size_t)n + 1, sizeof(**vc));
	if (!out->vms || !*vc) {
		log_error("%s: out of memory", sqlite3_db_filename(db, "main"));
		return -1;
	}
	out->nvms = n + 1;
	for (i = 0; i <= n; i++)
		valcount_init(&(*vc)[i]);
	return 0;
}

/* Each VM's p99 and maximum, from its samples' distribution. */
static void vms_finish(struct spikes *out, struct valcount *vc)
{
	static const double p99[1] = { 0.99 };
	int i;

	for (i = 0; i < out->nvms; i++) {
		MR_ASSERT(vc[i].n == out->vms[i].samples);
		valcount_quantiles(&vc[i], p99, 1, &out->vms[i].p99_ns,
				   &out->vms[i].max_ns);
	}
}

void spikes_free(struct spikes *s)
{
	free(s->vms);
	s->vms = NULL;
	s->nvms = 0;
}

int spikes_compute(sqlite3 *db, const struct spte_format *fmt,
		   int64_t threshold_ns, int top,
		   const int32_t *worker_tids, int nworkers,
		   struct spikes *out)
{
	struct spike_ctx c = { db, fmt, worker_tids, nworkers, { 0 }, { 0 },
			       { 0 } };
	sqlite3_stmt *st = NULL;
	struct valcount *vc = NULL;
	struct latency lat;
	struct spike sp;
	char sql[128];
	int64_t thr, stride, others = 0;
	uint64_t n = 0;
	int t, i, rc = -1, nvc = 0;

	memset(out, 0, sizeof(*out));
	out->narrowed_vm = db_narrowed_vm(db, NULL);
	out->threshold_ns = threshold_ns;
	if (top > SPIKES_TOP_MAX)
		top = SPIKES_TOP_MAX;
	if (latency_compute(db, LATENCY_NPF_NONE, &lat) < 0)
		return -1;
	if (vms_alloc(db, out, &vc) < 0)
		goto end;
	nvc = out->nvms;
	for (i = 0; i < lat.nprobes; i++)
		out->samples += lat.probe[i].n;
	/* Every k-th non-spike sample: about SPIKES_BASELINE_MAX of them. */
	stride = out->samples / SPIKES_BASELINE_MAX + 1;
	for (t = 0; t < T_N; t++) {
		snprintf(sql, sizeof(sql), "SELECT seq, ts FROM %s WHERE seq "
			 ">= ?1 ORDER BY seq LIMIT 1", table_name[t]);
		if (sqlite3_prepare_v2(db, sql, -1, &c.seek[t], NULL) !=
		    SQLITE_OK ||
		    sqlite3_prepare_v2(db, table_any[t], -1, &c.any[t], NULL) !=
		    SQLITE_OK)
			goto sql_error;
		snprintf(sql, sizeof(sql), "SELECT coalesce(max(seq), -1) + 1 "
			 "FROM %s", table_name[t]);
		if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK ||
		    sqlite3_step(st) != SQLITE_ROW)
			goto sql_error;
		c.end[t] = sqlite3_column_int64(st, 0);
		sqlite3_finalize(st);
		st = NULL;
	}
	if (sqlite3_prepare_v2(db, "SELECT seq, ts, probe, ns, gfn, "
			       "coalesce(vm, 0) FROM latency_sample ORDER BY "
			       "seq", -1, &st, NULL) != SQLITE_OK)
		goto sql_error;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (!(++n & 0x3ff))
			log_progress_of("spikes: probe samples", n,
					(uint64_t)out->samples);
		sp.seq = sqlite3_column_int64(st, 0);
		sp.ts = sqlite3_column_int64(st, 1);
		sp.probe = sqlite3_column_int64(st, 2);
		sp.ns = sqlite3_column_int64(st, 3);
		sp.gfn = (uint64_t)sqlite3_column_int64(st, 4);
		sp.vm = sqlite3_column_int(st, 5);
		if (sp.vm < 0 || sp.vm >= out->nvms) {
			log_error("%s: latency_sample seq %" PRId64 ": vm %d "
				  "is not in table vm",
				  sqlite3_db_filename(db, "main"), sp.seq,
				  sp.vm);
			goto end;
		}
		out->vms[sp.vm].samples++;
		if (valcount_add(&vc[sp.vm], sp.ns) < 0) {
			log_error("%s: out of memory",
				  sqlite3_db_filename(db, "main"));
			goto end;
		}
		thr = threshold_ns;
		for (i = 0; !thr && i < lat.nprobes; i++)
			if (lat.probe_id[i] == sp.probe)
				thr = lat.probe[i].pct[LAT_P99];
		if (sp.ns < thr || !thr) {
			if (others++ % stride)
				continue;
			sp.activity = window_activity(&c, sp.ts - sp.ns -
						      SPIKES_SLACK_NS, sp.seq,
						      sp.gfn, sp.vm);
			out->baseline_n++;
			count_bits(sp.activity, out->baseline_with,
				   &out->baseline_none);
			continue;
		}
		sp.activity = window_activity(&c, sp.ts - sp.ns -
					      SPIKES_SLACK_NS, sp.seq, sp.gfn,
					      sp.vm);
		out->spikes++;
		out->vms[sp.vm].spikes++;
		count_bits(sp.activity, out->with, &out->with_none);
		top_insert(out, top, &sp);
	}
	vms_finish(out, vc);
	rc = 0;
	goto end;
sql_error:
	sql_fail(db);
end:
	log_progress_end();
	for (i = 0; i < nvc; i++)
		valcount_free(&vc[i]);
	free(vc);
	sqlite3_finalize(st);
	for (t = 0; t < T_N; t++) {
		sqlite3_finalize(c.seek[t]);
		sqlite3_finalize(c.any[t]);
	}
	return rc;
}
