/*
 * What-if results as the table of a cover letter: one row per policy,
 * the first row the recorded one (see report.h).
 */
#include "report/report.h"

#include "replay/policy.h"

#include <string.h>

static const struct {
	enum replay_metric metric;
	const char *head;
	int rate;
	enum policy_figure fig;         /* what the policy may not model */
} cols[] = {
	{ RM_FAULTS, "faults", 0, POLICY_FIG_FAULTS },
	{ RM_FAULTS_PER_S, "pf/s", 1, POLICY_FIG_FAULTS },
	{ RM_LEAF_ZAPS, "leaf zaps", 0, POLICY_FIG_LEAF_ZAPS },
	{ RM_TLB_FLUSHES, "flushes", 0, POLICY_FIG_TLB_FLUSHES },
	{ RM_TLB_FLUSHES_PER_S, "tlb/s", 1, POLICY_FIG_TLB_FLUSHES },
	{ RM_LOCK_WAIT_MS, "wait ms", 1, POLICY_FIG_LOCK_WAITS },
};

#define NCOLS (sizeof(cols) / sizeof(cols[0]))
/* Dashes under a header, cut to the column's width. */
static const char RULE[] =
	"------------------------------------------------------------";

/* "BEFORE POLICY AFTER TEXT." wrapped at 72 columns, as in a mail. */
static void limits_print(FILE *out, const char *before, const char *policy,
			 const char *after, const char *text, int first)
{
	const char *p = text, *sp;
	int col, len;

	if (first)
		fputc('\n', out);
	col = fprintf(out, "  %s%s%s", before, policy, after);
	while (*p) {
		sp = strchr(p, ' ');
		len = sp ? (int)(sp - p) : (int)strlen(p);
		if (col + 1 + len + !sp > 72)
			col = fprintf(out, "\n   ") - 1;
		col += fprintf(out, " %.*s%s", len, p, sp ? "" : ".");
		p += len;
		while (*p == ' ')
			p++;
	}
	fputc('\n', out);
}

/* One latency figure in us, marked when not modelled (returns the mark). */
static int lat_cell(FILE *out, double ns, int nm)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%.1f", ns / 1e3);
	fprintf(out, nm ? " %8s*" : " %9s", buf);
	return nm;
}

/*
 * The latency what-if (engine.h struct replay_latency): NPF service
 * times, and the probe's samples when the capture has any.  Returns
 * whether a figure was marked not modelled.
 */
static int latency_text(FILE *out, const struct replay_metrics *m, int n,
			const struct fidelity *f, int w)
{
	char buf[32];
	int i, c, nm, marked = 0, probes = 0;

	fprintf(out, "\n  %-*s %9s %9s %9s %9s %9s\n", w,
		"NPF service (us)", "exits", "p50", "p99", "p99.9", "max");
	fprintf(out, "  %.*s %9s %9s %9s %9s %9s\n", w, RULE, "---------",
		"---------", "---------", "---------", "---------");
	for (i = 0; i < n; i++) {
		if (m[i].not_applicable)
			continue;
		probes |= m[i].v[RM_PROBE_SAMPLES] > 0;
		nm = policy_figure_kind(m[i].policy, f->policy,
					POLICY_FIG_NPF_LATENCY) ==
			POLICY_FIGURE_NOT_MODELLED;
		fprintf(out, "  %-*s", w, m[i].policy);
		report_fmt_count(buf, sizeof(buf),
				 (int64_t)m[i].v[RM_NPF_EXITS]);
		fprintf(out, nm ? " %8s*" : " %9s", buf);
		for (c = 0; c < 4; c++)
			marked |= lat_cell(out, m[i].v[RM_NPF_BY_PCT + c], nm);
		fputc('\n', out);
	}
	if (!probes)
		return marked;
	fprintf(out, "\n  %-*s %9s %9s %9s %9s %9s %9s\n", w,
		"probe (us)", "p50", "p99", "p99.9", "max", ">=1ms", ">=3ms");
	fprintf(out, "  %.*s %9s %9s %9s %9s %9s %9s\n", w, RULE,
		"---------", "---------", "---------", "---------",
		"---------", "---------");
	for (i = 0; i < n; i++) {
		if (m[i].not_applicable)
			continue;
		nm = policy_figure_kind(m[i].policy, f->policy,
					POLICY_FIG_PROBE_LATENCY) ==
			POLICY_FIGURE_NOT_MODELLED;
		fprintf(out, "  %-*s", w, m[i].policy);
		for (c = 0; c < 4; c++)
			marked |= lat_cell(out, m[i].v[RM_PROBE_BY_PCT + c],
					   nm);
		for (c = 0; c < 2; c++) {
			report_fmt_count(buf, sizeof(buf), (int64_t)m[i].v[
				c ? RM_PROBE_GE_3MS : RM_PROBE_GE_1MS]);
			fprintf(out, nm ? " %8s*" : " %9s", buf);
		}
		fputc('\n', out);
	}
	fprintf(out, "  a fault the policy avoids takes its exit's service "
		"time out of the vCPU's\n  timeline and out of the probe "
		"sample that held it; a lock wait it\n  removes, its length; "
		"a fault it adds costs the median exit\n");
	return marked;
}

