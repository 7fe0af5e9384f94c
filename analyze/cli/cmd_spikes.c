/*
 * mmureplay spikes: the latency probe's spikes and the MMU activity that
 * overlapped them, for post-mortems.
 */
#include "cli/cli.h"

#include "metrics/spikes.h"
#include "replay/capture_info.h"
#include "report/report.h"

#include <limits.h>
#include <stdio.h>

enum { OPT_THRESHOLD, OPT_TOP, OPT_JSON, OPT_OUTPUT, OPT_N };

static const struct cli_option options[] = {
	[OPT_THRESHOLD] = CLI_INT("threshold-us", 0, "US", 1,
				  LLONG_MAX / 1000,
				  "a spike is a sample >= US (default: the "
				  "p99 of its probe phase)"),
	[OPT_TOP] = CLI_INT("top", 0, "N", 0, SPIKES_TOP_MAX,
			    "list the N largest spikes (default 10)"),
	[OPT_JSON] = CLI_FLAG("json", 0, "JSON instead of text tables"),
	[OPT_OUTPUT] = CLI_OUTPUT,
	[OPT_N] = CLI_END,
};

static int run(struct cli_args *a);

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

static void text(FILE *out, const void *s, const char *db_path)
{
	report_spikes_text(out, s, db_path);
}

static int run(struct cli_args *a)
{
	struct capture_info ci;
	struct spikes s;
	long long thr = a->str[OPT_THRESHOLD] ? a->num[OPT_THRESHOLD] : 0;
	long long top = a->str[OPT_TOP] ? a->num[OPT_TOP] : 10;

	if (capture_info_read(a->db, &ci) < 0 ||
	    spikes_compute(a->db, ci.fmt, thr * 1000, (int)top, ci.workers,
			   ci.nworkers, &s) < 0)
		return CLI_EXIT_INPUT;
	return cli_output(a->str[OPT_OUTPUT], a->str[OPT_JSON] != NULL,
			  a->str[OPT_JSON] ? report_spikes_json(&s, a->path) :
			  NULL, text, &s, a->path);
}
