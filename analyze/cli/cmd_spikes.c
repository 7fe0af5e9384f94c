/*
 * mmureplay spikes: the latency probe's spikes and the MMU activity that
 * overlapped them, for post-mortems.
 */
#include "cli/cli.h"

#include "db/db.h"
#include "metrics/phases.h"
#include "metrics/spikes.h"
#include "replay/capture_info.h"
#include "report/report.h"
#include "util/log.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

enum { OPT_THRESHOLD, OPT_TOP, OPT_AGAINST, OPT_JSON, OPT_OUTPUT, OPT_VM,
	OPT_N };

static const struct cli_option options[] = {
	[OPT_THRESHOLD] = CLI_INT("threshold-us", 0, "US", 1,
				  LLONG_MAX / 1000,
				  "a spike is a sample >= US (default: the "
				  "p99 of its probe phase)"),
	[OPT_TOP] = CLI_INT("top", 0, "N", 0, SPIKES_TOP_MAX,
			    "list the N largest spikes (default 10)"),
	[OPT_AGAINST] = CLI_STRING("against", 0, "DB",
				   "set each workload phase against the same "
				   "phase of another run"),
	[OPT_JSON] = CLI_FLAG("json", 0, "JSON instead of text tables"),
	[OPT_OUTPUT] = CLI_OUTPUT,
	[OPT_VM] = CLI_VM,
	[OPT_N] = CLI_END,
};

static int run(struct cli_args *a);

const struct cli_command cli_cmd_spikes = {
	.name = "spikes",
	.usage = "DB [--threshold-us US] [--top N] [--against DB2] [--json] "
		 "[-o FILE] [--vm ID]",
	.summary = "Latency spikes of the probe and the MMU activity in them.",
	.details =
	"A spike is a latency probe sample (mmureplay:latency_sample) at or\n"
	"above the threshold.  Its window is the measured access: the sample's\n"
	"time minus its latency and 200 us for the exit that reports it, to\n"
	"the sample's time.  For each window: an NPF on the probed page, that\n"
	"page's leaf zapped, an invalidation started, NX recovery work, an\n"
	"mmu_lock wait, a remote TLB flush (the last two need the patched\n"
	"kernel).  The same is shown for about 1,000 non-spike samples, so an\n"
	"activity that is always there does not pass for a cause.\n"
	"On a capture of several VMs: each VM's samples, spikes, p99 and\n"
	"worst sample, then the host's total; each listed spike names its VM.\n"
	"With --against DB2 (another run of the same workload, e.g. the\n"
	"knob-on side of an A/B): per workload phase (the workload's marker\n"
	"ioctls), the samples of each run at or above one threshold (US, or\n"
	"the p99 of all of DB's samples), each run's p99 in the phase, and its\n"
	"faults and leaf zaps there: what B did where A stalled.\n"
	"--vm ID: that VM's samples alone, and in their windows the activity\n"
	"of its process's threads and of threads in no VM's process (kernel\n"
	"threads, which may be what hit it); DB2 is not narrowed.\n",
	.options = options,
	.run = run,
};

struct spikes_out {
	struct spikes s;
	struct phases *a, *b;           /* --against */
	const char *b_path;
};

static void text(FILE *out, const void *arg, const char *db_path)
{
	const struct spikes_out *o = arg;

	report_spikes_text(out, &o->s, db_path);
	if (o->a)
		report_phases_text(out, o->a, o->b, o->b_path);
}

/* spikes JSON, with the phases when --against is given. */
static char *json(const struct spikes_out *o, const char *db_path)
{
	char *text = report_spikes_json(&o->s, db_path), *out;
	cJSON *root;

	if (!text || !o->a)
		return text;
	root = cJSON_Parse(text);
	free(text);
	if (!root)
		return NULL;
	report_phases_json_add(root, o->a, o->b, o->b_path);
	out = cJSON_Print(root);
	cJSON_Delete(root);
	return out;
}

/* The phases of both runs, at A's threshold; a CLI_EXIT_*. */
static int against(struct cli_args *a, const struct capture_info *ci,
		   int64_t thr_ns, struct spikes_out *o)
{
	struct capture_info cb;
	sqlite3 *db = NULL;
	int rc = CLI_EXIT_INTERNAL;

	o->b_path = a->str[OPT_AGAINST];
	o->a = calloc(1, sizeof(*o->a));
	o->b = calloc(1, sizeof(*o->b));
	if (!o->a || !o->b) {
		log_error("%s: out of memory", a->path);
		goto end;
	}
	rc = CLI_EXIT_INPUT;
	if (db_open(o->b_path, 1, &db) != DB_OK)
		goto end;
	if (!thr_ns)
		thr_ns = phases_overall_p99(a->db);
	if (capture_info_read(db, &cb) < 0 ||
	    phases_compute(a->db, ci->fmt, thr_ns, o->a) < 0 ||
	    phases_compute(db, cb.fmt, thr_ns, o->b) < 0)
		goto end;
	rc = CLI_EXIT_OK;
end:
	if (db)
		sqlite3_close(db);
	return rc;
}

static int run(struct cli_args *a)
{
	struct spikes_out o = { 0 };
	struct capture_info ci;
	long long thr = a->str[OPT_THRESHOLD] ? a->num[OPT_THRESHOLD] : 0;
	long long top = a->str[OPT_TOP] ? a->num[OPT_TOP] : 10;
	int rc;

	/* Capture facts (the exit ISA, the NX workers) are the capture's:
	 * read before narrowing. */
	rc = CLI_EXIT_INPUT;
	if (capture_info_read(a->db, &ci) < 0)
		goto end;
	/* The VM's spikes, with the work of threads in no VM's process
	 * (ksmd, kswapd, the NX worker): it may be what hit it. */
	rc = cli_narrow_db(a, OPT_VM, 1);
	if (rc != CLI_EXIT_OK)
		goto end;
	rc = CLI_EXIT_INPUT;
	if (spikes_compute(a->db, ci.fmt, thr * 1000, (int)top, ci.workers,
			   ci.nworkers, &o.s) < 0)
		goto end;
	if (a->str[OPT_AGAINST]) {
		rc = against(a, &ci, thr * 1000, &o);
		if (rc != CLI_EXIT_OK)
			goto end;
	}
	rc = cli_output(a->str[OPT_OUTPUT], a->str[OPT_JSON] != NULL,
			a->str[OPT_JSON] ? json(&o, a->path) : NULL, text, &o,
			a->path);
end:
	spikes_free(&o.s);
	free(o.a);
	free(o.b);
	return rc;
}
