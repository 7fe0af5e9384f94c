/*
 * The summary as text tables for a terminal or a mail (see report.h).
 */
#include "report/report.h"

#include <stdio.h>
#include <string.h>

static const char *nz(const char *s)
{
	return s ? s : "-";
}

/* A latency row: count, nearest-rank percentiles and max, in us. */
static void dist_row(void *arg, const char *name,
		     const struct latency_dist *d)
{
	FILE *out = arg;
	char a[32];
	int k;

	fprintf(out, "  %-26s %12s", name, report_fmt_count(a, sizeof(a),
							    d->n));
	for (k = 0; k < LAT_PCTS; k++)
		fprintf(out, " %9.1f", (double)d->pct[k] / 1e3);
	fprintf(out, " %9.1f\n", (double)d->max / 1e3);
}

static void latency_text(FILE *out, const struct latency *l)
{
	int k;

	if (!l->nprobes && !l->npf.n)
		return;
	fprintf(out, "  %-26s %12s", "latency (us)", "samples");
	for (k = 0; k < LAT_PCTS; k++)
		fprintf(out, " %9s", latency_pct_name[k]);
	fprintf(out, " %9s\n  %-26s %12s", "max",
		"--------------------------", "------------");
	for (k = 0; k <= LAT_PCTS; k++)
		fprintf(out, " %9s", "---------");
	fputc('\n', out);
	report_latency_each(l, dist_row, out);
	fputc('\n', out);
}

/* KVM's counters against the trace's events (stats sampled, one VM). */
static void counters_text(FILE *out, const struct summary *s)
{
	char a[32], b[32], name[64];
	int i, any = 0;

	for (i = 0; i < SUMMARY_COUNTER_CHECKS; i++) {
		const struct summary_counter_check *c = &s->counters[i];

		if (c->counter_delta < 0)
			continue;
		if (!any++)
			fprintf(out, "  %-38s %12s %12s\n  %-38s %12s %12s\n",
				"KVM counter vs trace (sampled time)",
				"counter", "events",
				"--------------------------------------",
				"------------", "------------");
		snprintf(name, sizeof(name), "%s / %s", c->counter, c->table);
		fprintf(out, "  %-38s %12s %12s%s\n", name,
			report_fmt_count(a, sizeof(a), c->counter_delta),
			report_fmt_count(b, sizeof(b), c->events),
			c->counter_delta == c->events ? "" : "  <-");
	}
	if (any)
		fputc('\n', out);
}

/* "  unknown KEY: GAP", wrapped at 72 columns, continued indented. */
static void gap_text(FILE *out, const char *key, const char *gap)
{
	char line[512];
	const char *p;
	size_t len, width = 72;
	int first = 1;

	snprintf(line, sizeof(line), "unknown %s: %s", key, gap);
	for (p = line; *p; p += len) {
		width = first ? 72 - 2 : 72 - 4;
		len = strlen(p);
		if (len > width) {
			len = width;
			while (len > 0 && p[len] != ' ')
				len--;
			if (!len)
				len = width;
		}
		fprintf(out, "%s%.*s\n", first ? "  " : "    ", (int)len, p);
		while (p[len] == ' ')
			len++;
		first = 0;
	}
}

/* A count and rate, or "unknown" when the source cannot give them. */
static void metric_row(FILE *out, const struct summary *s, const char *name,
		       enum coverage_figure f, int64_t n, double rate)
{
	char a[32];

	if (coverage_gap(&s->cov, f))
		fprintf(out, "  %-26s %12s %12s\n", name, "unknown", "unknown");
	else
		fprintf(out, "  %-26s %12s %12.1f\n", name,
			report_fmt_count(a, sizeof(a), n), rate);
}

