/*
 * mmureplay report: the HTML report of a capture DB and its stored
 * replay results.
 */
#include "cli/cli.h"

#include "metrics/replay_metrics.h"
#include "metrics/spikes.h"
#include "metrics/summary.h"
#include "replay/capture_info.h"
#include "report/report.h"

#include <stdio.h>

enum { OPT_OUTPUT, OPT_N };

static const struct cli_option options[] = {
	[OPT_OUTPUT] = CLI_STRING("output", 'o', "FILE",
				  "HTML file to write (temp + rename; default "
				  "stdout)"),
	[OPT_N] = CLI_END,
};

static int run(struct cli_args *a);

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

struct report_input {
	struct summary s;
	struct stored_run *runs;
	int n;
	struct spikes sp;
};

static void html(FILE *out, const void *in, const char *db_path)
{
	const struct report_input *r = in;

	report_html(out, &r->s, r->runs, r->n, &r->sp, db_path);
}

static int run(struct cli_args *a)
{
	struct report_input r = { 0 };
	struct capture_info ci;
	int rc;

	rc = cli_exit_summary(summary_compute(a->db, &r.s));
	if (rc != CLI_EXIT_OK)
		goto end;
	rc = CLI_EXIT_INPUT;
	if (replay_metrics_load(a->db, &r.runs, &r.n) < 0 ||
	    capture_info_read(a->db, &ci) < 0 ||
	    spikes_compute(a->db, ci.fmt, 0, 10, ci.workers, ci.nworkers,
			   &r.sp) < 0)
		goto end;
	rc = cli_output(a->str[OPT_OUTPUT], 0, NULL, html, &r, a->path);
end:
	replay_metrics_free_runs(r.runs, r.n);
	summary_free(&r.s);
	return rc;
}