void report_replay_text(FILE *out, const struct replay_metrics *m, int n,
			const struct fidelity *f, const char *db_path,
			const struct report_vms *vms)
{
	char buf[32];
	size_t c;
	int i, w = 16, marked = 0, bound = 0;

	/* m[0], the recorded policy's run, is there even when n is 0. */
	fprintf(out, "Replay of %s (%.3f s of trace)\n", db_path,
		m[0].duration_s);
	fputc('\n', out);
	report_damage_text(out, f);
	report_start_text(out, f, 1);
	if (!f->ok && !n) {
		fprintf(out, "  The self-check under %s failed (see "
			"'mmureplay fidelity'):\n  what-if figures are "
			"withheld.\n", f->policy);
		report_vms_whatif_text(out, vms, 0);
		return;
	}
	if (!f->ok)
		fprintf(out, "  UNVERIFIED: the self-check under %s failed "
			"(see 'mmureplay fidelity');\n  these figures were "
			"forced (--force) and rest on a model that does\n  "
			"not reproduce this trace.\n\n", f->policy);
	/* The name column fits the longest name (a combination's). */
	for (i = 0; i < n; i++)
		if ((int)strlen(m[i].policy) > w)
			w = (int)strlen(m[i].policy);
	fprintf(out, "  %-*s", w, "policy");
	for (c = 0; c < NCOLS; c++)
		fprintf(out, " %11s", cols[c].head);
	fprintf(out, "\n  %.*s", w, RULE);
	for (c = 0; c < NCOLS; c++)
		fprintf(out, " %11s", "-----------");
	fputc('\n', out);
	for (i = 0; i < n; i++) {
		fprintf(out, "  %-*s", w, m[i].policy);
		if (m[i].not_applicable) {
			fprintf(out, " not applicable here (below)\n");
			continue;
		}
		for (c = 0; c < NCOLS; c++) {
			double v = m[i].v[cols[c].metric];
			/* A figure the policy does not model in full is
			 * marked, never shown as a prediction; a bound is
			 * shown as one. */
			enum policy_figure_kind k = replay_metrics_figure_kind(
				&m[i], f->policy, cols[c].fig);
			int nm = k == POLICY_FIGURE_NOT_MODELLED;
			char num[28];

			marked |= nm;
			bound |= k == POLICY_FIGURE_ONE_SIDED;
			if (cols[c].rate)
				snprintf(num, sizeof(num), "%.1f", v);
			else
				report_fmt_count(num, sizeof(num),
						 (int64_t)v);
			snprintf(buf, sizeof(buf), "%s%s",
				 k == POLICY_FIGURE_ONE_SIDED ? "<=" : "",
				 num);
			fprintf(out, nm ? " %10s*" : " %11s", buf);
		}
		fputc('\n', out);
	}
	marked |= latency_text(out, m, n, f, w);
	if (marked)
		fprintf(out, "  *: not modelled in full by the policy's "
			"replay (below): not a prediction\n");
	if (bound)
		fprintf(out, "  <=: at most; the capture leaves the figure "
			"open below (said further on)\n");
	fprintf(out, "\n  %-*s %11s %11s %11s %11s %11s\n", w, "leaf zaps by",
		"notifier", "nx_recovery", "fault_path", "teardown",
		"collapse");
	fprintf(out, "  %.*s %11s %11s %11s %11s %11s\n", w, RULE,
		"-----------", "-----------", "-----------", "-----------",
		"-----------");
	for (i = 0; i < n; i++) {
		static const enum replay_metric k[] = {
			RM_LEAF_ZAPS_NOTIFIER, RM_LEAF_ZAPS_NX_RECOVERY,
			RM_LEAF_ZAPS_FAULT_PATH, RM_LEAF_ZAPS_TEARDOWN,
			RM_LEAF_ZAPS_DIRTY_LOG_COLLAPSE,
		};

		if (m[i].not_applicable)
			continue;
		fprintf(out, "  %-*s", w, m[i].policy);
		for (c = 0; c < 5; c++)
			fprintf(out, " %11s", report_fmt_count(
				buf, sizeof(buf),
				(int64_t)m[i].v[k[c]]));
		fputc('\n', out);
	}
	fprintf(out, "  collapse: the 4K tables freed where dirty logging "
		"stops, for huge pages\n");
	/* Which sources each policy touches: the threads whose zaps it
	 * keeps. */
	for (c = 0, i = 0; i < n; i++) {
		int k;

		if (!m[i].nkept || m[i].not_applicable)
			continue;
		if (!c++)
			fprintf(out, "\n  zaps kept, by the thread whose "
				"invalidation or context held them:\n");
		fprintf(out, "    %-*s", w, m[i].policy);
		for (k = 0; k < m[i].nkept; k++)
			fprintf(out, "%s %s (tid %d) %s", k ? "," : "",
				m[i].kept[k].thread, m[i].kept[k].tid,
				report_fmt_count(buf, sizeof(buf),
						 m[i].kept[k].zaps));
		if (m[i].kept_other)
			fprintf(out, ", other threads %s",
				report_fmt_count(buf, sizeof(buf),
						 m[i].kept_other));
		fputc('\n', out);
	}
	/* When an invalidation let mmu_lock go no event says: the waits a
	 * policy leaves are a range (engine_lock.c). */
	for (c = 0, i = 0; i < n; i++) {
		double lo = m[i].v[RM_LOCK_WAIT_MIN_MS];
		double hi = m[i].v[RM_LOCK_WAIT_MS];

		if (hi - lo < 0.05 || m[i].not_applicable)
			continue;
		if (!c++)
			fprintf(out, "\n  wait ms is the most a policy leaves; "
				"the least (each invalidation it does\n  "
				"holding mmu_lock until its thread's next "
				"event, each it keeps not at all):\n");
		fprintf(out, "    %-*s %.1f-%.1f ms\n", w, m[i].policy, lo, hi);
	}
	/* A capture that began mid-run: leaves a policy kept before it
	 * may have spared faults the replay gives it (engine.h
	 * faults_undecided). */
	for (c = 0, i = 0; i < n; i++) {
		double u = m[i].v[RM_FAULTS_UNDECIDED];

		if (!u || m[i].not_applicable)
			continue;
		if (!c++)
			fprintf(out, "\n  faults on pages the trace had not yet "
				"shown mapped: a leaf the policy kept\n  before "
				"the capture began may have spared them (up to):\n");
		fprintf(out, "    %-*s %s\n", w, m[i].policy,
			report_fmt_count(buf, sizeof(buf), (int64_t)u));
	}
	for (c = 0, i = 0; i < n; i++)
		if (m[i].limits && !m[i].not_applicable)
			limits_print(out, "Not modelled by ", m[i].policy, ":",
				     m[i].limits, !c++);
	for (c = 0, i = 0; i < n; i++)
		if (m[i].not_applicable)
			limits_print(out, "", m[i].policy, " does not apply:",
				     m[i].not_applicable, !c++);
	report_vms_whatif_text(out, vms, n);
}
