/*
 * The fleet report (mmureplay fleet-report): what each policy would
 * have changed across a fleet DB's hosts and VMs, the NX recovery
 * sweeps summed fleet-wide, the captures with no what-if and why, and a
 * comparison with an earlier fleet DB.
 *
 * The unit of every distribution is a VM of a capture: a capture of
 * several VMs replayed apart gives one unit per VM (its own figures), a
 * capture of one state one unit.  A unit counts for a policy only when
 * the capture's self-check passed (the run is verified) and the policy
 * can act on it (not "not applicable"); a figure avoided per second is
 * (recorded - policy) / the capture's duration, so a negative value is
 * a policy that adds work.  Percentiles are nearest-rank.  Everything is
 * computed once here; the text, HTML and JSON only format it.
 */
#include "fleet/fleet.h"

#include "report/report.h"
#include "util/log.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* The figures a fleet compares: X(name in figure, label, unit). */
#define FLEET_FIGURE_LIST(X) \
	X("faults", "faults/s", "faults_per_s") \
	X("leaf_zaps", "leaf zaps/s", "leaf_zaps_per_s") \
	X("tlb_flushes", "TLB flushes/s", "tlb_flushes_per_s") \
	X("lock_wait_ms", "lock wait ms/s", "lock_wait_ms_per_s")
#define FLEET_FIGURE_NAME(name, label, key) name,
static const char *const fig_names[] = {
	FLEET_FIGURE_LIST(FLEET_FIGURE_NAME)
};
#undef FLEET_FIGURE_NAME
#define FLEET_FIGURE_LABEL(name, label, key) label,
static const char *const fig_labels[] = {
	FLEET_FIGURE_LIST(FLEET_FIGURE_LABEL)
};
#undef FLEET_FIGURE_LABEL
#define FLEET_FIGURE_KEY(name, label, key) key,
static const char *const fig_keys[] = {
	FLEET_FIGURE_LIST(FLEET_FIGURE_KEY)
};
#undef FLEET_FIGURE_KEY
#define NFIG ((int)(sizeof(fig_names) / sizeof(fig_names[0])))
#define NTOP 3

struct dist {
	int n, one_sided;
	double median, p90, p99, max;
};

struct top {
	char *capture, *host, *label;
	int64_t vm;
	double faults;          /* avoided per second */
};

struct pol {
	char *name;
	int units, hosts, not_applicable;
	struct dist fig[NFIG];
	struct top top[NTOP];
	int ntop;
};

struct sweep {
	char *kind;
	double factor;          /* NAN: the recorded value was unknown */
	int captures;
	double hours;
	double rec_recovered, recovered, rec_refaults, refaults;
};

struct failing {
	char *id, *host, *status, *stage, *reason;
};

struct side {
	int64_t captures, by_status[FLEET_STATUSES], hosts, units;
	double hours;
	struct pol *pol;
	int npol;
};

struct fleet_report {
	const char *path, *against_path;
	struct side now, before;
	int has_before;
	struct sweep *sweeps;
	int nsweeps;
	struct failing *failing;
	int nfailing;
};

static char *dup_col(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	return strdup(t ? (const char *)t : "");
}

static int dbl_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Nearest rank: the smallest value with at least p of them at or
 * below it. */
static double rank(const double *v, int n, double p)
{
	int k = (int)ceil(p * n);

	return v[k < 1 ? 0 : k - 1];
}

static void dist_of(double *v, int n, struct dist *d)
{
	d->n = n;
	if (!n) {
		d->median = d->p90 = d->p99 = d->max = NAN;
		return;
	}
	qsort(v, (size_t)n, sizeof(*v), dbl_cmp);
	d->median = rank(v, n, 0.5);
	d->p90 = rank(v, n, 0.9);
	d->p99 = rank(v, n, 0.99);
	d->max = v[n - 1];
}

/* The units of policy name and their figure k avoided per second:
 * capture, host, vm, label, value; in capture and VM order. */
