/*
 * The replay engine's core loop (see engine.h; the files of the engine
 * and its invariants: engine_int.h): the two passes, the event switch,
 * threads and their contexts, mismatches and the per-second series.
 */
#include "replay/engine_int.h"

#include "util/alloc.h"
#include "util/assert.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_ENTRY(e, name) [e] = name,

const char *const zap_cause_names[ZAP_CAUSES] = {
	ZAP_CAUSE_LIST(NAME_ENTRY)
};

const char *const mismatch_kind_names[MISMATCH_KINDS] = {
	MISMATCH_KIND_LIST(NAME_ENTRY)
};

const char *const fault_exempt_names[EXEMPT_REASONS] = {
	FAULT_EXEMPT_LIST(NAME_ENTRY)
};

#define RULE_NAME_ENTRY(e, name, layer, sit, kfn, fn) [e] = name,
/* Each rule names a layer, at least one situation and both functions. */
#define RULE_CHECK_ENTRY(e, name, layer, sit, kfn, fn) \
	_Static_assert((layer) < RULE_LAYERS && (sit) != 0 && \
		       sizeof(kfn) > 1 && sizeof(fn) > 1, name);

REPLAY_RULE_LIST(RULE_CHECK_ENTRY)

const char *const replay_rule_names[REPLAY_RULES] = {
	REPLAY_RULE_LIST(RULE_NAME_ENTRY)
};

const char *const replay_na_texts[REPLAY_NAS] = {
	REPLAY_NA_LIST(NAME_ENTRY)
};

/*
 * Whether the policy can act on the recorded host and capture.  An
 * NX-only policy changes NX huge page recovery batches alone: where the
 * mitigation is off (manifest), no page was NX-split or no batch ran
 * (trace), its run is the recorded one by construction.
 */
static enum replay_na not_applicable(const struct engine *e)
{
	if (!policy_nx_only(e->opts->policy))
		return REPLAY_NA_NONE;
	if (e->opts->nx_off)
		return REPLAY_NA_NX_OFF;
	if (!e->res->nx_splits_observed)
		return REPLAY_NA_NO_NX_SPLIT;
	if (!e->res->recovery_batches)
		return REPLAY_NA_NO_BATCH;
	return REPLAY_NA_NONE;
}

enum replay_rule replay_rule_find(const char *name)
{
	int r;

	for (r = 0; r < REPLAY_RULES; r++)
		if (!strcmp(replay_rule_names[r], name))
			break;
	return (enum replay_rule)r;
}

static const char *const replay_source_names[REPLAY_SOURCES] = {
	REPLAY_SOURCE_LIST(NAME_ENTRY)
};

const char *replay_source_name(enum replay_source s)
{
	return (unsigned)s < REPLAY_SOURCES ? replay_source_names[s] :
		"unknown";
}

static struct thread_ctx *thread_get(struct engine *e, int32_t tid,
				     int64_t ts)
{
	struct thread_ctx *t;
	int i;

	/* Runs of events come from one thread: ask the map once a run. */
	if (e->last_thread && e->last_tid == tid)
		return e->last_thread;
	t = ptrmap_get(&e->threads, (uint64_t)tid);
	if (t) {
		e->last_tid = tid;
		e->last_thread = t;
		return t;
	}
	t = calloc(1, sizeof(*t));
	if (!t || ptrmap_put(&e->threads, (uint64_t)tid, t) < 0) {
		free(t);
		e->nomem = 1;
		return NULL;
	}
	t->fresh = ts - e->res->first_ts <= CAPTURE_EDGE_NS;
	/* With the mitigation off the worker sleeps for good
	 * (calc_nx_huge_pages_recovery_period() says disabled): what its
	 * thread frees is no recovery.  On 6.12 that thread, a vhost task
	 * of the VM process, can be the one that tears the VM down. */
	for (i = 0; i < e->opts->n_nx_worker_tids; i++)
		if (e->opts->nx_worker_tids[i] == tid &&
		    !(e->opts->nx_off && engine_rule(e, RULE_NX_OFF)))
			t->is_worker = 1;
	for (i = 0; i < e->opts->n_collapser_tids; i++)
		t->is_collapser |= e->opts->collapser_tids[i] == tid;
	return t;
}

