/*
 * What the commands that replay a capture share (fidelity, replay,
 * report): the policy it was recorded with, the damage it carries, and
 * the replay of several policies over one first pass.  Each says what
 * went wrong on stderr, once, and returns the exit code (cli.h).
 */
#include "cli/cli.h"

#include "metrics/coverage.h"
#include "metrics/fidelity.h"
#include "replay/capture_info.h"
#include "replay/engine.h"
#include "replay/session.h"
#include "util/log.h"

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
