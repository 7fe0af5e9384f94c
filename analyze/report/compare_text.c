/*
 * Run sets side by side as text, in the shape of a kernel cover letter
 * (see report.h): median and (min-max) of each figure over the runs, the
 * change, whether the ranges overlap; then the what-if table.  72
 * columns.
 */
#include "report/report.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define W_LABEL 18
#define W_CELL 15

/* "(min-max)" fitting W_CELL, dropping decimals if need be. */
static char *fmt_range(char *buf, size_t len, const struct compare_cell *c,
		       int decimals)
{
	char a[32], b[32];
	int d;

	if (!c->n) {
		snprintf(buf, len, " ");
		return buf;
	}
	for (d = decimals; d >= 0; d--) {
		snprintf(buf, len, "(%s-%s)", report_fmt_num(a, sizeof(a), c->min, d),
			 report_fmt_num(b, sizeof(b), c->max, d));
		if (strlen(buf) <= W_CELL)
			break;
	}
	return buf;
}

static char *fmt_pct(char *buf, size_t len, double v)
{
	if (isnan(v))
		snprintf(buf, len, "-");
	else if (fabs(v) >= 10)        /* 1000% and more: 7 columns */
		snprintf(buf, len, "%+.0f%%", 100.0 * v);
	else
		snprintf(buf, len, "%+.1f%%", 100.0 * v);
	return buf;
}

static const char *yes_no(int v)
{
	return v < 0 ? "-" : v ? "yes" : "no";
}

/* The policy settings where A and B differ ("a=N" / "a=Y"). */
static void knob_diff(FILE *out, const struct compare *c)
{
	const char *ka = c->run[COMPARE_A][0].knobs;
	const char *kb = c->run[COMPARE_B][0].knobs;
	char a[512], b[512], *sa, *sb, *ta, *tb, *save_a = NULL, *save_b = NULL;
	int any = 0;

	if (!ka || !kb) {
		fprintf(out, "  settings: unknown (a capture without "
			"manifest)\n");
		return;
	}
	snprintf(a, sizeof(a), "%s", ka);
	snprintf(b, sizeof(b), "%s", kb);
	for (ta = strtok_r(a, ",", &save_a), tb = strtok_r(b, ",", &save_b);
	     ta && tb; ta = strtok_r(NULL, ",", &save_a),
	     tb = strtok_r(NULL, ",", &save_b)) {
		if (strcmp(ta, tb) == 0)
			continue;
		sa = strchr(ta, '=');
		sb = strchr(tb, '=');
		fprintf(out, "  %s: A %s, B %s\n", ta, sa ? sa + 1 : "?",
			sb ? sb + 1 : "?");
		(void)sb;
		any = 1;
	}
	if (!any)
		fprintf(out, "  settings: the same on both sides (run-to-run "
			"variance)\n");
}

static int passed(const struct compare *c, enum compare_side s)
{
	int i, n = 0;

	for (i = 0; i < c->n[s]; i++)
		n += c->run[s][i].self_check_ok;
	return n;
}

static void table_head(FILE *out, const char *h1, const char *h2,
		       const char *h3, const char *h4)
{
	fprintf(out, "  %-*s %*s %*s %7s %7s\n", W_LABEL, "metric", W_CELL,
		h1, W_CELL, h2, h3, h4);
	fprintf(out, "  %.*s %.*s %.*s ------- -------\n", W_LABEL,
		"------------------------------", W_CELL,
		"------------------------------", W_CELL,
		"------------------------------");
}

/* The figures each VM's rows give (keys of compare_row). */
static const char *const vm_keys[] = {
	"faults", "leaf_zaps", "tlb_flushes", "npf_service_p99_us",
	"nx_recovered_pages", "lock_wait_ms",
};

static const struct compare_row *row_of(const struct compare *c,
					const char *key)
{
	int i;

	for (i = 0; i < c->nrows; i++)
		if (!strcmp(c->rows[i].key, key))
			return &c->rows[i];
	return NULL;
}

/*
 * Per VM, each replayed alone: A and B measured (medians), the change,
 * and B as the replay of A predicts it, with the same marks as the
 * what-if table.  The capture's own rows above are the host's total.
 */
