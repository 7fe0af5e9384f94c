/*
 * mmureplay report: the HTML report of a capture DB and its stored
 * replay results.
 */
#include "cli/cli.h"

#include "db/db.h"
#include "metrics/replay_metrics.h"
#include "metrics/spikes.h"
#include "metrics/summary.h"
#include "replay/capture_info.h"
#include "report/report.h"
#include "util/outfile.h"

#include <stdio.h>

enum { OPT_OUTPUT, OPT_N };

static const struct cli_option options[] = {
	[OPT_OUTPUT] = { "output", 'o', "FILE",
			 "HTML file to write (temp + rename; default stdout)" },
	[OPT_N] = { NULL, 0, NULL, NULL },
};

static int run(int argc, char **argv);

const struct cli_command cli_cmd_report = {
	.name = "report",
	.usage = "DB [-o FILE.html]",
	.summary = "Self-contained HTML report (summary, self-check, what-if).",
	.details =
	"Renders what the DB holds: the capture summary and the results of\n"
	"the last 'mmureplay replay' (self-check, what-if table, per-second\n"
	"charts).  One file, inline CSS and SVG: it reads offline.\n",
	.options = options,
	.run = run,
};

static int run(int argc, char **argv)
{
	const char *v[OPT_N];
	struct summary s = { 0 };
	struct capture_info ci;
	struct spikes sp;
	struct stored_run *runs = NULL;
	struct outfile out = { 0 };
	sqlite3 *db = NULL;
	int npos, rc, n = 0;

	rc = cli_parse(&cli_cmd_report, argc, argv, v, &npos);
	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	rc = cli_open_db(&cli_cmd_report, npos, argv, 1, &db);
	if (rc != CLI_EXIT_OK)
		goto end;
	rc = CLI_EXIT_INTERNAL;
	if (summary_compute(db, &s) != SUMMARY_OK ||
	    replay_metrics_load(db, &runs, &n) < 0 ||
	    capture_info_read(db, &ci) < 0 ||
	    spikes_compute(db, ci.fmt, 0, 10, ci.workers, ci.nworkers,
			   &sp) < 0)
		goto end;
	rc = CLI_EXIT_OUTPUT;
	if (outfile_open(&out, v[OPT_OUTPUT] ? v[OPT_OUTPUT] : "-") < 0)
		goto end;
	report_html(out.fp, &s, runs, n, &sp, argv[0]);
	if (outfile_commit(&out) < 0)
		goto end;
	rc = CLI_EXIT_OK;
end:
	outfile_discard(&out);
	replay_metrics_free_runs(runs, n);
	summary_free(&s);
	if (db)
		sqlite3_close(db);
	return rc;
}
