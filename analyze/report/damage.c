/*
 * What the capture itself leaves out, beside a replay's verdict, in text
 * and JSON (see report.h): its damage (lost events, a stream cut short),
 * and a start while the VM already ran (state from before it, which the
 * trace only reveals).  The same sentences go under fidelity and under
 * the what-if, so neither reads as if the trace were whole.
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

void report_start_text(FILE *out, const struct fidelity *f, int whatif)
{
	char n[4][32];

	if (f->events_before_span)
		fprintf(out, "  Streams begin apart (a flight-recorder snapshot "
			"keeps each CPU's last\n  packets): every stream holds "
			"data from %.3f s on, where the replay\n  begins; the "
			"%s events before are not replayed.\n\n",
			f->span_start_s, report_fmt_count(n[0], sizeof(n[0]),
							 f->events_before_span));
	if (!f->began_mid_run)
		return;
	fprintf(out, "  Began mid-run: the VM ran before this capture began, "
		"so the model did\n  not know the state it met first.  What "
		"the trace only revealed is\n  counted apart and judged by "
		"nothing: %s faults, %s leaf zaps,\n  %s flush contexts, %s "
		"NX pages recovered.  The model knew every entry\n  it needed "
		"from %.3f s on (%.1f%% of the capture: its warm-up).\n\n",
		report_fmt_count(n[0], sizeof(n[0]),
				 f->m[FID_FAULTS].revealed),
		report_fmt_count(n[1], sizeof(n[1]),
				 f->m[FID_LEAF_ZAPS].revealed),
		report_fmt_count(n[2], sizeof(n[2]),
				 f->m[FID_TLB_FLUSHES].revealed),
		report_fmt_count(n[3], sizeof(n[3]),
				 f->m[FID_NX_RECOVERED].revealed),
		f->warmup_s, 100.0 * f->warmup_share);
	if (f->memslots_dumped)
		fprintf(out, "  Memslots: LTTng's state dump listed %s that "
			"existed before the capture,\n  with their flags.\n\n",
			report_fmt_count(n[0], sizeof(n[0]),
					 f->memslots_dumped));
	else
		fprintf(out, "  Memslots: no state dump lists them "
			"(lttng_statedump_kvm_memslot, with\n  the kernel "
			"series): one from before the capture is known once "
			"it\n  changes (patched kernel) or inferred (stock)."
			"\n\n");
	if (whatif)
		fprintf(out, "  A what-if figure below can differ from one of a "
			"capture from the VM's\n  creation, over the same span, "
			"by up to what was revealed.\n\n");
}

void report_start_json(struct cJSON *root, const struct fidelity *f)
{
	cJSON *o = cJSON_AddObjectToObject(root, "capture_start");
	cJSON *rv;
	int i;

	cJSON_AddBoolToObject(o, "began_mid_run", f->began_mid_run);
	rv = cJSON_AddObjectToObject(o, "revealed");
	for (i = 0; i < FID_METRICS; i++)
		cJSON_AddNumberToObject(rv, f->m[i].name,
					(double)f->m[i].revealed);
	cJSON_AddNumberToObject(o, "warmup_s", f->warmup_s);
	cJSON_AddNumberToObject(o, "warmup_share", f->warmup_share);
	cJSON_AddNumberToObject(o, "span_start_s", f->span_start_s);
	cJSON_AddNumberToObject(o, "events_before_span",
				(double)f->events_before_span);
	cJSON_AddNumberToObject(o, "contexts_before",
				(double)f->contexts_before);
	cJSON_AddNumberToObject(o, "recovery_batches_revealed",
				(double)f->batches_revealed);
	cJSON_AddNumberToObject(o, "memslots_state_dump",
				(double)f->memslots_dumped);
}