static const char unit_sql[] =
	"SELECT c.id, coalesce(c.host, ''), p.vm, coalesce(v.label, "
	"v.procname, ''), (r.value - p.value) / c.duration_s, "
	"coalesce(CASE ?2 WHEN 'faults' THEN pr.kind_faults WHEN "
	"  'leaf_zaps' THEN pr.kind_leaf_zaps WHEN 'tlb_flushes' THEN "
	"  pr.kind_tlb_flushes ELSE pr.kind_lock_wait_ms END, '') AS kind "
	"FROM capture c "
	"JOIN policy_run pr ON pr.capture = c.id AND pr.policy = ?1 AND "
	"  pr.verified AND NOT pr.recorded AND pr.not_applicable IS NULL "
	"JOIN figure p ON p.capture = c.id AND p.policy = ?1 AND p.name = ?2 "
	"JOIN figure r ON r.capture = c.id AND r.policy = c.recorded_policy "
	"  AND r.vm = p.vm AND r.name = ?2 "
	"LEFT JOIN capture_vm v ON v.capture = c.id AND v.vm = p.vm "
	"WHERE c.duration_s > 0 AND (p.vm > 0 OR NOT EXISTS (SELECT 1 FROM "
	"  figure x WHERE x.capture = c.id AND x.policy = ?1 AND x.vm > 0)) "
	"  AND kind != 'not_modelled' "
	"ORDER BY c.id, p.vm";

static int top_cmp(const void *a, const void *b)
{
	const struct top *x = a, *y = b;
	int c;

	if (x->faults != y->faults)
		return x->faults < y->faults ? 1 : -1;
	c = strcmp(x->capture, y->capture);
	return c ? c : (x->vm > y->vm) - (x->vm < y->vm);
}

static void top_free(struct top *t)
{
	free(t->capture);
	free(t->host);
	free(t->label);
}

/* Fills p's distributions, units, hosts and top units from db. */
static int pol_compute(sqlite3 *db, struct pol *p)
{
	sqlite3_stmt *st = NULL;
	double *v = NULL, *nv;
	struct top *all = NULL, *na;
	int n, cap, k, i, ones, nall = 0, rc = -1;

	if (sqlite3_prepare_v2(db, unit_sql, -1, &st, NULL) != SQLITE_OK)
		goto end;
	for (k = 0; k < NFIG; k++) {
		sqlite3_bind_text(st, 1, p->name, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 2, fig_names[k], -1, SQLITE_STATIC);
		n = cap = ones = 0;
		while (sqlite3_step(st) == SQLITE_ROW) {
			ones += !strcmp((const char *)
					sqlite3_column_text(st, 5),
					"one_sided");
			if (n == cap) {
				cap = cap ? cap * 2 : 64;
				nv = realloc(v, (size_t)cap * sizeof(*v));
				if (!nv)
					goto end;
				v = nv;
				if (k == 0) {
					na = realloc(all, (size_t)cap *
						     sizeof(*all));
					if (!na)
						goto end;
					all = na;
				}
			}
			v[n] = sqlite3_column_double(st, 4);
			if (k == 0) {
				all[n].capture = dup_col(st, 0);
				all[n].host = dup_col(st, 1);
				all[n].vm = sqlite3_column_int64(st, 2);
				all[n].label = dup_col(st, 3);
				all[n].faults = v[n];
			}
			n++;
		}
		sqlite3_reset(st);
		if (k == 0)
			nall = n;
		if (n > p->units)
			p->units = n;
		dist_of(v, n, &p->fig[k]);
		p->fig[k].one_sided = ones;
	}
	if (all) {
		qsort(all, (size_t)nall, sizeof(*all), top_cmp);
		for (i = 0; i < nall; i++) {
			if (i < NTOP && all[i].faults > 0)
				p->top[p->ntop++] = all[i];
			else
				top_free(&all[i]);
		}
	}
	sqlite3_finalize(st);
	st = NULL;
	if (sqlite3_prepare_v2(db, "SELECT count(DISTINCT c.host), "
			       "sum(pr.not_applicable IS NOT NULL) FROM "
			       "capture c JOIN policy_run pr ON pr.capture = "
			       "c.id AND pr.policy = ?1 AND pr.verified AND "
			       "NOT pr.recorded", -1, &st, NULL) != SQLITE_OK)
		goto end;
	sqlite3_bind_text(st, 1, p->name, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		p->hosts = sqlite3_column_int(st, 0);
		p->not_applicable = sqlite3_column_int(st, 1);
	}
	rc = 0;
end:
	sqlite3_finalize(st);
	free(v);
	free(all);
	return rc;
}

