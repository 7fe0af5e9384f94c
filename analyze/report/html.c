/*
 * The HTML report: one self-contained file (inline CSS from
 * reports/report.css and inline SVG charts; no script, no external
 * resource), so it reads offline and attaches to a bug or a mail.
 */
#include "report/report.h"

#include "replay/policy.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

extern const char reports_report_css[];

static const char *const colors[] = {
	"#1f5fa8", "#c2410c", "#15803d", "#7e22ce", "#a16207", "#0e7490",
};

void report_html_esc(FILE *o, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '<': fputs("&lt;", o); break;
		case '>': fputs("&gt;", o); break;
		case '&': fputs("&amp;", o); break;
		case '"': fputs("&quot;", o); break;
		case '\'': fputs("&#39;", o); break;
		default: fputc(*s, o);
		}
	}
}

static void td_count(FILE *o, double v)
{
	char b[32];

	fprintf(o, "<td>%s</td>", report_fmt_count(b, sizeof(b), (int64_t)v));
}

static void latency_row(void *arg, const char *name,
			const struct latency_dist *d)
{
	FILE *o = arg;
	int k;

	fprintf(o, "<tr><td>");
	report_html_esc(o, name);
	fprintf(o, "</td>");
	td_count(o, (double)d->n);
	for (k = 0; k < LAT_PCTS; k++)
		fprintf(o, "<td>%.1f</td>", (double)d->pct[k] / 1e3);
	fprintf(o, "<td>%.1f</td></tr>\n", (double)d->max / 1e3);
}

/* The distributions the tail chart draws (report_latency_each()). */
struct tail_set {
	const char *name[LATENCY_MAX_PROBES + 1];
	const struct latency_dist *d[LATENCY_MAX_PROBES + 1];
	int n;
};

static void tail_collect(void *arg, const char *name,
			 const struct latency_dist *d)
{
	struct tail_set *t = arg;

	if (t->n < LATENCY_MAX_PROBES + 1 && d->ntail > 0) {
		/* The names are the caller's buffers: keep a copy. */
		t->name[t->n] = strdup(name);
		t->d[t->n++] = d;
	}
}

/*
 * The tails as one SVG: x the latency (us, log), y the share of samples
 * above it (log, 50% down to 1/n), one line per distribution ending at
 * its max.  Points are quantiles (metrics/latency.h): a few dozen a
 * line, however long the capture.
 */
static void chart_tail(FILE *o, const struct latency *l)
{
	const double W = 900, H = 260, L = 70, R = 30, T = 10, B = 36;
	double xmin = 1e300, xmax = 0, ymin = log10(0.5), x, y, v;
	struct tail_set t = { 0 };
	int i, k, dec;

	report_latency_each(l, tail_collect, &t);
	if (!t.n)
		return;
	for (i = 0; i < t.n; i++) {
		for (k = 0; k < t.d[i]->ntail; k++)
			if (t.d[i]->tail[k] > 0 && t.d[i]->tail[k] < xmin)
				xmin = (double)t.d[i]->tail[k];
		if ((double)t.d[i]->max > xmax)
			xmax = (double)t.d[i]->max;
		if (log10(1.0 / (double)t.d[i]->n) < ymin)
			ymin = log10(1.0 / (double)t.d[i]->n);
	}
	xmin = floor(log10(xmin > 0 && xmin < 1e300 ? xmin / 1e3 : 1));
	xmax = ceil(log10(xmax > 0 ? xmax / 1e3 : 10));
	if (xmax <= xmin)
		xmax = xmin + 1;
	ymin = floor(ymin);
#define TX(v) (L + (W - L - R) * ((v) - xmin) / (xmax - xmin))
#define TY(v) (T + (H - T - B) * (log10(0.5) - (v)) / (log10(0.5) - ymin))
	fprintf(o, "<h3>Latency tails</h3>\n<svg width=\"%.0f\" height=\"%.0f\" "
		"viewBox=\"0 0 %.0f %.0f\" role=\"img\" class=\"tail\">\n",
		W, H, W, H);
	for (dec = (int)xmin; dec <= (int)xmax; dec++) {
		x = TX(dec);
		fprintf(o, "<line x1=\"%.1f\" y1=\"%.0f\" x2=\"%.1f\" "
			"y2=\"%.0f\" stroke=\"#eee\"/><text x=\"%.1f\" "
			"y=\"%.0f\" font-size=\"11\" text-anchor=\"middle\">"
			"%g</text>\n", x, T, x, H - B, x, H - B + 14,
			pow(10, dec));
	}
	for (dec = 0; dec >= (int)ymin; dec--) {
		v = dec == 0 ? log10(0.5) : dec;
		y = TY(v);
		fprintf(o, "<line x1=\"%.0f\" y1=\"%.1f\" x2=\"%.0f\" "
			"y2=\"%.1f\" stroke=\"#eee\"/><text x=\"%.0f\" "
			"y=\"%.1f\" font-size=\"11\" text-anchor=\"end\">"
			"%g%%</text>\n", L, y, W - R, y, L - 4, y + 4,
			100.0 * pow(10, v));
	}
	fprintf(o, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" "
		"text-anchor=\"middle\">latency (us, log)</text>\n<text "
		"x=\"12\" y=\"%.0f\" font-size=\"11\" transform=\"rotate(-90 "
		"12 %.0f)\" text-anchor=\"middle\">samples above (log)"
		"</text>\n", (L + W) / 2, H - 4, (T + H - B) / 2,
		(T + H - B) / 2);
	for (i = 0; i < t.n; i++) {
		const struct latency_dist *d = t.d[i];

		fprintf(o, "<polyline fill=\"none\" stroke-width=\"1.5\" "
			"stroke=\"%s\" points=\"", colors[i % 6]);
		for (k = 0; k < d->ntail; k++)
			if (d->tail[k] > 0)
				fprintf(o, "%.1f,%.1f ",
					TX(log10((double)d->tail[k] / 1e3)),
					TY(log10(1 - d->tail_q[k])));
		if (d->max > 0)
			fprintf(o, "%.1f,%.1f", TX(log10((double)d->max / 1e3)),
				TY(log10(1.0 / (double)d->n)));
		fprintf(o, "\"/>\n");
	}
#undef TX
#undef TY
	fprintf(o, "</svg>\n<div class=\"legend\">");
	for (i = 0; i < t.n; i++) {
		fprintf(o, "<span><i style=\"background:%s\"></i>",
			colors[i % 6]);
		report_html_esc(o, t.name[i]);
		fprintf(o, "</span>");
		free((void *)t.name[i]);
	}
	fprintf(o, "</div>\n");
}

