/*
 * mmureplay fleet-report: a fleet DB's report (fleet/fleet_report.c).
 */
#include "cli/cli.h"

#include "fleet/fleet.h"
#include "util/outfile.h"

#include <stdio.h>
#include <stdlib.h>

enum { OPT_JSON, OPT_HTML, OPT_OUTPUT, OPT_AGAINST, OPT_N };

static const struct cli_option options[] = {
	[OPT_JSON] = CLI_FLAG("json", 0, "JSON (schemas/fleet-report.schema."
			      "json) instead of text"),
	[OPT_HTML] = CLI_FLAG("html", 0, "a self-contained HTML page instead "
			      "of text"),
	[OPT_OUTPUT] = CLI_OUTPUT,
	[OPT_AGAINST] = CLI_STRING("against", 0, "FLEET_DB",
				   "an earlier fleet DB to compare with "
				   "(before a rollout)"),
	[OPT_N] = CLI_END,
};

static int run(struct cli_args *a);

const struct cli_command cli_cmd_fleet_report = {
	.name = "fleet-report",
	.usage = "FLEET_DB [--json | --html] [--against FLEET_DB] [-o FILE]",
	.summary = "Per policy, what it would change across a fleet's hosts "
		   "and VMs.",
	.details =
	"Reads a fleet DB (mmureplay merge) and gives: the captures by\n"
	"status, hosts, VMs and hours of trace; for each policy, the\n"
	"distribution over VMs (median, p90, p99, max, nearest rank) of\n"
	"faults, leaf zaps, TLB flushes and lock-wait time avoided per\n"
	"second, (recorded - policy) / the capture's duration, counting\n"
	"only VMs whose capture passed the self-check and that the policy\n"
	"can act on, and the VMs with the most faults avoided; the NX\n"
	"recovery sweeps (nx-ratio, nx-period as factors of the recorded\n"
	"values) summed fleet-wide per hour of trace: pages the worker\n"
	"recovered and the refaults that caused, recorded against the\n"
	"sweep; and every capture without a what-if with its status and\n"
	"reason.  --against OLD adds the policies' medians before (OLD) and\n"
	"after (FLEET_DB).\n",
	.options = options,
	.run = run,
};

static void text(FILE *out, const void *r, const char *db_path)
{
	(void)db_path;
	fleet_report_text(out, r);
}

static int run(struct cli_args *a)
{
	struct fleet_report *r = NULL;
	sqlite3 *db = NULL, *against = NULL;
	struct outfile of;
	int rc = CLI_EXIT_INPUT;

	if (a->npos != 1) {
		fprintf(stderr, "mmureplay fleet-report: need exactly one "
			"FLEET_DB (see --help)\n");
		return CLI_EXIT_USAGE;
	}
	if (a->str[OPT_JSON] && a->str[OPT_HTML]) {
		fprintf(stderr, "mmureplay fleet-report: --json or --html, "
			"not both\n");
		return CLI_EXIT_USAGE;
	}
	if (fleet_db_open(a->pos[0], &db) < 0)
		goto end;
	if (a->str[OPT_AGAINST] && fleet_db_open(a->str[OPT_AGAINST],
						 &against) < 0)
		goto end;
	r = fleet_report_compute(db, a->pos[0], against, a->str[OPT_AGAINST]);
	if (!r)
		goto end;
	if (a->str[OPT_HTML]) {
		rc = CLI_EXIT_OUTPUT;
		if (outfile_open(&of, a->str[OPT_OUTPUT] ? a->str[OPT_OUTPUT] :
				 "-") < 0)
			goto end;
		fleet_report_html(of.fp, r);
		if (outfile_commit(&of) < 0)
			goto end;
		rc = CLI_EXIT_OK;
		goto end;
	}
	rc = cli_output(a->str[OPT_OUTPUT], a->str[OPT_JSON] != NULL,
			a->str[OPT_JSON] ? fleet_report_json(r) : NULL, text, r,
			a->pos[0]);
end:
	fleet_report_free(r);
	sqlite3_close(db);
	sqlite3_close(against);
	return rc;
}
