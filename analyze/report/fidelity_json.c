/*
 * Fidelity as JSON: keys observed / predicted / rel_error / check_kind
 * per metric, the faults exempt[] explained by a race, the parts of the
 * verdict and ok, plus the first mismatches with their time and gfn.
 */
#include "report/report.h"

#include <cjson/cJSON.h>

void report_knowledge_json(struct cJSON *root, const struct replay_result *r)
{
	cJSON *o = cJSON_AddObjectToObject(root, "knowledge");

	cJSON_AddStringToObject(o, "memslots", replay_source_name(r->slots_src));
	cJSON_AddStringToObject(o, "perm_upgrade",
				replay_source_name(r->upgrade_src));
	cJSON_AddStringToObject(o, "dirty_logging",
				replay_source_name(r->dirty_src));
	cJSON_AddStringToObject(o, "lock_waits",
				replay_source_name(r->lock_src));
}

/*
 * Where the patched kernel measured which invalidations were pure
 * permission upgrades, how the stock inference would have judged them:
 * the same rule a stock capture relies on, scored against the truth.
 */
static void report_upgrade_inference_json(cJSON *root,
					  const struct replay_result *r)
{
	int64_t tp = r->upgrade_infer[1][1], fp = r->upgrade_infer[1][0];
	int64_t fn = r->upgrade_infer[0][1], tn = r->upgrade_infer[0][0];
	cJSON *o;

	if (!(tp + fp + fn + tn))
		return;
	o = cJSON_AddObjectToObject(root, "upgrade_inference");
	cJSON_AddNumberToObject(o, "true_positive", (double)tp);
	cJSON_AddNumberToObject(o, "false_positive", (double)fp);
	cJSON_AddNumberToObject(o, "false_negative", (double)fn);
	cJSON_AddNumberToObject(o, "true_negative", (double)tn);
	if (tp + fp)
		cJSON_AddNumberToObject(o, "precision",
					(double)tp / (double)(tp + fp));
	if (tp + fn)
		cJSON_AddNumberToObject(o, "recall",
					(double)tp / (double)(tp + fn));
}