static void section_latency(FILE *o, const struct latency *l)
{
	int k;

	if (!l->nprobes && !l->npf.n)
		return;
	fprintf(o, "<table>\n<tr><th>latency (us)</th><th>samples</th>");
	for (k = 0; k < LAT_PCTS; k++)
		fprintf(o, "<th>%s</th>", latency_pct_name[k]);
	fprintf(o, "<th>max</th></tr>\n");
	report_latency_each(l, latency_row, o);
	fprintf(o, "</table>\n<p class=\"note\">Nearest-rank percentiles of "
		"the latency probe's samples (mmureplay:latency_sample) per "
		"probe phase, and of the time from a vCPU's NPF exit to its "
		"next entry.</p>\n");
	chart_tail(o, l);
}

/* KVM's counters against the trace's events (stats sampled). */
static void section_counters(FILE *o, const struct summary *s)
{
	int i, any = 0;

	for (i = 0; i < SUMMARY_COUNTER_CHECKS; i++) {
		const struct summary_counter_check *c = &s->counters[i];

		if (c->counter_delta < 0)
			continue;
		if (!any++)
			fprintf(o, "<table>\n<tr><th>KVM counter vs trace</th>"
				"<th>counter</th><th>events</th></tr>\n");
		fprintf(o, "<tr><td>%s / %s</td>", c->counter, c->table);
		td_count(o, (double)c->counter_delta);
		td_count(o, (double)c->events);
		fprintf(o, "</tr>\n");
	}
	if (any)
		fprintf(o, "</table>\n<p class=\"note\">Increase of KVM's own "
			"counters over the sampled time against the trace's "
			"events in that time: equal when the trace holds every "
			"event KVM counted.</p>\n");
}

/* A count and rate, or "unknown" when the source cannot give them. */
static void html_figure_row(FILE *o, const struct summary *s,
			    const char *name, enum coverage_figure f,
			    int64_t n, double rate)
{
	fprintf(o, "<tr><td>%s</td>", name);
	if (coverage_gap(&s->cov, f)) {
		fprintf(o, "<td>unknown</td><td>unknown</td></tr>\n");
		return;
	}
	td_count(o, (double)n);
	fprintf(o, "<td>%.1f</td></tr>\n", rate);
}

/*
 * The capture's VMs (table vm) with their own threads' faults and leaf
 * zaps, a row of none (kernel threads' work, which the replay gives the
 * VM whose state it changes); then who invalidated and zapped, per
 * thread name and VM, and the patched notifier's event kinds.  As the
 * summary's text gives them.
 */
static void section_capture_vms(FILE *o, const struct summary *s)
{
	int i;

	if (s->nvms) {
		fprintf(o, "<table id=\"capture-vms\"><tr><th>VM</th>"
			"<th>pid</th><th>process</th><th>created (s)</th>"
			"<th>destroyed (s)</th><th>vCPUs</th><th>NPF faults"
			"</th><th>leaf zaps</th></tr>\n");
		for (i = 0; i < s->nvms; i++) {
			const struct summary_vm *v = &s->vms[i];

			if (s->narrowed_vm && v->id != s->narrowed_vm)
				continue;
			fprintf(o, "<tr><td>%lld</td><td>%lld</td><td>",
				(long long)v->id, (long long)v->pid);
			report_html_esc(o, v->procname ? v->procname : "?");
			fprintf(o, "</td>");
			if (v->created_ts >= 0)
				fprintf(o, "<td>%.3f</td>",
					(double)v->created_ts / 1e9);
			else
				fprintf(o, "<td>before</td>");
			if (v->destroyed_ts >= 0)
				fprintf(o, "<td>%.3f</td>",
					(double)v->destroyed_ts / 1e9);
			else
				fprintf(o, "<td>-</td>");
			td_count(o, (double)v->vcpus);
			td_count(o, (double)v->faults);
			td_count(o, (double)v->leaf_zaps);
			fprintf(o, "</tr>\n");
		}
		if (!s->narrowed_vm) {
			fprintf(o, "<tr><td>none</td><td></td><td></td><td>"
				"</td><td></td><td></td>");
			td_count(o, (double)s->novm_faults);
			td_count(o, (double)s->novm_leaf_zaps);
			fprintf(o, "</tr>\n");
		}
		fprintf(o, "</table>\n<p class=\"note\">none: rows of "
			"threads in no VM's process (%lld in all): kernel "
			"threads' work, which the replay gives the VM whose "
			"state it changes.</p>\n",
			(long long)s->rows_unattributed);
	}
	if (!s->nsources)
		return;
	fprintf(o, "<table id=\"capture-sources\"><tr><th>thread</th>"
		"<th>VM</th><th>invalidations</th><th>leaf zaps</th></tr>\n");
	for (i = 0; i < s->nsources; i++) {
		const struct summary_source *src = &s->sources[i];

		fprintf(o, "<tr><td>");
		report_html_esc(o, src->procname);
		if (src->vm)
			fprintf(o, "</td><td>%lld</td>", (long long)src->vm);
		else
			fprintf(o, "</td><td>-</td>");
		td_count(o, (double)src->invalidations);
		td_count(o, (double)src->leaf_zaps);
		fprintf(o, "</tr>\n");
	}
	fprintf(o, "</table>\n<p class=\"note\">Who invalidated and "
		"zapped: invalidation starts and leaf zaps per thread name and "
		"VM (-: no VM).");
	for (i = 0; i < SUMMARY_NOTIFY_KINDS; i++)
		if (s->notifier_events[i] >= 0)
			break;
	if (i < SUMMARY_NOTIFY_KINDS) {
		fprintf(o, "  By notifier event (patched kernel):");
		for (; i < SUMMARY_NOTIFY_KINDS; i++)
			if (s->notifier_events[i] >= 0)
				fprintf(o, " %s %lld", summary_notify_names[i],
					(long long)s->notifier_events[i]);
		fputc('.', o);
	}
	fprintf(o, "</p>\n");
}

