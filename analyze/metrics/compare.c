/*
 * Run sets side by side (see compare.h).
 */
#define _GNU_SOURCE
#include "metrics/compare.h"

#include "db/db.h"
#include "metrics/coverage.h"
#include "metrics/latency.h"
#include "metrics/replay_metrics.h"
#include "metrics/summary.h"
#include "util/assert.h"
#include "util/log.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The KVM parameters that are the policy under comparison: equal within
 * a side, free to differ between A and B.  Every other parameter must be
 * equal everywhere. */
static const char *const policy_params[] = {
	"kvm.perm_upgrade_skip_zap", "kvm.nx_huge_pages_recovery_skip_dirty",
	"kvm.nx_huge_pages_recovery_read_lock",
	"kvm.nx_huge_pages_recovery_ratio",
	"kvm.nx_huge_pages_recovery_period_ms",
};

static int is_policy_param(const char *k)
{
	size_t i;

	for (i = 0; i < sizeof(policy_params) / sizeof(policy_params[0]); i++)
		if (strcmp(k, policy_params[i]) == 0)
			return 1;
	return 0;
}

void compare_init(struct compare *c, const double *thresholds_ms, int n)
{
	int i;

	memset(c, 0, sizeof(*c));
	MR_ASSERT(n <= COMPARE_MAX_THRESHOLDS);
	for (i = 0; i < n; i++)
		c->threshold_ms[i] = thresholds_ms[i];
	c->nthresholds = n;
}

/* The row with key, created on first use with every value unknown. */
static struct compare_row *row(struct compare *c, const char *key,
			       const char *label, int decimals)
{
	struct compare_row *r;
	int i, s;

	for (i = 0; i < c->nrows; i++)
		if (strcmp(c->rows[i].key, key) == 0)
			return &c->rows[i];
	if (c->nrows == COMPARE_MAX_ROWS)
		return NULL;
	r = &c->rows[c->nrows++];
	memset(r, 0, sizeof(*r));
	snprintf(r->key, sizeof(r->key), "%s", key);
	snprintf(r->label, sizeof(r->label), "%s", label);
	r->decimals = decimals;
	for (s = 0; s < COMPARE_SIDES; s++)
		for (i = 0; i < COMPARE_MAX_RUNS; i++)
			r->v[s][i] = NAN;
	for (i = 0; i < COMPARE_MAX_RUNS; i++)
		r->pred[i] = NAN;
	return r;
}

static void put(struct compare *c, enum compare_side side, int i,
		const char *key, const char *label, int decimals, double v)
{
	struct compare_row *r = row(c, key, label, decimals);

	if (r)
		r->v[side][i] = v;
}

/* Returns what B's figure predicted from A is
 * (replay_metrics_figure_kind()): the what-if runs B's policy on A,
 * recorded under A's; m its figures. */
static const char *pred_kind(const struct replay_result *self,
			     const struct replay_metrics *m,
			     enum policy_figure fig)
{
	return policy_figure_kind_name(replay_metrics_figure_kind(
		m, self->policy, fig));
}

/* A what-if figure of run i; a not-modelled one is marked, no value. */
static void put_pred(struct compare *c, int i, const char *key, double v,
		     const char *kind)
{
	struct compare_row *r = row(c, key, key, 1);

	if (r) {
		r->pred_kind = kind;
		r->pred[i] = strcmp(kind, "not_modelled") ? v : NAN;
		r->has_pred = 1;
	}
}

/*
 * The latency what-if of run i (m, the replay under B's policy) beside
 * the rows its measured figures made (s, run i's summary): NPF service
 * times, the probe's samples (every probe together: the row of the one
 * probe, or the pooled rows), and the probe intervals >= 1 and 3 ms.
 */
