/*
 * mmureplay fidelity: replay a capture under the policy it was recorded
 * with and compare the model's predictions with the trace.
 */
#include "cli/cli.h"

#include "metrics/coverage.h"
#include "metrics/fidelity.h"
#include "replay/capture_info.h"
#include "replay/engine.h"
#include "replay/session.h"
#include "report/report.h"
#include "util/log.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

enum { OPT_JSON, OPT_OUTPUT, OPT_POLICY, OPT_RATIO, OPT_RULE_OFF, OPT_N };

static const struct cli_option options[] = {
	[OPT_JSON] = CLI_FLAG("json", 0, "JSON instead of a text table"),
	[OPT_OUTPUT] = CLI_OUTPUT,
	[OPT_POLICY] = CLI_STRING("recorded-policy", 0, "NAME",
				  "the policy the trace was recorded with "
				  "(default: from the manifest's knobs, else "
				  "baseline)"),
	[OPT_RATIO] = CLI_INT("nx-ratio", 0, "N", 1, UINT_MAX,
			      "NX recovery ratio the trace ran with (default: "
			      "from the manifest; unknown: batch sizes "
			      "unchecked)"),
	[OPT_RULE_OFF] = CLI_LIST("rule-off", 0, "NAME[,NAME]",
				  "for tests: switch model rules off, to see "
				  "the self-check notice (names: engine.h)"),
	[OPT_N] = CLI_END,
};

static int run(struct cli_args *a);

const struct cli_command cli_cmd_fidelity = {
	.name = "fidelity",
	.usage = "DB [--json] [-o FILE] [--recorded-policy NAME]",
	.summary = "Self-check: replay under the recorded policy vs the trace.",
	.details =
	"Replays the capture under the policy it was recorded with and\n"
	"compares what the model predicts (faults the state requires, leaves\n"
	"each invalidation, recovery and teardown must zap, TLB flushes) with\n"
	"what was traced, and, when the NX recovery ratio is known, the pages\n"
	"each recovery batch takes (ceil(NX-split pages / ratio)).  Each\n"
	"metric says what kind of check it is: predicted (fails both ways),\n"
	"one_sided (faults: an unrequired fault fails, a missing one cannot\n"
	"be seen), restated (stock flush contexts come from the zaps),\n"
	"unchecked.  Exit 0 when every metric is within its tolerance\n"
	"(exact for faults, leaf zaps and recovered pages, 10% for\n"
	"flushes), no context mismatched, and at most 5% of the faults\n"
	"needed a race the kernel allows to be explained; 6 when not.\n",
	.options = options,
	.run = run,
};

int cli_recorded_policy(sqlite3 *db, const char *path,
			struct capture_info *ci)
{
	struct coverage cov;
	const char *gap;
	int rc = CLI_EXIT_OK;

	/* A source without the replay's events: say so, not zeros. */
	switch (coverage_load(db, &cov)) {
	case COVERAGE_OK:
		break;
	case COVERAGE_ERR_NOMEM:
		log_error("%s: out of memory", path);
		return CLI_EXIT_INTERNAL;
	default:
		return CLI_EXIT_INPUT;
	}
	gap = coverage_gap(&cov, COVERAGE_REPLAY);
	if (gap) {
		log_error("%s: cannot replay: %s", path, gap);
		rc = CLI_EXIT_CANNOT;
	}
	coverage_free(&cov);
	if (rc != CLI_EXIT_OK)
		return rc;
	if (capture_info_read(db, ci) < 0)
		return CLI_EXIT_INPUT;
	if (!ci->recorded) {
		log_error("%s: several policy knobs were on while recording "
			  "and their combination cannot be made (give "
			  "--recorded-policy)", path);
		return CLI_EXIT_INPUT;
	}
	return CLI_EXIT_OK;
}

void cli_capture_damage(const struct capture_info *ci, const char *path,
			struct fidelity *fid)
{
	fid->lost_events = ci->lost_events;
	fid->lost_ranges = ci->lost_ranges;
	fid->truncated = ci->truncated;
	if (ci->lost_ranges || ci->truncated)
		log_warn("%s: damaged capture (%lld events lost in %lld "
			 "ranges%s): mismatches after them are expected", path,
			 (long long)ci->lost_events, (long long)ci->lost_ranges,
			 ci->truncated ? ", a stream cut short" : "");
}

