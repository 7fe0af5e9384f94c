/*
 * mmureplay report: the HTML report of a capture DB and its stored
 * replay results.
 */
#include "cli/cli.h"

#include "db/db.h"
#include "metrics/coverage.h"
#include "metrics/fidelity.h"
#include "metrics/replay_metrics.h"
#include "metrics/spikes.h"
#include "metrics/summary.h"
#include "metrics/timeline.h"
#include "replay/capture_info.h"
#include "replay/policy.h"
#include "report/report.h"
#include "util/alloc.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_OUTPUT, OPT_VM, OPT_N };

static const struct cli_option options[] = {
	[OPT_OUTPUT] = CLI_STRING("output", 'o', "FILE",
				  "HTML file to write (temp + rename; default "
				  "stdout)"),
	[OPT_VM] = CLI_VM,
	[OPT_N] = CLI_END,
};

static int run(struct cli_args *a);

const struct cli_command cli_cmd_report = {
	.name = "report",
	.usage = "DB [-o FILE.html] [--vm ID]",
	.summary = "Self-contained HTML report (summary, self-check, what-if).",
	.details =
	"Renders the capture summary and the replay results (self-check,\n"
	"what-if table, per-second charts): those the last 'mmureplay replay'\n"
	"stored, else the report replays the capture itself under its\n"
	"recorded policy and every other (not stored: the DB is only read),\n"
	"and says so.  A source that cannot be replayed is said so too.  A\n"
	"capture of several VMs has a what-if row per VM and policy.  One\n"
	"file, inline CSS and SVG: it reads offline.  --vm ID: that VM\n"
	"alone (its own threads' events; its own state replayed for the\n"
	"report, the stored runs being the capture's).\n",
	.options = options,
	.run = run,
};

struct report_input {
	struct summary s;
	struct stored_run *runs;
	int n;
	struct stored_vm_run *vms;      /* a capture of several VMs */
	int nvms;
	struct spikes sp;
	struct timeline tl;
	const char *note;
	char note_buf[320];
};

/* Each VM's figures of a replay made now, as the DB would hold them
 * (replay_vms_load()): the recorded policy's for every VM, the others'
 * where they can act.  A CLI_EXIT_*. */
static int vms_now(const struct report_vms *vms, int n,
		   struct report_input *r)
{
	int i, p;

	r->vms = calloc((size_t)(vms->n * n) + 1, sizeof(*r->vms));
	if (!r->vms)
		return CLI_EXIT_INTERNAL;
	for (i = 0; i < vms->n; i++) {
		const struct report_vm *v = &vms->vm[i];

		for (p = 0; p < n; p++) {
			struct stored_vm_run *o = &r->vms[r->nvms];

			if ((p && v->met[p].not_applicable) ||
			    (!v->fid.ok && p))
				continue;
			o->vm = v->id;
			o->pid = v->pid;
			snprintf(o->procname, sizeof(o->procname), "%s",
				 v->procname ? v->procname : "?");
			snprintf(o->policy, sizeof(o->policy), "%s",
				 v->met[p].policy);
			o->self_check_ok = v->fid.ok;
			o->m = v->met[p];
			o->m.policy = o->policy;
			r->nvms++;
		}
	}
	return CLI_EXIT_OK;
}

/*
 * No stored runs (or --vm): replay now, as 'mmureplay replay' would (the
 * recorded policy, then every other whose NX period fits), into r->runs;
 * ci as cli_recorded_policy() read it, narrowed to a VM or not.  After a
 * failed self-check only its own run is kept, as replay withholds the
 * what-if.  A CLI_EXIT_*.
 */