static int side_compute(sqlite3 *db, struct side *s)
{
	sqlite3_stmt *st = NULL;
	int rc = -1, cap = 0, k;
	struct pol *np;

	if (sqlite3_prepare_v2(db, "SELECT status, count(*) FROM capture "
			       "GROUP BY status", -1, &st, NULL) != SQLITE_OK)
		goto end;
	while (sqlite3_step(st) == SQLITE_ROW) {
		k = fleet_status_find((const char *)
				      sqlite3_column_text(st, 0));
		if (k >= 0)
			s->by_status[k] = sqlite3_column_int64(st, 1);
		s->captures += sqlite3_column_int64(st, 1);
	}
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "SELECT count(DISTINCT host), "
			       "coalesce(sum(duration_s), 0) / 3600.0, "
			       "(SELECT count(*) FROM capture c WHERE "
			       "duration_s IS NOT NULL AND NOT EXISTS (SELECT "
			       "1 FROM capture_vm v WHERE v.capture = c.id AND "
			       "v.self_check_ok IS NOT NULL)) + (SELECT "
			       "count(*) FROM capture_vm WHERE self_check_ok "
			       "IS NOT NULL) FROM capture WHERE duration_s IS "
			       "NOT NULL", -1, &st, NULL) != SQLITE_OK)
		goto end;
	if (sqlite3_step(st) == SQLITE_ROW) {
		s->hosts = sqlite3_column_int64(st, 0);
		s->hours = sqlite3_column_double(st, 1);
		s->units = sqlite3_column_int64(st, 2);
	}
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "SELECT DISTINCT policy FROM policy_run "
			       "WHERE NOT recorded AND sweep_kind IS NULL "
			       "ORDER BY policy", -1, &st, NULL) != SQLITE_OK)
		goto end;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (s->npol == cap) {
			cap = cap ? cap * 2 : 8;
			np = realloc(s->pol, (size_t)cap * sizeof(*np));
			if (!np)
				goto end;
			s->pol = np;
		}
		memset(&s->pol[s->npol], 0, sizeof(*s->pol));
		s->pol[s->npol].name = dup_col(st, 0);
		if (!s->pol[s->npol++].name)
			goto end;
	}
	sqlite3_finalize(st);
	st = NULL;
	for (k = 0; k < s->npol; k++)
		if (pol_compute(db, &s->pol[k]) < 0)
			goto end;
	rc = 0;
end:
	sqlite3_finalize(st);
	return rc;
}