static void section_capture(FILE *o, const struct summary *s)
{
	int i;

	fprintf(o, "<h2>Capture</h2>\n<table>\n");
	fprintf(o, "<tr><th>trace</th><th>domain</th><th>host</th>"
		"<th>kernel</th><th>tracer</th></tr>\n");
	for (i = 0; i < s->ntraces; i++) {
		const struct summary_trace *t = &s->traces[i];

		fprintf(o, "<tr><td>");
		report_html_esc(o, t->path);
		fprintf(o, "</td><td>");
		report_html_esc(o, t->domain);
		fprintf(o, "</td><td>");
		report_html_esc(o, t->hostname);
		fprintf(o, "</td><td>");
		report_html_esc(o, t->kernel_release);
		fprintf(o, "</td><td>");
		report_html_esc(o, t->tracer_name);
		fputc(' ', o);
		report_html_esc(o, t->tracer_version);
		fprintf(o, "</td></tr>\n");
	}
	fprintf(o, "</table>\n<table>\n<tr><th>metric</th><th>count</th>"
		"<th>per second</th></tr>\n");
	fprintf(o, "<tr><td>events</td>");
	td_count(o, (double)s->events);
	fprintf(o, "<td></td></tr>\n");
	html_figure_row(o, s, "NPF faults", COVERAGE_FAULTS, s->faults,
			s->faults_per_s);
	html_figure_row(o, s, "leaf zaps", COVERAGE_LEAF_ZAPS, s->leaf_zaps,
			s->leaf_zaps_per_s);
	html_figure_row(o, s, "notifier invalidations",
			COVERAGE_INVALIDATIONS, s->invalidations,
			s->invalidations_per_s);
	fprintf(o, "<tr><td>lost events</td>");
	td_count(o, (double)s->lost_events);
	fprintf(o, "<td></td></tr>\n</table>\n<p class=\"note\">%.3f s of "
		"trace; SPTE format %s (%s).</p>\n", s->duration_s,
		s->spte_format, s->spte_format_detected ?
		"from the exit ISA" : "assumed");
	for (i = 0; i < COVERAGE_FIGURES; i++) {
		const char *gap = coverage_gap(&s->cov, (enum coverage_figure)i);

		if (!gap)
			continue;
		fprintf(o, "<p class=\"note\">Unknown %s: ",
			coverage_figure_keys[i]);
		report_html_esc(o, gap);
		fprintf(o, ".</p>\n");
	}
	if (s->truncated) {
		fprintf(o, "<p class=\"bad\">Truncated trace: ");
		report_html_esc(o, s->truncated_reason);
		fprintf(o, "</p>\n");
	}
	section_capture_vms(o, s);
	section_latency(o, &s->latency);
	section_counters(o, s);
	fprintf(o, "<details><summary>raw events (%d names)</summary>\n"
		"<table><tr><th>event</th><th>count</th><th>table</th></tr>\n",
		s->nraw);
	for (i = 0; i < s->nraw; i++) {
		fprintf(o, "<tr><td>");
		report_html_esc(o, s->raw[i].name);
		fprintf(o, "</td>");
		td_count(o, (double)s->raw[i].count);
		fprintf(o, "<td>");
		report_html_esc(o, s->raw[i].canonical ?
				s->raw[i].canonical : "-");
		fprintf(o, "</td></tr>\n");
	}
	fprintf(o, "</table></details>\n");
}

static void section_fidelity(FILE *o, const struct stored_run *b)
{
	static const char *const m[] = { "faults", "leaf_zaps",
					 "flush_contexts" };
	static const enum replay_metric observed[] = {
		RM_OBSERVED_FAULTS, RM_OBSERVED_LEAF_ZAPS,
		RM_OBSERVED_FLUSH_CONTEXTS,
	}, predicted[] = {
		RM_PREDICTED_FAULTS, RM_PREDICTED_LEAF_ZAPS,
		RM_PREDICTED_FLUSH_CONTEXTS,
	}, revealed[] = {
		RM_REVEALED_FAULTS, RM_REVEALED_LEAF_ZAPS,
		RM_REVEALED_FLUSH_CONTEXTS,
	};
	int mid = b->m.v[RM_BEGAN_MID_RUN] != 0;
	const char *kind[3] = {
		fidelity_check_kind_names[FID_CHECK_ONE_SIDED],
		fidelity_check_kind_names[FID_CHECK_PREDICTED],
		fidelity_check_kind_names[
			b->m.v[RM_FLUSHES_MEASURED] ?
			FID_CHECK_PREDICTED : FID_CHECK_RESTATED],
	};
	double exempt = 0, faults;
	int i;

	/* The policy and knowledge names come from the DB: escaped, as
	 * every string a trace or a DB hands the page. */
	fprintf(o, "<h2 id=\"selfcheck\">Self-check: replay under ");
	report_html_esc(o, b->policy);
	fprintf(o, "</h2>\n<p class=\"%s\">"
		"%s</p>\n", b->self_check_ok ? "ok" : "bad",
		b->self_check_ok ?
		"The model reproduces the trace: every metric within "
		"tolerance, no context mismatched." :
		"The model does NOT reproduce the trace: what-if figures are "
		"withheld.");
	if (mid)
		fprintf(o, "<p class=\"note\">Began mid-run: the VM ran "
			"before this capture began.  What the trace only "
			"revealed (state from before it) is counted apart "
			"and judged by nothing; the model knew every entry "
			"it needed from %.3f s on (its warm-up).  A what-if "
			"figure can differ from a whole capture's by up to "
			"what was revealed.  %s</p>\n", b->m.v[RM_WARMUP_S],
			b->m.v[RM_MEMSLOTS_STATE_DUMP] > 0 ?
			"LTTng's state dump listed the memslots that existed "
			"before it." :
			"No state dump lists the memslots: one from before "
			"the capture is known once it changes (patched "
			"kernel) or inferred (stock).");
	fprintf(o, "<table><tr><th>metric</th><th>observed</th>%s"
		"<th>predicted</th><th>check</th></tr>\n",
		mid ? "<th>revealed</th>" : "");
	for (i = 0; i < 3; i++) {
		fprintf(o, "<tr><td>%s</td>", m[i]);
		td_count(o, b->m.v[observed[i]]);
		if (mid)
			td_count(o, b->m.v[revealed[i]]);
		td_count(o, b->m.v[predicted[i]]);
		fprintf(o, "<td>%s</td></tr>\n", kind[i]);
	}
	for (i = 0; i < EXEMPT_REASONS; i++)
		exempt += b->m.v[RM_EXEMPT_BY_REASON + i];
	faults = b->m.v[RM_OBSERVED_FAULTS];
	fprintf(o, "</table>\n<p class=\"note\">one_sided: a fault the "
		"model's state did not require fails the check; a fault the "
		"guest should have taken but did not cannot be seen (its "
		"accesses are not traced).  predicted: can fail both ways.  "
		"restated: without flush events both sides come from the "
		"zaps.  Faults explained by a change traced after them (a "
		"race the kernel allows): %.0f, %.2f%% of faults (at most "
		"%.0f%%); per-context mismatches: %.0f.</p>\n", exempt,
		faults > 0 ? 100.0 * exempt / faults : 0.0,
		100.0 * FIDELITY_MAX_EXEMPT_SHARE,
		b->m.v[RM_MISMATCHES]);
	fprintf(o, "<p class=\"note\">Memslots ");
	report_html_esc(o, b->knowledge[0]);
	fprintf(o, "; permission upgrades ");
	report_html_esc(o, b->knowledge[1]);
	fprintf(o, "; dirty logging ");
	report_html_esc(o, b->knowledge[2]);
	fprintf(o, "; lock waits ");
	report_html_esc(o, b->knowledge[3]);
	fprintf(o, ".  Inferred facts come from stock events (see the "
		"README).</p>\n");
}