static void vm_tables(FILE *out, const struct compare *c)
{
	char x[40], y[40], z[40], p[40], e[40];
	const struct compare_run *r0;
	const struct compare_row *r;
	size_t k;
	int v;

	fprintf(out, "\n  Per VM, each replayed alone (medians over the runs; "
		"the tables above\n  are the host's total)\n");
	fprintf(out, "  %-*s %11s %11s %7s %11s %7s\n", W_LABEL, "metric", "A",
		"B", "change", "predicted", "error");
	fprintf(out, "  %.*s ----------- ----------- ------- ----------- "
		"-------\n", W_LABEL, "------------------------------");
	for (v = 0; v < c->nvms; v++) {
		r0 = &c->vms[v].run[COMPARE_A][0];
		fprintf(out, "  VM %d (%s)\n", c->vms[v].vm,
			r0->vm_procname ? r0->vm_procname : "process unknown");
		for (k = 0; k < sizeof(vm_keys) / sizeof(vm_keys[0]); k++) {
			r = row_of(&c->vms[v], vm_keys[k]);
			if (!r || (!r->cell[COMPARE_A].n &&
				   !r->cell[COMPARE_B].n))
				continue;
			if (!r->has_pred)
				snprintf(p, sizeof(p), "-");
			else if (!r->cell_pred.n)
				snprintf(p, sizeof(p), "not modelled");
			else
				/* The mark inside the cell: the rows are
				 * as wide as the header. */
				snprintf(p, sizeof(p), "%s%s",
					 !strcmp(r->pred_kind, "restated") ?
					 "=" : !strcmp(r->pred_kind,
						       "one_sided") ? "<=" : "",
					 report_fmt_num(e, sizeof(e),
							r->cell_pred.median,
							r->decimals));
			fprintf(out, "  %-*s %11s %11s %7s %11s %7s\n",
				W_LABEL, r->label,
				report_fmt_num(x, sizeof(x),
					       r->cell[COMPARE_A].median,
					       r->decimals),
				report_fmt_num(y, sizeof(y),
					       r->cell[COMPARE_B].median,
					       r->decimals),
				fmt_pct(z, sizeof(z), r->change), p,
				fmt_pct(e, sizeof(e), r->cell_pred.n ?
					r->pred_error : NAN));
		}
	}
	fprintf(out, "  predicted: B from A, VM by VM; <=: at most, =: "
		"restated, as above;\n  -: no what-if of the figure (or no "
		"A run of the VM passed its\n  self-check)\n");
}