/* The sweeps, summed over the captures that ran them verified. */
static int sweeps_compute(sqlite3 *db, struct fleet_report *r)
{
	static const char sql[] =
		"SELECT pr.sweep_kind, pr.sweep_factor, count(*), "
		"sum(c.duration_s) / 3600.0, "
		"sum((SELECT value FROM figure WHERE capture = c.id AND vm = 0 "
		"  AND policy = c.recorded_policy AND name = "
		"  'leaf_zaps.nx_recovery')), "
		"sum((SELECT value FROM figure WHERE capture = c.id AND vm = 0 "
		"  AND policy = pr.policy AND name = 'leaf_zaps.nx_recovery')), "
		"sum((SELECT value FROM figure WHERE capture = c.id AND vm = 0 "
		"  AND policy = c.recorded_policy AND name = "
		"  'refaults.nx_recovery')), "
		"sum((SELECT value FROM figure WHERE capture = c.id AND vm = 0 "
		"  AND policy = pr.policy AND name = 'refaults.nx_recovery')) "
		"FROM policy_run pr JOIN capture c ON c.id = pr.capture "
		"WHERE pr.sweep_kind IS NOT NULL AND pr.verified AND "
		"pr.not_applicable IS NULL AND c.duration_s > 0 "
		"GROUP BY pr.sweep_kind, pr.sweep_factor "
		"ORDER BY pr.sweep_kind, pr.sweep_factor IS NULL, "
		"pr.sweep_factor";
	sqlite3_stmt *st;
	struct sweep *ns, *w;
	int cap = 0, rc = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (r->nsweeps == cap) {
			cap = cap ? cap * 2 : 8;
			ns = realloc(r->sweeps, (size_t)cap * sizeof(*ns));
			if (!ns) {
				rc = -1;
				break;
			}
			r->sweeps = ns;
		}
		w = &r->sweeps[r->nsweeps++];
		w->kind = dup_col(st, 0);
		w->factor = sqlite3_column_type(st, 1) == SQLITE_NULL ? NAN :
			    sqlite3_column_double(st, 1);
		w->captures = sqlite3_column_int(st, 2);
		w->hours = sqlite3_column_double(st, 3);
		w->rec_recovered = sqlite3_column_double(st, 4);
		w->recovered = sqlite3_column_double(st, 5);
		w->rec_refaults = sqlite3_column_double(st, 6);
		w->refaults = sqlite3_column_double(st, 7);
	}
	sqlite3_finalize(st);
	return rc;
}

static int failing_compute(sqlite3 *db, struct fleet_report *r)
{
	sqlite3_stmt *st;
	struct failing *nf, *f;
	int cap = 0, rc = 0;

	if (sqlite3_prepare_v2(db, "SELECT id, coalesce(host, ''), status, "
			       "coalesce(stage, ''), coalesce(check_reason, "
			       "error, '') FROM capture WHERE status NOT IN "
			       "('ok', 'partial') ORDER BY status, id", -1, &st,
			       NULL) != SQLITE_OK)
		return -1;
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (r->nfailing == cap) {
			cap = cap ? cap * 2 : 16;
			nf = realloc(r->failing, (size_t)cap * sizeof(*nf));
			if (!nf) {
				rc = -1;
				break;
			}
			r->failing = nf;
		}
		f = &r->failing[r->nfailing++];
		f->id = dup_col(st, 0);
		f->host = dup_col(st, 1);
		f->status = dup_col(st, 2);
		f->stage = dup_col(st, 3);
		f->reason = dup_col(st, 4);
	}
	sqlite3_finalize(st);
	return rc;
}

struct fleet_report *fleet_report_compute(sqlite3 *db, const char *path,
					  sqlite3 *against,
					  const char *against_path)
{
	struct fleet_report *r = calloc(1, sizeof(*r));

	if (!r) {
		log_error("%s: out of memory", path);
		return NULL;
	}
	r->path = path;
	r->against_path = against_path;
	if (side_compute(db, &r->now) < 0 || sweeps_compute(db, r) < 0 ||
	    failing_compute(db, r) < 0) {
		log_error("%s: cannot read the fleet DB: %s", path,
			  sqlite3_errmsg(db));
		fleet_report_free(r);
		return NULL;
	}
	if (against) {
		r->has_before = 1;
		if (side_compute(against, &r->before) < 0) {
			log_error("%s: cannot read the fleet DB: %s",
				  against_path, sqlite3_errmsg(against));
			fleet_report_free(r);
			return NULL;
		}
	}
	return r;
}

static void side_free(struct side *s)
{
	int i, k;

	for (i = 0; i < s->npol; i++) {
		free(s->pol[i].name);
		for (k = 0; k < s->pol[i].ntop; k++)
			top_free(&s->pol[i].top[k]);
	}
	free(s->pol);
}

void fleet_report_free(struct fleet_report *r)
{
	int i;

	if (!r)
		return;
	side_free(&r->now);
	side_free(&r->before);
	for (i = 0; i < r->nsweeps; i++)
		free(r->sweeps[i].kind);
	for (i = 0; i < r->nfailing; i++) {
		free(r->failing[i].id);
		free(r->failing[i].host);
		free(r->failing[i].status);
		free(r->failing[i].stage);
		free(r->failing[i].reason);
	}
	free(r->sweeps);
	free(r->failing);
	free(r);
}

