/*
 * Named replay figures and their storage (see replay_metrics.h).
 */
#include "metrics/replay_metrics.h"

#include "db/db.h"
#include "util/alloc.h"
#include "util/assert.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define RM_NAME(e, name, value, kind) [e] = name,
const char *const replay_metric_names[REPLAY_METRICS] = {
	REPLAY_METRIC_LIST(RM_NAME)
};
#undef RM_NAME

#define RM_KIND(e, name, value, kind) [e] = kind,
const enum replay_metric_kind replay_metric_kinds[REPLAY_METRICS] = {
	REPLAY_METRIC_LIST(RM_KIND)
};
#undef RM_KIND

/* The per-cause groups follow engine.h's lists (names and order). */
static void groups_check(void)
{
	char name[64];
	int i;

	for (i = 0; i < ZAP_CAUSES; i++) {
		snprintf(name, sizeof(name), "leaf_zaps.%s",
			 zap_cause_names[i]);
		MR_ASSERT(!strcmp(replay_metric_names[RM_LEAF_ZAPS_BY_CAUSE +
						      i], name));
		snprintf(name, sizeof(name), "refaults.%s",
			 zap_cause_names[i]);
		MR_ASSERT(!strcmp(replay_metric_names[RM_REFAULTS_BY_CAUSE +
						      i], name));
	}
	for (i = 0; i < EXEMPT_REASONS; i++) {
		snprintf(name, sizeof(name), "exempt.%s",
			 fault_exempt_names[i]);
		MR_ASSERT(!strcmp(replay_metric_names[RM_EXEMPT_BY_REASON +
						      i], name));
	}
}

static double rate(double n, double secs)
{
	return secs > 0 ? n / secs : 0;
}

static int64_t zaps_total(const struct replay_result *r)
{
	int64_t zaps = 0;
	int i;

	for (i = 0; i < ZAP_CAUSES; i++)
		zaps += r->zaps[i];
	return zaps;
}

enum policy_figure_kind replay_metrics_figure_kind(
	const struct replay_metrics *m, const char *recorded,
	enum policy_figure fig)
{
	enum policy_figure_kind k = policy_figure_kind(m->policy, recorded,
						       fig);

	if (k != POLICY_FIGURE_PREDICTED)
		return k;
	if ((fig == POLICY_FIG_FAULTS && m->v[RM_FAULTS_UNDECIDED] > 0) ||
	    ((fig == POLICY_FIG_LOCK_WAITS ||
	      fig == POLICY_FIG_LOCK_WAIT_COUNT) &&
	     m->v[RM_LOCK_WAIT_MIN_MS] < m->v[RM_LOCK_WAIT_MS]))
		return POLICY_FIGURE_ONE_SIDED;
	return k;
}

void replay_metrics_compute(const struct replay_result *r,
			    double duration_s, struct replay_metrics *out)
{
	const double d = duration_s;

	memset(out, 0, sizeof(*out));
	out->policy = r->policy;
	out->limits = r->limits;
	out->not_applicable = r->not_applicable == REPLAY_NA_NONE ? NULL :
		replay_na_texts[r->not_applicable];
	out->duration_s = duration_s;
#define RM_VALUE(e, name, value, kind) out->v[e] = (double)(value);
	REPLAY_METRIC_LIST(RM_VALUE)
#undef RM_VALUE
}

static int kept_cmp(const void *a, const void *b)
{
	const struct replay_kept_source *x = a, *y = b;

	if (x->zaps != y->zaps)
		return x->zaps > y->zaps ? -1 : 1;
	return x->tid < y->tid ? -1 : x->tid > y->tid;
}

int replay_metrics_kept_sources(sqlite3 *db, const struct replay_result *r,
				struct replay_metrics *out)
{
	sqlite3_stmt *st = NULL;
	int i;

	out->nkept = 0;
	out->kept_other = r->kept_by_other;
	if (sqlite3_prepare_v2(db, "SELECT procname FROM thread WHERE tid = "
			       "?1 ORDER BY first_seq DESC LIMIT 1", -1, &st,
			       NULL) != SQLITE_OK) {
		log_error("%s: %s", sqlite3_db_filename(db, "main"),
			  sqlite3_errmsg(db));
		return -1;
	}
	for (i = 0; i < r->nkept_by; i++) {
		struct replay_kept_source *k = &out->kept[out->nkept++];
		const unsigned char *name = NULL;

		k->tid = r->kept_by[i].tid;
		k->zaps = r->kept_by[i].zaps;
		sqlite3_reset(st);
		sqlite3_bind_int(st, 1, k->tid);
		if (sqlite3_step(st) == SQLITE_ROW)
			name = sqlite3_column_text(st, 0);
		snprintf(k->thread, sizeof(k->thread), "%s",
			 name ? (const char *)name : "?");
	}
	sqlite3_finalize(st);
	qsort(out->kept, (size_t)out->nkept, sizeof(out->kept[0]), kept_cmp);
	return 0;
}