static int replay_now(sqlite3 *db, const char *path,
		      const struct capture_info *ci, struct report_input *r)
{
	const struct policy *pols[16];
	struct replay_result res[16];
	struct fidelity fid;
	struct report_vms vms = { 0 };
	int rc, i, n = 1, done = 0, keep;

	memset(res, 0, sizeof(res));
	pols[0] = ci->recorded;
	for (i = 0; policy_registry[i] && n < 16; i++)
		if (policy_registry[i] != ci->recorded &&
		    policy_period_factor(policy_registry[i], ci->nx_period_ms))
			pols[n++] = policy_registry[i];
	rc = cli_replay_policies(db, path, ci, pols, n, 0, res, &done, &vms);
	if (rc != CLI_EXIT_OK)
		goto end;
	fidelity_compute(&res[0], fidelity_default_tolerance, &fid);
	keep = fid.ok ? done : 1;
	rc = vms_now(&vms, keep, r);
	if (rc != CLI_EXIT_OK)
		goto end;
	rc = CLI_EXIT_INTERNAL;
	r->runs = calloc((size_t)keep, sizeof(*r->runs));
	if (!r->runs)
		goto end;
	for (i = 0; i < keep; i++)
		replay_metrics_stored_from(&res[i], r->s.duration_s, fid.ok,
					   &r->runs[i]);
	r->n = keep;
	if (ci->vm) {
		snprintf(r->note_buf, sizeof(r->note_buf), "VM %d alone "
			 "(--vm): its own threads' events; its own state "
			 "replayed for this report%s.", ci->vm, fid.ok ? "" :
			 ": the self-check fails, the what-if is withheld");
		r->note = r->note_buf;
	} else {
		r->note = fid.ok ? "Replayed for this report (not stored in "
			"the DB: mmureplay replay stores them)." : "Replayed "
			"for this report: the self-check fails, the what-if "
			"is withheld.";
	}
	rc = CLI_EXIT_OK;
end:
	for (i = 0; i < done; i++)
		replay_result_free(&res[i]);
	cli_vms_free(&vms);
	return rc;
}

static void html(FILE *out, const void *in, const char *db_path)
{
	const struct report_input *r = in;

	report_html(out, &r->s, r->runs, r->n, r->vms, r->nvms, &r->sp,
		    &r->tl, r->note, db_path);
}

static int run(struct cli_args *a)
{
	struct report_input r = { 0 };
	struct capture_info ci, rec;
	int rc;

	/* --vm: the capture's facts and recorded policy first, from the
	 * whole capture; then the DB narrowed to the VM's events. */
	if (a->str[OPT_VM]) {
		rc = cli_recorded_policy(a->db, a->path, &rec);
		if (rc == CLI_EXIT_OK)
			rc = cli_narrow_vm(a, OPT_VM, &rec);
		if (rc == CLI_EXIT_OK)
			rc = cli_narrow_db(a, OPT_VM, 0);
		if (rc != CLI_EXIT_OK)
			return rc;
	}
	/* The summary's scans bin the timeline's series on the way. */
	timeline_init(a->db, &r.tl);
	rc = cli_exit_summary(summary_compute_binned(a->db, &r.s, &r.tl));
	if (rc != CLI_EXIT_OK)
		goto end;
	rc = CLI_EXIT_INPUT;
	if (a->str[OPT_VM])
		ci = rec;
	else if (capture_info_read(a->db, &ci) < 0)
		goto end;
	if ((!a->str[OPT_VM] &&
	     (replay_metrics_load(a->db, &r.runs, &r.n) < 0 ||
	      replay_vms_load(a->db, &r.vms, &r.nvms) < 0)) ||
	    spikes_compute(a->db, ci.fmt, 0, 10, ci.workers, ci.nworkers,
			   &r.sp) < 0 ||
	    timeline_fill(a->db, ci.fmt, ci.workers, ci.nworkers, &r.tl) < 0)
		goto end;
	if (r.n == 0 && coverage_gap(&r.s.cov, COVERAGE_REPLAY)) {
		snprintf(r.note_buf, sizeof(r.note_buf), "No replay: %s.",
			 coverage_gap(&r.s.cov, COVERAGE_REPLAY));
		r.note = r.note_buf;
	} else if (r.n == 0) {
		/* Rows of a replay --vm alone are not the capture's. */
		free(r.runs);
		free(r.vms);
		r.runs = NULL;
		r.vms = NULL;
		r.nvms = 0;
		if (!a->str[OPT_VM]) {
			rc = cli_recorded_policy(a->db, a->path, &rec);
			if (rc != CLI_EXIT_OK)
				goto end;
		}
		rc = replay_now(a->db, a->path, &rec, &r);
		if (rc != CLI_EXIT_OK)
			goto end;
	}
	rc = cli_output(a->str[OPT_OUTPUT], 0, NULL, html, &r, a->path);
end:
	replay_metrics_free_runs(r.runs, r.n);
	free(r.vms);
	spikes_free(&r.sp);
	summary_free(&r.s);
	return rc;
}