struct replay_second *engine_second_at(struct engine *e, int64_t ts)
{
	int64_t s = ts < 0 ? 0 : ts / NS_PER_S;
	struct replay_result *r = e->res;

	if (s >= r->nseconds) {
		/* New room reads 0; the series ends 16 s past the last
		 * second written to so far. */
		if (ALLOC_GROW(r->series, (size_t)s + 1 + 16, e->capseries)) {
			e->nomem = 1;
			return NULL;
		}
		r->nseconds = s + 1 + 16;
	}
	return &r->series[s];
}

void engine_revealed(struct engine *e, int64_t *count, int64_t n,
		     int64_t ts)
{
	MR_ASSERT_DBG(n >= 0);
	if (!n)
		return;
	*count += n;
	if (ts > e->res->warmup_ts)
		e->res->warmup_ts = ts;
}

void engine_whatif(struct engine *e, enum replay_whatif_kind kind,
		   const struct model_event *ev, int level, uint64_t gfn)
{
	const struct replay_hook *h = e->opts->hook;
	struct replay_whatif w;

	if (!h || !h->whatif)
		return;
	w = (struct replay_whatif){ kind, ev->seq, ev->ts, ev->tid, level,
				    gfn };
	h->whatif(h->arg, &w);
}

void engine_mismatch(struct engine *e, enum mismatch_kind kind,
		     uint64_t seq, int64_t ts, uint64_t gfn,
		     int64_t predicted, int64_t observed)
{
	struct replay_result *r = e->res;

	/* Predictions meet the trace only under the recorded rules. */
	if (!e->opts->self_check)
		return;
	r->mismatches_total++;
	r->mismatches_by_kind[kind]++;
	if (ALLOC_GROW(r->mismatches, (size_t)r->nmismatches + 1,
		       r->capmismatches)) {
		e->nomem = 1;
		return;
	}
	r->mismatches[r->nmismatches++] = (struct mismatch){
		kind, seq, ts, gfn, predicted, observed,
	};
}

int engine_dirty_logged_at(struct engine *e, uint64_t gfn, uint64_t seq)
{
	return e->slots.measured ? slots_dirty_logged(&e->slots, 0, gfn) :
		scan_dirty_at(e->scan, seq);
}

int engine_dirty_seen_at(struct engine *e, uint64_t gfn, uint64_t seq)
{
	if (e->slots.measured || !engine_rule(e, RULE_SWAP_SWEEP))
		return engine_dirty_logged_at(e, gfn, seq);
	return scan_dirty_seen_at(e->scan, seq);
}

void engine_ctx_close(struct engine *e, struct thread_ctx *t)
{
	int was_window = t->ctx_kind == CTX_WINDOW;

	switch (t->ctx_kind) {
	case CTX_NONE:
		return;
	case CTX_WINDOW:
		window_ctx_close(e, t);
		break;
	case CTX_FAULT:
		fault_ctx_close(e, t);
		break;
	case CTX_TEARDOWN:
		teardown_ctx_close(e, t);
		break;
	case CTX_RECOVERY:
		nx_recovery_ctx_close(e, t);
		break;
	}
	e->res->zaps_predicted += t->ctx_predicted;
	if (t->ctx_predicted != t->ctx_observed)
		engine_mismatch(e, MISMATCH_ZAP_COUNT, t->ctx_seq, t->ctx_ts,
				t->ctx_gfn, t->ctx_predicted, t->ctx_observed);
	t->ctx_kind = CTX_NONE;
	/* Faults waiting on this window's zaps wait no longer. */
	if (was_window && e->npending)
		fault_pending_expire(e, 0);
}

void engine_ctx_open(struct engine *e, struct thread_ctx *t,
		     enum ctx_kind kind, const struct model_event *ev,
		     uint64_t gfn)
{
	engine_ctx_close(e, t);
	MR_ASSERT_DBG(t->ctx_kind == CTX_NONE);
	t->ctx_kind = kind;
	t->ctx_seq = ev->seq;
	t->ctx_ts = ev->ts;
	t->ctx_gfn = gfn;
	t->ctx_walk_next = 0;
	t->ctx_walk_level = 0;
	t->ctx_walk_as = 0;
	t->ctx_keep = 0;
	t->ctx_predicted = t->ctx_observed = t->ctx_policy_zaps = 0;
	t->ctx_revealed = 0;
	t->ctx_flushes = 0;
	t->ctx_last_ts = ev->ts;
	t->win_nranges = 0;
	t->ctx_as = 0;
	t->ctx_collapse = 0;
	t->fault_flush_due = 0;
}

