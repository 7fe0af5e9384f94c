/*
 * A capture's VMs in the reports (report.h struct report_vms): a row
 * per VM with its own self-check, and what no VM could be given.
 */
#include "report/report.h"


#include <cjson/cJSON.h>
#include <inttypes.h>

void report_vms_text(FILE *out, const struct report_vms *vms)
{
	char a[32], b[32], c[32];
	int i;

	if (!vms || !vms->n)
		return;
	fprintf(out, "\n  VMs, each replayed alone (the capture passes when "
		"every one does)%s:\n", vms->narrowed ? ", this one only" :
		"");
	fprintf(out, "  %4s %7s %-15s %10s %10s %10s  %s\n", "vm", "pid",
		"process", "faults", "leaf_zaps", "mismatches", "self-check");
	fprintf(out, "  %4s %7s %-15s %10s %10s %10s  %s\n", "----",
		"-------", "---------------", "----------", "----------",
		"----------", "----------");
	for (i = 0; i < vms->n; i++) {
		const struct report_vm *v = &vms->vm[i];

		fprintf(out, "  %4" PRId64 " %7" PRId64 " %-15.15s %10s %10s "
			"%10s  %s\n", v->id, v->pid,
			v->procname ? v->procname : "?",
			report_fmt_count(a, sizeof(a), v->res.faults_observed),
			report_fmt_count(b, sizeof(b), v->res.zaps_observed),
			report_fmt_count(c, sizeof(c), v->res.mismatches_total),
			v->fid.ok ? "ok" : "FAILED");
	}
	fprintf(out, "  events of no VM: %s rows of threads in no VM's "
		"process; of the kernel threads'\n  among them, %s given a "
		"VM by the leaves they zapped, %s left\n",
		report_fmt_count(a, sizeof(a), vms->rows_unattributed),
		report_fmt_count(b, sizeof(b), vms->kthread_events_decided),
		report_fmt_count(c, sizeof(c), vms->kthread_events_left));
}

void report_vms_json(cJSON *root, const struct report_vms *vms)
{
	cJSON *a, *o;
	int i;

	if (!vms || !vms->n)
		return;
	o = cJSON_AddObjectToObject(root, "vm_attribution");
	cJSON_AddNumberToObject(o, "narrowed_to", vms->narrowed);
	cJSON_AddNumberToObject(o, "rows_unattributed",
				(double)vms->rows_unattributed);
	cJSON_AddNumberToObject(o, "kthread_events_decided",
				(double)vms->kthread_events_decided);
	cJSON_AddNumberToObject(o, "kthread_events_left",
				(double)vms->kthread_events_left);
	a = cJSON_AddArrayToObject(root, "vms");
	for (i = 0; i < vms->n; i++) {
		const struct report_vm *v = &vms->vm[i];

		o = cJSON_CreateObject();
		cJSON_AddItemToArray(a, o);
		cJSON_AddNumberToObject(o, "vm", (double)v->id);
		cJSON_AddNumberToObject(o, "pid", (double)v->pid);
		if (v->procname)
			cJSON_AddStringToObject(o, "procname", v->procname);
		else
			cJSON_AddNullToObject(o, "procname");
		report_fidelity_json_add(o, &v->fid, &v->res);
	}
}
