/*
 * Run sets side by side as JSON (see report.h): the same rows as the
 * text, every number as it was computed (NAN: null).
 */
#include "report/report.h"

#include <cjson/cJSON.h>
#include <math.h>

static void add_num(cJSON *o, const char *k, double v)
{
	if (isnan(v))
		cJSON_AddNullToObject(o, k);
	else
		cJSON_AddNumberToObject(o, k, v);
}

static void add_tri(cJSON *o, const char *k, int v)
{
	if (v < 0)
		cJSON_AddNullToObject(o, k);
	else
		cJSON_AddBoolToObject(o, k, v);
}

static cJSON *cell_json(const struct compare_cell *c)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "runs", c->n);
	add_num(o, "median", c->median);
	add_num(o, "min", c->min);
	add_num(o, "max", c->max);
	return o;
}

static cJSON *side_json(const struct compare *c, enum compare_side s)
{
	cJSON *o = cJSON_CreateObject(), *a, *r;
	int i;

	cJSON_AddStringToObject(o, "policy", c->run[s][0].policy);
	if (c->run[s][0].knobs)
		cJSON_AddStringToObject(o, "settings", c->run[s][0].knobs);
	else
		cJSON_AddNullToObject(o, "settings");
	a = cJSON_AddArrayToObject(o, "runs");
	for (i = 0; i < c->n[s]; i++) {
		r = cJSON_CreateObject();
		cJSON_AddStringToObject(r, "database", c->run[s][i].path);
		cJSON_AddNumberToObject(r, "duration_s",
					c->run[s][i].duration_s);
		cJSON_AddBoolToObject(r, "self_check_ok",
				      c->run[s][i].self_check_ok);
		cJSON_AddBoolToObject(r, "began_mid_run",
				      c->run[s][i].began_mid_run);
		cJSON_AddNumberToObject(r, "warmup_s", c->run[s][i].warmup_s);
		cJSON_AddItemToArray(a, r);
	}
	return o;
}

/* The rows of a comparison (the capture's, or one VM's). */
static cJSON *rows_json(const struct compare *c)
{
	cJSON *a = cJSON_CreateArray(), *r, *w;
	const struct compare_row *row;
	int i;

	for (i = 0; i < c->nrows; i++) {
		row = &c->rows[i];
		if (!row->cell[COMPARE_A].n && !row->cell[COMPARE_B].n)
			continue;
		r = cJSON_CreateObject();
		cJSON_AddStringToObject(r, "key", row->key);
		cJSON_AddStringToObject(r, "label", row->label);
		cJSON_AddItemToObject(r, "a", cell_json(&row->cell[COMPARE_A]));
		cJSON_AddItemToObject(r, "b", cell_json(&row->cell[COMPARE_B]));
		add_num(r, "change", row->change);
		add_tri(r, "ranges_overlap", row->overlap);
		if (row->has_pred) {
			w = cJSON_AddObjectToObject(r, "what_if");
			cJSON_AddStringToObject(w, "kind", row->pred_kind);
			/* Not modelled: no figure, never one shown as a
			 * prediction. */
			if (row->cell_pred.n) {
				cJSON_AddItemToObject(w, "predicted",
					cell_json(&row->cell_pred));
				add_num(w, "error", row->pred_error);
				add_tri(w, "inside_b_range",
					row->pred_inside);
			}
		}
		cJSON_AddItemToArray(a, r);
	}
	return a;
}

char *report_compare_json(const struct compare *c)
{
	cJSON *root = cJSON_CreateObject(), *a, *r;
	char *out;
	int i;

	if (!root)
		return NULL;
	report_json_schema_add(root, REPORT_JSON_COMPARE);
	cJSON_AddStringToObject(root, "kernel", c->run[COMPARE_A][0].kernel ?
				c->run[COMPARE_A][0].kernel : "unknown");
	cJSON_AddStringToObject(root, "workload",
				c->run[COMPARE_A][0].workload ?
				c->run[COMPARE_A][0].workload : "unknown");
	if (c->vm)
		cJSON_AddNumberToObject(root, "vm", c->vm);
	cJSON_AddItemToObject(root, "a", side_json(c, COMPARE_A));
	cJSON_AddItemToObject(root, "b", side_json(c, COMPARE_B));
	a = cJSON_AddArrayToObject(root, "thresholds_ms");
	for (i = 0; i < c->nthresholds; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(c->threshold_ms[i]));
	cJSON_AddItemToObject(root, "rows", rows_json(c));
	/* Runs of several VMs: each VM of every run alone. */
	if (c->nvms) {
		a = cJSON_AddArrayToObject(root, "vms");
		for (i = 0; i < c->nvms; i++) {
			const struct compare_run *r0 =
				&c->vms[i].run[COMPARE_A][0];

			r = cJSON_CreateObject();
			cJSON_AddNumberToObject(r, "vm", c->vms[i].vm);
			if (r0->vm_procname)
				cJSON_AddStringToObject(r, "process",
							r0->vm_procname);
			else
				cJSON_AddNullToObject(r, "process");
			cJSON_AddItemToObject(r, "rows", rows_json(&c->vms[i]));
			cJSON_AddItemToArray(a, r);
		}
	}
	out = cJSON_Print(root);
	cJSON_Delete(root);
	return out;
}
