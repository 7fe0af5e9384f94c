/*
 * Two runs' workload phases side by side (see report.h): the spikes of
 * A against what B did in the same phase.
 */
#include "report/report.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>

void report_phases_text(FILE *out, const struct phases *a,
			const struct phases *b, const char *b_path)
{
	static const struct phase_stats none;
	char c[8][32];
	int i;

	fprintf(out, "\nAgainst %s\n", b_path);
	if (a->threshold_ns)
		fprintf(out, "by workload phase: probe samples at or above "
			"%.1f us, the phase's p99,\nand each run's MMU "
			"activity in it (T: the threshold)\n",
			(double)a->threshold_ns / 1e3);
	else
		fprintf(out, "by workload phase: no probe samples; each run's "
			"MMU activity in it\n");
	fprintf(out, "  %5s %6s %6s %8s %8s %8s %8s %6s %6s\n", "phase",
		"A >=T", "B >=T", "A p99us", "B p99us", "A faults",
		"B faults", "A zaps", "B zaps");
	fprintf(out, "  ----- ------ ------ -------- -------- -------- "
		"-------- ------ ------\n");
	for (i = 0; i < a->n; i++) {
		const struct phase_stats *pa = &a->p[i];
		const struct phase_stats *pb = phases_find(b, pa->id);

		if (!pb)
			pb = &none;
		fprintf(out, "  %5d %6s %6s %8.1f %8.1f %8s %8s %6s %6s%s\n",
			pa->id,
			report_fmt_count(c[0], sizeof(c[0]), pa->at_least),
			report_fmt_count(c[1], sizeof(c[1]), pb->at_least),
			(double)pa->p99_ns / 1e3, (double)pb->p99_ns / 1e3,
			report_fmt_count(c[2], sizeof(c[2]), pa->faults),
			report_fmt_count(c[3], sizeof(c[3]), pb->faults),
			report_fmt_count(c[4], sizeof(c[4]), pa->leaf_zaps),
			report_fmt_count(c[5], sizeof(c[5]), pb->leaf_zaps),
			pb == &none ? " (no B)" : "");
	}
}

static cJSON *phase_json(const struct phase_stats *p)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "begin_ts", (double)p->begin_ts);
	cJSON_AddNumberToObject(o, "end_ts", (double)p->end_ts);
	cJSON_AddNumberToObject(o, "samples", (double)p->samples);
	cJSON_AddNumberToObject(o, "at_least", (double)p->at_least);
	cJSON_AddNumberToObject(o, "p99_ns", (double)p->p99_ns);
	cJSON_AddNumberToObject(o, "faults", (double)p->faults);
	cJSON_AddNumberToObject(o, "leaf_zaps", (double)p->leaf_zaps);
	cJSON_AddNumberToObject(o, "invalidations", (double)p->invalidations);
	return o;
}

void report_phases_json_add(struct cJSON *root, const struct phases *a,
			    const struct phases *b, const char *b_path)
{
	cJSON *o = cJSON_AddObjectToObject(root, "against"), *arr, *p;
	const struct phase_stats *pb;
	int i;

	cJSON_AddStringToObject(o, "database", b_path);
	cJSON_AddNumberToObject(o, "threshold_ns", (double)a->threshold_ns);
	arr = cJSON_AddArrayToObject(o, "phases");
	for (i = 0; i < a->n; i++) {
		p = cJSON_CreateObject();
		cJSON_AddNumberToObject(p, "phase", a->p[i].id);
		cJSON_AddItemToObject(p, "a", phase_json(&a->p[i]));
		pb = phases_find(b, a->p[i].id);
		if (pb)
			cJSON_AddItemToObject(p, "b", phase_json(pb));
		else
			cJSON_AddNullToObject(p, "b");
		cJSON_AddItemToArray(arr, p);
	}
}