enum replay_metric replay_metric_find(const char *name)
{
	static int checked;
	int i;

	if (!checked) {
		groups_check();
		checked = 1;
	}
	for (i = 0; i < REPLAY_METRICS; i++)
		if (!strcmp(replay_metric_names[i], name))
			break;
	return (enum replay_metric)i;
}

static int replay_metrics_clear(sqlite3 *db)
{
	static const char *const del[] = {
		"DELETE FROM replay_metric", "DELETE FROM replay_series",
		"DELETE FROM replay_mismatch", "DELETE FROM replay_kept",
		"DELETE FROM replay_run",
	};
	size_t i;

	for (i = 0; i < sizeof(del) / sizeof(del[0]); i++)
		if (sqlite3_exec(db, del[i], NULL, NULL, NULL) != SQLITE_OK) {
			log_error("%s: cannot clear replay results: %s",
				  sqlite3_db_filename(db, "main"),
				  sqlite3_errmsg(db));
			return -1;
		}
	return 0;
}

static int step(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* Replaces the stored run of r->policy; the caller holds a transaction.
 * Returns 0, or -1 after saying why. */
static int replay_metrics_store(sqlite3 *db, const struct replay_result *r,
				const struct replay_metrics *m,
				int self_check_ok)
{
	static const char *const del[] = {
		"DELETE FROM replay_metric WHERE run_id IN (SELECT id FROM "
		"replay_run WHERE policy = ?1)",
		"DELETE FROM replay_series WHERE run_id IN (SELECT id FROM "
		"replay_run WHERE policy = ?1)",
		"DELETE FROM replay_mismatch WHERE run_id IN (SELECT id FROM "
		"replay_run WHERE policy = ?1)",
		"DELETE FROM replay_kept WHERE run_id IN (SELECT id FROM "
		"replay_run WHERE policy = ?1)",
		"DELETE FROM replay_run WHERE policy = ?1",
	};
	sqlite3_stmt *st = NULL;
	char created[32];
	time_t now = time(NULL);
	int64_t run;
	int i, rc = -1;

	strftime(created, sizeof(created), "%Y-%m-%dT%H:%M:%SZ",
		 gmtime(&now));
	for (i = 0; i < (int)(sizeof(del) / sizeof(del[0])); i++) {
		if (sqlite3_prepare_v2(db, del[i], -1, &st, NULL) != SQLITE_OK)
			goto end;
		sqlite3_bind_text(st, 1, r->policy, -1, SQLITE_STATIC);
		if (step(st) < 0)
			goto end;
		sqlite3_finalize(st);
		st = NULL;
	}
	if (sqlite3_prepare_v2(db, "INSERT INTO replay_run (policy, created, "
			       "self_check_ok, events, duration_s, memslots, "
			       "perm_upgrade, dirty_logging, lock_waits, "
			       "not_applicable) VALUES (?,?,?,?,?,?,?,?,?,?)",
			       -1, &st, NULL) !=
	    SQLITE_OK)
		goto end;
	sqlite3_bind_text(st, 1, r->policy, -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 2, created, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(st, 3, self_check_ok);
	sqlite3_bind_int64(st, 4, r->events);
	sqlite3_bind_double(st, 5, m->duration_s);
	sqlite3_bind_text(st, 6, replay_source_name(r->slots_src), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 7, replay_source_name(r->upgrade_src), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 8, replay_source_name(r->dirty_src), -1, SQLITE_STATIC);
	sqlite3_bind_text(st, 9, replay_source_name(r->lock_src), -1, SQLITE_STATIC);
	if (m->not_applicable)
		sqlite3_bind_text(st, 10, m->not_applicable, -1,
				  SQLITE_STATIC);
	else
		sqlite3_bind_null(st, 10);
	if (step(st) < 0)
		goto end;
	sqlite3_finalize(st);
	st = NULL;
	run = sqlite3_last_insert_rowid(db);

	if (sqlite3_prepare_v2(db, "INSERT INTO replay_metric VALUES (?,?,?)",
			       -1, &st, NULL) != SQLITE_OK)
		goto end;
	for (i = 0; i < REPLAY_METRICS; i++) {
		sqlite3_bind_int64(st, 1, run);
		sqlite3_bind_text(st, 2, replay_metric_names[i], -1,
				  SQLITE_STATIC);
		sqlite3_bind_double(st, 3, m->v[i]);
		if (step(st) < 0)
			goto end;
	}
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "INSERT INTO replay_series VALUES "
			       "(?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
		goto end;
	for (i = 0; i < r->nseconds; i++) {
		const struct replay_second *s = &r->series[i];

		if (!s->faults && !s->zaps && !s->flushes && !s->lock_wait_ns)
			continue;
		sqlite3_bind_int64(st, 1, run);
		sqlite3_bind_int(st, 2, i);
		sqlite3_bind_int64(st, 3, s->faults);
		sqlite3_bind_int64(st, 4, s->zaps);
		sqlite3_bind_int64(st, 5, s->flushes);
		sqlite3_bind_int64(st, 6, s->lock_wait_ns);
		if (step(st) < 0)
			goto end;
	}
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "INSERT INTO replay_kept VALUES (?,?,?,?)",
			       -1, &st, NULL) != SQLITE_OK)
		goto end;
	for (i = 0; i < m->nkept; i++) {
		sqlite3_bind_int64(st, 1, run);
		sqlite3_bind_int(st, 2, m->kept[i].tid);
		sqlite3_bind_text(st, 3, m->kept[i].thread, -1,
				  SQLITE_STATIC);
		sqlite3_bind_int64(st, 4, m->kept[i].zaps);
		if (step(st) < 0)
			goto end;
	}
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "INSERT INTO replay_mismatch VALUES "
			       "(?,?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
		goto end;
	for (i = 0; i < r->nmismatches; i++) {
		const struct mismatch *mm = &r->mismatches[i];

		sqlite3_bind_int64(st, 1, run);
		sqlite3_bind_text(st, 2, mismatch_kind_names[mm->kind], -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 3, (int64_t)mm->seq);
		sqlite3_bind_int64(st, 4, mm->ts);
		sqlite3_bind_int64(st, 5, (int64_t)mm->gfn);
		sqlite3_bind_int64(st, 6, mm->predicted);
		sqlite3_bind_int64(st, 7, mm->observed);
		if (step(st) < 0)
			goto end;
	}
	rc = 0;
end:
	if (rc < 0)
		log_error("%s: cannot store replay results: %s",
			  sqlite3_db_filename(db, "main"), sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return rc;
}

int replay_metrics_store_runs(sqlite3 *db, const struct replay_result *r,
			      const struct replay_metrics *m, int n,
			      int self_check_ok,
			      const struct replay_vm_figures *vms, int nvms,
			      int narrowed)
{
	int i, rc = -1;

	cleanup_signals_hold();
	if (db_exec(db, "BEGIN IMMEDIATE") != DB_OK)
		goto end;
	if (!self_check_ok && !narrowed && replay_metrics_clear(db) < 0)
		goto rollback;
	for (i = 0; i < n && !narrowed; i++)
		if (replay_metrics_store(db, &r[i], &m[i], self_check_ok) < 0)
			goto rollback;
	if (replay_vms_store(db, vms, nvms, n, !self_check_ok && !narrowed)
	    < 0) {
		log_error("%s: cannot store the VMs' replay results: %s",
			  sqlite3_db_filename(db, "main"), sqlite3_errmsg(db));
		goto rollback;
	}
	if (db_exec(db, "COMMIT") == DB_OK) {
		rc = 0;
		goto end;
	}
rollback:
	db_exec(db, "ROLLBACK");
end:
	cleanup_signals_release();
	return rc;
}

static void copy_text(char *dst, size_t len, const unsigned char *src)
{
	snprintf(dst, len, "%s", src ? (const char *)src : "unknown");
}

/* A stored figure this build has no name for (a newer mmureplay's, or
 * an edited DB): said once per name, then left out. */
static void unknown_warn(sqlite3 *db, const char *name)
{
	static char said[8][40];
	static int nsaid;
	int i;

	for (i = 0; i < nsaid; i++)
		if (!strncmp(said[i], name ? name : "", sizeof(said[0]) - 1))
			return;
	if (nsaid < 8)
		snprintf(said[nsaid++], sizeof(said[0]), "%s",
			 name ? name : "");
	log_warn("%s: replay_metric '%s' is unknown to this mmureplay "
		 "(left out)", sqlite3_db_filename(db, "main"),
		 name ? name : "");
}

static int load_run(sqlite3 *db, int64_t id, struct stored_run *r)
{
	sqlite3_stmt *st = NULL;
	size_t capseries = 0;
	int rc = -1;

	if (sqlite3_prepare_v2(db, "SELECT name, value FROM replay_metric "
			       "WHERE run_id = ?", -1, &st, NULL) != SQLITE_OK)
		goto end;
	sqlite3_bind_int64(st, 1, id);
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(st, 0);
		enum replay_metric k = replay_metric_find(name ? name : "");

		if (k == REPLAY_METRICS) {
			unknown_warn(db, name);
			continue;
		}
		r->m.v[k] = sqlite3_column_double(st, 1);
	}
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "SELECT second, faults, zaps, flushes, "
			       "lock_wait_ns FROM replay_series WHERE run_id "
			       "= ? ORDER BY second", -1, &st, NULL) !=
	    SQLITE_OK)
		goto end;
	sqlite3_bind_int64(st, 1, id);
	while (sqlite3_step(st) == SQLITE_ROW) {
		int64_t sec = sqlite3_column_int64(st, 0);

		if (sec < 0 || sec > 10000000)
			continue;
		if (sec >= r->nseconds) {
			/* New room is zeroed: seconds not stored read 0. */
			if (ALLOC_GROW(r->series, (size_t)sec + 1, capseries))
				goto end;
			r->nseconds = sec + 1;
		}
		r->series[sec].faults = sqlite3_column_int64(st, 1);
		r->series[sec].zaps = sqlite3_column_int64(st, 2);
		r->series[sec].flushes = sqlite3_column_int64(st, 3);
		r->series[sec].lock_wait_ns = sqlite3_column_int64(st, 4);
	}
	rc = 0;
