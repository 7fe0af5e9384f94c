/*
 * mmureplay summary: what a capture DB holds, as text or JSON.
 */
#include "cli/cli.h"

#include "db/db.h"
#include "metrics/summary.h"
#include "report/report.h"
#include "util/log.h"
#include "util/outfile.h"

#include <stdio.h>
#include <stdlib.h>

enum { OPT_JSON, OPT_OUTPUT, OPT_N };

static const struct cli_option options[] = {
	[OPT_JSON] = { "json", 0, NULL, "JSON instead of text tables" },
	[OPT_OUTPUT] = { "output", 'o', "FILE",
			 "write to FILE (temp + rename) instead of stdout" },
	[OPT_N] = { NULL, 0, NULL, NULL },
};

static int run(int argc, char **argv);

const struct cli_command cli_cmd_summary = {
	.name = "summary",
	.usage = "DB [--json] [-o FILE]",
	.summary = "Counts, rates, lost events and trace metadata of a DB.",
	.details =
	"Duration, raw and canonical event counts, lost events, per-second\n"
	"rates (NPF faults/s, leaf zaps/s = present leaf SPTE -> not present,\n"
	"notifier invalidations/s), per-vCPU NPF faults, latency (nearest-\n"
	"rank p50/p99/p99.9 and max of the probe's samples per phase and of\n"
	"the NPF exit -> entry time), and the metadata of every trace (host,\n"
	"kernel release, tracer, domain).\n",
	.options = options,
	.run = run,
};

static int run(int argc, char **argv)
{
	const char *v[OPT_N];
	struct summary s = { 0 };
	struct outfile out = { 0 };
	sqlite3 *db = NULL;
	char *json = NULL;
	int npos, rc;

	rc = cli_parse(&cli_cmd_summary, argc, argv, v, &npos);
	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	rc = cli_open_db(&cli_cmd_summary, npos, argv, 1, &db);
	if (rc != CLI_EXIT_OK)
		goto end;
	rc = CLI_EXIT_INTERNAL;
	if (summary_compute(db, &s) != SUMMARY_OK)
		goto end;
	rc = CLI_EXIT_OUTPUT;
	if (outfile_open(&out, v[OPT_OUTPUT] ? v[OPT_OUTPUT] : "-") < 0)
		goto end;
	if (v[OPT_JSON]) {
		json = report_summary_json(&s, argv[0]);
		if (!json) {
			log_error("%s: out of memory", argv[0]);
			rc = CLI_EXIT_INTERNAL;
			goto end;
		}
		fprintf(out.fp, "%s\n", json);
	} else {
		report_summary_text(out.fp, &s, argv[0]);
	}
	if (outfile_commit(&out) < 0)
		goto end;
	rc = CLI_EXIT_OK;
end:
	outfile_discard(&out);
	free(json);
	summary_free(&s);
	if (db)
		sqlite3_close(db);
	return rc;
}