/* KVM_SET_USER_MEMORY_REGION brackets the collapse of 4K leaves when
 * dirty logging stops, KVM_GET_DIRTY_LOG / KVM_CLEAR_DIRTY_LOG /
 * KVM_RESET_DIRTY_RINGS the write-protection of the pages it reports
 * (see engine_on_fault()), madvise(MADV_COLLAPSE) the THP collapses the
 * process makes in its own thread (engine_window.c). */
static void engine_on_syscall(struct engine *e, struct thread_ctx *t,
			      const struct model_event *ev)
{
	engine_ctx_close(e, t);
	if (ev->u.sys.call == MSYS_MADVISE)
		t->in_madv_collapse = ev->u.sys.entry &&
			ev->u.sys.a2 == MADV_COLLAPSE_BEHAVIOR;
	if (ev->u.sys.call != MSYS_IOCTL)
		return;
	/* An exit event names no ioctl: the thread's entry said which. */
	if (ev->u.sys.entry ? ev->u.sys.a1 == KVM_RUN : t->in_kvm_run) {
		t->in_kvm_run = ev->u.sys.entry;
		if (!ev->u.sys.entry)
			fault_vcpu_seen(e, t);
		vcpu_run_left(e, t, !ev->u.sys.entry);
		return;
	}
	if (ev->u.sys.entry && kvm_ioctl_sets_memslot(ev->u.sys.a1) &&
	    !t->in_setregion) {
		t->in_setregion = 1;
		t->setregion_seq = ev->seq;
		e->setregion_threads++;
	} else if (ev->u.sys.entry && kvm_ioctl_reads_dirty_log(ev->u.sys.a1) &&
		   !t->in_dirtylog) {
		t->in_dirtylog = 1;
		e->dirtylog_threads++;
	} else if (!ev->u.sys.entry && (t->in_setregion || t->in_dirtylog)) {
		teardown_collapse_kept(e, t, ev->ts);
		e->setregion_threads -= t->in_setregion;
		e->dirtylog_threads -= t->in_dirtylog;
		t->in_setregion = t->in_dirtylog = 0;
		MR_ASSERT_DBG(e->setregion_threads >= 0 &&
			      e->dirtylog_threads >= 0);
		if (!e->setregion_threads && !e->dirtylog_threads &&
		    e->npending)
			fault_pending_expire(e, 0);
	}
}

static void engine_on_memslot(struct engine *e,
			      const struct model_event *ev)
{
	slots_apply_event(&e->slots, ev->u.memslot.as_id,
			  ev->u.memslot.slot, ev->u.memslot.change,
			  ev->u.memslot.base_gfn, ev->u.memslot.npages,
			  ev->u.memslot.hva, ev->u.memslot.new_flags);
}

/*
 * Returns 1 when ev changes a present SPTE under an entry the model knows
 * not present: a root born in the trace, still empty there, cannot hold
 * it, so another root, allocated before the capture, does (a capture
 * that begins between a memslot deletion's new root and the old root's
 * zap; the trace's first event is then the new root's allocation).
 */
static int in_another_root(const struct engine *e,
			   const struct model_event *ev)
{
	int as = ev->u.spte.as_id, level;

	if (ev->kind != MEV_SPTE_CHANGE || as < 0 || as >= RETIRED_FIRST ||
	    !spte_present(e->fmt, ev->u.spte.old_spte))
		return 0;
	for (level = SP_MAX_LEVEL; level > ev->u.spte.level; level--)
		if (tdp_known(&e->tdp_obs, as, level, ev->u.spte.gfn) &&
		    !spte_present(e->fmt, tdp_get(&e->tdp_obs, as, level,
						  ev->u.spte.gfn)))
			return 1;
	return 0;
}

