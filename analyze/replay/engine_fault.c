/*
 * vCPU faults (see engine_int.h): the self-check (does the traced state
 * require this fault?) and the what-if (would a leaf the policy kept
 * have permitted the access?), the fast path's in-place fixes, and the
 * NPF exits that start a fault.
 */
#include "replay/engine_int.h"

static int permits(const struct spte_format *f, uint64_t spte, uint64_t err)
{
	if ((err & MEV_PFERR_WRITE) && !spte_writable(f, spte))
		return 0;
	if ((err & MEV_PFERR_FETCH) && !spte_executable(f, spte))
		return 0;
	return 1;
}

void engine_on_fault(struct engine *e, struct thread_ctx *t,
		     const struct model_event *ev)
{
	struct replay_result *r = e->res;
	uint64_t gfn = mev_gpa_to_gfn(ev->u.fault.gpa);
	uint64_t err = ev->u.fault.error_code;
	uint64_t spte, pspte;
	int level, plevel, allowed, in_window, avoided;
	struct replay_second *s;

	engine_ctx_open(e, t, CTX_FAULT, ev, gfn);
	t->fault_fetch = (err & MEV_PFERR_FETCH) != 0;
	r->faults_observed++;
	in_window = window_any_covers(e, 0, gfn);

	/* Self-check: the traced state must require this fault. */
	level = tdp_leaf(&e->tdp_obs, 0, gfn, &spte);
	allowed = level && permits(e->fmt, spte, err);
	/*
	 * A zap writes the SPTE before its tracepoint fires, and a vCPU's
	 * NPF is traced at the exit, before it takes mmu_lock: so during NX
	 * recovery (under either lock; a preempted worker traces its zap
	 * milliseconds late) and the collapse of 4K leaves when dirty
	 * logging stops (zap_collapsible_sptes, inside
	 * KVM_SET_USER_MEMORY_REGION), a vCPU can take its NPF on a page
	 * whose zap is traced just after.  Meanwhile a fault on a mapped
	 * page is not held against the model.
	 */
	if (!allowed || in_window || e->batch.batch_active ||
	    e->setregion_threads)
		r->faults_predicted++;
	else
		engine_mismatch(e, MISMATCH_FAULT_NOT_REQUIRED, ev->seq,
				ev->ts, gfn, 0, 1);
	/* A huge leaf that forbids the access is replaced (NX split). */
	if (level > TDP_LEVEL_4K && !allowed)
		t->ctx_predicted = 1;

	/* What-if: a leaf the policy kept may permit the access. */
	if (tdp_size(&e->tdp_ovl)) {
		plevel = overlay_leaf(e, 0, gfn, &pspte);
	} else {
		plevel = level;
		pspte = spte;
	}
	avoided = plevel && permits(e->fmt, pspte, err) && !in_window;
	t->ctx_keep = avoided;
	if (avoided) {
		r->faults_avoided++;
		return;
	}
	r->faults++;
	s = engine_second_at(e, ev->ts);
	if (s)
		s->faults++;
	overlay_refault(e, gfn);
}

void fault_ctx_close(struct engine *e, struct thread_ctx *t)
{
	overlay_flush_account(e, t->ctx_ts, t->ctx_predicted, t->ctx_observed,
			      t->ctx_policy_zaps, t->ctx_flushes, -1);
}

/* The fast path fixes a leaf in place without a spte_changed event. */
void engine_on_fast_fault(struct engine *e, const struct model_event *ev)
{
	uint64_t gfn = mev_gpa_to_gfn(ev->u.fault.gpa), spte;
	int level = tdp_leaf(&e->tdp_obs, 0, gfn, &spte);

	if (level && spte == ev->fast_old)
		tdp_set(&e->tdp_obs, 0, level, gfn, ev->fast_new);
}

void engine_on_vcpu_exit(struct engine *e, struct thread_ctx *t,
			 const struct model_event *ev)
{
	engine_ctx_close(e, t);
	if (ev->u.vcpu.reason == e->opts->npf_exit_reason)
		t->npf_exit_ts = ev->ts;
}