static void section_whatif(FILE *o, const struct stored_run *r, int n)
{
	static const struct {
		enum replay_metric k;
		const char *h;
		int rate;
	} cols[] = {
		{ RM_FAULTS, "faults", 0 }, { RM_FAULTS_PER_S, "pf/s", 1 },
		{ RM_LEAF_ZAPS, "leaf zaps", 0 },
		{ RM_REFAULTS_NOTIFIER, "refaults (notifier)", 0 },
		{ RM_REFAULTS_NX_RECOVERY, "refaults (NX recovery)", 0 },
		{ RM_TLB_FLUSHES, "TLB flushes", 0 },
		{ RM_TLB_FLUSHES_PER_S, "tlb/s", 1 },
		{ RM_LOCK_WAIT_MS, "lock wait ms", 1 },
	};
	size_t c;
	int i;

	fprintf(o, "<h2 id=\"whatif\">What-if</h2>\n<table><tr><th>policy</th>");
	for (c = 0; c < sizeof(cols) / sizeof(cols[0]); c++)
		fprintf(o, "<th>%s</th>", cols[c].h);
	fprintf(o, "</tr>\n");
	for (i = 0; i < n; i++) {
		fprintf(o, "<tr><td>");
		report_html_esc(o, r[i].policy);
		fprintf(o, "</td>");
		if (r[i].m.not_applicable) {
			fprintf(o, "<td colspan=\"%zu\">not applicable here "
				"(below)</td></tr>\n",
				sizeof(cols) / sizeof(cols[0]));
			continue;
		}
		for (c = 0; c < sizeof(cols) / sizeof(cols[0]); c++) {
			double v = r[i].m.v[cols[c].k];

			if (cols[c].rate)
				fprintf(o, "<td>%.1f</td>", v);
			else
				td_count(o, v);
		}
		fprintf(o, "</tr>\n");
	}
	fprintf(o, "</table>\n");
	for (i = 0; i < n; i++) {
		/* Stored runs keep the name; the limits are the policy's. */
		const struct policy *p = policy_find(r[i].policy);

		if (r[i].m.not_applicable) {
			fprintf(o, "<p class=\"note\">");
			report_html_esc(o, r[i].policy);
			fprintf(o, " does not apply: ");
			report_html_esc(o, r[i].m.not_applicable);
			fprintf(o, ".</p>\n");
			continue;
		}
		if (!p || !p->limits)
			continue;
		fprintf(o, "<p class=\"note\">Not modelled by ");
		report_html_esc(o, r[i].policy);
		fprintf(o, ": ");
		report_html_esc(o, p->limits);
		fprintf(o, ".</p>\n");
	}
}

/* Each VM's what-if (a capture of several VMs): a row per VM and
 * policy; a policy that cannot act on a VM shows it as recorded. */
static void section_vms(FILE *o, const struct stored_vm_run *v, int nv)
{
	static const struct {
		enum replay_metric k;
		const char *h;
	} cols[] = {
		{ RM_FAULTS, "faults" }, { RM_LEAF_ZAPS, "leaf zaps" },
		{ RM_TLB_FLUSHES, "TLB flushes" },
		{ RM_LOCK_WAIT_MS, "lock wait ms" },
	};
	size_t c;
	int i;

	if (!nv)
		return;
	fprintf(o, "<h2 id=\"vms\">What-if per VM</h2>\n<p class=\"note\">"
		"Each VM replayed alone, with its own state and self-check; "
		"a policy's rows sum to its row above.  A policy missing for "
		"a VM cannot act on it (that VM stays as recorded).</p>\n"
		"<table><tr><th>VM</th><th>process</th><th>policy</th>");
	for (c = 0; c < sizeof(cols) / sizeof(cols[0]); c++)
		fprintf(o, "<th>%s</th>", cols[c].h);
	fprintf(o, "<th>self-check</th></tr>\n");
	for (i = 0; i < nv; i++) {
		int first = !i || v[i - 1].vm != v[i].vm;

		fprintf(o, "<tr><td>");
		if (first) {
			fprintf(o, "%lld</td><td>", (long long)v[i].vm);
			report_html_esc(o, v[i].procname);
			fprintf(o, " (%lld)", (long long)v[i].pid);
		} else {
			fprintf(o, "</td><td>");
		}
		fprintf(o, "</td><td>");
		report_html_esc(o, v[i].policy);
		fprintf(o, "</td>");
		for (c = 0; c < sizeof(cols) / sizeof(cols[0]); c++) {
			if (cols[c].k == RM_LOCK_WAIT_MS)
				fprintf(o, "<td>%.1f</td>", v[i].m.v[cols[c].k]);
			else
				td_count(o, v[i].m.v[cols[c].k]);
		}
		fprintf(o, "<td class=\"%s\">%s</td></tr>\n",
			v[i].self_check_ok ? "ok" : "bad",
			!first ? "" : v[i].self_check_ok ? "ok" : "FAILED");
	}
	fprintf(o, "</table>\n");
}

