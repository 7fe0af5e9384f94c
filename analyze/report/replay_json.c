/*
 * What-if results as JSON: per policy its what-if figures (never the
 * self-check's: those are under "self_check", once) and its per-second
 * series, each policy marked verified or not by the self-check they rest
 * on; none at all ("withheld") after a failed self-check unless forced.
 * A policy that cannot act on the capture ("applicable": false) has its
 * reason instead of figures.
 */
#include "report/report.h"

#include "replay/policy.h"

#include <cjson/cJSON.h>
#include <string.h>

char *report_replay_json(const struct replay_metrics *m, int n,
			 const struct replay_result *r,
			 const struct replay_result *self_check,
			 const struct fidelity *f, const char *db_path,
			 const struct report_vms *vms)
{
	static const struct {
		const char *name;
		enum policy_figure fig;
	} figs[] = {
		{ "faults", POLICY_FIG_FAULTS },
		{ "leaf_zaps", POLICY_FIG_LEAF_ZAPS },
		{ "tlb_flushes", POLICY_FIG_TLB_FLUSHES },
		{ "lock_wait_ms", POLICY_FIG_LOCK_WAITS },
		{ "lock_waits", POLICY_FIG_LOCK_WAIT_COUNT },
		{ "npf_service", POLICY_FIG_NPF_LATENCY },
		{ "probe", POLICY_FIG_PROBE_LATENCY },
	};
	cJSON *root = cJSON_CreateObject(), *pols, *p, *o, *a, *t, *k;
	char *out;
	int i, j;

	if (!root)
		return NULL;
	report_json_schema_add(root, REPORT_JSON_REPLAY);
	cJSON_AddStringToObject(root, "database", db_path);
	o = cJSON_AddObjectToObject(root, "self_check");
	report_fidelity_json_add(o, f, self_check);
	report_damage_json(root, f);
	report_start_json(root, f);
	cJSON_AddBoolToObject(root, "withheld", !f->ok && n == 0);
	pols = cJSON_AddObjectToObject(root, "policies");
	for (i = 0; i < n; i++) {
		p = cJSON_AddObjectToObject(pols, m[i].policy);
		cJSON_AddBoolToObject(p, "verified", f->ok);
		cJSON_AddNumberToObject(p, "duration_s", m[i].duration_s);
		/* Figures true by construction are not shown as figures. */
		cJSON_AddBoolToObject(p, "applicable", !m[i].not_applicable);
		if (m[i].not_applicable) {
			cJSON_AddStringToObject(p, "not_applicable",
						m[i].not_applicable);
			continue;
		}
		if (m[i].limits)
			cJSON_AddStringToObject(p, "not_modelled",
						m[i].limits);
		/* What each headline figure is (compare says the same). */
		k = cJSON_AddObjectToObject(p, "figure_kind");
		for (j = 0; j < (int)(sizeof(figs) / sizeof(figs[0])); j++)
			cJSON_AddStringToObject(k, figs[j].name,
				policy_figure_kind_name(
					replay_metrics_figure_kind(
						&m[i], f->policy,
						figs[j].fig)));
		for (j = 0; j < REPLAY_METRICS; j++)
			if (replay_metric_kinds[j] == RM_WHATIF)
				cJSON_AddNumberToObject(p,
							replay_metric_names[j],
							m[i].v[j]);
		/* Which sources the policy touches: whose zaps it keeps. */
		a = cJSON_AddArrayToObject(p, "zaps_kept_by_thread");
		for (j = 0; j < m[i].nkept; j++) {
			t = cJSON_CreateObject();
			cJSON_AddNumberToObject(t, "tid", m[i].kept[j].tid);
			cJSON_AddStringToObject(t, "thread",
						m[i].kept[j].thread);
			cJSON_AddNumberToObject(t, "zaps",
						(double)m[i].kept[j].zaps);
			cJSON_AddItemToArray(a, t);
		}

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
	report_vms_whatif_json(root, vms, n);
	report_knowledge_json(root, self_check);
	out = cJSON_Print(root);
	cJSON_Delete(root);
	return out;
}
