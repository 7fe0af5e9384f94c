/*
 * Reading capture facts for the replay (see capture_info.h).
 */
#include "replay/capture_info.h"

#include "db/db.h"
#include "model/event.h"
#include "util/log.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>


/* The knob of the kernel series that turns each policy on. */
static const struct {
	const char *param;
	const struct policy *policy;
} knobs[] = {
	{ "kvm.perm_upgrade_skip_zap", &policy_perm_upgrade },
	{ "kvm.nx_huge_pages_recovery_skip_dirty", &policy_nx_skip_dirty },
	{ "kvm.nx_huge_pages_recovery_read_lock", &policy_nx_readlock },
};

/* The exit ISA and what follows from it: the SPTE format, the NPF exit
 * reason and how a fault's error code reads (model/fault.h). */
static void isa_set(struct capture_info *ci, int isa,
		    enum capture_isa_source from)
{
	ci->isa = isa;
	ci->isa_source = from;
	ci->fmt_detected = from != CAPTURE_ISA_ASSUMED;
	ci->fmt = spte_format_get(isa == MEV_ISA_VMX ? SPTE_FORMAT_EPT :
				  SPTE_FORMAT_NPT);
	ci->npf_exit_reason = isa == MEV_ISA_VMX ? MEV_VMX_EXIT_EPT_VIOLATION :
		MEV_SVM_EXIT_NPF;
}

static void manifest_read(sqlite3 *db, struct capture_info *ci)
{
	char *text = db_meta_get_text(db, "manifest");
	const cJSON *params, *v, *vendor;
	const struct policy *on[sizeof(knobs) / sizeof(knobs[0])];
	cJSON *doc = text ? cJSON_Parse(text) : NULL;
	size_t i;

	if (!doc)
		goto end;
	vendor = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(doc, "cpu"), "vendor");
	if (ci->isa_source == CAPTURE_ISA_ASSUMED && cJSON_IsString(vendor))
		isa_set(ci, mev_isa_of_vendor(vendor->valuestring),
			CAPTURE_ISA_MANIFEST);
	params = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(doc, "kvm"), "params");
	if (!cJSON_IsObject(params))
		goto end;
	ci->recorded_from_manifest = 1;
	v = cJSON_GetObjectItemCaseSensitive(params,
					     "kvm.nx_huge_pages_recovery_ratio");
	if (cJSON_IsString(v))
		ci->nx_ratio = strtoll(v->valuestring, NULL, 10);
	v = cJSON_GetObjectItemCaseSensitive(
		params, "kvm.nx_huge_pages_recovery_period_ms");
	if (cJSON_IsString(v))
		ci->nx_period_ms = strtoll(v->valuestring, NULL, 10);
	/* The module prints the mitigation as a bool (Y/N) once set. */
	v = cJSON_GetObjectItemCaseSensitive(params, "kvm.nx_huge_pages");
	if (cJSON_IsString(v))
		ci->nx_off = v->valuestring[0] == 'N' ||
			v->valuestring[0] == '0' ||
			strcmp(v->valuestring, "off") == 0;
	/* calc_nx_huge_pages_recovery_period() (6.1 and 6.12): a period
	 * of 0 means an hour over the ratio (at most 3600), at least 1 s. */
	if (cJSON_IsString(v) && !ci->nx_off && ci->nx_period_ms == 0 &&
	    ci->nx_ratio > 0)
		ci->nx_period_ms = 3600000 /
			(ci->nx_ratio < 3600 ? ci->nx_ratio : 3600);
	for (i = 0; i < sizeof(knobs) / sizeof(knobs[0]); i++) {
		v = cJSON_GetObjectItemCaseSensitive(params, knobs[i].param);
		if (cJSON_IsString(v) && (v->valuestring[0] == 'Y' ||
					  v->valuestring[0] == '1'))
			on[ci->knobs_on++] = knobs[i].policy;
	}
	/* Several knobs on: their combination (policy.h). */
	if (ci->knobs_on == 1)
		ci->recorded = on[0];
	else if (ci->knobs_on > 1)
		ci->recorded = policy_combine(on, ci->knobs_on);