static int64_t series_at(const struct stored_run *r, int64_t k, int zaps)
{
	if (k >= r->nseconds)
		return 0;
	return zaps ? r->series[k].zaps : r->series[k].faults;
}

/* One polyline of run r's series, secs seconds across, maxv high. */
static void chart_line(FILE *o, const struct stored_run *r, int64_t secs,
		       int64_t maxv, int zaps, int W, int H, int L, int B,
		       const char *style)
{
	int64_t k;

	fprintf(o, "<polyline fill=\"none\" %s points=\"", style);
	for (k = 0; k < secs; k++)
		fprintf(o, "%.1f,%.1f ", L + (double)(W - 10 - L) *
			((double)k + 0.5) / (double)secs,
			(double)(H - B) - (double)(H - B - 10) *
			(double)series_at(r, k, zaps) / (double)maxv);
	fprintf(o, "\"/>\n");
}

/*
 * Per-second series as small multiples: one chart per policy that can
 * act here, its line over the recorded run's (grey, dashed), on the
 * same axes (labelled, with units) in every chart, so that no line
 * hides another; a policy whose series is the recorded one's says so
 * under its chart.  r[0] is the recorded policy's run.
 */
static void chart(FILE *o, const struct stored_run *r, int n,
		  const char *title, const char *unit, int zaps)
{
	const int W = 440, H = 170, L = 56, B = 34;
	int64_t maxv = 1, secs = 1, v, k, diff;
	int i;

	for (i = 0; i < n; i++) {
		if (r[i].nseconds > secs)
			secs = r[i].nseconds;
		for (k = 0; k < r[i].nseconds; k++) {
			v = series_at(&r[i], k, zaps);
			if (v > maxv)
				maxv = v;
		}
	}
	fprintf(o, "<h3>%s per second, each policy against the recorded "
		"run</h3>\n<div class=\"multiples\">\n", title);
	for (i = 0; i < n; i++) {
		if (r[i].m.not_applicable)
			continue;
		for (diff = 0, k = 0; k < secs; k++)
			diff += series_at(&r[i], k, zaps) !=
				series_at(&r[0], k, zaps);
		fprintf(o, "<figure><svg width=\"%d\" height=\"%d\" "
			"viewBox=\"0 0 %d %d\" role=\"img\">\n", W, H, W, H);
		fprintf(o, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" "
			"stroke=\"#999\"/>\n<line x1=\"%d\" y1=\"10\" "
			"x2=\"%d\" y2=\"%d\" stroke=\"#999\"/>\n", L, H - B,
			W - 10, H - B, L, L, H - B);
		fprintf(o, "<text class=\"ctick\" x=\"%d\" y=\"20\" "
			"font-size=\"11\" text-anchor=\"end\">%" PRId64
			"</text>\n<text class=\"ctick\" x=\"%d\" y=\"%d\" "
			"font-size=\"11\" text-anchor=\"end\">0</text>\n",
			L - 4, maxv, L - 4, H - B);
		fprintf(o, "<text class=\"ctick\" x=\"%d\" y=\"%d\" "
			"font-size=\"11\">0 s</text>\n<text class=\"ctick\" "
			"x=\"%d\" y=\"%d\" font-size=\"11\" "
			"text-anchor=\"end\">%" PRId64 " s</text>\n", L,
			H - B + 14, W - 10, H - B + 14, secs);
		fprintf(o, "<text class=\"axis\" x=\"%d\" y=\"%d\" "
			"font-size=\"11\" text-anchor=\"middle\">seconds of "
			"trace time</text>\n<text class=\"axis\" "
			"font-size=\"11\" text-anchor=\"middle\" "
			"transform=\"translate(14,%d) rotate(-90)\">%s</text>\n",
			(L + W - 10) / 2, H - 4, (H - B) / 2 + 5, unit);
		if (i > 0)
			chart_line(o, &r[0], secs, maxv, zaps, W, H, L, B,
				   "stroke=\"#888\" stroke-width=\"1\" "
				   "stroke-dasharray=\"4 3\" class=\"recorded\"");
		{
			char style[96];

			snprintf(style, sizeof(style), "stroke=\"%s\" "
				 "stroke-width=\"1.5\" class=\"policy\"",
				 colors[i % 6]);
			chart_line(o, &r[i], secs, maxv, zaps, W, H, L, B,
				   style);
		}
		fprintf(o, "</svg><figcaption><i style=\"background:%s\">"
			"</i>", colors[i % 6]);
		report_html_esc(o, r[i].policy);
		fprintf(o, "%s</figcaption></figure>\n", i == 0 ?
			" (recorded)" : diff ? "; dashed: the recorded run" :
			": the same every second as the recorded run");
	}
	fprintf(o, "</div>\n");
}

/*
 * The timeline: one row per series the source has, on one time axis
 * (metrics/timeline.h bins), the largest probe spikes marked across all
 * rows.  Each row is a nested SVG whose viewBox is in bins, so the
 * script below zooms and pans every row at once by moving the viewBoxes
 * and relabels the axis; without it the page still shows the whole
 * capture.
 */
