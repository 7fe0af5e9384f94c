/*
 * A replay session (session.h): a source, the first pass's facts and
 * the options every run shares, kept together so that each caller does
 * not set them up again.
 */
#include "replay/session.h"

#include "util/assert.h"
#include "util/log.h"

#include <stdlib.h>
#include <string.h>

/*
 * Each thread whose process ever had exactly one VM, made before the
 * capture began (no creation traced) -> that VM: its rows ingest gave
 * none came before a vCPU showed the VM.  A process that makes its VM
 * in the capture has none before that: its threads' rows before the
 * creation are another VM's work or none (reclaim under a memory cgroup
 * the two VMs share), and the pass decides them by state as it does a
 * kernel thread's.
 */
static int thread_vms(sqlite3 *db, struct u64map *out)
{
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (sqlite3_prepare_v2(db, "SELECT t.tid, min(v.id) FROM thread t "
			       "JOIN vm v ON v.pid = t.pid GROUP BY t.tid "
			       "HAVING count(DISTINCT v.id) = 1 AND "
			       "max(v.created_seq IS NULL) = 1", -1, &st,
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

/* The VMs made in the capture (their creation traced), a bit each
 * (id - 1); -1 on a query error. */
static int64_t vms_made(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	int64_t bits = 0, id;
	int r;

	if (sqlite3_prepare_v2(db, "SELECT id FROM vm WHERE created_seq IS "
			       "NOT NULL", -1, &st, NULL) != SQLITE_OK)
		goto fail;
	while ((r = sqlite3_step(st)) == SQLITE_ROW)
		if ((id = sqlite3_column_int64(st, 0)) >= 1 &&
		    id <= VM_ATTR_MAX_VMS)
			bits |= (int64_t)(1ull << (id - 1));
	if (r != SQLITE_DONE)
		goto fail;
	sqlite3_finalize(st);
	return bits;
fail:
	log_error("%s: %s", sqlite3_db_filename(db, "main"),
		  sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return -1;
}

/* Returns 1 when the kernel named the VMs (the series' kvm_vm_create and
 * struct kvm in its events: table vm knows an address), 0 when not, -1
 * on a query error. */
static int kernel_named(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (sqlite3_prepare_v2(db, "SELECT EXISTS (SELECT 1 FROM vm WHERE "
			       "kvm IS NOT NULL)", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		rc = sqlite3_column_int(st, 0);
	else
		log_error("%s: %s", sqlite3_db_filename(db, "main"),
			  sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return rc;
}

/* The rules of replay_rules_t that vm_attr_run() takes, as its flags. */
static unsigned vm_attr_rules(replay_rules_t rules_off)
{
	static const struct {
		enum replay_rule rule;
		unsigned flag;
	} map[] = {
		{ RULE_VM_SLOT_SPAN, VM_ATTR_SLOT_SPAN },
		{ RULE_VM_SLOT_EXCL, VM_ATTR_SLOT_EXCL },
		{ RULE_VM_OWN_PAGE, VM_ATTR_OWN_PAGE },
		{ RULE_EAGER_SPLIT, VM_ATTR_EAGER_SPLIT },
		{ RULE_VM_DOUBT_STATE, VM_ATTR_DOUBT_STATE },
		{ RULE_VM_SLOT_ELIM, VM_ATTR_SLOT_ELIM },
	};
	unsigned on = 0;
	size_t i;

	for (i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (!(rules_off & REPLAY_RULE_BIT(map[i].rule)))
			on |= map[i].flag;
	return on;
}

/* The pass that gives kernel threads' work its VM (vm_attr.h) over src, for db's
 * ci->nvms VMs.  A replay_status. */
static enum replay_status attr_run(sqlite3 *db, struct source *src,
				   const struct capture_info *ci,
				   replay_rules_t rules_off,
				   struct vm_attr *out)
{
	enum replay_status st = REPLAY_ERR_SOURCE;
	struct u64map tvm;
	int64_t made;
	int named;

	u64map_init(&tvm);
	if (thread_vms(db, &tvm) < 0 || (named = kernel_named(db)) < 0 ||
	    (made = vms_made(db)) == -1)
		goto end;
	switch (vm_attr_run(src, ci->fmt, ci->nvms, &tvm, named,
			    (uint64_t)made, vm_attr_rules(rules_off), out)) {
	case VM_ATTR_OK:
		st = REPLAY_OK;
		break;
	case VM_ATTR_ERR_SOURCE:
		break;
	default:
		st = REPLAY_ERR_NOMEM;
		break;
	}
end:
	u64map_free(&tvm);
	return st;
}

static struct source *input_open(sqlite3 *db,
				 enum replay_session_input input)
{
	return input == REPLAY_INPUT_TABLES ? source_open_tables(db) :
		source_open_spooled(db);
}

/* The options every run of s shares, from ci; then the first pass. */
static enum replay_status session_prepare(struct replay_session *s,
					  const struct capture_info *ci,
					  replay_rules_t rules_off)
{
	s->opts.fmt = ci->fmt;
	s->opts.nx_worker_tids = ci->workers;
	s->opts.n_nx_worker_tids = ci->nworkers;
	s->opts.collapser_tids = ci->collapsers;
	s->opts.n_collapser_tids = ci->ncollapsers;
	s->opts.nx_workers_known = ci->workers_known;
	s->opts.npf_exit_reason = ci->npf_exit_reason;
	s->opts.fault_isa = ci->isa;
	s->opts.nx_ratio = ci->nx_ratio;
	s->opts.nx_period_ms = ci->nx_period_ms;
	s->opts.nx_off = ci->nx_off;
	s->opts.span_start_ts = ci->span_start_ts;
	s->opts.zaps_in_doubt = s->kattr && s->kattr->windows_in_doubt ?
		&s->kattr->zaps_in_doubt : NULL;
	s->opts.rules_off = rules_off;
	s->recorded = ci->recorded;
	return replay_prepare(s->src, &s->opts, &s->scan);
}

enum replay_status replay_session_open(struct replay_session *s,
				       sqlite3 *db,
				       const struct capture_info *ci,
				       replay_rules_t rules_off,
				       enum replay_session_input input)
{
	enum replay_status st = REPLAY_ERR_SOURCE;

	memset(s, 0, sizeof(*s));
	s->src = input_open(db, input);
	if (!s->src)
		goto end;
	if (ci->vm) {
		st = attr_run(db, s->src, ci, rules_off, &s->attr);
		if (st != REPLAY_OK)
			goto end;
		s->have_attr = 1;
		s->kattr = &s->attr;
		source_narrow(s->src, ci->vm, &s->attr);
	}
	st = session_prepare(s, ci, rules_off);
end:
	if (st != REPLAY_OK)
		replay_session_close(s);
	return st;
}

enum replay_status replay_vms_open(struct replay_vms *v, sqlite3 *db,
				   const struct capture_info *ci,
				   replay_rules_t rules_off,
				   enum replay_session_input input)
{
	enum replay_status st = REPLAY_ERR_NOMEM;
	struct source *all;
	int have_attr = 0;

	memset(v, 0, sizeof(*v));
	all = input_open(db, input);
	if (!all)
		return REPLAY_ERR_SOURCE;
	v->src = calloc((size_t)ci->nvms, sizeof(*v->src));
	if (!v->src)
		goto end;
	st = attr_run(db, all, ci, rules_off, &v->attr);
	if (st != REPLAY_OK)
		goto end;
	have_attr = 1;
	switch (source_split_vms(all, db, ci->nvms, &v->attr, v->src)) {
	case 0:
		v->nvms = ci->nvms;
		st = REPLAY_OK;
		break;
	case -1:
		st = REPLAY_ERR_SOURCE;
		break;
	default:
		st = REPLAY_ERR_SPOOL;
		break;
	}
end:
	source_close(all);
	if (st != REPLAY_OK) {
		if (have_attr)
			vm_attr_free(&v->attr);
		free(v->src);
		memset(v, 0, sizeof(*v));
	}
	return st;
}

enum replay_status replay_session_open_vm(struct replay_session *s,
					  struct replay_vms *v, int vm,
					  const struct capture_info *ci,
					  replay_rules_t rules_off)
{
	enum replay_status st;

	MR_ASSERT(vm >= 1 && vm <= v->nvms && v->src[vm - 1]);
	memset(s, 0, sizeof(*s));
	s->src = v->src[vm - 1];
	v->src[vm - 1] = NULL;
	s->kattr = &v->attr;
	st = session_prepare(s, ci, rules_off);
	if (st != REPLAY_OK)
		replay_session_close(s);
	return st;
}

void replay_vms_close(struct replay_vms *v)
{
	int i;

	for (i = 0; i < v->nvms; i++)
		source_close(v->src[i]);
	free(v->src);
	if (v->nvms)
		vm_attr_free(&v->attr);
	memset(v, 0, sizeof(*v));
}

enum replay_status replay_session_run(struct replay_session *s,
				      const struct policy *pol,
				      struct replay_result *res)
{
	enum replay_status st;

	s->opts.policy = pol;
	s->opts.self_check = pol == s->recorded;
	if (s->opts.hook && s->opts.hook->run)
		s->opts.hook->run(s->opts.hook->arg);
	st = replay_run_scanned(s->src, &s->opts, &s->scan, res);
	if (st == REPLAY_OK && s->kattr) {
		res->kthread_events_decided = s->kattr->events_decided;
		res->kthread_events_left = s->kattr->events_left;
		res->aged_leaves_moved = s->kattr->aged_moved;
		res->aged_leaves_unknown = s->kattr->aged_unknown;
		res->windows_moved = s->kattr->windows_moved;
		res->contexts_by_memslot = s->kattr->contexts_by_memslot;
		res->windows_in_doubt = s->kattr->windows_in_doubt;
		res->windows_no_vm = s->kattr->windows_no_vm;
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