/* The policy of the earlier side with p's name, or NULL. */
static const struct pol *before_of(const struct fleet_report *r,
				   const struct pol *p)
{
	int i;

	for (i = 0; r->has_before && i < r->before.npol; i++)
		if (!strcmp(r->before.pol[i].name, p->name))
			return &r->before.pol[i];
	return NULL;
}

static void sweep_name(char *buf, size_t len, const struct sweep *w)
{
	if (isnan(w->factor))
		snprintf(buf, len, "%s ?", w->kind);
	else
		snprintf(buf, len, "%s x%g", w->kind, w->factor);
}

/* ---- text ---- */

static void text_rule(FILE *out, int cells)
{
	int i;

	fprintf(out, "  ----------------");
	for (i = 0; i < cells; i++)
		fprintf(out, " ---------");
	fputc('\n', out);
}

static void text_side_counts(FILE *out, const struct side *s)
{
	char a[32];
	int k, any = 0;

	fprintf(out, "  captures      %s (", report_fmt_count(a, sizeof(a),
							   s->captures));
	for (k = 0; k < FLEET_STATUSES; k++) {
		if (!s->by_status[k])
			continue;
		fprintf(out, "%s%s %lld", any++ ? ", " : "",
			fleet_status_names[k], (long long)s->by_status[k]);
	}
	fprintf(out, ")\n  hosts         %lld\n  VMs           %lld\n"
		"  trace         %.2f h\n", (long long)s->hosts,
		(long long)s->units, s->hours);
}

static void text_pol(FILE *out, const struct pol *p)
{
	char a[32], b[32], c[32], d[32];
	int k;

	fprintf(out, "\n%s: avoided per second, over %d VM%s on %d host%s "
		"(not applicable: %d)\n\n", p->name, p->units,
		p->units == 1 ? "" : "s", p->hosts, p->hosts == 1 ? "" : "s",
		p->not_applicable);
	fprintf(out, "  %-16s %9s %9s %9s %9s  %s\n", "figure", "median",
		"p90", "p99", "max", "VMs");
	text_rule(out, 4);
	for (k = 0; k < NFIG; k++) {
		if (!p->fig[k].n) {
			fprintf(out, "  %-16s %9s %9s %9s %9s  not modelled\n",
				fig_labels[k], "-", "-", "-", "-");
			continue;
		}
		fprintf(out, "  %-16s %9s %9s %9s %9s  %d", fig_labels[k],
			report_fmt_num(a, sizeof(a), p->fig[k].median, 1),
			report_fmt_num(b, sizeof(b), p->fig[k].p90, 1),
			report_fmt_num(c, sizeof(c), p->fig[k].p99, 1),
			report_fmt_num(d, sizeof(d), p->fig[k].max, 1),
			p->fig[k].n);
		if (p->fig[k].one_sided)
			fprintf(out, ", %d >=", p->fig[k].one_sided);
		fputc('\n', out);
	}
	if (p->fig[0].n < p->units || p->fig[3].one_sided ||
	    p->fig[0].one_sided)
		fprintf(out, "  VMs: those whose figure the policy's replay "
			"models; >=: of them, those\n  where the figure "
			"avoided is a lower bound (one-sided)\n");
	if (p->ntop)
		fprintf(out, "\n  most faults avoided:\n");
	for (k = 0; k < p->ntop; k++) {
		fprintf(out, "    %s, ", p->top[k].host);
		if (p->top[k].vm)
			fprintf(out, "VM %lld of %s", (long long)p->top[k].vm,
				p->top[k].capture);
		else
			fprintf(out, "%s", p->top[k].capture);
		if (p->top[k].label[0])
			fprintf(out, " (%s)", p->top[k].label);
		fprintf(out, ": %s/s\n",
			report_fmt_num(a, sizeof(a), p->top[k].faults, 1));
	}
}