/*
 * Whether the capture began while the VM ran, decided at the first event
 * that meets the TDP state: a capture from the VM's creation has traced
 * its root's allocation by then (kvm_mmu_load() allocates it before the
 * vCPU first runs), and from it every table below is linked in the
 * trace.  Without that, entries the trace has not shown are unknown.
 * A recovery batch's begin and end events meet no entry: on 6.1 the
 * patched worker, a kthread made with the VM, traces an empty batch as
 * it starts, before the VM's first vCPU allocates the root; only a page
 * it recovers decides.
 */
static void began_decide(struct engine *e, const struct model_event *ev)
{
	switch (ev->kind) {
	case MEV_SPTE_CHANGE:
	case MEV_FAULT:
	case MEV_FAST_FAULT:
	case MEV_SP_FREE:
		break;
	case MEV_NX_RECOVERY:
		if (ev->u.nx.phase != MEV_NX_PAGE)
			return;
		break;
	default:
		return;
	}
	e->began_decided = 1;
	e->res->began_mid_run = !tdp_known(&e->tdp_obs, 0, SP_MAX_LEVEL, 0) ||
		in_another_root(e, ev);
	/* With the mitigation off nothing is ever split: KVM's list is
	 * empty from the start. */
	e->nx_list_known = !e->res->began_mid_run ||
		(e->opts->nx_off && engine_rule(e, RULE_NX_OFF));
}

static void handle(struct engine *e, const struct model_event *ev)
{
	struct thread_ctx *t;

	/* Before every stream holds data, the changes of the others are
	 * missing: the replay begins where they all do. */
	if (ev->ts < e->opts->span_start_ts) {
		e->res->events_before_span++;
		return;
	}
	/* A probe sample is the guest's measure, not an event of the MMU:
	 * it touches no thread state but the time given back. */
	if (ev->kind == MEV_LATENCY_SAMPLE) {
		engine_on_latency_sample(e, ptrmap_get(&e->threads,
						       (uint64_t)ev->tid), ev);
		return;
	}
	if (!e->res->events)
		e->res->first_ts = ev->ts;
	e->res->events++;
	e->res->last_ts = ev->ts;
	t = thread_get(e, ev->tid, ev->ts);
	if (!t)
		return;
	e->ev = ev;
	t->prev_seq = t->last_seq;
	t->last_seq = ev->seq;
	if (!e->began_decided)
		began_decide(e, ev);
	if (t->npending_next)
		fault_pending_thread_event(e, t);
	/* The aging's flush follows its clears (clear_flush_young): any
	 * other event of the thread ends the aging (engine_on_tlb_flush()). */
	if (t->aged && ev->kind != MEV_SPTE_CHANGE &&
	    ev->kind != MEV_TLB_FLUSH)
		t->aged = 0;
	switch (ev->kind) {
	case MEV_SPTE_CHANGE:
		t->route_as = roots_route(e, t, ev);
		if (t->route_as != ev->u.spte.as_id) {
			struct model_event routed = *ev;

			routed.u.spte.as_id = t->route_as;
			engine_on_spte(e, t, &routed);
		} else {
			engine_on_spte(e, t, ev);
		}
		break;
	case MEV_FAULT:
		engine_on_fault(e, t, ev);
		break;
	case MEV_FAST_FAULT:
		engine_on_fast_fault(e, ev);
		break;
	case MEV_NOTIFIER:
		engine_on_notifier(e, t, ev);
		break;
	case MEV_SP_ALLOC:
		engine_on_sp_alloc(e, t, ev);
		break;
	case MEV_SP_FREE:
		engine_on_sp_free(e, t, ev);
		break;
	case MEV_VCPU_EXIT:
		engine_on_vcpu_exit(e, t, ev);
		break;
	case MEV_VCPU_ENTRY:
		engine_on_vcpu_entry(e, t, ev);
		break;
	case MEV_SYSCALL:
		engine_on_syscall(e, t, ev);
		break;
	case MEV_TLB_FLUSH:
		engine_on_tlb_flush(e, t, ev);
		break;
	case MEV_NX_RECOVERY:
		engine_on_nx_recovery(e, t, ev);
		break;
	case MEV_LOCK_WAIT:
		engine_on_lock_wait(e, t, ev);
		break;
	case MEV_LOCK_CONTENTION:
		engine_on_lock_contention(e, t, ev);
		break;
	case MEV_SPTE_REQUEST:
		engine_on_spte_request(e, t, ev);
		break;
	case MEV_MEMSLOT:
		engine_on_memslot(e, ev);
		break;
	case MEV_UNMAP_DECISION:        /* and by the first pass (scan.c) */
		engine_on_unmap_decision(t, ev);
		break;
	case MEV_LATENCY_SAMPLE:        /* above */
	case MEV_KINDS:
		break;
	}
	/* A flush freezes nothing past the flusher's next event. */
	if (t->frozen_end && ev->kind != MEV_TLB_FLUSH)
		fault_frozen_end(e, t);
	if (ev->kind != MEV_SPTE_CHANGE && ev->kind != MEV_TLB_FLUSH &&
	    ev->kind != MEV_SP_FREE && ev->kind != MEV_SP_ALLOC)
		t->unknown_root = t->teardown_before = 0;
	t->seen = 1;
	if (ev->kind != MEV_SPTE_CHANGE && ev->kind != MEV_TLB_FLUSH)
		t->fresh = 0;
	else if (t->fresh && e->res->began_mid_run && !t->fresh_counted) {
		t->fresh_counted = 1;
		e->res->contexts_before++;
	}
}

