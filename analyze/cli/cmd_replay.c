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
#include "util/outfile.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_POLICIES 16

enum { OPT_POLICY, OPT_JSON, OPT_OUTPUT, OPT_RATIO, OPT_PERIOD, OPT_FORCE,
       OPT_N };

static const struct cli_option options[] = {
	[OPT_POLICY] = { "policy", 'p', "NAME",
			 "policy to replay (repeatable; default: all)" },
	[OPT_JSON] = { "json", 0, NULL, "JSON instead of text tables" },
	[OPT_OUTPUT] = { "output", 'o', "FILE",
			 "write to FILE (temp + rename) instead of stdout" },
	[OPT_RATIO] = { "nx-ratio", 0, "N",
			"NX recovery ratio of the trace (default: manifest)" },
	[OPT_PERIOD] = { "nx-period", 0, "MS",
			 "NX recovery period of the trace, ms (default: "
			 "manifest)" },
	[OPT_FORCE] = { "force", 0, NULL,
			"after a failed self-check, give and store the "
			"what-if anyway, marked unverified (exit 6 still)" },
	[OPT_N] = { NULL, 0, NULL, NULL },
};

static int run(int argc, char **argv);

const struct cli_command cli_cmd_replay = {
	.name = "replay",
	.usage = "DB [--policy NAME]... [--json] [-o FILE]",
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
	"every k-th recorded batch, the others' pages stay split).\n",
	.options = options,
	.run = run,
};

/* Split "a,b" into policies; the recorded one always first. */
static int policies_parse(const char *arg, const struct policy *recorded,
			  const struct policy **out)
{
	char buf[256], *tok, *save = NULL;
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
		if (i == n && n < MAX_POLICIES)
			out[n++] = p;
	}
	return n;
}

static int run(int argc, char **argv)
{
	const char *v[OPT_N];
	const struct policy *pols[MAX_POLICIES];
	struct replay_result res[MAX_POLICIES];
	struct replay_metrics met[MAX_POLICIES];
	struct fidelity fid;
	struct capture_info ci;
	struct outfile out = { 0 };
	sqlite3 *db = NULL;
	char *json = NULL;
	double duration;
	int npos, rc, n, i, shown, done = 0;

	memset(res, 0, sizeof(res));
	rc = cli_parse(&cli_cmd_replay, argc, argv, v, &npos);
	if (rc)
		return rc > 0 ? CLI_EXIT_OK : CLI_EXIT_USAGE;
	rc = cli_open_db(&cli_cmd_replay, npos, argv, 0, &db);
	if (rc != CLI_EXIT_OK)
		goto end;
	rc = cli_recorded_policy(db, argv[0], &ci);
	if (rc != CLI_EXIT_OK)
		goto end;
	if (v[OPT_RATIO])
		ci.nx_ratio = strtoll(v[OPT_RATIO], NULL, 10);
	if (v[OPT_PERIOD])
		ci.nx_period_ms = strtoll(v[OPT_PERIOD], NULL, 10);
	n = policies_parse(v[OPT_POLICY], ci.recorded, pols);
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
			 "to it", argv[0], ci.recorded->name);
	duration = (double)db_meta_get_int(db, "last_ts", 0) / 1e9;
	/* Each policy reads the capture twice: read it from the stream. */
	if (source_stream_ensure(db) < 0) {
		rc = CLI_EXIT_OUTPUT;
		goto end;
	}
	rc = cli_replay_policies(db, argv[0], &ci, pols, n, 0, res, &done);
	if (rc != CLI_EXIT_OK)
		goto end;
	for (i = 0; i < n; i++)
		replay_metrics_compute(&res[i], duration, &met[i]);
	fidelity_compute(&res[0], fidelity_default_tolerance, &fid);
	cli_capture_damage(&ci, argv[0], &fid);
	/* A failed self-check leaves only itself: the recorded policy's
	 * run, no what-if, not even one an earlier replay stored. */
	if (!fid.ok && !v[OPT_FORCE])
		shown = 0;
	else
		shown = n;
	/* All runs land together or not at all. */
	rc = CLI_EXIT_OUTPUT;
	if (db_exec(db, "BEGIN IMMEDIATE") != DB_OK)
		goto end;
	if (!fid.ok && replay_metrics_clear(db) < 0) {
		db_exec(db, "ROLLBACK");
		goto end;
	}
	for (i = 0; i < (shown ? shown : 1); i++)
		if (replay_metrics_store(db, &res[i], &met[i], fid.ok) < 0) {
			db_exec(db, "ROLLBACK");
			goto end;
		}
	if (db_exec(db, "COMMIT") != DB_OK)
		goto end;
	if (outfile_open(&out, v[OPT_OUTPUT] ? v[OPT_OUTPUT] : "-") < 0)
		goto end;
	if (v[OPT_JSON]) {
		json = report_replay_json(met, shown, res, &res[0], &fid,
					  argv[0]);
		if (!json) {
			rc = CLI_EXIT_INTERNAL;
			goto end;
		}
		fprintf(out.fp, "%s\n", json);
	} else {
		report_replay_text(out.fp, met, shown, &fid, argv[0]);
	}
	if (outfile_commit(&out) < 0)
		goto end;
	rc = fid.ok ? CLI_EXIT_OK : CLI_EXIT_CHECK;
end:
	outfile_discard(&out);
	free(json);
	for (i = 0; i < done; i++)
		replay_result_free(&res[i]);
	if (db)
		sqlite3_close(db);
	return rc;
}