void fleet_report_text(FILE *out, const struct fleet_report *r)
{
	char a[32], b[32], c[32], d[32], name[48];
	const struct pol *bp;
	int i, k;

	fprintf(out, "Fleet report of %s\n\n", r->path);
	text_side_counts(out, &r->now);
	for (i = 0; i < r->now.npol; i++)
		text_pol(out, &r->now.pol[i]);
	if (r->nsweeps) {
		fprintf(out, "\nNX recovery sweeps, fleet-wide per hour of "
			"trace (recorded -> sweep)\n\n");
		fprintf(out, "  %-16s %9s %9s %9s %9s %9s\n", "sweep",
			"captures", "recovered", "-> sweep", "refaults",
			"-> sweep");
		text_rule(out, 5);
		for (i = 0; i < r->nsweeps; i++) {
			const struct sweep *w = &r->sweeps[i];
			double h = w->hours > 0 ? w->hours : NAN;

			sweep_name(name, sizeof(name), w);
			fprintf(out, "  %-16s %9d %9s %9s %9s %9s\n", name,
				w->captures,
				report_fmt_num(a, sizeof(a),
					       w->rec_recovered / h, 0),
				report_fmt_num(b, sizeof(b),
					       w->recovered / h, 0),
				report_fmt_num(c, sizeof(c),
					       w->rec_refaults / h, 0),
				report_fmt_num(d, sizeof(d),
					       w->refaults / h, 0));
		}
		fprintf(out, "  recovered: huge pages the worker zapped to "
			"rebuild; the drop is what\n  the sweep leaves split "
			"longer\n");
	}
	if (r->has_before) {
		fprintf(out, "\nAgainst %s (median avoided per second)\n\n",
			r->against_path);
		text_side_counts(out, &r->before);
		for (i = 0; i < r->now.npol; i++) {
			bp = before_of(r, &r->now.pol[i]);
			fprintf(out, "\n  %-16s %9s %9s %9s\n",
				r->now.pol[i].name, "before", "after",
				"change");
			text_rule(out, 3);
			for (k = 0; k < NFIG; k++) {
				double x = bp ? bp->fig[k].median : NAN;
				double y = r->now.pol[i].fig[k].median;

				fprintf(out, "  %-16s %9s %9s %9s\n",
					fig_labels[k],
					report_fmt_num(a, sizeof(a), x, 1),
					report_fmt_num(b, sizeof(b), y, 1),
					report_fmt_num(c, sizeof(c), y - x,
						       1));
			}
		}
	}
	fprintf(out, "\nCaptures without a what-if: %d\n", r->nfailing);
	for (i = 0; i < r->nfailing; i++)
		fprintf(out, "  %s\n    %s%s%s: %s\n", r->failing[i].id,
			r->failing[i].status,
			r->failing[i].stage[0] ? " at " : "",
			r->failing[i].stage, r->failing[i].reason);
}

/* ---- JSON ---- */

static void num_or_null(cJSON *o, const char *k, double v)
{
	if (isnan(v))
		cJSON_AddNullToObject(o, k);
	else
		cJSON_AddNumberToObject(o, k, v);
}

