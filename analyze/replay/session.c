/*
 * A replay session (session.h): a source, the first pass's facts and
 * the options every run shares, kept together so that each caller does
 * not set them up again.
 */
#include "replay/session.h"

#include <string.h>

enum replay_status replay_session_open(struct replay_session *s,
				       sqlite3 *db,
				       const struct capture_info *ci,
				       unsigned rules_off,
				       enum replay_session_input input)
{
	enum replay_status st = REPLAY_ERR_SOURCE;

	memset(s, 0, sizeof(*s));
	s->src = input == REPLAY_INPUT_TABLES ? source_open_tables(db) :
		source_open_spooled(db);
	if (!s->src)
		goto end;
	s->opts.fmt = ci->fmt;
	s->opts.nx_worker_tids = ci->workers;
	s->opts.n_nx_worker_tids = ci->nworkers;
	s->opts.nx_workers_known = ci->workers_known;
	s->opts.npf_exit_reason = ci->npf_exit_reason;
	s->opts.fault_isa = ci->isa;
	s->opts.nx_ratio = ci->nx_ratio;
	s->opts.nx_period_ms = ci->nx_period_ms;
	s->opts.nx_off = ci->nx_off;
	s->opts.span_start_ts = ci->span_start_ts;
	s->opts.rules_off = rules_off;
	s->recorded = ci->recorded;
	st = replay_prepare(s->src, &s->opts, &s->scan);
end:
	if (st != REPLAY_OK)
		replay_session_close(s);
	return st;
}

enum replay_status replay_session_run(struct replay_session *s,
				      const struct policy *pol,
				      struct replay_result *res)
{
	s->opts.policy = pol;
	s->opts.self_check = pol == s->recorded;
	return replay_run_scanned(s->src, &s->opts, &s->scan, res);
}

void replay_session_close(struct replay_session *s)
{
	scan_free(&s->scan);
	if (s->src)
		source_close(s->src);
	memset(s, 0, sizeof(*s));
}
