/*
 * mmureplay summary: what a capture DB holds, as text or JSON.
 */
#include "cli/cli.h"

#include "metrics/summary.h"
#include "report/report.h"

#include <stdio.h>
#include <stdlib.h>

enum { OPT_JSON, OPT_OUTPUT, OPT_VM, OPT_N };

static const struct cli_option options[] = {
	[OPT_JSON] = CLI_FLAG("json", 0, "JSON instead of text tables"),
	[OPT_OUTPUT] = CLI_OUTPUT,
	[OPT_VM] = CLI_VM,
	[OPT_N] = CLI_END,
};

static int run(struct cli_args *a);

const struct cli_command cli_cmd_summary = {
	.name = "summary",
	.usage = "DB [--json] [-o FILE] [--vm ID]",
	.summary = "Counts, rates, lost events and trace metadata of a DB.",
	.details =
	"Duration, raw and canonical event counts, lost events, per-second\n"
	"rates (NPF faults/s, leaf zaps/s = present leaf SPTE -> not present,\n"
	"notifier invalidations/s), per-vCPU NPF faults, latency (nearest-\n"
	"rank p50/p99/p99.9 and max of the probe's samples per phase and of\n"
	"the NPF exit -> entry time), and the metadata of every trace (host,\n"
	"kernel release, tracer, domain).  --vm ID counts the events of that\n"
	"VM's process alone (kernel threads' work, in no VM's process, is\n"
	"left out).\n",
	.options = options,
	.run = run,
};

static void text(FILE *out, const void *s, const char *db_path)
{
	report_summary_text(out, s, db_path);
}

static int run(struct cli_args *a)
{
	struct summary s = { 0 };
	int rc;

	rc = cli_narrow_db(a, OPT_VM, 0);
	if (rc != CLI_EXIT_OK)
		goto end;
	rc = cli_exit_summary(summary_compute(a->db, &s));
	if (rc != CLI_EXIT_OK)
		goto end;
	rc = cli_output(a->str[OPT_OUTPUT], a->str[OPT_JSON] != NULL,
			a->str[OPT_JSON] ? report_summary_json(&s, a->path) :
			NULL, text, &s, a->path);
end:
	summary_free(&s);
	return rc;
}
