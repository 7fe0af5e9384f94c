/*
 * Latency spikes and the MMU activity in their windows, as a text table
 * for a mail and as JSON (see report.h).
 */
#include "report/report.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>

static double pct(int64_t k, int64_t n)
{
	return n ? 100.0 * (double)k / (double)n : 0.0;
}

static void activity_list(char *buf, size_t len, unsigned bits)
{
	size_t off = 0;
	int a;

	buf[0] = 0;
	for (a = 0; a < SPIKE_ACTIVITIES && off < len; a++)
		if (bits & (1U << a))
			off += (size_t)snprintf(buf + off, len - off, "%s%s",
						off ? "," : "",
						spike_activity_name[a]);
	if (!bits)
		snprintf(buf, len, "-");
}

/* A VM's name in the tables: its id, "-" for no VM's. */
static void vm_name(char *buf, size_t len, int vm)
{
	if (vm)
		snprintf(buf, len, "%d", vm);
	else
		snprintf(buf, len, "-");
}

int spikes_per_vm(const struct spikes *s)
{
	return s->samples && s->nvms > 1 && !s->narrowed_vm;
}

/* Each VM's samples and spikes at the capture's thresholds, then the
 * host's total. */
static void vms_text(FILE *out, const struct spikes *s)
{
	char a[32], b[32], c[32], d[32], v[16];
	int i;

	fprintf(out, "  %-6s %10s %9s %10s %10s\n", "VM", "samples",
		"spikes", "p99 us", "max us");
	fprintf(out, "  %-6s %10s %9s %10s %10s\n", "------", "----------",
		"---------", "----------", "----------");
	for (i = 1; i <= s->nvms; i++) {
		const struct spikes_vm *r = &s->vms[i % s->nvms];

		if (i == s->nvms && !r->samples)
			break;          /* no sample of no VM */
		vm_name(v, sizeof(v), i % s->nvms);
		/* A VM without a probe has no percentile: "-". */
		report_fmt_num(c, sizeof(c), r->samples ?
			       (double)r->p99_ns / 1e3 : NAN, 1);
		report_fmt_num(d, sizeof(d), r->samples ?
			       (double)r->max_ns / 1e3 : NAN, 1);
		fprintf(out, "  %-6s %10s %9s %10s %10s\n", v,
			report_fmt_count(a, sizeof(a), r->samples),
			report_fmt_count(b, sizeof(b), r->spikes), c, d);
	}
	fprintf(out, "  %-6s %10s %9s\n\n", "host",
		report_fmt_count(a, sizeof(a), s->samples),
		report_fmt_count(b, sizeof(b), s->spikes));
}

void report_spikes_text(FILE *out, const struct spikes *s,
			const char *db_path)
{
	char a[32], b[32], list[128];
	int i;

	fprintf(out, "Latency spikes of %s: %s of %s probe samples at or "
		"above ", db_path, report_fmt_count(a, sizeof(a), s->spikes),
		report_fmt_count(b, sizeof(b), s->samples));
	if (s->threshold_ns)
		fprintf(out, "%.1f us\n\n", (double)s->threshold_ns / 1e3);
	if (s->narrowed_vm)
		fprintf(out, "  VM %d alone (--vm): its samples; the activity "
			"of its process's threads\n  and of threads in no VM's "
			"process (kernel threads)\n\n", s->narrowed_vm);
	else
		fprintf(out, "their probe phase's p99\n\n");
	if (!s->samples) {
		fprintf(out, "  No mmureplay:latency_sample events in this "
			"capture.\n");
		return;
	}
	fprintf(out, "  %-26s %9s %9s\n", "activity in the window", "spikes",
		"others");
	fprintf(out, "  %-26s %9s %9s\n", "--------------------------",
		"---------", "---------");
	for (i = 0; i < SPIKE_ACTIVITIES; i++)
		fprintf(out, "  %-26s %8.1f%% %8.1f%%\n",
			spike_activity_name[i], pct(s->with[i], s->spikes),
			pct(s->baseline_with[i], s->baseline_n));
	fprintf(out, "  %-26s %8.1f%% %8.1f%%\n", "none of these",
		pct(s->with_none, s->spikes),
		pct(s->baseline_none, s->baseline_n));
	fprintf(out, "\n  (others: %s samples below the threshold, every "
		"k-th one)\n\n", report_fmt_count(a, sizeof(a), s->baseline_n));
	if (spikes_per_vm(s))
		vms_text(out, s);
	if (!s->ntop)
		return;
	/* The VM column where the capture tells VMs apart. */
	fprintf(out, "  %12s %s%6s %11s %10s  %s\n", "time s",
		s->nvms > 1 ? "  VM " : "", "probe", "latency us", "gfn",
		"activity");
	fprintf(out, "  %12s %s%6s %11s %10s  %s\n", "------------",
		s->nvms > 1 ? "---- " : "", "------", "-----------",
		"----------", "--------");
	for (i = 0; i < s->ntop; i++) {
		activity_list(list, sizeof(list), s->top[i].activity);
		vm_name(a, sizeof(a), s->top[i].vm);
		fprintf(out, "  %12.6f ", (double)s->top[i].ts / 1e9);
		if (s->nvms > 1)
			fprintf(out, "%4s ", a);
		fprintf(out, "%6" PRId64 " %11.1f %#10" PRIx64 "  %s\n",
			s->top[i].probe, (double)s->top[i].ns / 1e3,
			s->top[i].gfn, list);
	}
}