void report_compare_text(FILE *out, const struct compare *c)
{
	const struct compare_run *a = &c->run[COMPARE_A][0];
	char x[40], y[40], z[40];
	const struct compare_row *r;
	int i, any = 0;

	fprintf(out, "Compare: A = %s, %d run%s; B = %s, %d run%s\n",
		a->policy, c->n[COMPARE_A], c->n[COMPARE_A] == 1 ? "" : "s",
		c->run[COMPARE_B][0].policy, c->n[COMPARE_B],
		c->n[COMPARE_B] == 1 ? "" : "s");
	if (c->vm)
		fprintf(out, "  VM %d of every run (--vm): its own threads' "
			"events, its own state\n", c->vm);
	fprintf(out, "  kernel %s\n  workload %s\n",
		a->kernel ? a->kernel : "unknown",
		a->workload ? a->workload : "unknown");
	knob_diff(out, c);
	fprintf(out, "  self-check passed: A %d of %d, B %d of %d\n\n",
		passed(c, COMPARE_A), c->n[COMPARE_A], passed(c, COMPARE_B),
		c->n[COMPARE_B]);
	fprintf(out, "  median (min-max) over the runs; rates per second "
		"of each run\n");
	table_head(out, "A", "B", "change", "overlap");
	for (i = 0; i < c->nrows; i++) {
		r = &c->rows[i];
		if (!r->cell[COMPARE_A].n && !r->cell[COMPARE_B].n)
			continue;
		fprintf(out, "  %-*s %*s %*s %7s %7s\n", W_LABEL, r->label,
			W_CELL, report_fmt_num(x, sizeof(x),
					r->cell[COMPARE_A].median,
					r->decimals),
			W_CELL, report_fmt_num(y, sizeof(y),
					r->cell[COMPARE_B].median,
					r->decimals),
			fmt_pct(z, sizeof(z), r->change), yes_no(r->overlap));
		if (c->n[COMPARE_A] > 1 || c->n[COMPARE_B] > 1)
			fprintf(out, "  %-*s %*s %*s\n", W_LABEL, "", W_CELL,
				fmt_range(x, sizeof(x), &r->cell[COMPARE_A],
					  r->decimals),
				W_CELL, fmt_range(y, sizeof(y),
						  &r->cell[COMPARE_B],
						  r->decimals));
	}
	fprintf(out, "  -: the runs' source cannot give the figure; overlap "
		"needs two runs a\n  side\n\n");
	fprintf(out, "  What-if: B predicted from each A run (replay under "
		"%s)\n", c->run[COMPARE_B][0].policy);
	for (i = 0; i < c->nrows; i++)
		any |= c->rows[i].has_pred;
	if (!any) {
		fprintf(out, "  withheld: no A run passed its self-check\n");
		return;
	}
	table_head(out, "predicted", "B measured", "error", "inside");
	for (i = 0; i < c->nrows; i++) {
		r = &c->rows[i];
		if (!r->has_pred)
			continue;
		/* A figure the policy does not model is never shown as
		 * a prediction; a restated one is marked. */
		fprintf(out, "  %-*s %*s %*s %7s %7s%s\n", W_LABEL, r->label,
			W_CELL, !r->cell_pred.n ? "not modelled" :
			report_fmt_num(x, sizeof(x), r->cell_pred.median,
				       r->decimals),
			W_CELL, report_fmt_num(y, sizeof(y),
					r->cell[COMPARE_B].median,
					r->decimals),
			fmt_pct(z, sizeof(z), r->pred_error),
			yes_no(r->pred_inside),
			!strcmp(r->pred_kind, "restated") ? "  restated" :
			!strcmp(r->pred_kind, "one_sided") ? " <=" : "");
		if (!r->cell_pred.n)
			continue;
		if (c->n[COMPARE_A] > 1 || c->n[COMPARE_B] > 1)
			fprintf(out, "  %-*s %*s %*s\n", W_LABEL, "", W_CELL,
				fmt_range(x, sizeof(x), &r->cell_pred,
					  r->decimals),
				W_CELL, fmt_range(y, sizeof(y),
						  &r->cell[COMPARE_B],
						  r->decimals));
	}
	fprintf(out, "  error: against B's median; inside: the median "
		"prediction lies in\n  B's range (-: fewer than two B "
		"runs).  not modelled: the policy's\n  replay misses part "
		"of what it does there ('mmureplay replay' says\n  what); "
		"restated: B's policy is A's, the figure is A's; <=: at\n"
		"  most, a bound: the capture leaves it open below "
		"('mmureplay replay'\n  says how far)\n");
	if (c->nvms)
		vm_tables(out, c);
	fprintf(out, "\n  runs\n");
	for (i = 0; i < c->n[COMPARE_A] + c->n[COMPARE_B]; i++) {
		const struct compare_run *run = i < c->n[COMPARE_A] ?
			&c->run[COMPARE_A][i] :
			&c->run[COMPARE_B][i - c->n[COMPARE_A]];

		size_t len = strlen(run->path);

		/* The end of a long path says which file it is. */
		fprintf(out, "  %c%-2d %s%-*s %6.2f s  self-check %s",
			i < c->n[COMPARE_A] ? 'A' : 'B',
			(i < c->n[COMPARE_A] ? i : i - c->n[COMPARE_A]) + 1,
			len > 40 ? "..." : "", len > 40 ? 37 : 40,
			len > 40 ? run->path + len - 37 : run->path,
			run->duration_s, run->self_check_ok ? "ok" : "FAILED");
		/* Its figures before the warm-up's end rest partly on state
		 * the trace only revealed (mmureplay fidelity says how
		 * much). */
		if (run->began_mid_run)
			fprintf(out, ", began mid-run (warm-up %.2f s)",
				run->warmup_s);
		fputc('\n', out);
	}
}