end:
	cJSON_Delete(doc);
	free(text);
}

int capture_info_read(sqlite3 *db, struct capture_info *ci)
{
	sqlite3_stmt *st = NULL;
	int64_t isa = 0;
	int rc = -1;

	memset(ci, 0, sizeof(*ci));
	if (sqlite3_prepare_v2(db, "SELECT isa FROM vcpu_exit WHERE isa IS "
			       "NOT NULL LIMIT 1", -1, &st, NULL) != SQLITE_OK)
		goto end;
	if (sqlite3_step(st) == SQLITE_ROW)
		isa = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (isa == MEV_ISA_VMX || isa == MEV_ISA_SVM)
		isa_set(ci, (int)isa, CAPTURE_ISA_EXITS);
	else
		isa_set(ci, MEV_ISA_SVM, CAPTURE_ISA_ASSUMED);
	ci->recorded = &policy_baseline;
	manifest_read(db, ci);
	ci->truncated = db_meta_get_int(db, "truncated", 0) != 0;
	/* A stream's lost beginning (begin_ts NULL, end_ts its first
	 * event: schemas/capture.sql) is no damage in the middle of the
	 * trace: the replay begins where every stream holds data. */
	if (sqlite3_prepare_v2(db, "SELECT count(*) FILTER (WHERE NOT "
			       "(kind = 'packets' AND begin_ts IS NULL AND "
			       "end_ts IS NOT NULL)), coalesce(sum(count) "
			       "FILTER (WHERE kind = 'events'), 0), "
			       "max(end_ts) FILTER (WHERE kind = 'packets' "
			       "AND begin_ts IS NULL) FROM lost", -1, &st,
			       NULL) != SQLITE_OK)
		goto end;
	if (sqlite3_step(st) == SQLITE_ROW) {
		ci->lost_ranges = sqlite3_column_int64(st, 0);
		ci->lost_events = sqlite3_column_int64(st, 1);
		ci->span_start_ts = sqlite3_column_int64(st, 2);
	}
	sqlite3_finalize(st);
	/* The worker is named by the kernel (kvm_vm_create_worker_thread:
	 * "kvm-nx-lpage-recovery", cut to 15 characters). */
	if (sqlite3_prepare_v2(db, "SELECT DISTINCT tid FROM thread WHERE "
			       "procname LIKE 'kvm-nx-lpage%' UNION SELECT "
			       "DISTINCT tid FROM nx_recovery WHERE tid IS NOT "
			       "NULL", -1, &st, NULL) != SQLITE_OK)
		goto end;
	while (sqlite3_step(st) == SQLITE_ROW &&
	       ci->nworkers < CAPTURE_MAX_WORKERS)
		ci->workers[ci->nworkers++] = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	/* khugepaged is one kernel thread of that name (mm/khugepaged.c
	 * start_stop_khugepaged()). */
	if (sqlite3_prepare_v2(db, "SELECT DISTINCT tid FROM thread WHERE "
			       "procname = 'khugepaged'", -1, &st, NULL) !=
	    SQLITE_OK)
		goto end;
	while (sqlite3_step(st) == SQLITE_ROW &&
	       ci->ncollapsers < CAPTURE_MAX_WORKERS)
		ci->collapsers[ci->ncollapsers++] = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	st = NULL;
	if (sqlite3_prepare_v2(db, "SELECT EXISTS (SELECT 1 FROM thread)", -1,
			       &st, NULL) != SQLITE_OK)
		goto end;
	ci->workers_known = ci->nworkers > 0 ||
		(sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int(st, 0));
	sqlite3_finalize(st);
	st = NULL;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM vm", -1, &st,
			       NULL) != SQLITE_OK)
		goto end;
	if (sqlite3_step(st) == SQLITE_ROW)
		ci->nvms = sqlite3_column_int(st, 0);
	rc = 0;
end:
	if (rc < 0)
		log_error("%s: %s", sqlite3_db_filename(db, "main"),
			  sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return rc;
}