static void close_each(void *arg, void *t)
{
	engine_ctx_close(arg, t);
}

/* Which events the capture has decides how facts are known. */
static void sources_decide(struct engine *e)
{
	const int *seen = e->scan->seen;

	e->res->flushes_measured = seen[MEV_TLB_FLUSH];
	e->res->lock_src = seen[MEV_LOCK_WAIT] || seen[MEV_LOCK_CONTENTION] ?
		REPLAY_SRC_MEASURED : e->opts->n_nx_worker_tids ?
		REPLAY_SRC_INFERRED : REPLAY_SRC_NONE;
}

enum replay_status replay_run_scanned(struct source *src,
				      const struct replay_opts *opts,
				      const struct scan *scan,
				      struct replay_result *res)
{
	enum replay_status st = REPLAY_ERR_NOMEM;
	struct engine e;
	struct model_event ev;
	enum source_status ss;
	char what[64];

	memset(res, 0, sizeof(*res));
	memset(&e, 0, sizeof(e));
	res->policy = opts->policy->name;
	res->limits = opts->policy->limits;
	res->nx_ratio_known = opts->nx_ratio > 0;
	res->span_start_ts = opts->span_start_ts;
	res->nx_workers_known = opts->nx_workers_known;
	e.period_factor = policy_period_factor(opts->policy,
					       opts->nx_period_ms);
	if (!e.period_factor)
		return REPLAY_ERR_POLICY;
	e.opts = opts;
	e.fmt = opts->fmt;
	e.res = res;
	ptrmap_init(&e.threads);
	tdp_init(&e.tdp_obs, e.fmt);
	tdp_init(&e.tdp_ovl, e.fmt);
	tdp_init(&e.tdp_zapmark, e.fmt);
	tdp_init(&e.tdp_kvmdirty, e.fmt);
	tdp_init(&e.tdp_doubt, e.fmt);
	roots_init(&e);
	u64map_init(&e.nx_traced.split_map);
	u64map_init(&e.nx_traced.guessed);
	u64map_init(&e.nx_policy.guessed);
	u64map_init(&e.nx_tables);
	u64map_init(&e.nx_tables_old);
	u64map_init(&e.host_level);
	u64map_init(&e.win_unknown);
	u64map_init(&e.leaf_grants);
	u64map_init(&e.nx_policy.split_map);
	e.scan = scan;
	e.tdp_obs.ignore_reachability =
		!engine_rule(&e, RULE_REACHABILITY);
	sources_decide(&e);
	/* Measured memslots are replayed as they change, from those the
	 * trace shows existed at its start; inferred ones hold from the
	 * start. */
	if (e.scan->slots.measured)
		e.slots = e.scan->slots_start;
	else
		e.slots = e.scan->slots;
	res->memslots_dumped = e.scan->slots_dumped;
	res->slots_src = e.scan->slots.measured ? REPLAY_SRC_MEASURED :
		e.scan->slots.n ? REPLAY_SRC_INFERRED : REPLAY_SRC_NONE;
	res->upgrade_src = e.scan->upgrade_src;
	memcpy(res->upgrade_infer, e.scan->upgrade_infer,
	       sizeof(res->upgrade_infer));
	res->dirty_src = e.scan->dirty_src;
	if (source_rewind(src) != SOURCE_OK) {
		st = REPLAY_ERR_SOURCE;
		goto end;
	}
	snprintf(what, sizeof(what), "replay %s", opts->policy->name);
	source_progress(src, what);
	while ((ss = source_next(src, &ev)) == SOURCE_OK && !e.nomem) {
		handle(&e, &ev);
		if (tdp_size(&e.tdp_obs) + tdp_size(&e.tdp_ovl) >
		    (size_t)res->peak_tdp_entries)
			res->peak_tdp_entries = (int64_t)(tdp_size(&e.tdp_obs) +
							  tdp_size(&e.tdp_ovl));
	}
	if (e.nomem)
		goto end;
	if (ss != SOURCE_END) {
		st = REPLAY_ERR_SOURCE;
		goto end;
	}
	ptrmap_each(&e.threads, close_each, &e);
	nx_batch_close(&e);
	fault_pending_expire(&e, 1);
	MR_ASSERT(e.nopen_windows == 0);
	MR_ASSERT(e.nopen_zap_alls == 0);
	MR_ASSERT(e.npending == 0);
	MR_ASSERT(res->faults - res->faults_added + res->faults_avoided ==
		  res->faults_observed);
	MR_ASSERT(res->recovery_batches_run <= res->recovery_batches);
	res->not_applicable = not_applicable(&e);
	if (replay_latency_settle(res) < 0)
		e.nomem = 1;
	res->read_lock_unverifiable = opts->self_check &&
		opts->policy->recovery_read_lock &&
		!res->recovery_batches_measured;
	st = e.nomem ? REPLAY_ERR_NOMEM : REPLAY_OK;
end:
	ptrmap_free_values(&e.threads);
	free(e.open_windows);
	free(e.open_zap_alls);
	free(e.pending);
	tdp_free(&e.tdp_obs);
	tdp_free(&e.tdp_ovl);
	tdp_free(&e.tdp_zapmark);
	tdp_free(&e.tdp_kvmdirty);
	tdp_free(&e.tdp_doubt);
	u64map_free(&e.nx_traced.split_map);
	u64map_free(&e.nx_traced.guessed);
	u64map_free(&e.nx_policy.guessed);
	u64map_free(&e.nx_tables);
	u64map_free(&e.nx_tables_old);
	u64map_free(&e.host_level);
	u64map_free(&e.win_unknown);
	u64map_free(&e.leaf_grants);
	u64map_free(&e.nx_policy.split_map);
	if (st != REPLAY_OK)
		replay_result_free(res);
	return st;
}