static const char timeline_js[] =
	"(function(){var s=document.getElementById('tl');if(!s)return;"
	"var n=+s.getAttribute('data-bins'),span=+s.getAttribute('data-span'),"
	"L=+s.getAttribute('data-left'),W=+s.getAttribute('data-plot'),"
	"x0=0,w=n,drag=null;var rows=s.querySelectorAll('svg.row'),"
	"ticks=s.querySelectorAll('text.tick');"
	"function draw(){for(var i=0;i<rows.length;i++){var v=rows[i].viewBox"
	".baseVal;v.x=x0;v.width=w;}for(var k=0;k<ticks.length;k++){var t=(x0+"
	"w*k/(ticks.length-1))/n*span;ticks[k].textContent=t.toFixed(w/n*span"
	"<1?3:w/n*span<10?2:1)+' s';}}"
	"function at(e){var b=s.getBoundingClientRect();return Math.min(1,Math"
	".max(0,(e.clientX-b.left-L)/W));}"
	"s.addEventListener('wheel',function(e){e.preventDefault();var f=at(e),"
	"c=x0+f*w,nw=Math.min(n,Math.max(4,w*(e.deltaY>0?1.25:0.8)));x0=Math"
	".min(n-nw,Math.max(0,c-f*nw));w=nw;draw();},{passive:false});"
	"s.addEventListener('mousedown',function(e){drag={x:e.clientX,x0:x0};});"
	"window.addEventListener('mouseup',function(){drag=null;});"
	"s.addEventListener('mousemove',function(e){if(!drag)return;x0=Math.min"
	"(n-w,Math.max(0,drag.x0-(e.clientX-drag.x)/W*w));draw();});"
	"s.addEventListener('dblclick',function(){x0=0;w=n;draw();});draw();"
	"})();";

static void section_timeline(FILE *o, const struct timeline *tl,
			     const struct spikes *sp)
{
	const double W = 900, L = 150, R = 20, RH = 44, GAP = 8, AX = 30;
	int s, i, k, nrows = 0;
	double y, H;

	for (s = 0; s < TIMELINE_SERIES; s++)
		nrows += tl->present[s];
	if (!nrows || tl->nbins < 2)
		return;
	H = nrows * (RH + GAP) + AX;
	fprintf(o, "<h2>Timeline</h2>\n<svg id=\"tl\" width=\"%.0f\" "
		"height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
		"data-bins=\"%d\" data-span=\"%.6f\" data-left=\"%.0f\" "
		"data-plot=\"%.0f\">\n", W, H, W, H, tl->nbins,
		(double)tl->nbins * (double)tl->bin_ns / 1e9, L, W - L - R);
	for (s = 0, y = 0; s < TIMELINE_SERIES; s++) {
		if (!tl->present[s])
			continue;
		fprintf(o, "<text x=\"4\" y=\"%.0f\" font-size=\"12\">%s</text>"
			"<text x=\"4\" y=\"%.0f\" font-size=\"10\" fill=\"#666\">"
			"max %" PRId64 " a bin</text>\n", y + 16,
			timeline_series_names[s], y + 30, tl->max[s]);
		fprintf(o, "<rect x=\"%.0f\" y=\"%.0f\" width=\"%.0f\" "
			"height=\"%.0f\" fill=\"#fafafa\" stroke=\"#ddd\"/>\n",
			L, y, W - L - R, RH);
		fprintf(o, "<svg class=\"row\" x=\"%.0f\" y=\"%.0f\" "
			"width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %d %" PRId64
			"\" preserveAspectRatio=\"none\">\n", L, y, W - L - R,
			RH, tl->nbins, tl->max[s] > 0 ? tl->max[s] : 1);
		for (k = 0; k < sp->ntop; k++)
			fprintf(o, "<line x1=\"%.2f\" x2=\"%.2f\" y1=\"0\" "
				"y2=\"%" PRId64 "\" stroke=\"#d33\" "
				"stroke-width=\"1\" vector-effect=\""
				"non-scaling-stroke\"/>", (double)sp->top[k].ts /
				(double)tl->bin_ns, (double)sp->top[k].ts /
				(double)tl->bin_ns, tl->max[s] > 0 ?
				tl->max[s] : 1);
		fprintf(o, "<polyline fill=\"none\" stroke=\"%s\" "
			"stroke-width=\"1.2\" vector-effect=\"non-scaling-stroke\" "
			"points=\"", colors[s % 6]);
		for (i = 0; i < tl->nbins; i++)
			fprintf(o, "%d.5,%" PRId64 " ", i, (tl->max[s] > 0 ?
							   tl->max[s] : 1) -
				tl->count[s][i]);
		fprintf(o, "\"/></svg>\n");
		y += RH + GAP;
	}
	for (k = 0; k <= 5; k++)
		fprintf(o, "<text class=\"tick\" x=\"%.0f\" y=\"%.0f\" "
			"font-size=\"11\" text-anchor=\"%s\">%.3f s</text>\n",
			L + (W - L - R) * k / 5, y + 14, k == 0 ? "start" :
			k == 5 ? "end" : "middle",
			(double)tl->nbins * (double)tl->bin_ns / 1e9 * k / 5);
	fprintf(o, "<text x=\"%.0f\" y=\"%.0f\" font-size=\"11\" "
		"text-anchor=\"middle\">time since the first event</text>\n"
		"</svg>\n<script>%s</script>\n", L + (W - L - R) / 2, y + 27,
		timeline_js);
	fprintf(o, "<p class=\"note\">Events per bin of %.3f ms (%d bins)",
		(double)tl->bin_ns / 1e6, tl->nbins);
	if (sp && sp->ntop)
		fprintf(o, "; red: the %d largest probe spikes", sp->ntop);
	fprintf(o, ".  Scroll on the timeline to zoom, drag to pan, "
		"double-click to see it all.  A series the source does not "
		"record is left out.</p>\n");
}

