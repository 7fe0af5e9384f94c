/*
 * mmureplay replay: what-if under one or more policies, stored in the DB.
 */
#include "cli/cli.h"

#include "replay/capture_info.h"
#include "report/report.h"

#include <limits.h>
#include <stdio.h>

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

static int run(struct cli_args *a)
{
	struct cli_replay *r = NULL;
	struct capture_info ci;
	struct replay_output ro;
	int rc;

	rc = cli_recorded_policy(a->db, a->path, &ci);
	if (rc != CLI_EXIT_OK)
		goto end;
	if (a->str[OPT_RATIO])
		ci.nx_ratio = a->num[OPT_RATIO];
	if (a->str[OPT_PERIOD])
		ci.nx_period_ms = a->num[OPT_PERIOD];
	rc = cli_narrow_vm(a, OPT_VM, &ci);
	if (rc != CLI_EXIT_OK)
		goto end;
	rc = cli_replay_stored(a->db, a->path, &ci, "replay",
			       a->str[OPT_POLICY], a->str[OPT_FORCE] != NULL,
			       &r);
	if (rc != CLI_EXIT_OK)
		goto end;
	ro.met = r->met;
	ro.shown = r->shown;
	ro.fid = &r->fid;
	ro.vms = &r->vms;
	rc = cli_output(a->str[OPT_OUTPUT], a->str[OPT_JSON] != NULL,
			a->str[OPT_JSON] ?
			report_replay_json(r->met, r->shown, r->res, &r->res[0],
					   &r->fid, a->path, &r->vms) : NULL,
			text, &ro, a->path);
	if (rc == CLI_EXIT_OK && !r->fid.ok)
		rc = CLI_EXIT_CHECK;
end:
	cli_replay_free(r);
	return rc;
}