end:
	sqlite3_finalize(st);
	return rc;
}

int replay_metrics_load(sqlite3 *db, struct stored_run **runs, int *n)
{
	sqlite3_stmt *st = NULL;
	struct stored_run *r = NULL;
	const unsigned char *text;
	size_t cap = 0;
	int rc = -1, k;

	*runs = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(db, "SELECT id, policy, self_check_ok, "
			       "duration_s, memslots, perm_upgrade, "
			       "dirty_logging, lock_waits, not_applicable "
			       "FROM replay_run "
			       "ORDER BY policy != 'baseline', id", -1, &st,
			       NULL) != SQLITE_OK)
		goto end;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (ALLOC_GROW(r, (size_t)*n + 1, cap))
			goto end;
		copy_text(r[*n].policy, sizeof(r[0].policy),
			  sqlite3_column_text(st, 1));
		r[*n].self_check_ok = sqlite3_column_int(st, 2);
		r[*n].m.duration_s = sqlite3_column_double(st, 3);
		for (k = 0; k < 4; k++)
			copy_text(r[*n].knowledge[k], sizeof(r[0].knowledge[0]),
				  sqlite3_column_text(st, 4 + k));
		text = sqlite3_column_text(st, 8);
		snprintf(r[*n].not_applicable, sizeof(r[0].not_applicable),
			 "%s", text ? (const char *)text : "");
		if (load_run(db, sqlite3_column_int64(st, 0), &r[*n]) < 0) {
			(*n)++;
			goto end;
		}
		(*n)++;
	}
	/* Pointers into the array only once it has stopped growing: a
	 * 17th run moves it. */
	for (k = 0; k < *n; k++) {
		r[k].m.policy = r[k].policy;
		r[k].m.not_applicable = r[k].not_applicable[0] ?
			r[k].not_applicable : NULL;
	}
	rc = 0;
