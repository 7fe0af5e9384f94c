/*
 * The summary as JSON (see report.h).  Key names are part of the
 * interface: tests and users' scripts read raw_event_counts, rates, ...
 */
#include "report/report.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>

static void add_str(cJSON *o, const char *k, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

static void add_int_or_null(cJSON *o, const char *k, int64_t v)
{
	if (v < 0)
		cJSON_AddNullToObject(o, k);
	else
		cJSON_AddNumberToObject(o, k, (double)v);
}

/* cJSON holds numbers as doubles: an epoch time in ns (> 2^53) would
 * come out rounded by up to a few hundred ns, so it is written as the
 * integer's own digits. */
static void add_int64_exact(cJSON *o, const char *k, int64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "%" PRId64, v);
	cJSON_AddRawToObject(o, k, buf);
}

static cJSON *dist_json(const struct latency_dist *d)
{
	cJSON *o = cJSON_CreateObject();
	char key[24];
	int k;

	cJSON_AddNumberToObject(o, "n", (double)d->n);
	for (k = 0; k < LAT_PCTS; k++) {
		snprintf(key, sizeof(key), "%s_ns", latency_pct_name[k]);
		cJSON_AddNumberToObject(o, key, (double)d->pct[k]);
	}
	cJSON_AddNumberToObject(o, "max_ns", (double)d->max);
	return o;
}

/* "latency": {"probes": {"0": {n, p50_ns, ...}}, "npf_service": {...}}. */
static void latency_json(cJSON *root, const struct latency *l)
{
	cJSON *o = cJSON_AddObjectToObject(root, "latency");
	cJSON *p = cJSON_AddObjectToObject(o, "probes");
	char key[24];
	int i;

	for (i = 0; i < l->nprobes; i++) {
		snprintf(key, sizeof(key), "%lld", (long long)l->probe_id[i]);
		cJSON_AddItemToObject(p, key, dist_json(&l->probe[i]));
	}
	cJSON_AddItemToObject(o, "npf_service", dist_json(&l->npf));
}

/* totals[key] and rates[key_per_s], null when the source cannot give
 * the figure. */
static void figure_json(cJSON *totals, cJSON *rates, const struct summary *s,
			enum coverage_figure f, int64_t n, double rate)
{
	const char *key = coverage_figure_keys[f];
	char rkey[64];

	snprintf(rkey, sizeof(rkey), "%s_per_s", key);
	if (coverage_gap(&s->cov, f)) {
		cJSON_AddNullToObject(totals, key);
		cJSON_AddNullToObject(rates, rkey);
		return;
	}
	cJSON_AddNumberToObject(totals, key, (double)n);
	cJSON_AddNumberToObject(rates, rkey, rate);
}
/* The faults of each vCPU of VM vm (-1: of every VM, vCPU n's summed)
 * into o, keyed by vCPU id ("unknown": the source does not say). */
static void vcpu_faults_json(cJSON *o, const struct summary *s, int64_t vm)
{
	char key[32];
	cJSON *have;
	int i;

	for (i = 0; i < s->nvcpus; i++) {
		if (vm >= 0 && s->vcpus[i].vm != vm)
			continue;
		if (s->vcpus[i].vcpu < 0)
			snprintf(key, sizeof(key), "unknown");
		else
			snprintf(key, sizeof(key), "%lld",
				 (long long)s->vcpus[i].vcpu);
		have = cJSON_GetObjectItemCaseSensitive(o, key);
		if (have)
			cJSON_SetNumberValue(have, have->valuedouble +
					     (double)s->vcpus[i].faults);
		else
			cJSON_AddNumberToObject(o, key,
						(double)s->vcpus[i].faults);
	}
}


