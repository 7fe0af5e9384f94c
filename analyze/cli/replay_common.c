/*
 * What the commands that replay a capture share (fidelity, replay,
 * report): the policy it was recorded with, the damage it carries, and
 * the replay of several policies over one first pass.  Each says what
 * went wrong on stderr, once, and returns the exit code (cli.h).
 */
#include "cli/cli.h"

#include "db/db.h"

#include "metrics/coverage.h"
#include "metrics/fidelity.h"
#include "replay/capture_info.h"
#include "replay/engine.h"
#include "replay/session.h"
#include "replay/source.h"
#include "report/report.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

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

int cli_narrow_vm(const struct cli_args *a, int opt,
		  struct capture_info *ci)
{
	if (!a->str[opt])
		return CLI_EXIT_OK;
	if (cli_vm_check(a->path, a->num[opt], ci->nvms) != CLI_EXIT_OK)
		return CLI_EXIT_USAGE;
	ci->vm = (int)a->num[opt];
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

/* One state replayed under pols: the capture (or ci->vm narrowed), or,
 * with split not NULL, VM ci->vm's own events from it. */
static int replay_one_state(sqlite3 *db, const char *path,
			    const struct capture_info *ci,
			    const struct policy *const *pols, int n,
			    replay_rules_t rules_off, struct replay_result *res,
			    int *done, struct replay_vms *split,
			    const struct replay_hook *hook)
{
	struct replay_session s;
	enum replay_status st;
	int rc = CLI_EXIT_INPUT;

	*done = 0;
	st = split ? replay_session_open_vm(&s, split, ci->vm, ci, rules_off) :
		replay_session_open(&s, db, ci, rules_off, REPLAY_INPUT_ANY);
	s.opts.hook = hook;
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

/* Each VM's process and name (table vm), and ingest's count of rows of
 * no VM.  Returns 0, or -1 after a failed query (logged). */
static int vms_read(sqlite3 *db, struct report_vms *vms);

/* vms->vm[] for the VMs ci replays (ci->vm alone, or all), their ids,
 * processes and names.  Returns CLI_EXIT_OK or, after saying why, the
 * exit code. */
static int vms_open(sqlite3 *db, const char *path,
		    const struct capture_info *ci, struct report_vms *vms)
{
	int i;

	memset(vms, 0, sizeof(*vms));
	vms->narrowed = ci->vm;
	vms->n = ci->vm ? 1 : ci->nvms;
	vms->vm = calloc((size_t)vms->n, sizeof(*vms->vm));
	if (!vms->vm) {
		log_error("%s: out of memory", path);
		return CLI_EXIT_INTERNAL;
	}
	for (i = 0; i < vms->n; i++)
		vms->vm[i].id = ci->vm ? ci->vm : i + 1;
	return vms_read(db, vms) < 0 ? CLI_EXIT_INPUT : CLI_EXIT_OK;
}

/* One VM's figures under each policy into v (vms, replay's rows), its
 * self-check from the recorded policy's run. */
static int vm_keep(sqlite3 *db, const char *path,
		   const struct capture_info *ci,
		   const struct policy *const *pols, int n,
		   const struct replay_result *part, struct report_vm *v)
{
	double duration = (double)db_meta_get_int(db, "last_ts", 0) / 1e9;
	int p;

	v->met = calloc((size_t)n, sizeof(*v->met));
	if (!v->met) {
		log_error("%s: out of memory", path);
		return CLI_EXIT_INTERNAL;
	}
	for (p = 0; p < n; p++) {
		replay_metrics_compute(&part[p], duration, &v->met[p]);
		if (pols[p] == ci->recorded)
			fidelity_compute(&part[p], fidelity_default_tolerance,
					 &v->fid);
	}
	return CLI_EXIT_OK;
}

/*
 * The events of ci's VMs apart, each VM's in a temporary stream of its
 * own (replay_vms_open()), so that replaying every VM costs what their
 * events cost.  Where the temporary streams cannot be made, *have 0:
 * each VM's session narrows the whole capture instead (N passes more).
 * A CLI_EXIT_*.
 */
static int split_open(sqlite3 *db, const char *path,
		      const struct capture_info *ci, replay_rules_t rules_off,
		      struct replay_vms *split, int *have)
{
	*have = 0;
	switch (replay_vms_open(split, db, ci, rules_off, REPLAY_INPUT_ANY)) {
	case REPLAY_OK:
		*have = 1;
		return CLI_EXIT_OK;
	case REPLAY_ERR_NOMEM:
		log_error("%s: out of memory", path);
		return CLI_EXIT_INTERNAL;
	case REPLAY_ERR_SPOOL:
		log_warn("%s: the VMs' events cannot be set apart: each VM "
			 "reads the whole capture", path);
		return CLI_EXIT_OK;
	default:
		/* A corrupt event or a failed read, said once. */
		return CLI_EXIT_INPUT;
	}
}

/*
 * A capture of several VMs: each VM alone, every policy; the results
 * are the sums over VMs (replay_result_merge()), each VM's figures in
 * vms when asked.
 */
/* The VM attribution figures of a replay (the capture's: every VM's
 * run has the same) into vms. */
static void vms_attribution_take(struct report_vms *vms,
				 const struct replay_result *r)
{
	vms->kthread_events_decided = r->kthread_events_decided;
	vms->kthread_events_left = r->kthread_events_left;
	vms->aged_leaves_moved = r->aged_leaves_moved;
	vms->aged_leaves_unknown = r->aged_leaves_unknown;
	vms->windows_moved = r->windows_moved;
	vms->contexts_by_memslot = r->contexts_by_memslot;
	vms->windows_in_doubt = r->windows_in_doubt;
	vms->windows_no_vm = r->windows_no_vm;
}

static int replay_policies(sqlite3 *db, const char *path,
			   const struct capture_info *ci,
			   const struct policy *const *pols, int n,
			   replay_rules_t rules_off, struct replay_result *res,
			   int *done, struct report_vms *vms,
			   const struct replay_hook *hook)
{
	struct capture_info one = *ci;
	struct replay_result *part;
	struct replay_vms split;
	int v, p, rc = CLI_EXIT_OK, got, have_split = 0;

	if (vms) {
		memset(vms, 0, sizeof(*vms));
		if (ci->vm || ci->nvms >= 2)
			rc = vms_open(db, path, ci, vms);
		if (rc != CLI_EXIT_OK)
			return rc;
	}
	if (ci->vm || ci->nvms < 2) {
		rc = replay_one_state(db, path, ci, pols, n, rules_off, res,
				      done, NULL, hook);
		if (rc == CLI_EXIT_OK && vms && vms->n) {
			rc = vm_keep(db, path, ci, pols, n, res, &vms->vm[0]);
			vms_attribution_take(vms, &res[0]);
		}
		return rc;
	}
	*done = 0;
	rc = split_open(db, path, ci, rules_off, &split, &have_split);
	part = calloc((size_t)n, sizeof(*part));
	if (rc == CLI_EXIT_OK && !part) {
		log_error("%s: out of memory", path);
		rc = CLI_EXIT_INTERNAL;
	}
	for (v = 1; v <= ci->nvms && rc == CLI_EXIT_OK; v++) {
		one.vm = v;
		rc = replay_one_state(db, path, &one, pols, n, rules_off,
				      part, &got, have_split ? &split : NULL,
				      hook);
		if (rc == CLI_EXIT_OK && vms)
			rc = vm_keep(db, path, ci, pols, n, part,
				     &vms->vm[v - 1]);
		for (p = 0; p < got; p++) {
			/* The self-check holds per VM: the sum may pass
			 * where one VM does not. */
			if (rc == CLI_EXIT_OK && pols[p] == ci->recorded) {
				struct fidelity f;

				fidelity_compute(&part[p],
						 fidelity_default_tolerance, &f);
				part[p].vms_failed = !f.ok;
			}
			if (rc == CLI_EXIT_OK &&
			    replay_result_merge(&res[p], &part[p], v == 1) < 0) {
				log_error("%s: out of memory", path);
				rc = CLI_EXIT_INTERNAL;
			}
			replay_result_free(&part[p]);
		}
		if (v == 1)
			*done = rc == CLI_EXIT_OK ? n : 0;
	}
	free(part);
	if (have_split)
		replay_vms_close(&split);
	if (vms && rc == CLI_EXIT_OK) {
		vms_attribution_take(vms, &res[0]);
	}
	return rc;
}

int cli_replay_policies(sqlite3 *db, const char *path,
			const struct capture_info *ci,
			const struct policy *const *pols, int n,
			replay_rules_t rules_off, struct replay_result *res,
			int *done, struct report_vms *vms)
{
	return replay_policies(db, path, ci, pols, n, rules_off, res, done,
			       vms, NULL);
}

int cli_replay_one(sqlite3 *db, const char *path,
		   const struct capture_info *ci, const struct policy *pol,
		   replay_rules_t rules_off, struct replay_result *res)
{
	int done;

	return replay_policies(db, path, ci, &pol, 1, rules_off, res,
			       &done, NULL, NULL);
}

int cli_replay_hooked(sqlite3 *db, const char *path,
		      const struct capture_info *ci, const struct policy *pol,
		      const struct replay_hook *hook,
		      struct replay_result *res)
{
	int done;

	return replay_policies(db, path, ci, &pol, 1, 0, res, &done, NULL,
			       hook);
}

static int vms_read(sqlite3 *db, struct report_vms *vms)
{
	sqlite3_stmt *st = NULL;
	int i;

	if (sqlite3_prepare_v2(db, "SELECT id, pid, procname FROM vm WHERE "
			       "id = ?1", -1, &st, NULL) != SQLITE_OK)
		goto fail;
	for (i = 0; i < vms->n; i++) {
		struct report_vm *v = &vms->vm[i];

		sqlite3_reset(st);
		sqlite3_bind_int64(st, 1, v->id);
		if (sqlite3_step(st) != SQLITE_ROW)
			continue;
		v->pid = sqlite3_column_int64(st, 1);
		if (sqlite3_column_type(st, 2) != SQLITE_NULL)
			v->procname = strdup((const char *)
					     sqlite3_column_text(st, 2));
	}
	sqlite3_finalize(st);
	vms->rows_unattributed = db_meta_sum_int(db, "vm_unattributed:");
	return 0;
fail:
	log_error("%s: %s", sqlite3_db_filename(db, "main"),
		  sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return -1;
}

int cli_replay_vms(sqlite3 *db, const char *path,
		   const struct capture_info *ci, const struct policy *pol,
		   replay_rules_t rules_off, struct report_vms *vms,
		   struct replay_result *total)
{
	struct capture_info one = *ci;
	struct replay_vms split;
	int i, rc, got, have_split = 0;

	memset(vms, 0, sizeof(*vms));
	memset(total, 0, sizeof(*total));
	if (!ci->vm && ci->nvms < 2)
		return cli_replay_one(db, path, ci, pol, rules_off, total);
	rc = vms_open(db, path, ci, vms);
	if (rc == CLI_EXIT_OK && !ci->vm)
		rc = split_open(db, path, ci, rules_off, &split, &have_split);
	for (i = 0; i < vms->n && rc == CLI_EXIT_OK; i++) {
		struct report_vm *v = &vms->vm[i];

		one.vm = (int)v->id;
		rc = replay_one_state(db, path, &one, &pol, 1, rules_off,
				      &v->res, &got,
				      have_split ? &split : NULL, NULL);
		if (rc != CLI_EXIT_OK)
			break;
		fidelity_compute(&v->res, fidelity_default_tolerance, &v->fid);
		if (replay_result_merge(total, &v->res, i == 0) < 0) {
			log_error("%s: out of memory", path);
			rc = CLI_EXIT_INTERNAL;
		}
	}
	if (have_split)
		replay_vms_close(&split);
	vms_attribution_take(vms, total);
	return rc;
}

void cli_vms_free(struct report_vms *vms)
{
	int i;

	for (i = 0; vms->vm && i < vms->n; i++) {
		free((char *)vms->vm[i].procname);
		free(vms->vm[i].met);
		replay_result_free(&vms->vm[i].res);
	}
	free(vms->vm);
	memset(vms, 0, sizeof(*vms));
}

/* Splits "a,b" into out[], the recorded policy always first.  Returns
 * how many; -1 after saying why (an unknown name, or more than
 * CLI_MAX_POLICIES: refused, not cut). */
static int policies_parse(const char *cmd, const char *arg,
			  const struct policy *recorded,
			  const struct policy **out)
{
	char buf[sizeof(((struct cli_args *)0)->lists)], *tok, *save = NULL;
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
			fprintf(stderr, "mmureplay %s: unknown policy '%s' "
				"(see mmureplay replay --help)\n", cmd, tok);
			return -1;
		}
		for (i = 0; i < n && out[i] != p; i++)
			;
		if (i < n)
			continue;
		if (n == CLI_MAX_POLICIES) {
			fprintf(stderr, "mmureplay %s: at most %d policies "
				"in one replay, the recorded one included (run "
				"it again for more: stored runs accumulate)\n",
				cmd, CLI_MAX_POLICIES);
			return -1;
		}
		out[n++] = p;
	}
	return n;
}

/* Each VM's figures as replay_metrics_store_runs() takes them (*out
 * NULL for a capture of one state).  A CLI_EXIT_*. */
static int vms_figures(const struct report_vms *vms,
		       struct replay_vm_figures **out)
{
	int i;

