/*
 * The capture's own damage (lost events, a stream cut short) beside a
 * replay's verdict, in text and JSON (see report.h).  The same sentence
 * goes under fidelity and under the what-if, so neither reads as if the
 * trace were whole.
 */
#include "report/report.h"

#include <cjson/cJSON.h>

void report_damage_text(FILE *out, const struct fidelity *f)
{
	char n[32];

	if (!f->lost_ranges && !f->truncated)
		return;
	fprintf(out, "  Damaged capture:");
	if (f->lost_ranges)
		fprintf(out, " the tracer discarded %s event(s) in %lld "
			"range(s)%s", report_fmt_count(n, sizeof(n),
						       f->lost_events),
			(long long)f->lost_ranges, f->truncated ? ";" : ".");
	if (f->truncated)
		fprintf(out, " a stream file is cut short.");
	fprintf(out, "\n  The model misses what the lost events did: "
		"mismatches after them are\n  expected (see 'mmureplay "
		"summary' for the ranges).\n\n");
}

void report_damage_json(struct cJSON *root, const struct fidelity *f)
{
	cJSON *o = cJSON_AddObjectToObject(root, "capture_damage");

	cJSON_AddNumberToObject(o, "lost_events", (double)f->lost_events);
	cJSON_AddNumberToObject(o, "lost_ranges", (double)f->lost_ranges);
	cJSON_AddBoolToObject(o, "truncated", f->truncated);
}