char *report_summary_json(const struct summary *s, const char *db_path)
{
	cJSON *root = cJSON_CreateObject(), *o, *a, *t;
	char *out;
	int i;

	if (!root)
		return NULL;
	report_json_schema_add(root, REPORT_JSON_SUMMARY);
	add_str(root, "database", db_path);
	cJSON_AddNumberToObject(root, "events", (double)s->events);
	cJSON_AddNumberToObject(root, "duration_s", s->duration_s);
	add_int64_exact(root, "ts_base_ns", s->ts_base_ns);
	cJSON_AddBoolToObject(root, "truncated", s->truncated);
	add_str(root, "truncated_reason", s->truncated_reason);
	o = cJSON_AddObjectToObject(root, "source");
	add_str(o, "format", s->source_format);
	add_str(o, "tracer", s->source_tracer);
	add_str(o, "events", s->source_events);
	add_str(o, "lossy", s->source_lossy);
	cJSON_AddNumberToObject(o, "ts_resolution_ns",
				(double)s->ts_resolution_ns);
	cJSON_AddNumberToObject(o, "duplicates_dropped",
				(double)s->source_duplicates);
	o = cJSON_AddObjectToObject(root, "spte_format");
	add_str(o, "name", s->spte_format);
	cJSON_AddBoolToObject(o, "detected", s->spte_format_detected);
	add_str(o, "source", s->isa_source);
	cJSON_AddBoolToObject(root, "began_mid_run", s->began_mid_run);
	o = cJSON_AddObjectToObject(root, "fault_access");
	for (i = 0; i < MEV_ACCESS_KINDS; i++)
		cJSON_AddNumberToObject(o, mev_access_name((enum mev_access)i),
					(double)s->fault_access[i]);
	cJSON_AddNumberToObject(o, "present", (double)s->faults_present);

	o = cJSON_AddObjectToObject(root, "raw_event_counts");
	for (i = 0; i < s->nraw; i++)
		cJSON_AddNumberToObject(o, s->raw[i].name,
					(double)s->raw[i].count);
	o = cJSON_AddObjectToObject(root, "raw_event_mapping");
	for (i = 0; i < s->nraw; i++)
		add_str(o, s->raw[i].name, s->raw[i].canonical);
	a = cJSON_AddArrayToObject(root, "unmapped_known_events");
	for (i = 0; i < s->nraw; i++) {
		if (!s->raw[i].note)
			continue;
		t = cJSON_CreateObject();
		add_str(t, "name", s->raw[i].name);
		add_str(t, "reason", s->raw[i].note);
		cJSON_AddItemToArray(a, t);
	}
	o = cJSON_AddObjectToObject(root, "canonical_counts");
	for (i = 0; i < s->ncanon; i++)
		cJSON_AddNumberToObject(o, s->canon[i].name,
					(double)s->canon[i].count);

	o = cJSON_AddObjectToObject(root, "lost");
	cJSON_AddNumberToObject(o, "events", (double)s->lost_events);
	cJSON_AddNumberToObject(o, "packets", (double)s->lost_packets);
	a = cJSON_AddArrayToObject(o, "records");
	for (i = 0; i < s->nlost; i++) {
		t = cJSON_CreateObject();
		cJSON_AddNumberToObject(t, "stream_id",
					(double)s->lost[i].stream_id);
		add_str(t, "stream", s->lost[i].stream);
		add_str(t, "kind", s->lost[i].kind);
		add_int_or_null(t, "begin_ts", s->lost[i].begin_ts);
		add_int_or_null(t, "end_ts", s->lost[i].end_ts);
		add_int_or_null(t, "count", s->lost[i].count);
		cJSON_AddItemToArray(a, t);
	}

	o = cJSON_AddObjectToObject(root, "totals");
	t = cJSON_AddObjectToObject(root, "rates");
	figure_json(o, t, s, COVERAGE_FAULTS, s->faults, s->faults_per_s);
	figure_json(o, t, s, COVERAGE_LEAF_ZAPS, s->leaf_zaps,
		    s->leaf_zaps_per_s);
	figure_json(o, t, s, COVERAGE_INVALIDATIONS, s->invalidations,
		    s->invalidations_per_s);
	/* Each figure: measured, or unknown and why (metrics/coverage.h). */
	o = cJSON_AddObjectToObject(root, "basis");
	t = cJSON_AddObjectToObject(root, "unknown");
	for (i = 0; i < COVERAGE_FIGURES; i++) {
		const char *gap = coverage_gap(&s->cov, (enum coverage_figure)i);

		cJSON_AddStringToObject(o, coverage_figure_keys[i],
					gap ? "unknown" : "measured");
		if (gap)
			cJSON_AddStringToObject(t, coverage_figure_keys[i], gap);
	}
	o = cJSON_AddObjectToObject(root, "stats_rates");
	if (s->stats_pf_per_s >= 0)
		cJSON_AddNumberToObject(o, "pf_taken_per_s", s->stats_pf_per_s);
	else
		cJSON_AddNullToObject(o, "pf_taken_per_s");
	if (s->stats_tlb_per_s >= 0)
		cJSON_AddNumberToObject(o, "remote_tlb_flush_per_s",
					s->stats_tlb_per_s);
	else
		cJSON_AddNullToObject(o, "remote_tlb_flush_per_s");
	latency_json(root, &s->latency);
	a = cJSON_AddArrayToObject(root, "kvm_counters_vs_trace");
	for (i = 0; i < SUMMARY_COUNTER_CHECKS; i++) {
		const struct summary_counter_check *c = &s->counters[i];

		if (c->counter_delta < 0)
			continue;
		t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "counter", c->counter);
		cJSON_AddStringToObject(t, "table", c->table);
		cJSON_AddNumberToObject(t, "counter_delta",
					(double)c->counter_delta);
		cJSON_AddNumberToObject(t, "events", (double)c->events);
		cJSON_AddItemToArray(a, t);
	}
	/* Every VM's vCPU n together (each VM's apart in vms[]). */
	o = cJSON_AddObjectToObject(root, "per_vcpu_faults");
	vcpu_faults_json(o, s, -1);

	if (s->narrowed_vm)
		cJSON_AddNumberToObject(root, "narrowed_vm", s->narrowed_vm);
	a = cJSON_AddArrayToObject(root, "vms");
	for (i = 0; i < s->nvms; i++) {
		const struct summary_vm *v = &s->vms[i];
		cJSON *e;

		if (s->narrowed_vm && v->id != s->narrowed_vm)
			continue;
		e = cJSON_CreateObject();

		cJSON_AddItemToArray(a, e);
		cJSON_AddNumberToObject(e, "vm", (double)v->id);
		cJSON_AddNumberToObject(e, "pid", (double)v->pid);
		if (v->procname)
			cJSON_AddStringToObject(e, "procname", v->procname);
		else
			cJSON_AddNullToObject(e, "procname");
		if (v->created_ts >= 0)
			cJSON_AddNumberToObject(e, "created_s",
						(double)v->created_ts / 1e9);
		else
			cJSON_AddNullToObject(e, "created_s");
		if (v->destroyed_ts >= 0)
			cJSON_AddNumberToObject(e, "destroyed_s",
						(double)v->destroyed_ts / 1e9);
		else
			cJSON_AddNullToObject(e, "destroyed_s");
		cJSON_AddBoolToObject(e, "kernel_named", v->kernel_named);
		cJSON_AddNumberToObject(e, "vcpus", (double)v->vcpus);
		cJSON_AddNumberToObject(e, "faults", (double)v->faults);
		cJSON_AddNumberToObject(e, "leaf_zaps", (double)v->leaf_zaps);
		vcpu_faults_json(cJSON_AddObjectToObject(e, "per_vcpu_faults"),
				 s, v->id);
	}
	a = cJSON_AddArrayToObject(root, "sources");
	for (i = 0; i < s->nsources; i++) {
		const struct summary_source *src = &s->sources[i];
		cJSON *e = cJSON_CreateObject();

		cJSON_AddItemToArray(a, e);
		cJSON_AddStringToObject(e, "thread", src->procname);
		if (src->vm)
			cJSON_AddNumberToObject(e, "vm", (double)src->vm);
		else
			cJSON_AddNullToObject(e, "vm");
		cJSON_AddNumberToObject(e, "invalidations",
					(double)src->invalidations);
		cJSON_AddNumberToObject(e, "leaf_zaps", (double)src->leaf_zaps);
	}
	a = cJSON_AddArrayToObject(root, "sources_per_second");
	for (i = 0; i < s->nsource_seconds; i++) {
		const struct summary_source_second *q = &s->source_seconds[i];
		cJSON *e = cJSON_CreateObject();

		cJSON_AddItemToArray(a, e);
		cJSON_AddNumberToObject(e, "second", (double)q->second);
		cJSON_AddNumberToObject(e, "source", q->source);
		cJSON_AddNumberToObject(e, "invalidations",
					(double)q->invalidations);
		cJSON_AddNumberToObject(e, "leaf_zaps", (double)q->leaf_zaps);
	}
	o = cJSON_AddObjectToObject(root, "notifier_events");
	for (i = 0; i < SUMMARY_NOTIFY_KINDS; i++)
		if (s->notifier_events[i] >= 0)
			cJSON_AddNumberToObject(o, summary_notify_names[i],
						(double)s->notifier_events[i]);
	o = cJSON_AddObjectToObject(root, "vm_attribution");
	if (s->vm_attribution)
		cJSON_AddStringToObject(o, "source", s->vm_attribution);
	else
		cJSON_AddNullToObject(o, "source");
	cJSON_AddNumberToObject(o, "rows_unattributed",
				(double)s->rows_unattributed);
	cJSON_AddNumberToObject(o, "faults_no_vm", (double)s->novm_faults);
	cJSON_AddNumberToObject(o, "leaf_zaps_no_vm",
				(double)s->novm_leaf_zaps);

	a = cJSON_AddArrayToObject(root, "traces");
	for (i = 0; i < s->ntraces; i++) {
		const struct summary_trace *tr = &s->traces[i];

		t = cJSON_CreateObject();
		add_str(t, "path", tr->path);
		add_str(t, "hostname", tr->hostname);
		add_str(t, "domain", tr->domain);
		add_str(t, "kernel_release", tr->kernel_release);
		add_str(t, "kernel_version", tr->kernel_version);
		add_str(t, "tracer_name", tr->tracer_name);
		add_str(t, "tracer_version", tr->tracer_version);
		add_str(t, "trace_name", tr->trace_name);
		add_str(t, "creation_datetime", tr->creation);
		cJSON_AddItemToArray(a, t);
	}
	out = cJSON_Print(root);
	cJSON_Delete(root);
	return out;
}