	*out = NULL;
	if (!vms->n)
		return CLI_EXIT_OK;
	*out = calloc((size_t)vms->n, sizeof(**out));
	if (!*out)
		return CLI_EXIT_INTERNAL;
	for (i = 0; i < vms->n; i++) {
		(*out)[i].vm = vms->vm[i].id;
		(*out)[i].self_check_ok = vms->vm[i].fid.ok;
		(*out)[i].met = vms->vm[i].met;
	}
	return CLI_EXIT_OK;
}

/* CLI_EXIT_OK when every policy's NX period can be replayed from the
 * recorded one; else CLI_EXIT_USAGE after saying why. */
static int periods_check(const char *cmd, const struct capture_info *ci,
			 const struct policy *const *pols, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (policy_period_factor(pols[i], ci->nx_period_ms))
			continue;
		if (ci->nx_period_ms > 0)
			fprintf(stderr, "mmureplay %s: %s: not a multiple of "
				"the recorded NX recovery period (%lld ms): "
				"the trace has no batches for the wake-ups a "
				"faster worker adds\n", cmd, pols[i]->name,
				(long long)ci->nx_period_ms);
		else
			fprintf(stderr, "mmureplay %s: %s: the recorded NX "
				"recovery period is unknown (no manifest); "
				"give it with --nx-period MS\n", cmd,
				pols[i]->name);
		return CLI_EXIT_USAGE;
	}
	return CLI_EXIT_OK;
}

