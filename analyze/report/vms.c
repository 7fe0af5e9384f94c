/*
 * A capture's VMs in the reports (report.h struct report_vms): a row
 * per VM with its own self-check (fidelity) or its own what-if under
 * each policy (replay), and what no VM could be given.
 */
#include "report/report.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <string.h>

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
	if (vms->aged_leaves_moved)
		fprintf(out, "  aged leaves of another VM than their thread's "
			"(reclaim under a shared\n  memory cgroup): %s, given "
			"the VM whose state held them\n",
			report_fmt_count(a, sizeof(a), vms->aged_leaves_moved));
	if (vms->aged_leaves_unknown)
		fprintf(out, "  aged leaves no VM's state knew (a capture begun "
			"mid-run): %s, given\n  none, not their thread's VM\n",
			report_fmt_count(a, sizeof(a),
					 vms->aged_leaves_unknown));
	if (vms->windows_moved)
		fprintf(out, "  invalidations of a VM process's thread whose "
			"zaps were another VM's\n  (reclaim under a shared "
			"memory cgroup): %s, given that VM\n",
			report_fmt_count(a, sizeof(a), vms->windows_moved));
	if (vms->contexts_by_memslot)
		fprintf(out, "  kernel threads' invalidations whose zapped leaves "
			"several VMs' states\n  held (a page KSM shares at one "
			"gfn), told by the VM whose memslot maps\n  them into "
			"the range: %s\n",
			report_fmt_count(a, sizeof(a),
					 vms->contexts_by_memslot));
	if (vms->windows_in_doubt)
		fprintf(out, "  invalidations of a VM process's thread kept as its "
			"VM's though another\n  VM's state fitted their zaps "
			"too (a capture begun mid-run): %s;\n  the next zap of "
			"an entry they left is not judged\n",
			report_fmt_count(a, sizeof(a), vms->windows_in_doubt));
	if (vms->windows_no_vm)
		fprintf(out, "  invalidations of a VM process's thread that its "
			"VM's memslot puts\n  elsewhere and no one other VM's "
			"state tells: %s, given none\n",
			report_fmt_count(a, sizeof(a), vms->windows_no_vm));
}

/* What ingest and the replay could not give a VM, and the --vm. */
static void vm_attribution_json(cJSON *root, const struct report_vms *vms)
{
	cJSON *o = cJSON_AddObjectToObject(root, "vm_attribution");

	cJSON_AddNumberToObject(o, "narrowed_to", vms->narrowed);
	cJSON_AddNumberToObject(o, "rows_unattributed",
				(double)vms->rows_unattributed);
	cJSON_AddNumberToObject(o, "kthread_events_decided",
				(double)vms->kthread_events_decided);
	cJSON_AddNumberToObject(o, "kthread_events_left",
				(double)vms->kthread_events_left);
	cJSON_AddNumberToObject(o, "aged_leaves_moved",
				(double)vms->aged_leaves_moved);
	cJSON_AddNumberToObject(o, "aged_leaves_unknown",
				(double)vms->aged_leaves_unknown);
	cJSON_AddNumberToObject(o, "windows_moved",
				(double)vms->windows_moved);
	cJSON_AddNumberToObject(o, "contexts_by_memslot",
				(double)vms->contexts_by_memslot);
	cJSON_AddNumberToObject(o, "windows_in_doubt",
				(double)vms->windows_in_doubt);
	cJSON_AddNumberToObject(o, "windows_no_vm",
				(double)vms->windows_no_vm);
}

/* vm_attribution and the empty "vms" array, returned. */
static cJSON *vms_array(cJSON *root, const struct report_vms *vms)
{
	vm_attribution_json(root, vms);
	return cJSON_AddArrayToObject(root, "vms");
}

/* A VM's object in the array a: its id, process and name. */
static cJSON *vm_object(cJSON *a, const struct report_vm *v)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddItemToArray(a, o);
	cJSON_AddNumberToObject(o, "vm", (double)v->id);
	cJSON_AddNumberToObject(o, "pid", (double)v->pid);
	if (v->procname)
		cJSON_AddStringToObject(o, "procname", v->procname);
	else
		cJSON_AddNullToObject(o, "procname");
	return o;
}

void report_vms_json(cJSON *root, const struct report_vms *vms)
{
	cJSON *a, *o;
	int i;

	if (!vms || !vms->n)
		return;
	a = vms_array(root, vms);
	for (i = 0; i < vms->n; i++) {
		const struct report_vm *v = &vms->vm[i];

		o = vm_object(a, v);
		report_fidelity_json_add(o, &v->fid, &v->res);
	}
}