static cJSON *activity_json(const int64_t *with, int64_t none, int64_t n)
{
	cJSON *o = cJSON_CreateObject();
	int i;

	cJSON_AddNumberToObject(o, "n", (double)n);
	for (i = 0; i < SPIKE_ACTIVITIES; i++)
		cJSON_AddNumberToObject(o, spike_activity_name[i],
					(double)with[i]);
	cJSON_AddNumberToObject(o, "none", (double)none);
	return o;
}

char *report_spikes_json(const struct spikes *s, const char *db_path)
{
	cJSON *root = cJSON_CreateObject(), *a, *t, *l;
	char *out;
	int i, k;

	if (!root)
		return NULL;
	report_json_schema_add(root, REPORT_JSON_SPIKES);
	cJSON_AddStringToObject(root, "database", db_path);
	cJSON_AddNumberToObject(root, "samples", (double)s->samples);
	cJSON_AddNumberToObject(root, "spikes", (double)s->spikes);
	if (s->narrowed_vm)
		cJSON_AddNumberToObject(root, "narrowed_vm", s->narrowed_vm);
	if (s->threshold_ns)
		cJSON_AddNumberToObject(root, "threshold_ns",
					(double)s->threshold_ns);
	else
		cJSON_AddStringToObject(root, "threshold_ns", "p99 per probe");
	cJSON_AddNumberToObject(root, "slack_ns", SPIKES_SLACK_NS);
	cJSON_AddItemToObject(root, "spike_activity",
			      activity_json(s->with, s->with_none, s->spikes));
	cJSON_AddItemToObject(root, "other_activity",
			      activity_json(s->baseline_with, s->baseline_none,
					    s->baseline_n));
	a = cJSON_AddArrayToObject(root, "vms");
	for (i = 0; i < s->nvms && s->samples; i++) {
		if ((!i && !s->vms[0].samples) ||
		    (i && s->narrowed_vm && i != s->narrowed_vm))
			continue;
		t = cJSON_CreateObject();
		if (i)
			cJSON_AddNumberToObject(t, "vm", i);
		else
			cJSON_AddNullToObject(t, "vm");
		cJSON_AddNumberToObject(t, "samples",
					(double)s->vms[i].samples);
		cJSON_AddNumberToObject(t, "spikes", (double)s->vms[i].spikes);
		cJSON_AddNumberToObject(t, "p99_ns", (double)s->vms[i].p99_ns);
		cJSON_AddNumberToObject(t, "max_ns", (double)s->vms[i].max_ns);
		cJSON_AddItemToArray(a, t);
	}
	a = cJSON_AddArrayToObject(root, "top");
	for (i = 0; i < s->ntop; i++) {
		t = cJSON_CreateObject();
		cJSON_AddNumberToObject(t, "seq", (double)s->top[i].seq);
		if (s->top[i].vm)
			cJSON_AddNumberToObject(t, "vm", s->top[i].vm);
		else
			cJSON_AddNullToObject(t, "vm");
		cJSON_AddNumberToObject(t, "ts_ns", (double)s->top[i].ts);
		cJSON_AddNumberToObject(t, "probe", (double)s->top[i].probe);
		cJSON_AddNumberToObject(t, "ns", (double)s->top[i].ns);
		cJSON_AddNumberToObject(t, "gfn", (double)s->top[i].gfn);
		l = cJSON_AddArrayToObject(t, "activity");
		for (k = 0; k < SPIKE_ACTIVITIES; k++)
			if (s->top[i].activity & (1U << k))
				cJSON_AddItemToArray(l, cJSON_CreateString(
					spike_activity_name[k]));
		cJSON_AddItemToArray(a, t);
	}
	out = cJSON_Print(root);
	cJSON_Delete(root);
	return out;
}