static void latency_pred(struct compare *c, int i, const struct summary *s,
			 const struct replay_metrics *m, const char *npf_kind,
			 const char *probe_kind)
{
	static const char *const key_pct[] = { "p50", "p99", "p999", "max" };
	char key[48], pk[24];
	int k, t;

	for (k = 0; k < 4 && s->latency.npf.n; k++) {
		snprintf(key, sizeof(key), "npf_service_%s_us", key_pct[k]);
		put_pred(c, i, key, m->v[RM_NPF_BY_PCT + k] / 1e3, npf_kind);
	}
	if (!s->latency.nprobes)
		return;
	if (s->latency.nprobes == 1)
		snprintf(pk, sizeof(pk), "probe%lld",
			 (long long)s->latency.probe_id[0]);
	else
		snprintf(pk, sizeof(pk), "probe");
	for (k = 0; k < 4; k++) {
		snprintf(key, sizeof(key), "%s_%s_us", pk, key_pct[k]);
		put_pred(c, i, key, m->v[RM_PROBE_BY_PCT + k] / 1e3,
			 probe_kind);
	}
	for (t = 0; t < c->nthresholds; t++) {
		snprintf(key, sizeof(key), "probe_ge_%gms", c->threshold_ms[t]);
		if (c->threshold_ms[t] == 1.0)
			put_pred(c, i, key, m->v[RM_PROBE_GE_1MS], probe_kind);
		else if (c->threshold_ms[t] == 3.0)
			put_pred(c, i, key, m->v[RM_PROBE_GE_3MS], probe_kind);
	}
}

/* Manifest identity: kernel, workload, the policy knobs, the rest. */
static void identity_read(sqlite3 *db, struct compare_run *run,
			  char **others)
{
	char *text = db_meta_get_text(db, "manifest");
	cJSON *doc = text ? cJSON_Parse(text) : NULL;
	const cJSON *v, *params, *p;
	char *k = NULL, *o = NULL, *t;

	*others = NULL;
	if (!doc)
		goto end;
	v = cJSON_GetObjectItemCaseSensitive(doc, "kernel_release");
	if (cJSON_IsString(v))
		run->kernel = strdup(v->valuestring);
	v = cJSON_GetObjectItemCaseSensitive(doc, "workload");
	if (cJSON_IsString(v))
		run->workload = strdup(v->valuestring);
	params = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(doc, "kvm"), "params");
	k = strdup("");
	o = strdup("");
	cJSON_ArrayForEach(p, params) {
		if (!cJSON_IsString(p) || !k || !o)
			continue;
		if (asprintf(&t, "%s%s%s=%s", is_policy_param(p->string) ? k : o,
			     *(is_policy_param(p->string) ? k : o) ? "," : "",
			     p->string + 4, p->valuestring) < 0)
			continue;
		if (is_policy_param(p->string)) {
			free(k);
			k = t;
		} else {
			free(o);
			o = t;
		}
	}
	run->knobs = k;
	*others = o;
	k = o = NULL;
end:
	free(k);
	free(o);
	cJSON_Delete(doc);
	free(text);
}

static double rate(double n, double secs)
{
	return secs > 0 ? n / secs : NAN;
}

static double us(int64_t ns, int64_t n)
{
	return n > 0 ? (double)ns / 1e3 : NAN;
}

/* Sum of SQL's single value, or NAN on NULL / error. */
static double query_double(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	double v = NAN;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW &&
	    sqlite3_column_type(st, 0) != SQLITE_NULL)
		v = sqlite3_column_double(st, 0);
	sqlite3_finalize(st);
	return v;
}

