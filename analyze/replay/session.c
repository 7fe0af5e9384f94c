/*
 * A replay session (session.h): a source, the first pass's facts and
 * the options every run shares, kept together so that each caller does
 * not set them up again.
 */
#include "replay/session.h"

#include "util/log.h"

#include <string.h>

/* Each thread whose process ever had exactly one VM -> that VM. */
static int thread_vms(sqlite3 *db, struct u64map *out)
{
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (sqlite3_prepare_v2(db, "SELECT t.tid, min(v.id) FROM thread t "
			       "JOIN vm v ON v.pid = t.pid GROUP BY t.tid "
			       "HAVING count(DISTINCT v.id) = 1", -1, &st,
			       NULL) != SQLITE_OK) {
		log_error("%s: %s", sqlite3_db_filename(db, "main"),
			  sqlite3_errmsg(db));
		return -1;
	}
	while (sqlite3_step(st) == SQLITE_ROW)
		if (u64map_put(out, (uint64_t)(uint32_t)
			       sqlite3_column_int(st, 0),
			       (uint64_t)sqlite3_column_int64(st, 1)) < 0)
			goto end;
	rc = 0;
end:
	sqlite3_finalize(st);
	return rc;
}

enum replay_status replay_session_open(struct replay_session *s,
				       sqlite3 *db,
				       const struct capture_info *ci,
				       unsigned rules_off,
				       enum replay_session_input input)
{
	enum replay_status st = REPLAY_ERR_SOURCE;
	struct u64map tvm;

	memset(s, 0, sizeof(*s));
	u64map_init(&tvm);
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
	if (ci->vm) {
		if (thread_vms(db, &tvm) < 0)
			goto end;
		switch (vm_attr_run(s->src, ci->fmt, ci->nvms, &tvm,
				    &s->attr)) {
		case VM_ATTR_OK:
			break;
		case VM_ATTR_ERR_SOURCE:
			goto end;
		default:
			st = REPLAY_ERR_NOMEM;
			goto end;
		}
		s->have_attr = 1;
		source_narrow(s->src, ci->vm, &s->attr);
	}
	st = replay_prepare(s->src, &s->opts, &s->scan);
end:
	u64map_free(&tvm);
	if (st != REPLAY_OK)
		replay_session_close(s);
	return st;
}

enum replay_status replay_session_run(struct replay_session *s,
				      const struct policy *pol,
				      struct replay_result *res)
{
	enum replay_status st;

	s->opts.policy = pol;
	s->opts.self_check = pol == s->recorded;
	st = replay_run_scanned(s->src, &s->opts, &s->scan, res);
	if (st == REPLAY_OK && s->have_attr) {
		res->kthread_events_decided = s->attr.events_decided;
		res->kthread_events_left = s->attr.events_left;
	}
	return st;
}

void replay_session_close(struct replay_session *s)
{
	scan_free(&s->scan);
	if (s->src)
		source_close(s->src);
	if (s->have_attr)
		vm_attr_free(&s->attr);
	memset(s, 0, sizeof(*s));
}