static void side_json(cJSON *o, const struct side *s)
{
	cJSON *c = cJSON_AddObjectToObject(o, "captures"), *bs, *pols, *p,
	      *figs, *f, *top, *t;
	int k, i;

	cJSON_AddNumberToObject(c, "total", (double)s->captures);
	bs = cJSON_AddObjectToObject(c, "by_status");
	for (k = 0; k < FLEET_STATUSES; k++)
		cJSON_AddNumberToObject(bs, fleet_status_names[k],
					(double)s->by_status[k]);
	cJSON_AddNumberToObject(c, "hosts", (double)s->hosts);
	cJSON_AddNumberToObject(c, "vms", (double)s->units);
	cJSON_AddNumberToObject(c, "trace_hours", s->hours);
	pols = cJSON_AddArrayToObject(o, "policies");
	for (i = 0; i < s->npol; i++) {
		p = cJSON_CreateObject();
		cJSON_AddItemToArray(pols, p);
		cJSON_AddStringToObject(p, "name", s->pol[i].name);
		cJSON_AddNumberToObject(p, "vms", s->pol[i].units);
		cJSON_AddNumberToObject(p, "hosts", s->pol[i].hosts);
		cJSON_AddNumberToObject(p, "not_applicable",
					s->pol[i].not_applicable);
		figs = cJSON_AddObjectToObject(p, "avoided");
		for (k = 0; k < NFIG; k++) {
			f = cJSON_AddObjectToObject(figs, fig_keys[k]);
			num_or_null(f, "median", s->pol[i].fig[k].median);
			num_or_null(f, "p90", s->pol[i].fig[k].p90);
			num_or_null(f, "p99", s->pol[i].fig[k].p99);
			num_or_null(f, "max", s->pol[i].fig[k].max);
			cJSON_AddNumberToObject(f, "vms", s->pol[i].fig[k].n);
			cJSON_AddNumberToObject(f, "one_sided",
						s->pol[i].fig[k].one_sided);
		}
		top = cJSON_AddArrayToObject(p, "top");
		for (k = 0; k < s->pol[i].ntop; k++) {
			const struct top *x = &s->pol[i].top[k];

			t = cJSON_CreateObject();
			cJSON_AddItemToArray(top, t);
			cJSON_AddStringToObject(t, "capture", x->capture);
			cJSON_AddStringToObject(t, "host", x->host);
			cJSON_AddNumberToObject(t, "vm", (double)x->vm);
			cJSON_AddStringToObject(t, "label", x->label);
			cJSON_AddNumberToObject(t, "faults_per_s", x->faults);
		}
	}
}

char *fleet_report_json(const struct fleet_report *r)
{
	cJSON *root = cJSON_CreateObject(), *arr, *o, *b;
	char name[48], *text;
	int i;

	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "schema", FLEET_REPORT_SCHEMA);
	cJSON_AddNumberToObject(root, "schema_version", FLEET_REPORT_VERSION);
	cJSON_AddStringToObject(root, "fleet_db", r->path);
	side_json(root, &r->now);
	arr = cJSON_AddArrayToObject(root, "sweeps");
	for (i = 0; i < r->nsweeps; i++) {
		const struct sweep *w = &r->sweeps[i];

		o = cJSON_CreateObject();
		cJSON_AddItemToArray(arr, o);
		sweep_name(name, sizeof(name), w);
		cJSON_AddStringToObject(o, "name", name);
		cJSON_AddStringToObject(o, "kind", w->kind);
		num_or_null(o, "factor", w->factor);
		cJSON_AddNumberToObject(o, "captures", w->captures);
		cJSON_AddNumberToObject(o, "trace_hours", w->hours);
		cJSON_AddNumberToObject(o, "recorded_recovered",
					w->rec_recovered);
		cJSON_AddNumberToObject(o, "recovered", w->recovered);
		cJSON_AddNumberToObject(o, "recorded_refaults",
					w->rec_refaults);
		cJSON_AddNumberToObject(o, "refaults", w->refaults);
	}
	arr = cJSON_AddArrayToObject(root, "failing");
	for (i = 0; i < r->nfailing; i++) {
		o = cJSON_CreateObject();
		cJSON_AddItemToArray(arr, o);
		cJSON_AddStringToObject(o, "capture", r->failing[i].id);
		cJSON_AddStringToObject(o, "host", r->failing[i].host);
		cJSON_AddStringToObject(o, "status", r->failing[i].status);
		cJSON_AddStringToObject(o, "stage", r->failing[i].stage);
		cJSON_AddStringToObject(o, "reason", r->failing[i].reason);
	}
	if (r->has_before) {
		b = cJSON_AddObjectToObject(root, "against");
		cJSON_AddStringToObject(b, "fleet_db", r->against_path);
		side_json(b, &r->before);
	} else {
		cJSON_AddNullToObject(root, "against");
	}
	text = cJSON_Print(root);
	cJSON_Delete(root);
	return text;
}

/* ---- HTML ---- */

extern const char reports_report_css[];