int cli_replay_stored(sqlite3 *db, const char *path,
		      const struct capture_info *ci, const char *cmd,
		      const char *policy_list, int force,
		      struct cli_replay **out)
{
	struct replay_vm_figures *vfig = NULL;
	struct cli_replay *r;
	double duration;
	int rc, i;

	*out = r = calloc(1, sizeof(*r));
	if (!r) {
		log_error("%s: out of memory", path);
		return CLI_EXIT_INTERNAL;
	}
	r->n = policies_parse(cmd, policy_list, ci->recorded, r->pols);
	if (r->n < 0) {
		r->n = 0;
		return CLI_EXIT_USAGE;
	}
	rc = periods_check(cmd, ci, r->pols, r->n);
	if (rc != CLI_EXIT_OK)
		return rc;
	if (ci->recorded != &policy_baseline)
		log_warn("%s: recorded with %s: what-if figures are relative "
			 "to it", path, ci->recorded->name);
	duration = (double)db_meta_get_int(db, "last_ts", 0) / 1e9;
	/* Each policy reads the capture twice: read it from the stream. */
	if (source_stream_ensure(db) < 0)
		return CLI_EXIT_OUTPUT;
	rc = cli_replay_policies(db, path, ci, r->pols, r->n, 0, r->res,
				 &r->done, &r->vms);
	if (rc != CLI_EXIT_OK)
		return rc;
	for (i = 0; i < r->n; i++) {
		replay_metrics_compute(&r->res[i], duration, &r->met[i]);
		if (replay_metrics_kept_sources(db, &r->res[i],
						&r->met[i]) < 0)
			return CLI_EXIT_INPUT;
	}
	fidelity_compute(&r->res[0], fidelity_default_tolerance, &r->fid);
	cli_capture_damage(ci, path, &r->fid);
	/* A failed self-check leaves only itself: the recorded policy's
	 * run, no what-if, not even one an earlier replay stored. */
	r->shown = r->fid.ok || force ? r->n : 0;
	rc = vms_figures(&r->vms, &vfig);
	if (rc != CLI_EXIT_OK)
		return rc;
	if (replay_metrics_store_runs(db, r->res, r->met,
				      r->shown ? r->shown : 1, r->fid.ok, vfig,
				      r->vms.n, r->vms.narrowed) < 0)
		rc = CLI_EXIT_OUTPUT;
	free(vfig);
	return rc;
}

void cli_replay_free(struct cli_replay *r)
{
	int i;

	if (!r)
		return;
	for (i = 0; i < r->done; i++)
		replay_result_free(&r->res[i]);
	cli_vms_free(&r->vms);
	free(r);
}