void report_fidelity_json_add(struct cJSON *root, const struct fidelity *f,
			      const struct replay_result *r)
{
	cJSON *o, *a, *t;
	int i;

	cJSON_AddStringToObject(root, "policy", f->policy);
	cJSON_AddBoolToObject(root, "ok", f->ok);
	o = cJSON_AddObjectToObject(root, "observed");
	for (i = 0; i < FID_METRICS; i++)
		cJSON_AddNumberToObject(o, f->m[i].name,
					(double)f->m[i].observed);
	o = cJSON_AddObjectToObject(root, "predicted");
	for (i = 0; i < FID_METRICS; i++)
		cJSON_AddNumberToObject(o, f->m[i].name,
					(double)f->m[i].predicted);
	o = cJSON_AddObjectToObject(root, "rel_error");
	for (i = 0; i < FID_METRICS; i++)
		cJSON_AddNumberToObject(o, f->m[i].name, f->m[i].rel_error);
	o = cJSON_AddObjectToObject(root, "tolerance");
	for (i = 0; i < FID_METRICS; i++)
		cJSON_AddNumberToObject(o, f->m[i].name, f->m[i].tolerance);
	o = cJSON_AddObjectToObject(root, "metric_ok");
	for (i = 0; i < FID_METRICS; i++)
		cJSON_AddBoolToObject(o, f->m[i].name, f->m[i].ok);
	o = cJSON_AddObjectToObject(root, "observed_how");
	for (i = 0; i < FID_METRICS; i++)
		cJSON_AddStringToObject(o, f->m[i].name, f->m[i].observed_how);
	o = cJSON_AddObjectToObject(root, "check_kind");
	for (i = 0; i < FID_METRICS; i++)
		cJSON_AddStringToObject(o, f->m[i].name,
					fidelity_check_kind_names[f->m[i].check]);
	o = cJSON_AddObjectToObject(root, "exempt");
	for (i = 0; i < EXEMPT_REASONS; i++)
		cJSON_AddNumberToObject(o, fault_exempt_names[i],
					(double)f->exempt[i]);
	cJSON_AddNumberToObject(root, "exempt_share", f->exempt_share);
	cJSON_AddNumberToObject(root, "exempt_capped_share",
				f->exempt_capped_share);
	cJSON_AddNumberToObject(root, "exempt_max_share",
				FIDELITY_MAX_EXEMPT_SHARE);
	o = cJSON_AddObjectToObject(root, "verdict");
	cJSON_AddBoolToObject(o, "metrics_ok", f->metrics_ok);
	cJSON_AddBoolToObject(o, "no_mismatch", !f->mismatches);
	cJSON_AddBoolToObject(o, "exempt_ok", f->exempt_ok);
	if (!f->vms_ok)
		cJSON_AddBoolToObject(o, "vms_ok", 0);
	report_knowledge_json(root, r);
	report_upgrade_inference_json(root, r);
	/* Leaf zaps the trace, not the model, decided (engine_window.c
	 * window_settle()): not checked. */
	o = cJSON_AddObjectToObject(root, "settled_by_trace");
	cJSON_AddNumberToObject(o, "race_windows", (double)r->race_windows);
	cJSON_AddNumberToObject(o, "leaf_zaps", (double)r->zaps_race_settled);
	cJSON_AddNumberToObject(o, "recovery_batches",
				(double)r->nx_batches_settled);
	cJSON_AddNumberToObject(o, "memslot_swap_faults",
				(double)r->span_faults_settled);
	cJSON_AddNumberToObject(o, "memslot_swap_faults_old",
				(double)r->span_faults_old);
	/* Optional: only where a count settled guesses. */
	if (r->nx_guessed_settled) {
		cJSON_AddNumberToObject(o, "nx_guessed_splits",
					(double)r->nx_guessed_splits);
		cJSON_AddNumberToObject(o, "nx_guessed_settled",
					(double)r->nx_guessed_settled);
	}
	/* Claims of the recorded policy no event of this capture shows. */
	a = cJSON_AddArrayToObject(root, "unverifiable");
	if (r->read_lock_unverifiable)
		cJSON_AddItemToArray(a, cJSON_CreateString(
			"recovery_read_lock"));
	cJSON_AddNumberToObject(root, "mismatches_total",
				(double)r->mismatches_total);
	o = cJSON_AddObjectToObject(root, "mismatches_by_kind");
	for (i = 0; i < MISMATCH_KINDS; i++)
		cJSON_AddNumberToObject(o, mismatch_kind_names[i],
					(double)r->mismatches_by_kind[i]);
	/* The list is the first ones; every one is in table
	 * replay_mismatch once the run is stored. */
	cJSON_AddBoolToObject(root, "mismatches_cut", r->mismatches_total >
			      REPLAY_SHOWN_MISMATCHES);
	a = cJSON_AddArrayToObject(root, "mismatches");
	for (i = 0; i < r->nmismatches && i < REPLAY_SHOWN_MISMATCHES; i++) {
		const struct mismatch *m = &r->mismatches[i];

		t = cJSON_CreateObject();
		cJSON_AddStringToObject(t, "kind",
					mismatch_kind_names[m->kind]);
		cJSON_AddNumberToObject(t, "seq", (double)m->seq);
		cJSON_AddNumberToObject(t, "ts_ns", (double)m->ts);
		cJSON_AddNumberToObject(t, "gfn", (double)m->gfn);
		cJSON_AddNumberToObject(t, "predicted", (double)m->predicted);
		cJSON_AddNumberToObject(t, "observed", (double)m->observed);
		cJSON_AddItemToArray(a, t);
	}
}

char *report_fidelity_json(const struct fidelity *f,
			   const struct replay_result *r, const char *db_path)
{
	return report_fidelity_json_vms(f, r, db_path, NULL);
}

char *report_fidelity_json_vms(const struct fidelity *f,
			       const struct replay_result *r,
			       const char *db_path,
			       const struct report_vms *vms)
{
	cJSON *root = cJSON_CreateObject();
	char *out;

	if (!root)
		return NULL;
	report_json_schema_add(root, REPORT_JSON_FIDELITY);
	cJSON_AddStringToObject(root, "database", db_path);
	report_damage_json(root, f);
	report_start_json(root, f);
	report_fidelity_json_add(root, f, r);
	if (vms)
		report_vms_json(root, vms);
	out = cJSON_Print(root);
	cJSON_Delete(root);
	return out;
}