void report_summary_text(FILE *out, const struct summary *s,
			 const char *db_path)
{
	char a[32], b[32], c[32], d[32];
	int i;

	fprintf(out, "Capture %s: %s events over %.3f s%s\n", db_path,
		report_fmt_count(a, sizeof(a), s->events), s->duration_s,
		s->truncated ? " (TRUNCATED: the trace breaks here)" : "");
	if (s->truncated && s->truncated_reason)
		fprintf(out, "  truncated: %s\n", s->truncated_reason);
	if (s->narrowed_vm)
		fprintf(out, "  VM %d alone (--vm): the events of its process's "
			"threads; kernel threads'\n  work (in no VM's process) "
			"left out; events and raw counts are the\n  capture's\n",
			s->narrowed_vm);
	if (s->source_format)
		fprintf(out, "  source: %s from %s, timestamps to %s\n",
			s->source_format, nz(s->source_tracer),
			s->ts_resolution_ns >= 1000 ? "the microsecond "
			"(text resolution)" : "the nanosecond");
	if (s->source_lossy)
		fprintf(out, "  not in the text: %s\n", s->source_lossy);
	if (s->source_duplicates)
		fprintf(out, "  records the tracer wrote twice, dropped: %lld\n",
			(long long)s->source_duplicates);
	for (i = 0; i < s->ntraces; i++) {
		const struct summary_trace *t = &s->traces[i];

		fprintf(out, "  trace %s: %s, host %s, %s %s, %s %s\n",
			nz(t->path), nz(t->domain), nz(t->hostname),
			nz(t->kernel_release), nz(t->kernel_version),
			nz(t->tracer_name), nz(t->tracer_version));
	}
	fprintf(out, "  lost: %s events, %s packets%s\n",
		report_fmt_count(a, sizeof(a), s->lost_events),
		report_fmt_count(b, sizeof(b), s->lost_packets),
		s->nlost ? " (see lost records in --json)" : "");
	fprintf(out, "  SPTE format: %s (%s)\n", s->spte_format,
		!s->spte_format_detected ? "assumed" :
		strcmp(s->isa_source, "manifest") == 0 ?
		"from the manifest's CPU vendor" : "from the exit ISA");
	if (s->began_mid_run)
		fprintf(out, "  began mid-run: the VM ran before the capture "
			"began (its root table's\n  allocation is not traced); "
			"'mmureplay fidelity' says what that leaves\n  "
			"unknown\n");
	if (s->faults)
		fprintf(out, "  faults by access: read %s, write %s, fetch %s "
			"(%s on present entries)\n",
			report_fmt_count(a, sizeof(a),
					 s->fault_access[MEV_ACCESS_READ]),
			report_fmt_count(b, sizeof(b),
					 s->fault_access[MEV_ACCESS_WRITE]),
			report_fmt_count(c, sizeof(c),
					 s->fault_access[MEV_ACCESS_FETCH]),
			report_fmt_count(d, sizeof(d), s->faults_present));
	fputc('\n', out);

	fprintf(out, "  %-26s %12s %12s\n", "metric", "count", "per sec");
	fprintf(out, "  %-26s %12s %12s\n", "--------------------------",
		"------------", "------------");
	metric_row(out, s, "NPF faults", COVERAGE_FAULTS, s->faults,
		   s->faults_per_s);
	metric_row(out, s, "leaf zaps", COVERAGE_LEAF_ZAPS, s->leaf_zaps,
		   s->leaf_zaps_per_s);
	metric_row(out, s, "notifier invalidations", COVERAGE_INVALIDATIONS,
		   s->invalidations, s->invalidations_per_s);
	if (s->stats_pf_per_s >= 0)
		fprintf(out, "  %-26s %12s %12.1f\n", "pf_taken (KVM stats)", "",
			s->stats_pf_per_s);
	if (s->stats_tlb_per_s >= 0)
		fprintf(out, "  %-26s %12s %12.1f\n", "remote_tlb_flush (stats)",
			"", s->stats_tlb_per_s);
	for (i = 0; i < COVERAGE_FIGURES; i++)
		if (coverage_gap(&s->cov, (enum coverage_figure)i))
			gap_text(out, coverage_figure_keys[i],
				 coverage_gap(&s->cov, (enum coverage_figure)i));
	fputc('\n', out);

	latency_text(out, &s->latency);
	counters_text(out, s);
	if (s->nvcpus) {
		/* Several VMs: each has its vCPU 0. */
		int by_vm = s->nvms >= 2;

		fprintf(out, "  %-26s %12s\n", by_vm ? "vm   vCPU" : "vCPU",
			"NPF faults");
		fprintf(out, "  %-26s %12s\n", "--------------------------",
			"------------");
		for (i = 0; i < s->nvcpus; i++) {
			/* Room for any 64-bit id in both: "-9223372036854775808 ". */
			char vm[24] = "", who[48];

			if (by_vm && s->vcpus[i].vm)
				snprintf(vm, sizeof(vm), "%-4lld ",
					 (long long)s->vcpus[i].vm);
			else if (by_vm)
				snprintf(vm, sizeof(vm), "none ");
			if (s->vcpus[i].vcpu < 0)
				snprintf(who, sizeof(who), "%sunknown", vm);
			else
				snprintf(who, sizeof(who), "%s%lld", vm,
					 (long long)s->vcpus[i].vcpu);
			fprintf(out, "  %-26s %12s\n", who,
				report_fmt_count(a, sizeof(a),
						 s->vcpus[i].faults));
		}
		fputc('\n', out);
	}

	if (s->nvms) {
		fprintf(out, "  %4s %7s %-15s %10s %6s %12s %12s\n", "vm",
			"pid", "process", "created", "vCPUs", "NPF faults",
			"leaf zaps");
		fprintf(out, "  %4s %7s %-15s %10s %6s %12s %12s\n", "----",
			"-------", "---------------", "----------", "------",
			"------------", "------------");
		for (i = 0; i < s->nvms; i++) {
			const struct summary_vm *v = &s->vms[i];

			if (s->narrowed_vm && v->id != s->narrowed_vm)
				continue;
			if (v->created_ts >= 0)
				snprintf(c, sizeof(c), "%.3f s",
					 (double)v->created_ts / 1e9);
			else
				snprintf(c, sizeof(c), "before");
			fprintf(out, "  %4lld %7lld %-15.15s %10s %6lld %12s "
				"%12s\n", (long long)v->id, (long long)v->pid,
				v->procname ? v->procname : "?", c,
				(long long)v->vcpus,
				report_fmt_count(a, sizeof(a), v->faults),
				report_fmt_count(d, sizeof(d), v->leaf_zaps));
		}
		if (!s->narrowed_vm) {
			fprintf(out, "  %4s %7s %-15s %10s %6s %12s %12s\n",
				"none", "", "", "", "",
				report_fmt_count(a, sizeof(a), s->novm_faults),
				report_fmt_count(c, sizeof(c),
						 s->novm_leaf_zaps));
			fprintf(out, "  (none: rows of threads in no VM's "
				"process, %s in all: kernel threads' work,\n  "
				"which the replay gives the VM whose state it "
				"changes)\n", report_fmt_count(
					b, sizeof(b), s->rows_unattributed));
		}
		fputc('\n', out);
	} else if (s->vm_attribution &&
		   strcmp(s->vm_attribution, "none") == 0) {
		fprintf(out, "  VMs: the trace gives no process (no pid "
			"context): one host-wide state\n\n");
	}
	if (s->nsources) {
		fprintf(out, "  %-15s %4s %14s %12s\n", "thread", "vm",
			"invalidations", "leaf zaps");
		fprintf(out, "  %-15s %4s %14s %12s\n", "---------------",
			"----", "--------------", "------------");
		for (i = 0; i < s->nsources; i++) {
			const struct summary_source *src = &s->sources[i];

			if (src->vm)
				snprintf(b, sizeof(b), "%lld",
					 (long long)src->vm);
			else
				snprintf(b, sizeof(b), "-");
			fprintf(out, "  %-15.15s %4s %14s ", src->procname, b,
				report_fmt_count(a, sizeof(a),
						 src->invalidations));
			fprintf(out, "%12s\n", report_fmt_count(a, sizeof(a),
							      src->leaf_zaps));
		}
		for (i = 0; i < SUMMARY_NOTIFY_KINDS; i++)
			if (s->notifier_events[i] >= 0)
				break;
		if (i < SUMMARY_NOTIFY_KINDS) {
			fprintf(out, "  invalidations by notifier event "
				"(patched kernel):");
			for (; i < SUMMARY_NOTIFY_KINDS; i++)
				if (s->notifier_events[i] >= 0)
					fprintf(out, " %s %s",
						summary_notify_names[i],
						report_fmt_count(a, sizeof(a),
							s->notifier_events[i]));
			fputc('\n', out);
		}
		fputc('\n', out);
	}
	fprintf(out, "  %-26s %12s\n", "canonical event", "count");
	fprintf(out, "  %-26s %12s\n", "--------------------------",
		"------------");
	for (i = 0; i < s->ncanon; i++)
		if (s->canon[i].count)
			fprintf(out, "  %-26s %12s\n", s->canon[i].name,
				report_fmt_count(a, sizeof(a),
						 s->canon[i].count));
	fputc('\n', out);

	fprintf(out, "  %-32s %12s  %s\n", "raw event", "count", "maps to");
	fprintf(out, "  %-32s %12s  %s\n", "--------------------------------",
		"------------", "---------------");
	for (i = 0; i < s->nraw; i++)
		fprintf(out, "  %-32s %12s  %s\n", s->raw[i].name,
			report_fmt_count(a, sizeof(a), s->raw[i].count),
			s->raw[i].note ? "(not mapped: see note)" :
			nz(s->raw[i].canonical));
	for (i = 0; i < s->nraw; i++)
		if (s->raw[i].note)
			fprintf(out, "  note: %s: %s\n", s->raw[i].name,
				s->raw[i].note);
}
