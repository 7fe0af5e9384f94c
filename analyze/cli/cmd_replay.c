/*
 * mmureplay replay: what-if under one or more policies, stored in the DB.
 */
#include "cli/cli.h"

#include "db/db.h"
#include "metrics/fidelity.h"
#include "metrics/replay_metrics.h"
#include "replay/capture_info.h"
#include "replay/engine.h"
#include "replay/source.h"
#include "report/report.h"
#include "util/log.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_POLICIES 16

enum { OPT_POLICY, OPT_JSON, OPT_OUTPUT, OPT_RATIO, OPT_PERIOD, OPT_VM,
       OPT_FORCE, OPT_N };

static const struct cli_option options[] = {
	[OPT_POLICY] = CLI_LIST("policy", 'p', "NAME",
				"policy to replay (repeatable; default: all)"),
	[OPT_JSON] = CLI_FLAG("json", 0, "JSON instead of text tables"),
	[OPT_OUTPUT] = CLI_OUTPUT,
	[OPT_RATIO] = CLI_INT("nx-ratio", 0, "N", 1, UINT_MAX,
			      "NX recovery ratio of the trace (default: "
			      "manifest)"),
	[OPT_PERIOD] = CLI_INT("nx-period", 0, "MS", 1, UINT_MAX,
			       "NX recovery period of the trace, ms (default: "
			       "manifest)"),
	[OPT_VM] = CLI_VM,
	[OPT_FORCE] = CLI_FLAG("force", 0,
			       "after a failed self-check, give and store the "
			       "what-if anyway, marked unverified (exit 6 "
			       "still)"),
	[OPT_N] = CLI_END,
};

static int run(struct cli_args *a);

const struct cli_command cli_cmd_replay = {
	.name = "replay",
	.usage = "DB [--policy NAME]... [--vm ID] [--json] [-o FILE]",
	.summary = "What-if: replay the capture under other MMU policies.",
	.details =
	"Replays the capture under the policy it was recorded with (baseline\n"
	"= Linux 6.1, or the knob the manifest shows; checked against the\n"
	"trace first) and under each other policy: faults,\n"
	"leaf zaps by cause, refaults caused by zaps, TLB flushes, lock-wait\n"
	"time, per-second series.  Results are stored in the DB (replay_run,\n"
	"replay_metric, replay_series, replay_mismatch).  When the self-check\n"
	"fails the what-if figures are withheld (exit 6): not printed, not in\n"
	"the JSON, and the DB keeps only the failed self-check run; --force\n"
	"gives and stores them marked unverified (JSON \"verified\": false).\n"
	"The first replay of a DB adds a packed copy of its events (table\n"
	"replay_stream, about 10-12 bytes an event) that later replays and\n"
	"fidelity read several times faster than the tables.\n"
	"Policies: baseline, perm-upgrade, nx-skip-dirty, nx-readlock, and\n"
	"nx-ratio=N (baseline with NX recovery ratio N, for capacity\n"
	"planning; needs the recorded ratio; ratios below it undercount),\n"
	"nx-period=MS (baseline with the NX recovery worker waking every MS\n"
	"ms; MS must be a multiple of the recorded period: the worker runs\n"
	"every k-th recorded batch, the others' pages stay split).  Knob\n"
	"policies combine: perm-upgrade+nx-skip-dirty (a capture recorded\n"
	"with several knobs on is checked under their combination).  A\n"
	"policy that changes NX recovery alone is \"not applicable\", with\n"
	"the reason and no figures, where it cannot act: the manifest says\n"
	"kvm.nx_huge_pages=N, or no page was NX-split or no batch ran.  At\n"
	"most 16 policies a run (stored runs accumulate over runs).\n"
	"A capture of several VMs (table vm) is replayed VM by VM, each\n"
	"alone with its own state; the table gives their sums and a row per\n"
	"VM and policy follows (JSON \"vms\"); the self-check passes when\n"
	"every VM's does.  The DB keeps each VM's figures (replay_vm_metric)\n"
	"beside the capture's runs.  --vm ID replays that VM alone and\n"
	"stores its figures as that VM's only, never as the capture's.\n",
	.options = options,
	.run = run,
};

/* Splits "a,b" into out[], the recorded policy always first.  Returns
 * how many; -1 after saying why (an unknown name, or more than
 * MAX_POLICIES: refused, not cut). */
static int policies_parse(const char *arg, const struct policy *recorded,
			  const struct policy **out)
{
	char buf[sizeof(((struct cli_args *)0)->lists)], *tok, *save = NULL;
	int n = 1, i;

	out[0] = recorded;
	if (!arg) {
		for (i = 0; policy_registry[i]; i++)
			if (policy_registry[i] != recorded)
				out[n++] = policy_registry[i];
		return n;
	}
	snprintf(buf, sizeof(buf), "%s", arg);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		const struct policy *p = policy_find(tok);

		if (!p) {
			fprintf(stderr, "mmureplay replay: unknown policy "
				"'%s' (see --help)\n", tok);
			return -1;
		}
		for (i = 0; i < n && out[i] != p; i++)
			;
		if (i < n)
			continue;
		if (n == MAX_POLICIES) {
			fprintf(stderr, "mmureplay replay: at most %d policies "
				"in one replay, the recorded one included (run "
				"it again for more: stored runs accumulate)\n",
				MAX_POLICIES);
			return -1;
		}
		out[n++] = p;
	}
	return n;
}

