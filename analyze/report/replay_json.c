/*
 * What-if results as JSON: per policy every named figure, the self-check
 * they rest on, and per-second series of the first policy's run.
 */
#include "report/report.h"

#include <cjson/cJSON.h>

char *report_replay_json(const struct replay_metrics *m, int n,
			 const struct replay_result *r, const struct fidelity *f,
			 const char *db_path)
{
	cJSON *root = cJSON_CreateObject(), *pols, *p, *o, *a, *t;
	char *out;
	int i, j;

	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "database", db_path);
	o = cJSON_AddObjectToObject(root, "self_check");
	cJSON_AddStringToObject(o, "policy", f->policy);
	cJSON_AddBoolToObject(o, "ok", f->ok);
	report_damage_json(root, f);
	pols = cJSON_AddObjectToObject(root, "policies");
	for (i = 0; i < n; i++) {
		p = cJSON_AddObjectToObject(pols, m[i].policy);
		cJSON_AddNumberToObject(p, "duration_s", m[i].duration_s);
		if (m[i].limits)
			cJSON_AddStringToObject(p, "not_modelled",
						m[i].limits);
		for (j = 0; j < m[i].n; j++)
			cJSON_AddNumberToObject(p, m[i].m[j].name,
						m[i].m[j].value);
		a = cJSON_AddArrayToObject(p, "series");
		for (j = 0; j < r[i].nseconds; j++) {
			const struct replay_second *s = &r[i].series[j];

			if (!s->faults && !s->zaps && !s->flushes &&
			    !s->lock_wait_ns)
				continue;
			t = cJSON_CreateObject();
			cJSON_AddNumberToObject(t, "second", j);
			cJSON_AddNumberToObject(t, "faults", (double)s->faults);
			cJSON_AddNumberToObject(t, "zaps", (double)s->zaps);
			cJSON_AddNumberToObject(t, "flushes",
						(double)s->flushes);
			cJSON_AddNumberToObject(t, "lock_wait_ns",
						(double)s->lock_wait_ns);
			cJSON_AddItemToArray(a, t);
		}
	}
	o = cJSON_AddObjectToObject(root, "knowledge");
	if (n) {
		cJSON_AddStringToObject(o, "memslots",
					replay_source_name(r[0].slots_src));
		cJSON_AddStringToObject(o, "perm_upgrade",
					replay_source_name(r[0].upgrade_src));
		cJSON_AddStringToObject(o, "dirty_logging",
					replay_source_name(r[0].dirty_src));
		cJSON_AddStringToObject(o, "lock_waits",
					replay_source_name(r[0].lock_src));
	}
	out = cJSON_Print(root);
	cJSON_Delete(root);
	return out;
}