/* The largest probe spikes and what overlapped them (spikes.h). */
static void section_spikes(FILE *o, const struct spikes *sp)
{
	int i, k;

	if (!sp || !sp->samples) {
		fprintf(o, "<h2>Latency spikes</h2>\n<p>No latency probe in "
			"this capture.</p>\n");
		return;
	}
	fprintf(o, "<h2>Latency spikes</h2>\n<p>%" PRId64 " of %" PRId64
		" probe samples at or above their probe phase's p99.  The "
		"share of them whose window saw each MMU activity, beside "
		"the share of other samples:</p>\n<table><tr><th>activity"
		"</th><th>spikes</th><th>others</th></tr>\n", sp->spikes,
		sp->samples);
	for (k = 0; k < SPIKE_ACTIVITIES; k++)
		fprintf(o, "<tr><td>%s</td><td>%.1f%%</td><td>%.1f%%</td>"
			"</tr>\n", spike_activity_name[k], sp->spikes ?
			100.0 * (double)sp->with[k] / (double)sp->spikes : 0.0,
			sp->baseline_n ? 100.0 * (double)sp->baseline_with[k] /
			(double)sp->baseline_n : 0.0);
	fprintf(o, "</table>\n");
	if (spikes_per_vm(sp)) {
		fprintf(o, "<p>Per VM, at the same thresholds (-: samples of "
			"no VM's thread):</p>\n<table><tr><th>VM</th><th>"
			"samples</th><th>spikes</th><th>p99 us</th><th>max us"
			"</th></tr>\n");
		for (i = 1; i <= sp->nvms; i++) {
			const struct spikes_vm *r = &sp->vms[i % sp->nvms];

			if (i == sp->nvms && !r->samples)
				break;
			if (i < sp->nvms)
				fprintf(o, "<tr><td>%d</td>", i);
			else
				fprintf(o, "<tr><td>-</td>");
			fprintf(o, "<td>%" PRId64 "</td><td>%" PRId64 "</td>",
				r->samples, r->spikes);
			if (r->samples)
				fprintf(o, "<td>%.1f</td><td>%.1f</td></tr>\n",
					(double)r->p99_ns / 1e3,
					(double)r->max_ns / 1e3);
			else
				fprintf(o, "<td>-</td><td>-</td></tr>\n");
		}
		fprintf(o, "<tr><td>host</td><td>%" PRId64 "</td><td>%" PRId64
			"</td><td></td><td></td></tr>\n</table>\n",
			sp->samples, sp->spikes);
	}
	/* The VM column where the capture tells VMs apart. */
	fprintf(o, "<table><tr><th>time s</th>%s<th>probe</th><th>latency "
		"us</th><th>gfn</th><th>activity</th></tr>\n",
		sp->nvms > 1 ? "<th>VM</th>" : "");
	for (i = 0; i < sp->ntop; i++) {
		fprintf(o, "<tr><td>%.6f</td>", (double)sp->top[i].ts / 1e9);
		if (sp->nvms > 1 && sp->top[i].vm)
			fprintf(o, "<td>%d</td>", sp->top[i].vm);
		else if (sp->nvms > 1)
			fprintf(o, "<td>-</td>");
		fprintf(o, "<td>%" PRId64 "</td><td>%.1f</td>"
			"<td>0x%" PRIx64 "</td><td>", sp->top[i].probe,
			(double)sp->top[i].ns / 1e3, sp->top[i].gfn);
		for (k = 0; k < SPIKE_ACTIVITIES; k++)
			if (sp->top[i].activity & (1U << k))
				fprintf(o, "%s ", spike_activity_name[k]);
		fprintf(o, "</td></tr>\n");
	}
	fprintf(o, "</table>\n");
}

void report_html(FILE *o, const struct summary *s,
		 const struct stored_run *runs, int n,
		 const struct stored_vm_run *vms, int nvms,
		 const struct spikes *sp, const struct timeline *tl,
		 const char *replay_note, const char *db_path)
{
	fprintf(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta "
		"charset=\"utf-8\"><title>mmureplay: ");
	report_html_esc(o, db_path);
	fprintf(o, "</title>\n<style>\n%s</style></head><body>\n"
		"<h1>mmureplay report</h1>\n<p class=\"note\">", 
		reports_report_css);
	report_html_esc(o, db_path);
	fprintf(o, "</p>\n");
	/* The verdict first: every what-if below stands on it. */
	if (n > 0) {
		fprintf(o, "<p class=\"%s\">Self-check (replay under ",
			runs[0].self_check_ok ? "ok" : "bad");
		report_html_esc(o, runs[0].policy);
		fprintf(o, "): %s <a href=\"#selfcheck\">details</a></p>\n",
			runs[0].self_check_ok ? "the model reproduces the "
			"trace; the what-if figures stand on it." : "FAILED; "
			"the what-if figures are withheld.");
	}
	section_capture(o, s);
	if (tl)
		section_timeline(o, tl, sp);
	section_spikes(o, sp);
	if (n == 0) {
		fprintf(o, "<h2>Replay</h2><p>");
		report_html_esc(o, replay_note ? replay_note :
				"No replay results.");
		fprintf(o, "</p>\n");
	} else {
		if (replay_note) {
			fprintf(o, "<p class=\"note\">");
			report_html_esc(o, replay_note);
			fprintf(o, "</p>\n");
		}
		section_fidelity(o, &runs[0]);
		if (runs[0].self_check_ok) {
			section_whatif(o, runs, n);
			section_vms(o, vms, nvms);
			chart(o, runs, n, "NPF faults", "faults / s", 0);
			chart(o, runs, n, "Leaf zaps", "leaf zaps / s", 1);
		}
	}
	fprintf(o, "<p class=\"note\">Generated by mmureplay.  Counts are "
		"from the trace and the replay model; rates are per second of "
		"trace time.</p>\n</body></html>\n");
}

/* A compare cell: median, and (min-max) under it when there is a range. */
static void compare_td(FILE *o, const struct compare_cell *c, int decimals)
{
	char a[40], b[40], m[40];

	fprintf(o, "<td>%s", report_fmt_num(m, sizeof(m), c->median,
					       decimals));
	if (c->n > 1)
		fprintf(o, "<br><span class=\"note\">(%s-%s)</span>",
			report_fmt_num(a, sizeof(a), c->min, decimals),
			report_fmt_num(b, sizeof(b), c->max, decimals));
	fprintf(o, "</td>");
}

static void pct_td(FILE *o, double v)
{
	if (isnan(v))
		fprintf(o, "<td>-</td>");
	else
		fprintf(o, "<td>%+.1f%%</td>", 100.0 * v);
}

static const char *tri(int v)
{
	return v < 0 ? "-" : v ? "yes" : "no";
}

/* A what-if figure's kind, as the text marks it ("" for a prediction). */
static const char *kind_word(const struct compare_row *r)
{
	return !strcmp(r->pred_kind, "restated") ? "restated" :
		!strcmp(r->pred_kind, "one_sided") ? "at most" : "";
}

/* Per VM (compare.vms): each VM's rows, A, B, the change and B as the
 * replay of A predicts it, marked as the what-if table marks it. */