static void td_num(FILE *o, double v, int decimals)
{
	char a[32];

	fprintf(o, "<td class=\"num\">%s</td>",
		report_fmt_num(a, sizeof(a), v, decimals));
}

void fleet_report_html(FILE *o, const struct fleet_report *r)
{
	const struct side *s = &r->now;
	char name[48];
	int i, k;

	fprintf(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta "
		"charset=\"utf-8\"><title>mmureplay fleet report</title>"
		"<style>%s</style></head><body>\n<h1>Fleet report of ",
		reports_report_css);
	report_html_esc(o, r->path);
	fprintf(o, "</h1>\n<p>%lld captures (", (long long)s->captures);
	for (k = 0; k < FLEET_STATUSES; k++)
		fprintf(o, "%s%s %lld", k ? ", " : "", fleet_status_names[k],
			(long long)s->by_status[k]);
	fprintf(o, "), %lld hosts, %lld VMs, %.2f h of trace.</p>\n",
		(long long)s->hosts, (long long)s->units, s->hours);
	for (i = 0; i < s->npol; i++) {
		const struct pol *p = &s->pol[i];

		fprintf(o, "<h2>");
		report_html_esc(o, p->name);
		fprintf(o, ": avoided per second</h2>\n<p>Over %d VMs on %d "
			"hosts (not applicable: %d).</p>\n<table><tr><th>"
			"figure</th><th>median</th><th>p90</th><th>p99</th>"
			"<th>max</th></tr>\n", p->units, p->hosts,
			p->not_applicable);
		for (k = 0; k < NFIG; k++) {
			fprintf(o, "<tr><td>%s</td>", fig_labels[k]);
			td_num(o, p->fig[k].median, 1);
			td_num(o, p->fig[k].p90, 1);
			td_num(o, p->fig[k].p99, 1);
			td_num(o, p->fig[k].max, 1);
			fprintf(o, "</tr>\n");
		}
		fprintf(o, "</table>\n");
		if (p->ntop)
			fprintf(o, "<p>Most faults avoided:</p><ul>\n");
		for (k = 0; k < p->ntop; k++) {
			fprintf(o, "<li>");
			report_html_esc(o, p->top[k].host);
			fprintf(o, ", VM %lld ", (long long)p->top[k].vm);
			report_html_esc(o, p->top[k].label);
			fprintf(o, ": %.1f faults/s</li>\n",
				p->top[k].faults);
		}
		if (p->ntop)
			fprintf(o, "</ul>\n");
	}
	if (r->nsweeps) {
		fprintf(o, "<h2>NX recovery sweeps</h2>\n<p>Fleet-wide, per "
			"hour of trace.</p><table><tr><th>sweep</th><th>"
			"captures</th><th>recovered</th><th>-&gt; sweep</th>"
			"<th>refaults</th><th>-&gt; sweep</th></tr>\n");
		for (i = 0; i < r->nsweeps; i++) {
			const struct sweep *w = &r->sweeps[i];
			double h = w->hours > 0 ? w->hours : NAN;

			sweep_name(name, sizeof(name), w);
			fprintf(o, "<tr><td>%s</td>", name);
			td_num(o, w->captures, 0);
			td_num(o, w->rec_recovered / h, 0);
			td_num(o, w->recovered / h, 0);
			td_num(o, w->rec_refaults / h, 0);
			td_num(o, w->refaults / h, 0);
			fprintf(o, "</tr>\n");
		}
		fprintf(o, "</table>\n");
	}
	fprintf(o, "<h2>Captures without a what-if: %d</h2>\n<table><tr><th>"
		"capture</th><th>status</th><th>reason</th></tr>\n",
		r->nfailing);
	for (i = 0; i < r->nfailing; i++) {
		fprintf(o, "<tr><td>");
		report_html_esc(o, r->failing[i].id);
		fprintf(o, "</td><td>");
		report_html_esc(o, r->failing[i].status);
		fprintf(o, "</td><td>");
		report_html_esc(o, r->failing[i].reason);
		fprintf(o, "</td></tr>\n");
	}
	fprintf(o, "</table>\n</body></html>\n");
}