struct replay_output {
	const struct replay_metrics *met;
	int shown;
	const struct fidelity *fid;
	const struct report_vms *vms;
};

static void text(FILE *out, const void *r, const char *db_path)
{
	const struct replay_output *o = r;

	report_replay_text(out, o->met, o->shown, o->fid, db_path, o->vms);
}

/* Each VM's figures as replay_metrics_store_runs() takes them (*out
 * NULL for a capture of one state).  A CLI_EXIT_*. */
static int vms_figures(const struct report_vms *vms,
		       struct replay_vm_figures **out)
{
	int i;

	*out = NULL;
	if (!vms->n)
		return CLI_EXIT_OK;
	*out = calloc((size_t)vms->n, sizeof(**out));
	if (!*out)
		return CLI_EXIT_INTERNAL;
	for (i = 0; i < vms->n; i++) {
		(*out)[i].vm = vms->vm[i].id;
		(*out)[i].self_check_ok = vms->vm[i].fid.ok;
		(*out)[i].met = vms->vm[i].met;
	}
	return CLI_EXIT_OK;
}

static int run(struct cli_args *a)
{
	sqlite3 *db = a->db;
	const struct policy *pols[MAX_POLICIES];
	struct replay_result res[MAX_POLICIES];
	struct replay_metrics met[MAX_POLICIES];
	struct fidelity fid;
	struct capture_info ci;
	struct report_vms vms = { 0 };
	struct replay_vm_figures *vfig = NULL;
	struct replay_output ro = { met, 0, &fid, &vms };
	double duration;
	int rc, n, i, shown, done = 0;

	memset(res, 0, sizeof(res));
	rc = cli_recorded_policy(db, a->path, &ci);
	if (rc != CLI_EXIT_OK)
		goto end;
	if (a->str[OPT_RATIO])
		ci.nx_ratio = a->num[OPT_RATIO];
	if (a->str[OPT_PERIOD])
		ci.nx_period_ms = a->num[OPT_PERIOD];
	rc = cli_narrow_vm(a, OPT_VM, &ci);
	if (rc != CLI_EXIT_OK)
		goto end;
	n = policies_parse(a->str[OPT_POLICY], ci.recorded, pols);
	if (n < 0) {
		rc = CLI_EXIT_USAGE;
		goto end;
	}
	for (i = 0; i < n; i++) {
		if (policy_period_factor(pols[i], ci.nx_period_ms))
			continue;
		if (ci.nx_period_ms > 0)
			fprintf(stderr, "mmureplay replay: %s: not a multiple "
				"of the recorded NX recovery period (%lld ms): "
				"the trace has no batches for the wake-ups a "
				"faster worker adds\n", pols[i]->name,
				(long long)ci.nx_period_ms);
		else
			fprintf(stderr, "mmureplay replay: %s: the recorded "
				"NX recovery period is unknown (no manifest); "
				"give it with --nx-period MS\n", pols[i]->name);
		rc = CLI_EXIT_USAGE;
		goto end;
	}
	if (ci.recorded != &policy_baseline)
		log_warn("%s: recorded with %s: what-if figures are relative "
			 "to it", a->path, ci.recorded->name);
	duration = (double)db_meta_get_int(db, "last_ts", 0) / 1e9;
	/* Each policy reads the capture twice: read it from the stream. */
	if (source_stream_ensure(db) < 0) {
		rc = CLI_EXIT_OUTPUT;
		goto end;
	}
	rc = cli_replay_policies(db, a->path, &ci, pols, n, 0, res, &done,
				 &vms);
	if (rc != CLI_EXIT_OK)
		goto end;
	for (i = 0; i < n; i++) {
		replay_metrics_compute(&res[i], duration, &met[i]);
		if (replay_metrics_kept_sources(db, &res[i], &met[i]) < 0) {
			rc = CLI_EXIT_INPUT;
			goto end;
		}
	}
	fidelity_compute(&res[0], fidelity_default_tolerance, &fid);
	cli_capture_damage(&ci, a->path, &fid);
	/* A failed self-check leaves only itself: the recorded policy's
	 * run, no what-if, not even one an earlier replay stored. */
	if (!fid.ok && !a->str[OPT_FORCE])
		shown = 0;
	else
		shown = n;
	rc = vms_figures(&vms, &vfig);
	if (rc != CLI_EXIT_OK)
		goto end;
	rc = CLI_EXIT_OUTPUT;
	if (replay_metrics_store_runs(db, res, met, shown ? shown : 1,
				      fid.ok, vfig, vms.n, vms.narrowed) < 0)
		goto end;
	ro.shown = shown;
	rc = cli_output(a->str[OPT_OUTPUT], a->str[OPT_JSON] != NULL,
			a->str[OPT_JSON] ?
			report_replay_json(met, shown, res, &res[0], &fid,
					   a->path, &vms) : NULL,
			text, &ro, a->path);
	if (rc == CLI_EXIT_OK && !fid.ok)
		rc = CLI_EXIT_CHECK;
end:
	for (i = 0; i < done; i++)
		replay_result_free(&res[i]);
	free(vfig);
	cli_vms_free(&vms);
	return rc;
}