enum replay_status replay_prepare(struct source *src,
				  const struct replay_opts *opts,
				  struct scan *scan)
{
	switch (scan_run(src, opts->fmt,
			 !(opts->rules_off & REPLAY_RULE_BIT(RULE_UPGRADE_CAUSE)),
			 !(opts->rules_off & REPLAY_RULE_BIT(RULE_DIRTY_SWEEP)), scan)) {
	case SCAN_OK:
		return REPLAY_OK;
	case SCAN_ERR_SOURCE:
		return REPLAY_ERR_SOURCE;
	default:
		return REPLAY_ERR_NOMEM;
	}
}

enum replay_status replay_run(struct source *src,
			      const struct replay_opts *opts,
			      struct replay_result *res)
{
	enum replay_status st;
	struct scan scan;

	memset(res, 0, sizeof(*res));
	st = replay_prepare(src, opts, &scan);
	if (st == REPLAY_OK)
		st = replay_run_scanned(src, opts, &scan, res);
	scan_free(&scan);
	return st;
}

void replay_result_free(struct replay_result *res)
{
	free(res->series);
	res->series = NULL;
	res->nseconds = 0;
	free(res->mismatches);
	res->mismatches = NULL;
	res->nmismatches = 0;
	res->capmismatches = 0;
	valcount_free(&res->lat.npf);
	valcount_free(&res->lat.probe);
}
