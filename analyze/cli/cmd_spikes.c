/*
 * mmureplay spikes: the latency probe's spikes and the MMU activity that
 * overlapped them, for post-mortems.
 */
#include "cli/cli.h"

#include "metrics/spikes.h"
#include "replay/capture_info.h"
#include "report/report.h"
#include "util/log.h"
#include "util/outfile.h"

#include <stdio.h>
#include <stdlib.h>

enum { OPT_THRESHOLD, OPT_TOP, OPT_JSON, OPT_OUTPUT, OPT_N };

static const struct cli_option options[] = {
	[OPT_THRESHOLD] = { "threshold-us", 0, "US",
			    "a spike is a sample >= US (default: the p99 of "
			    "its probe phase)" },
	[OPT_TOP] = { "top", 0, "N", "list the N largest spikes (default "
		      "10, at most 64)" },
	[OPT_JSON] = { "json", 0, NULL, "JSON instead of text tables" },
	[OPT_OUTPUT] = { "output", 'o', "FILE",
			 "write to FILE (temp + rename) instead of stdout" },
	[OPT_N] = { NULL, 0, NULL, NULL },
};

static int run(int argc, char **argv);

const struct cli_command cli_cmd_spikes = {
	.name = "spikes",
	.usage = "DB [--threshold-us US] [--top N] [--json] [-o FILE]",
	.summary = "Latency spikes of the probe and the MMU activity in them.",
	.details =
	"A spike is a latency probe sample (mmureplay:latency_sample) at or\n"
	"above the threshold.  Its window is the measured access: the sample's\n"
	"time minus its latency and 200 us for the exit that reports it, to\n"
	"the sample's time.  For each window: an NPF on the probed page, that\n"
	"page's leaf zapped, an invalidation started, NX recovery work, an\n"
	"mmu_lock wait, a remote TLB flush (the last two need the patched\n"
	"kernel).  The same is shown for about 1,000 non-spike samples, so an\n"
	"activity that is always there does not pass for a cause.\n",
	.options = options,
	.run = run,
};

static int run(int argc, char **argv)
{
	const char *v[OPT_N];
	struct capture_info ci;
	struct spikes s;
	struct outfile out = { 0 };
	sqlite3 *db = NULL;
	char *json = NULL, *end;
	long long thr = 0, top = 10;
	int npos, rc;

	rc = cli_parse(&cli_cmd_spikes, argc, argv, v, &npos);
	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	if (v[OPT_THRESHOLD]) {
		thr = strtoll(v[OPT_THRESHOLD], &end, 10);
		if (*end || thr <= 0) {
			fprintf(stderr, "mmureplay spikes: --threshold-us "
				"wants a positive number of microseconds\n");
			return CLI_EXIT_USAGE;
		}
	}
	if (v[OPT_TOP]) {
		top = strtoll(v[OPT_TOP], &end, 10);
		if (*end || top < 0 || top > SPIKES_TOP_MAX) {
			fprintf(stderr, "mmureplay spikes: --top wants 0..%d\n",
				SPIKES_TOP_MAX);
			return CLI_EXIT_USAGE;
		}
	}
	rc = cli_open_db(&cli_cmd_spikes, npos, argv, 1, &db);
	if (rc != CLI_EXIT_OK)
		goto end;
	rc = CLI_EXIT_INPUT;
	if (capture_info_read(db, &ci) < 0 ||
	    spikes_compute(db, ci.fmt, thr * 1000, (int)top, ci.workers,
			   ci.nworkers, &s) < 0)
		goto end;
	rc = CLI_EXIT_OUTPUT;
	if (outfile_open(&out, v[OPT_OUTPUT] ? v[OPT_OUTPUT] : "-") < 0)
		goto end;
	if (v[OPT_JSON]) {
		json = report_spikes_json(&s, argv[0]);
		if (!json) {
			log_error("%s: out of memory", argv[0]);
			rc = CLI_EXIT_INTERNAL;
			goto end;
		}
		fprintf(out.fp, "%s\n", json);
	} else {
		report_spikes_text(out.fp, &s, argv[0]);
	}
	if (outfile_commit(&out) < 0)
		goto end;
	rc = CLI_EXIT_OK;
end:
	outfile_discard(&out);
	free(json);
	if (db)
		sqlite3_close(db);
	return rc;
}