enum compare_status compare_add_run(struct compare *c, enum compare_side side,
				    int i, const char *path, sqlite3 *db,
				    const struct capture_info *ci,
				    const struct replay_result *self,
				    int self_ok,
				    const struct replay_result *whatif)
{
	static const char *const pct_key[LAT_PCTS] = { "p50", "p99", "p999" };
	static const char *const pct_label[LAT_PCTS] = {
		"p50", "p99", "p99.9",
	};
	struct compare_run *run = &c->run[side][i];
	struct replay_metrics m;
	struct summary s;
	char key[48], label[32], *others = NULL;
	int64_t np, nn;
	double d;
	int k, t;

	MR_ASSERT(i < COMPARE_MAX_RUNS);
	if (summary_compute(db, &s) != SUMMARY_OK) {
		summary_free(&s);
		return COMPARE_ERR_SQL;
	}
	run->path = path;
	run->policy = ci->recorded->name;
	run->self_check_ok = self_ok;
	run->duration_s = d = s.duration_s;
	run->began_mid_run = self->began_mid_run;
	run->warmup_s = replay_warmup_s(self);
	identity_read(db, run, &others);
	run->nvms = ci->nvms;
	if (c->vm && c->vm <= s.nvms && s.vms[c->vm - 1].procname &&
	    !(run->vm_procname = strdup(s.vms[c->vm - 1].procname))) {
		free(others);
		summary_free(&s);
		return COMPARE_ERR_NOMEM;
	}
	if (c->n[side] < i + 1)
		c->n[side] = i + 1;

	put(c, side, i, "faults_per_s", "faults/s", 1,
	    coverage_gap(&s.cov, COVERAGE_FAULTS) ? NAN : s.faults_per_s);
	put(c, side, i, "leaf_zaps_per_s", "leaf zaps/s", 1,
	    coverage_gap(&s.cov, COVERAGE_LEAF_ZAPS) ? NAN :
	    s.leaf_zaps_per_s);
	put(c, side, i, "tlb_flushes_per_s", "TLB flushes/s", 1,
	    coverage_has(&s.cov, "tlb_flush") ?
	    rate((double)db_table_count(db, "tlb_flush"), d) : NAN);
	put(c, side, i, "invalidations_per_s", "invalidations/s", 1,
	    coverage_gap(&s.cov, COVERAGE_INVALIDATIONS) ? NAN :
	    s.invalidations_per_s);
	/* Counts too: the replay predicts counts, not the run's length. */
	put(c, side, i, "faults", "faults", 0,
	    coverage_gap(&s.cov, COVERAGE_FAULTS) ? NAN : (double)s.faults);
	put(c, side, i, "leaf_zaps", "leaf zaps", 0,
	    coverage_gap(&s.cov, COVERAGE_LEAF_ZAPS) ? NAN :
	    (double)s.leaf_zaps);
	put(c, side, i, "tlb_flushes", "TLB flushes", 0,
	    coverage_has(&s.cov, "tlb_flush") ?
	    (double)db_table_count(db, "tlb_flush") : NAN);
	for (k = 0; k < LAT_PCTS; k++) {
		snprintf(key, sizeof(key), "npf_service_%s_us", pct_key[k]);
		snprintf(label, sizeof(label), "NPF %s (us)", pct_label[k]);
		put(c, side, i, key, label, 1,
		    us(s.latency.npf.pct[k], s.latency.npf.n));
	}
	put(c, side, i, "npf_service_max_us", "NPF max (us)", 1,
	    us(s.latency.npf.max, s.latency.npf.n));
	/* The probe: every phase's samples; rows only when sampled. */
	for (t = 0; t < s.latency.nprobes; t++) {
		const struct latency_dist *p = &s.latency.probe[t];

		for (k = 0; k <= LAT_PCTS; k++) {
			snprintf(key, sizeof(key), "probe%lld_%s_us",
				 (long long)s.latency.probe_id[t],
				 k < LAT_PCTS ? pct_key[k] : "max");
			snprintf(label, sizeof(label), "probe %lld %s (us)",
				 (long long)s.latency.probe_id[t],
				 k < LAT_PCTS ? pct_label[k] : "max");
			put(c, side, i, key, label, 1,
			    us(k < LAT_PCTS ? p->pct[k] : p->max, p->n));
		}
	}
	/* Every probe together, as the what-if predicts them. */
	for (k = 0; k <= LAT_PCTS && s.latency.nprobes > 1; k++) {
		snprintf(key, sizeof(key), "probe_%s_us",
			 k < LAT_PCTS ? pct_key[k] : "max");
		snprintf(label, sizeof(label), "probes %s (us)",
			 k < LAT_PCTS ? pct_label[k] : "max");
		put(c, side, i, key, label, 1,
		    us(k < LAT_PCTS ? s.latency.probe_all.pct[k] :
		       s.latency.probe_all.max, s.latency.probe_all.n));
	}
	for (t = 0; t < c->nthresholds; t++) {
		if (latency_count_at_least(db, ci->npf_exit_reason,
					   (int64_t)(c->threshold_ms[t] * 1e6),
					   &np, &nn) < 0)
			goto sql_error;
		if (s.latency.nprobes) {
			snprintf(key, sizeof(key), "probe_ge_%gms",
				 c->threshold_ms[t]);
			snprintf(label, sizeof(label), "probe >= %g ms",
				 c->threshold_ms[t]);
			put(c, side, i, key, label, 0, (double)np);
		}
		snprintf(key, sizeof(key), "npf_service_ge_%gms",
			 c->threshold_ms[t]);
		snprintf(label, sizeof(label), "NPF >= %g ms", c->threshold_ms[t]);
		put(c, side, i, key, label, 0,
		    s.latency.npf.n ? (double)nn : NAN);
	}
	put(c, side, i, "nx_recovered_pages", "NX pages recovered", 0,
	    self && self->nx_workers_known ?
	    (double)self->nx_recovered_observed : NAN);
	/* A batch: a worker's begin to its next end (patched kernels). */
	put(c, side, i, "nx_batch_ms", "NX batch time (ms)", 1,
	    coverage_has(&s.cov, "nx_recovery") ? query_double(db,
		"SELECT coalesce(sum(ts - pts), 0) / 1e6 FROM (SELECT phase, "
		"ts, lag(ts) OVER w AS pts, lag(phase) OVER w AS pp FROM "
		"nx_recovery WHERE phase IN (0, 1) WINDOW w AS (PARTITION BY "
		"tid ORDER BY seq)) WHERE phase = 1 AND pp = 0") : NAN);
	put(c, side, i, "lock_wait_ms", "lock waits (ms)", 1,
	    coverage_has(&s.cov, "lock_wait") ? query_double(db,
		"SELECT coalesce(sum(wait_ns), 0) / 1e6 FROM lock_wait") : NAN);
	/* A policy that cannot act on A's capture predicts nothing: its
	 * figures would be A's by construction. */
	if (whatif && whatif->not_applicable == REPLAY_NA_NONE) {
		replay_metrics_compute(whatif, d, &m);
		put_pred(c, i, "faults", m.v[RM_FAULTS],
			 pred_kind(self, &m, POLICY_FIG_FAULTS));
		put_pred(c, i, "leaf_zaps", m.v[RM_LEAF_ZAPS],
			 pred_kind(self, &m, POLICY_FIG_LEAF_ZAPS));
		put_pred(c, i, "tlb_flushes", m.v[RM_TLB_FLUSHES],
			 pred_kind(self, &m, POLICY_FIG_TLB_FLUSHES));
		if (coverage_has(&s.cov, "lock_wait"))
			put_pred(c, i, "lock_wait_ms", m.v[RM_LOCK_WAIT_MS],
				 pred_kind(self, &m,
					   POLICY_FIG_LOCK_WAITS));
		latency_pred(c, i, &s, &m, pred_kind(self, &m,
			POLICY_FIG_NPF_LATENCY), pred_kind(self, &m,
			POLICY_FIG_PROBE_LATENCY));
	}
	/* The parameters outside the policy, for compare_check(). */
	c->others[side][i] = others;
	summary_free(&s);
	return COMPARE_OK;
sql_error:
	free(others);
	summary_free(&s);
	return COMPARE_ERR_SQL;
}