int cli_replay_policies(sqlite3 *db, const char *path,
			const struct capture_info *ci,
			const struct policy *const *pols, int n,
			unsigned rules_off, struct replay_result *res,
			int *done)
{
	struct replay_session s;
	enum replay_status st;
	int rc = CLI_EXIT_INPUT;

	*done = 0;
	st = replay_session_open(&s, db, ci, rules_off, REPLAY_INPUT_ANY);
	for (; st == REPLAY_OK && *done < n; (*done)++)
		st = replay_session_run(&s, pols[*done], &res[*done]);
	replay_session_close(&s);
	switch (st) {
	case REPLAY_OK:
		rc = CLI_EXIT_OK;
		break;
	case REPLAY_ERR_POLICY:
		log_error("%s: policy %s needs a period that is a multiple "
			  "of the recorded one", path, pols[*done - 1]->name);
		rc = CLI_EXIT_USAGE;
		break;
	case REPLAY_ERR_NOMEM:
		log_error("%s: out of memory during replay", path);
		rc = CLI_EXIT_INTERNAL;
		break;
	default:
		break;
	}
	return rc;
}

int cli_replay_one(sqlite3 *db, const char *path,
		   const struct capture_info *ci, const struct policy *pol,
		   unsigned rules_off, struct replay_result *res)
{
	int done;

	return cli_replay_policies(db, path, ci, &pol, 1, rules_off, res,
				   &done);
}

/* "a,b": the rules named, as a mask; -1 after naming an unknown one. */
static int rules_parse(const char *arg, unsigned *mask)
{
	char buf[256], *tok, *save = NULL;
	enum replay_rule r;

	snprintf(buf, sizeof(buf), "%s", arg);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		r = replay_rule_find(tok);
		if (r == REPLAY_RULES) {
			fprintf(stderr, "mmureplay fidelity: unknown rule "
				"'%s'\n", tok);
			return -1;
		}
		*mask |= 1u << r;
	}
	return 0;
}

struct fidelity_output {
	const struct fidelity *fid;
	const struct replay_result *res;
};

static void text(FILE *out, const void *f, const char *db_path)
{
	const struct fidelity_output *o = f;

	report_fidelity_text(out, o->fid, o->res, db_path);
}

static int run(struct cli_args *a)
{
	const struct policy *pol = NULL;
	struct capture_info ci;
	struct replay_result res = { 0 };
	struct fidelity fid;
	struct fidelity_output fo = { &fid, &res };
	unsigned rules_off = 0;
	int rc = CLI_EXIT_USAGE;

	if (a->str[OPT_RULE_OFF] &&
	    rules_parse(a->str[OPT_RULE_OFF], &rules_off) < 0)
		goto end;
	if (a->str[OPT_POLICY] && !(pol = policy_find(a->str[OPT_POLICY]))) {
		fprintf(stderr, "mmureplay fidelity: unknown policy '%s'\n",
			a->str[OPT_POLICY]);
		goto end;
	}
	if (pol) {
		rc = CLI_EXIT_INPUT;
		if (capture_info_read(a->db, &ci) < 0)
			goto end;
		ci.recorded = pol;
	} else {
		rc = cli_recorded_policy(a->db, a->path, &ci);
		if (rc != CLI_EXIT_OK)
			goto end;
	}
	if (a->str[OPT_RATIO])
		ci.nx_ratio = a->num[OPT_RATIO];
	rc = cli_replay_one(a->db, a->path, &ci, ci.recorded, rules_off,
			    &res);
	if (rc != CLI_EXIT_OK)
		goto end;
	fidelity_compute(&res, fidelity_default_tolerance, &fid);
	cli_capture_damage(&ci, a->path, &fid);
	rc = cli_output(a->str[OPT_OUTPUT], a->str[OPT_JSON] != NULL,
			a->str[OPT_JSON] ?
			report_fidelity_json(&fid, &res, a->path) : NULL,
			text, &fo, a->path);
	if (rc == CLI_EXIT_OK && !fid.ok)
		rc = CLI_EXIT_CHECK;
end:
	replay_result_free(&res);
	return rc;
}