end:
	if (rc < 0)
		log_error("%s: cannot read replay results: %s",
			  sqlite3_db_filename(db, "main"), sqlite3_errmsg(db));
	sqlite3_finalize(st);
	*runs = r;
	if (rc < 0) {
		replay_metrics_free_runs(r, *n);
		*runs = NULL;
		*n = 0;
	}
	return rc;
}

void replay_metrics_free_runs(struct stored_run *runs, int n)
{
	int i;

	for (i = 0; i < n; i++)
		free(runs[i].series);
	free(runs);
}

void replay_metrics_stored_from(struct replay_result *r, double duration_s,
				int self_check_ok, struct stored_run *out)
{
	memset(out, 0, sizeof(*out));
	snprintf(out->policy, sizeof(out->policy), "%s", r->policy);
	replay_metrics_compute(r, duration_s, &out->m);
	out->m.policy = out->policy;
	out->self_check_ok = self_check_ok;
	snprintf(out->knowledge[0], sizeof(out->knowledge[0]), "%s",
		 replay_source_name(r->slots_src));
	snprintf(out->knowledge[1], sizeof(out->knowledge[1]), "%s",
		 replay_source_name(r->upgrade_src));
	snprintf(out->knowledge[2], sizeof(out->knowledge[2]), "%s",
		 replay_source_name(r->dirty_src));
	snprintf(out->knowledge[3], sizeof(out->knowledge[3]), "%s",
		 replay_source_name(r->lock_src));
	out->series = r->series;
	out->nseconds = r->nseconds;
	r->series = NULL;
	r->nseconds = 0;
}