/* The policy column fits the longest name shown (a combination's). */
static int whatif_name_width(const struct report_vms *vms, int n)
{
	int i, w = 16;

	for (i = 0; i < n; i++)
		if ((int)strlen(vms->vm[0].met[i].policy) > w)
			w = (int)strlen(vms->vm[0].met[i].policy);
	return w;
}

void report_vms_whatif_text(FILE *out, const struct report_vms *vms, int n)
{
	static const enum replay_metric cols[] = {
		RM_FAULTS, RM_LEAF_ZAPS, RM_TLB_FLUSHES, RM_LOCK_WAIT_MS,
	};
	char buf[32];
	int i, p, w;
	size_t c;

	if (!vms || !vms->n || !vms->vm[0].met)
		return;
	if (vms->narrowed) {
		fprintf(out, "\n  VM %" PRId64 " alone (--vm): process %" PRId64
			" %s, its own state and self-check.\n", vms->vm[0].id,
			vms->vm[0].pid, vms->vm[0].procname ?
			vms->vm[0].procname : "?");
		return;
	}
	w = whatif_name_width(vms, n);
	if (!n) {
		fprintf(out, "\n  VMs, each checked alone:");
		for (i = 0; i < vms->n; i++)
			fprintf(out, "%s vm %" PRId64 " %s", i ? "," : "",
				vms->vm[i].id,
				vms->vm[i].fid.ok ? "ok" : "FAILED");
		fputc('\n', out);
		return;
	}
	fprintf(out, "\n  Per VM, each replayed alone (a policy's rows sum to "
		"its row above):\n");
	fprintf(out, "  %4s %7s %-15s %-*s %11s %11s %11s %11s  %s\n", "vm",
		"pid", "process", w, "policy", "faults", "leaf zaps",
		"flushes", "wait ms", "self-check");
	fprintf(out, "  ---- ------- --------------- %.*s ----------- "
		"----------- ----------- -----------  ----------\n", w,
		"----------------------------------------------------------");
	for (i = 0; i < vms->n; i++) {
		const struct report_vm *v = &vms->vm[i];

		for (p = 0; p < n; p++) {
			const struct replay_metrics *m = &v->met[p];

			if (!p)
				fprintf(out, "  %4" PRId64 " %7" PRId64
					" %-15.15s", v->id, v->pid,
					v->procname ? v->procname : "?");
			else
				fprintf(out, "  %4s %7s %-15s", "", "", "");
			fprintf(out, " %-*s", w, m->policy);
			/* The recorded policy's row is the VM's replay,
			 * whether or not its knob could act there. */
			if (p && m->not_applicable) {
				fprintf(out, " not applicable\n");
				continue;
			}
			for (c = 0; c < sizeof(cols) / sizeof(cols[0]); c++) {
				if (cols[c] == RM_LOCK_WAIT_MS)
					snprintf(buf, sizeof(buf), "%.1f",
						 m->v[cols[c]]);
				else
					report_fmt_count(buf, sizeof(buf),
							 (int64_t)m->v[cols[c]]);
				fprintf(out, " %11s", buf);
			}
			fprintf(out, "%s\n", p ? "" :
				v->fid.ok ? "  ok" : "  FAILED");
		}
	}
}

void report_vms_whatif_json(cJSON *root, const struct report_vms *vms, int n)
{
	static const enum replay_metric figs[] = {
		RM_FAULTS, RM_FAULTS_AVOIDED, RM_FAULTS_ADDED, RM_LEAF_ZAPS,
		RM_ZAPS_KEPT, RM_ZAPS_KEPT_INFERRED, RM_TLB_FLUSHES,
		RM_LOCK_WAIT_MS, RM_RECOVERY_BATCHES_RUN,
	};
	cJSON *a, *o, *pols, *p;
	int i, j;
	size_t k;

	if (!vms || !vms->n || !vms->vm[0].met)
		return;
	a = vms_array(root, vms);
	for (i = 0; i < vms->n; i++) {
		const struct report_vm *v = &vms->vm[i];

		o = vm_object(a, v);
		cJSON_AddBoolToObject(o, "self_check_ok", v->fid.ok);
		pols = cJSON_AddObjectToObject(o, "policies");
		for (j = 0; j < n; j++) {
			const struct replay_metrics *m = &v->met[j];

			p = cJSON_AddObjectToObject(pols, m->policy);
			cJSON_AddBoolToObject(p, "applicable",
					      !j || !m->not_applicable);
			if (j && m->not_applicable)
				continue;
			for (k = 0; k < sizeof(figs) / sizeof(figs[0]); k++)
				cJSON_AddNumberToObject(
					p, replay_metric_names[figs[k]],
					m->v[figs[k]]);
		}
	}
}