static void compare_vms_html(FILE *o, const struct compare *c)
{
	const struct compare_row *r;
	int v, i;

	fprintf(o, "<h2>Per VM, each replayed alone</h2>\n<table><tr>"
		"<th>VM</th><th>metric</th><th>A</th><th>B</th><th>change"
		"</th><th>predicted</th><th>kind</th><th>error</th></tr>\n");
	for (v = 0; v < c->nvms; v++) {
		const struct compare *one = &c->vms[v];
		const char *proc = one->run[COMPARE_A][0].vm_procname;

		for (i = 0; i < one->nrows; i++) {
			r = &one->rows[i];
			if (!r->cell[COMPARE_A].n && !r->cell[COMPARE_B].n)
				continue;
			fprintf(o, "<tr><td>%d (", one->vm);
			report_html_esc(o, proc ? proc : "process unknown");
			fprintf(o, ")</td><td>");
			report_html_esc(o, r->label);
			fprintf(o, "</td>");
			compare_td(o, &r->cell[COMPARE_A], r->decimals);
			compare_td(o, &r->cell[COMPARE_B], r->decimals);
			pct_td(o, r->change);
			if (!r->has_pred)
				fprintf(o, "<td>-</td><td></td><td>-</td>");
			else if (!r->cell_pred.n)
				fprintf(o, "<td>not modelled</td><td></td>"
					"<td>-</td>");
			else {
				compare_td(o, &r->cell_pred, r->decimals);
				fprintf(o, "<td>%s</td>", kind_word(r));
				pct_td(o, r->pred_error);
			}
			fprintf(o, "</tr>\n");
		}
	}
	fprintf(o, "</table>\n<p class=\"note\">The tables above are the "
		"host's total; here each VM of every run alone, its own "
		"figures and its own replay, as --vm gives them.</p>\n");
}

void report_compare_html(FILE *o, const struct compare *c)
{
	const struct compare_row *r;
	int i, s, any = 0;

	fprintf(o, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta "
		"charset=\"utf-8\"><title>mmureplay compare</title>\n"
		"<style>\n%s</style></head><body>\n<h1>mmureplay compare</h1>"
		"\n<p>A: ", reports_report_css);
	report_html_esc(o, c->run[COMPARE_A][0].policy);
	fprintf(o, ", %d run%s; B: ", c->n[COMPARE_A],
		c->n[COMPARE_A] == 1 ? "" : "s");
	report_html_esc(o, c->run[COMPARE_B][0].policy);
	fprintf(o, ", %d run%s.  Kernel ", c->n[COMPARE_B],
		c->n[COMPARE_B] == 1 ? "" : "s");
	report_html_esc(o, c->run[COMPARE_A][0].kernel ?
			c->run[COMPARE_A][0].kernel : "unknown");
	fprintf(o, ", workload ");
	report_html_esc(o, c->run[COMPARE_A][0].workload ?
			c->run[COMPARE_A][0].workload : "unknown");
	fprintf(o, ".</p>\n<h2>Measured</h2>\n<table><tr><th>metric</th>"
		"<th>A</th><th>B</th><th>change</th><th>ranges overlap</th>"
		"</tr>\n");
	for (i = 0; i < c->nrows; i++) {
		r = &c->rows[i];
		if (!r->cell[COMPARE_A].n && !r->cell[COMPARE_B].n)
			continue;
		fprintf(o, "<tr><td>");
		report_html_esc(o, r->label);
		fprintf(o, "</td>");
		compare_td(o, &r->cell[COMPARE_A], r->decimals);
		compare_td(o, &r->cell[COMPARE_B], r->decimals);
		pct_td(o, r->change);
		fprintf(o, "<td>%s</td></tr>\n", tri(r->overlap));
	}
	fprintf(o, "</table>\n<p class=\"note\">Median (min-max) over the "
		"runs; rates per second of each run.  -: the runs' source "
		"cannot give the figure; overlap needs two runs a side.</p>\n"
		"<h2>What-if: B predicted from each A run (replay under ");
	report_html_esc(o, c->run[COMPARE_B][0].policy);
	fprintf(o, ")</h2>\n");
	for (i = 0; i < c->nrows; i++)
		any |= c->rows[i].has_pred;
	if (!any) {
		fprintf(o, "<p class=\"bad\">Withheld: no A run passed its "
			"self-check.</p>\n");
	} else {
		fprintf(o, "<table><tr><th>metric</th><th>predicted</th>"
			"<th>kind</th><th>B measured</th><th>error</th>"
			"<th>inside B's range</th></tr>\n");
		for (i = 0; i < c->nrows; i++) {
			r = &c->rows[i];
			if (!r->has_pred)
				continue;
			fprintf(o, "<tr><td>");
			report_html_esc(o, r->label);
			fprintf(o, "</td>");
			/* Never a not-modelled figure as a prediction. */
			if (!r->cell_pred.n)
				fprintf(o, "<td>not modelled</td>");
			else
				compare_td(o, &r->cell_pred, r->decimals);
			/* The kind, as the text says it. */
			fprintf(o, "<td>%s</td>", kind_word(r));
			compare_td(o, &r->cell[COMPARE_B], r->decimals);
			pct_td(o, r->pred_error);
			fprintf(o, "<td>%s</td></tr>\n", tri(r->pred_inside));
		}
		fprintf(o, "</table>\n");
	}
	if (c->nvms)
		compare_vms_html(o, c);
	fprintf(o, "<h2>Runs</h2>\n<table><tr><th>run</th><th>database</th>"
		"<th>seconds</th><th>self-check</th></tr>\n");
	for (s = 0; s < COMPARE_SIDES; s++)
		for (i = 0; i < c->n[s]; i++) {
			fprintf(o, "<tr><td>%c%d</td><td>", s ? 'B' : 'A', i + 1);
			report_html_esc(o, c->run[s][i].path);
			fprintf(o, "</td><td>%.2f</td><td class=\"%s\">%s</td>"
				"</tr>\n", c->run[s][i].duration_s,
				c->run[s][i].self_check_ok ? "ok" : "bad",
				c->run[s][i].self_check_ok ? "ok" : "FAILED");
		}
	fprintf(o, "</table>\n<p class=\"note\">Generated by mmureplay "
		"compare.</p>\n</body></html>\n");
}