static const char *nz(const char *s)
{
	return s ? s : "unknown";
}

/* First disagreement of field f between two runs, into c->why. */
static int differ(struct compare *c, const char *what, const char *x,
		  const struct compare_run *rx, const char *y,
		  const struct compare_run *ry)
{
	if ((!x && !y) || (x && y && strcmp(x, y) == 0))
		return 0;
	snprintf(c->why, sizeof(c->why), "%s and %s: different %s (%s vs "
		 "%s): not comparable", rx->path, ry->path, what, nz(x),
		 nz(y));
	return 1;
}

enum compare_status compare_check(struct compare *c)
{
	const struct compare_run *first = &c->run[COMPARE_A][0], *r;
	int s, i;

	for (s = 0; s < COMPARE_SIDES; s++)
		for (i = 0; i < c->n[s]; i++) {
			r = &c->run[s][i];
			if (differ(c, "kernels", first->kernel, first,
				   r->kernel, r) ||
			    differ(c, "workloads", first->workload, first,
				   r->workload, r) ||
			    differ(c, "KVM parameters outside the policy",
				   c->others[COMPARE_A][0], first,
				   c->others[s][i], r) ||
			    differ(c, "policy settings within one side",
				   c->run[s][0].knobs, &c->run[s][0],
				   r->knobs, r))
				return COMPARE_ERR_MIXED;
		}
	return COMPARE_OK;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Median (the mean of the middle two for an even count) and range. */
static void cell_of(const double *v, int n, struct compare_cell *out)
{
	double known[COMPARE_MAX_RUNS];
	int i, k = 0;

	for (i = 0; i < n; i++)
		if (!isnan(v[i]))
			known[k++] = v[i];
	out->n = k;
	out->median = out->min = out->max = NAN;
	if (!k)
		return;
	qsort(known, (size_t)k, sizeof(known[0]), cmp_double);
	out->min = known[0];
	out->max = known[k - 1];
	out->median = k % 2 ? known[k / 2] :
		(known[k / 2 - 1] + known[k / 2]) / 2;
}

static double rel(double x, double base)
{
	return isnan(x) || isnan(base) || base == 0 ? NAN : (x - base) / base;
}

void compare_finish(struct compare *c)
{
	struct compare_row *r;
	int i, s;

	for (i = 0; i < c->nrows; i++) {
		r = &c->rows[i];
		for (s = 0; s < COMPARE_SIDES; s++)
			cell_of(r->v[s], c->n[s], &r->cell[s]);
		cell_of(r->pred, c->n[COMPARE_A], &r->cell_pred);
		r->change = rel(r->cell[COMPARE_B].median,
				r->cell[COMPARE_A].median);
		/* A range needs two runs: with one, overlap says nothing. */
		r->overlap = r->cell[COMPARE_A].n < 2 ||
			r->cell[COMPARE_B].n < 2 ? -1 :
			r->cell[COMPARE_A].min <= r->cell[COMPARE_B].max &&
			r->cell[COMPARE_B].min <= r->cell[COMPARE_A].max;
		r->pred_error = rel(r->cell_pred.median,
				    r->cell[COMPARE_B].median);
		r->pred_inside = !r->cell_pred.n || r->cell[COMPARE_B].n < 2 ?
			-1 : r->cell_pred.median >= r->cell[COMPARE_B].min &&
			r->cell_pred.median <= r->cell[COMPARE_B].max;
	}
}

int compare_same_vms(const struct compare *c)
{
	int s, i, n = c->run[COMPARE_A][0].nvms;

	for (s = 0; s < COMPARE_SIDES; s++)
		for (i = 0; i < c->n[s]; i++)
			if (c->run[s][i].nvms != n)
				return 0;
	return n;
}

void compare_free(struct compare *c)
{
	int s, i;

	for (s = 0; s < COMPARE_SIDES; s++)
		for (i = 0; i < c->n[s]; i++) {
			free(c->run[s][i].kernel);
			free(c->run[s][i].workload);
			free(c->run[s][i].knobs);
			free(c->run[s][i].vm_procname);
			free(c->others[s][i]);
		}
	for (i = 0; i < c->nvms; i++)
		compare_free(&c->vms[i]);
	free(c->vms);
	c->vms = NULL;
	c->nvms = 0;
}
