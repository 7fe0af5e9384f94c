/*
 * vCPU faults (see engine_int.h): the self-check (does the traced state
 * require this fault?) and the what-if (would a leaf the policy kept
 * have permitted the access?), the fast path's in-place fixes, and the
 * NPF exits that start a fault.
 */
#include "replay/engine_int.h"

#include "util/alloc.h"
#include "util/assert.h"

/* Whether a present leaf lets the access of PFERR value err through
 * (is_access_allowed()).  An access-tracked EPT leaf (A/D bits off: R/W/X
 * cleared, MMU-present kept) lets nothing through until the fast path
 * restores it. */
static int permits(const struct spte_format *f, uint64_t spte, uint64_t err)
{
	if (!spte_readable(f, spte))
		return 0;
	if ((err & MEV_PFERR_WRITE) && !spte_writable(f, spte))
		return 0;
	if ((err & MEV_PFERR_FETCH) && !spte_executable(f, spte))
		return 0;
	return 1;
}

/*
 * Racing vCPUs.  A vCPU's NPF is taken in the guest; its kvm_page_fault
 * tracepoint fires only after the exit (npf_interception(),
 * handle_ept_violation()).  In between, another vCPU faulting on the
 * same page may install the leaf, or the fast path fix it
 * (kvm_tdp_mmu_map(), fast_page_fault()), and trace that first: the
 * fault then finds a leaf that lets its access through, and KVM retries
 * it as spurious.  Such a fault is explained when the leaf's last change
 * that let the fault's access through was made by another thread after
 * this vCPU's last entry into the guest (RULE_RACING_VCPU): exempt, and
 * counted in the exempt share.  One leaf's grant is packed in a u64:
 * seq << GRANT_SEQ_SHIFT | accesses << GRANT_TID_BITS | tid (a tid is
 * below 2^22, PID_MAX_LIMIT; a seq beyond 2^37 is not kept).
 */
#define GRANT_TID_BITS 24
#define GRANT_TID_MASK ((1u << GRANT_TID_BITS) - 1)
#define GRANT_SEQ_SHIFT (GRANT_TID_BITS + 3)
#define GRANT_READ 1u
#define GRANT_WRITE 2u
#define GRANT_FETCH 4u

/* The accesses spte lets through (GRANT_*); none unless it is a leaf. */
static unsigned leaf_accesses(const struct spte_format *f, int leaf,
			      uint64_t spte)
{
	if (!leaf || !spte_readable(f, spte))
		return 0;
	return GRANT_READ | (spte_writable(f, spte) ? GRANT_WRITE : 0) |
		(spte_executable(f, spte) ? GRANT_FETCH : 0);
}

static uint64_t grant_key(int level, uint64_t gfn)
{
	return (uint64_t)level << 56 | tdp_align(gfn, level);
}

void fault_vcpu_seen(struct engine *e, struct thread_ctx *t)
{
	vcpu_run_left(e, t, 0);
	if (t->is_vcpu)
		return;
	t->is_vcpu = 1;
	e->vcpu_threads++;
}

/*
 * A vCPU thread's KVM_RUN returned (left 1), or it is in the guest or
 * calls KVM_RUN again (left 0).  When every vCPU has left, none will
 * fault until one calls KVM_RUN again: the VM is stopped or exiting.
 */
void vcpu_run_left(struct engine *e, struct thread_ctx *t, int left)
{
	if (t->left_run == left)
		return;
	t->left_run = left;
	e->vcpus_left += left ? 1 : -1;
	MR_ASSERT_DBG(e->vcpus_left >= 0);
}

void fault_leaf_granted(struct engine *e, int32_t tid, uint64_t seq,
			int level, uint64_t gfn, int was_leaf, uint64_t old,
			uint64_t new)
{
	unsigned granted;

	/* Every SPTE change comes here: a capture of one vCPU stops first. */
	if (e->vcpu_threads < 2 || seq >> (64 - GRANT_SEQ_SHIFT))
		return;
	granted = leaf_accesses(e->fmt, 1, new) &
		~leaf_accesses(e->fmt, was_leaf, old);
	if (granted &&
	    u64map_put(&e->leaf_grants, grant_key(level, gfn),
		       seq << GRANT_SEQ_SHIFT |
		       (uint64_t)granted << GRANT_TID_BITS |
		       ((uint32_t)tid & GRANT_TID_MASK)) < 0)
		e->nomem = 1;
}

/*
 * Returns 1 when the fault of vCPU t (event ev, access err) on the leaf
 * (level, gfn) that lets it through raced the change that made the leaf
 * do so: another thread's, traced after t's last entry (any, when no
 * entry of t is traced: it entered before the capture).
 */
static int fault_raced(const struct engine *e, const struct thread_ctx *t,
		       const struct model_event *ev, int level, uint64_t gfn,
		       uint64_t err)
{
	const struct u64map_slot *s;
	unsigned need = GRANT_READ | (err & MEV_PFERR_WRITE ? GRANT_WRITE : 0) |
		(err & MEV_PFERR_FETCH ? GRANT_FETCH : 0);

	if (!engine_rule(e, RULE_RACING_VCPU) || !t->is_vcpu ||
	    !(s = u64map_find(&e->leaf_grants, grant_key(level, gfn))))
		return 0;
	return (s->val & GRANT_TID_MASK) !=
		((uint32_t)ev->tid & GRANT_TID_MASK) &&
		(s->val >> GRANT_SEQ_SHIFT) > t->entry_seq &&
		((s->val >> GRANT_TID_BITS) & need) != 0;
}

/*
 * A zap under the read lock freezes the entry before anything is traced
 * (tdp_mmu_zap_spte_atomic(): FROZEN_SPTE, the TLB flush of its range,
 * then the non-present value and the spte_changed event).  A vCPU that
 * faults in that range in between finds the frozen entry and retries,
 * faulting again, for as long as the flush takes (6.12's collapse of
 * dirty-logged memory, a read-locked recovery).  The patched kernel
 * traces the flush with its range (kvm_remote_tlb_flush), so a fault in
 * a range a thread flushed, traced before that thread's next event, is
 * explained when that next event is the zap of an entry mapping the
 * range: exempt as frozen_entry, counted in the exempt share.  If the
 * flusher's next event is anything else, the fault is judged as before.
 * What this cannot catch: a fault in that short span that no state
 * required would be explained by the zap as well.
 */
void fault_frozen_begin(struct engine *e, struct thread_ctx *t,
			const struct model_event *ev)
{
	if (!ev->u.flush.pages || !engine_rule(e, RULE_FROZEN_ENTRY) ||
	    (!t->frozen_end && e->nfrozen == FROZEN_THREADS))
		return;
	if (!t->frozen_end)
		e->frozen[e->nfrozen++] = t;
	t->frozen_start = ev->u.flush.gfn_start;
	t->frozen_end = ev->u.flush.gfn_start + ev->u.flush.pages;
	t->frozen_seq = ev->seq;
}

void fault_frozen_end(struct engine *e, struct thread_ctx *t)
{
	int i;

	if (!t->frozen_end)
		return;
	t->frozen_end = 0;
	for (i = 0; i < e->nfrozen; i++)
		if (e->frozen[i] == t) {
			e->frozen[i] = e->frozen[--e->nfrozen];
			break;
		}
}

/* The thread whose open flush covers gfn, or NULL. */
static struct thread_ctx *fault_frozen_by(const struct engine *e,
					  uint64_t gfn)
{
	int i;

	for (i = 0; i < e->nfrozen; i++)
		if (gfn >= e->frozen[i]->frozen_start &&
		    gfn < e->frozen[i]->frozen_end)
			return e->frozen[i];
	return NULL;
}

static int pending_frozen_live(const struct pending_fault *p)
{
	return p->pend_frozen && p->pend_frozen->frozen_end &&
		p->pend_frozen->frozen_seq == p->pend_frozen_seq;
}

/* Is the exemption the fault p waits under still running? */
static int pending_live(const struct engine *e, const struct pending_fault *p)
{
	if (pending_frozen_live(p))
		return 1;
	if ((p->pend_reasons & (1u << EXEMPT_WINDOW)) &&
	    p->pend_window->ctx_kind == CTX_WINDOW &&
	    p->pend_window->ctx_seq == p->pend_window_seq)
		return 1;
	if ((p->pend_reasons & (1u << EXEMPT_NX_BATCH)) &&
	    (p->pend_next_batch || (nx_batch_live(e) &&
				    e->batch.batch_first_seq ==
				    p->pend_batch_seq)))
		return 1;
	if ((p->pend_reasons & (1u << EXEMPT_DIRTY_LOG)) &&
	    e->dirtylog_threads > 0)
		return 1;
	return (p->pend_reasons & (1u << EXEMPT_SET_REGION)) &&
		e->setregion_threads > 0;
}

static void pending_remove(struct engine *e, size_t i)
{
	struct pending_fault *p = &e->pending[i];

	if (p->pend_next_batch) {
		struct thread_ctx *t = (struct thread_ctx *)p->pend_next_batch;

		MR_ASSERT_DBG(t->npending_next > 0);
		t->npending_next--;
	}
	*p = e->pending[--e->npending];
}

void fault_pending_thread_event(struct engine *e, struct thread_ctx *t)
{
	size_t i = 0;

	while (i < e->npending) {
		struct pending_fault *p = &e->pending[i];

		if (p->pend_next_batch != t) {
			i++;
			continue;
		}
		engine_mismatch(e, MISMATCH_FAULT_NOT_REQUIRED, p->pend_seq,
				p->pend_ts, p->pend_gfn, 0, 1);
		pending_remove(e, i);
	}
}

void fault_pending_expire(struct engine *e, int all)
{
	size_t i = 0;

	while (i < e->npending) {
		struct pending_fault *p = &e->pending[i];

		if (!all && pending_live(e, p)) {
			i++;
			continue;
		}
		engine_mismatch(e, MISMATCH_FAULT_NOT_REQUIRED, p->pend_seq,
				p->pend_ts, p->pend_gfn, 0, 1);
		pending_remove(e, i);
	}
}

/* The exemption of p that thread t holds, or EXEMPT_REASONS. */
static enum fault_exempt pending_holder(const struct engine *e,
					const struct pending_fault *p,
					const struct thread_ctx *t)
{
	if ((p->pend_reasons & (1u << EXEMPT_WINDOW)) &&
	    t == p->pend_window && t->ctx_kind == CTX_WINDOW &&
	    t->ctx_seq == p->pend_window_seq)
		return EXEMPT_WINDOW;
	if ((p->pend_reasons & (1u << EXEMPT_NX_BATCH)) && t->is_worker &&
	    (p->pend_next_batch || (nx_batch_live(e) &&
				    e->batch.batch_first_seq ==
				    p->pend_batch_seq)))
		return EXEMPT_NX_BATCH;
	if ((p->pend_reasons & (1u << EXEMPT_SET_REGION)) && t->in_setregion)
		return EXEMPT_SET_REGION;
	if ((p->pend_reasons & (1u << EXEMPT_DIRTY_LOG)) && t->in_dirtylog)
		return EXEMPT_DIRTY_LOG;
	return EXEMPT_REASONS;
}

/*
 * A fault inside a span (an open invalidation, a batch, a memslot or
 * dirty-log ioctl) explained by the change of its own entry that the
 * span's thread made.  The SPTE is written before its tracepoint fires;
 * where the fault came after that thread's previous event, the write
 * that made the vCPU fault lies in that gap, between the two events.
 * Such a gap opens where the zapping thread stalls between its write
 * and its tracepoint, and in 6.12's read-locked collapse when dirty
 * logging stops, whose frozen parent entry is flushed before the
 * removal is written and traced.  The patched kernel traces the
 * flush, and frozen_entry ties those faults to it; without flush events
 * the gap is the evidence.  Such a fault is tied to its own entry's
 * change, as racing_vcpu and frozen_entry are: shown, not capped.  What
 * this cannot catch: a fault in that gap that no state required.
 */
static int write_gap(const struct engine *e, const struct thread_ctx *t,
		     const struct pending_fault *p)
{
	return engine_rule(e, RULE_WRITE_GAP) &&
		!e->scan->seen[MEV_TLB_FLUSH] && t->prev_seq < p->pend_seq;
}

/*
 * Thread t changed (as, level, gfn) from old to new: the pending faults
 * on the pages it covers whose exemption t holds, and whose access old
 * permitted and new does not, were taken on this change before it was
 * traced: the state required them after all.
 */
void fault_pending_explain(struct engine *e, const struct thread_ctx *t,
			   int as, int level, uint64_t gfn, uint64_t old,
			   uint64_t new)
{
	uint64_t lo = tdp_align(gfn, level), hi = lo + tdp_level_pages(level);
	int new_leaf = spte_present_leaf(e->fmt, new, level);
	enum fault_exempt why;
	size_t i = 0;

	if (as != 0 || !spte_present(e->fmt, old))
		return;
	while (i < e->npending) {
		struct pending_fault *p = &e->pending[i];

		if (p->pend_gfn < lo || p->pend_gfn >= hi ||
		    (new_leaf && permits(e->fmt, new, p->pend_err))) {
			i++;
			continue;
		}
		/* The frozen entry's zap explains it. */
		if (p->pend_frozen == t && pending_frozen_live(p)) {
			e->res->faults_predicted++;
			e->res->faults_exempt[EXEMPT_FROZEN_ENTRY]++;
			pending_remove(e, i);
			continue;
		}
		if ((why = pending_holder(e, p, t)) == EXEMPT_REASONS) {
			i++;
			continue;
		}
		if (write_gap(e, t, p))
			why = EXEMPT_WRITE_GAP;
		e->res->faults_predicted++;
		e->res->faults_exempt[why]++;
		pending_remove(e, i);
	}
}

/*
 * A fault on a leaf that permits the access: a mismatch, unless a change
 * that removed the permission may still be traced (enum fault_exempt):
 * then it waits for that change.
 */
static void fault_defer(struct engine *e, struct thread_ctx *self,
			const struct model_event *ev, uint64_t gfn,
			uint64_t err)
{
	struct pending_fault p = {
		.pend_seq = ev->seq, .pend_gfn = gfn, .pend_err = err,
		.pend_ts = ev->ts,
	};
	size_t i;

	for (i = 0; i < e->nopen_windows; i++)
		if (window_covers(e->open_windows[i], 0, gfn, TDP_LEVEL_4K)) {
			p.pend_reasons |= 1u << EXEMPT_WINDOW;
			p.pend_window = e->open_windows[i];
			p.pend_window_seq = p.pend_window->ctx_seq;
			break;
		}
	if (nx_batch_live(e)) {
		p.pend_reasons |= 1u << EXEMPT_NX_BATCH;
		p.pend_batch_seq = e->batch.batch_first_seq;
	}
	if (e->setregion_threads)
		p.pend_reasons |= 1u << EXEMPT_SET_REGION;
	if (e->dirtylog_threads)
		p.pend_reasons |= 1u << EXEMPT_DIRTY_LOG;
	if ((p.pend_frozen = fault_frozen_by(e, gfn)))
		p.pend_frozen_seq = p.pend_frozen->frozen_seq;
	/*
	 * A stock batch is seen from its first traced zap; the worker wrote
	 * that SPTE before its tracepoint fired.  Under the write lock it
	 * is traced before the faulting thread can do anything traced.
	 */
	if (!p.pend_reasons && !p.pend_frozen && e->opts->n_nx_worker_tids &&
	    !e->scan->seen[MEV_NX_RECOVERY] && !self->is_worker) {
		p.pend_reasons |= 1u << EXEMPT_NX_BATCH;
		p.pend_next_batch = self;
	}
	if ((!p.pend_reasons && !p.pend_frozen) ||
	    !engine_rule(e, RULE_LATE_CHANGE)) {
		engine_mismatch(e, MISMATCH_FAULT_NOT_REQUIRED, ev->seq,
				ev->ts, gfn, 0, 1);
		return;
	}
	if (ALLOC_GROW(e->pending, e->npending + 1, e->cappending)) {
		e->nomem = 1;
		return;
	}
	e->pending[e->npending++] = p;
	if (p.pend_next_batch)
		self->npending_next++;
}

/*
 * Whether a fault that maps below a huge leaf zaps it (RULE_HUGE_SPLIT).
 * kvm_tdp_mmu_map() replaced such a leaf by zapping it and linking a new
 * table (Linux 6.1); 6.12 splits the leaf in place
 * (tdp_mmu_split_huge_page(): the leaf becomes a table of 512 children
 * mapping the same pages, no leaf goes; RULE_EAGER_SPLIT writes the
 * children).  Which one the recorded kernel does is a fact of the
 * capture, from the first pass (scan.h: a fault's huge leaf turned into
 * a table in one change); a fault of the other kind is still a
 * zap_count mismatch.
 */
static int fault_zaps_huge(struct engine *e)
{
	return engine_rule(e, RULE_HUGE_SPLIT) &&
		!e->scan->fault_splits_in_place;
}

/*
 * Whether the trace has shown a present 4K leaf at gfn (a capture that
 * began mid-run): the traced kernel's install there made the policy's
 * 4K entry its own, not one kept from before the capture.  A huge leaf
 * shown does not: a policy that kept the page split before the capture
 * (nx-skip-dirty, a slower recovery) still maps it with the 4K leaves
 * it kept.  What this cannot see: a huge leaf the policy kept before
 * the capture where the trace now maps 4K (perm-upgrade on THP memory
 * zapped before the capture): such a fault counts as decided.
 */
static int fault_shown(const struct engine *e, uint64_t gfn)
{
	return tdp_flag(&e->tdp_obs, 0, TDP_LEVEL_4K, gfn);
}

void engine_on_fault(struct engine *e, struct thread_ctx *t,
		     const struct model_event *ev)
{
	struct replay_result *r = e->res;
	uint64_t gfn = mev_gpa_to_gfn(ev->u.fault.gpa);
	uint64_t err = mev_fault_pferr(e->opts->fault_isa,
				       ev->u.fault.error_code);
	uint64_t spte, pspte;
	int level, allowed, in_window, avoided;

	engine_ctx_open(e, t, CTX_FAULT, ev, gfn);
	t->fault_fetch = (err & MEV_PFERR_FETCH) != 0;
	t->fault_write = (err & MEV_PFERR_WRITE) != 0;
	r->faults_observed++;
	in_window = window_any_covers(e, 0, gfn, 1);
	/* Without begin/end events a batch exempts nothing once its worker
	 * has been quiet for the gap, and is over after nx_batch_gap(). */
	if (e->batch.batch_active && !e->batch.batch_measured &&
	    ev->ts - e->batch.batch_last_ts > BATCH_GAP_NS &&
	    !e->batch.batch_quiet) {
		e->batch.batch_quiet = 1;
		if (e->npending)
			fault_pending_expire(e, 0);
	}
	if (e->batch.batch_active && !e->batch.batch_measured &&
	    ev->ts - e->batch.batch_last_ts > nx_batch_gap(e))
		nx_batch_close(e);

	/* Self-check: the traced state must require this fault. */
	level = tdp_leaf(&e->tdp_obs, 0, gfn, &spte);
	allowed = level && permits(e->fmt, spte, err);
	if (allowed && fault_raced(e, t, ev, level, gfn, err)) {
		r->faults_predicted++;
		r->faults_exempt[EXEMPT_RACING_VCPU]++;
	} else if (allowed)
		fault_defer(e, t, ev, gfn, err);
	else if (!level && r->began_mid_run &&
		 !tdp_path_known(&e->tdp_obs, 0, gfn))
		/* A leaf the trace never showed may map gfn. */
		engine_revealed(e, &r->faults_revealed, 1, ev->ts);
	else
		r->faults_predicted++;
	/*
	 * A huge leaf is zapped by the fault only when the fault maps below
	 * its level (kvm_tdp_mmu_map(): a large SPTE above goal_level is
	 * zapped and replaced by a table; at goal_level it is updated in
	 * place, as a write fault on a read-only THP leaf is).  The goal
	 * level comes with kvm_mmu_spte_requested
	 * (engine_on_spte_request()); a capture without it falls back to
	 * "a huge leaf that forbids the access is replaced" (an NX split).
	 * A kernel that splits the leaf in place instead zaps nothing
	 * (fault_zaps_huge()).
	 */
	if (level > TDP_LEVEL_4K && !allowed && fault_zaps_huge(e) &&
	    !(e->scan->seen[MEV_SPTE_REQUEST] && engine_rule(e, RULE_HUGE_GOAL)))
		t->ctx_predicted = 1;

	/* What-if: only a leaf the policy kept can spare a fault; where it
	 * kept none its state is the traced one, which took this fault.
	 * Inside an invalidation whose zaps the policy keeps, the vCPU
	 * would run on the kept leaf: the faults it took there retrying
	 * (the invalidation in progress) go too.  Not those on an entry a
	 * zap froze (fault_frozen_by()): that zap is not the policy's to
	 * keep, the vCPU waits on it under any policy. */
	avoided = tdp_size(&e->tdp_ovl) && !in_window &&
		!fault_frozen_by(e, gfn) &&
		overlay_kept_leaf(e, 0, gfn, &pspte) &&
		permits(e->fmt, pspte, err);
	t->ctx_keep = avoided;
	latency_on_fault(t, avoided);
	if (avoided) {
		r->faults_avoided++;
		engine_whatif(e, REPLAY_WHATIF_FAULT_AVOIDED, ev, TDP_LEVEL_4K,
			      gfn);
		return;
	}
	overlay_fault(e, ev->ts);
	overlay_refault(e, gfn);
	/* The recorded policy's state is the traced one: nothing kept. */
	if (r->began_mid_run && !e->opts->self_check && !fault_shown(e, gfn))
		r->faults_undecided++;
}

/*
 * A fault that replaced a present table by a huge leaf flushes, whether
 * or not the table still held leaves: tdp_mmu_map_handle_target_level()
 * flushes the gfn's range after setting a leaf over a present non-leaf
 * SPTE (6.1 and 6.12).  So the fault's context is one that must flush
 * (rule table_leaf_flush).
 */
void fault_ctx_close(struct engine *e, struct thread_ctx *t)
{
	int64_t must = t->ctx_predicted;

	/* Only where flushes are traced: else both sides come from the
	 * zaps (restated), and this flush is on neither. */
	if (t->fault_flush_due && !must && e->res->flushes_measured &&
	    engine_rule(e, RULE_TABLE_LEAF_FLUSH))
		must = 1;
	overlay_flush_account(e, t->ctx_seq, t->ctx_ts, t->ctx_gfn,
			      must, t->ctx_observed,
			      t->ctx_revealed, t->ctx_policy_zaps,
			      t->ctx_flushes, -1);
}

/*
 * How the host maps the fault's 2M region, which decides whether an
 * exec fault's new table is an NX split recovery will come for:
 * kvm_tdp_mmu_map() accounts it only where fault->req_level, the
 * host mapping's level (kvm_mmu_max_mapping_level()), reaches 2M.  The
 * request shows that level two ways:
 *   - the host page's pfn off its gfn's place in a 2M page: a THP (and
 *     a hugetlb page) holds its pages at their offsets, and KVM maps
 *     huge only where the hva and the gfn agree mod 2M, so this page is
 *     mapped 4K (KSM's merged page, a page of a split THP replaced);
 *   - a fault that is not an exec fault under the NX mitigation and not
 *     in a dirty-logged slot requests req_level itself (the goal level
 *     before disallowed_hugepage_adjust(), which comes after the
 *     tracepoint): 4K, or 2M and above.
 * So does an invalidation of part of a region (host_level_part()), and
 * khugepaged's collapse of a whole one (host_level_collapse()).  The
 * last of these stands until the next: KSM splits the THP it merges a
 * page of, and the region stays 4K until a fault or a collapse shows it
 * huge again.  What it cannot catch: a region that changed with no
 * fault or collapse since (a split by a whole-region invalidation)
 * before an exec fault that does not show it (its page in place).
 */
static void host_level_note(struct engine *e, const struct thread_ctx *t,
			    const struct model_event *ev)
{
	uint64_t gfn = ev->u.req.gfn;
	int level;

	if (ev->u.req.pfn_off)
		level = HOST_4K;
	else if ((t->fault_fetch && !e->opts->nx_off) ||
		 engine_dirty_logged_at(e, gfn, t->ctx_seq))
		return;
	else
		level = ev->u.req.level > TDP_LEVEL_4K ? HOST_HUGE : HOST_4K;
	e->host_4k_seen |= level == HOST_4K;
	if (u64map_put(&e->host_level, gfn >> 9, (uint64_t)level) < 0)
		e->nomem = 1;
	if (ev->u.req.pfn_off)
		nx_guess_shown(e, gfn);
}

/*
 * An invalidation of [gs, ge) that covers part of a 2M region leaves the
 * host mapping that region 4K: the host splits a PMD-mapped THP before
 * it changes part of it (__split_huge_pmd() in zap_pmd_range() and
 * change_pmd_range(); KSM splits the THP before it write-protects one
 * of its pages, try_to_merge_one_page()).  A region the host did not
 * map at all may be mapped huge by the next fault; that fault shows it.
 */
void host_level_part(struct engine *e, uint64_t gs, uint64_t ge)
{
	uint64_t ends[2] = { gs, ge - 1 };
	int i;

	if (!engine_rule(e, RULE_NX_HOST_LEVEL) || ge <= gs)
		return;
	for (i = 0; i < 2; i++) {
		uint64_t r = ends[i] >> 9;

		if (r << 9 >= gs && (r + 1) << 9 <= ge)
			continue;       /* covered whole */
		e->host_4k_seen = 1;
		if (u64map_put(&e->host_level, r, HOST_4K) < 0)
			e->nomem = 1;
	}
}

/*
 * khugepaged's invalidation of [gs, ge), or one inside the process's own
 * madvise(MADV_COLLAPSE) (madvise_collapse() calls the same
 * collapse_huge_page() for each region, 6.1 and 6.12): it invalidates
 * exactly the 2M it collapses (MMU_NOTIFY_CLEAR, the PMD's range) before
 * it copies the 4K pages into a new THP and maps it with one PMD, so
 * each region it covers whole is mapped huge afterwards, whatever showed
 * it 4K before (KSM's split, a reclaim).  A collapse that fails after
 * the notifier (an isolation that fails, a page pinned) leaves the 4K
 * pages: the next fault's pfn off its place shows that (host_level_note()).
 * What it cannot catch: a failed collapse followed by an exec fault on
 * a 4K page that happens to sit at its place in the region.
 */
void host_level_collapse(struct engine *e, uint64_t gs, uint64_t ge)
{
	uint64_t r;

	if (!engine_rule(e, RULE_NX_HOST_LEVEL) ||
	    !engine_rule(e, RULE_THP_COLLAPSE))
		return;
	for (r = (gs + 511) >> 9; (r + 1) << 9 <= ge; r++)
		if (u64map_put(&e->host_level, r, HOST_HUGE) < 0)
			e->nomem = 1;
}

/*
 * kvm_mmu_spte_requested: the fault's goal level, traced before the walk
 * of kvm_tdp_mmu_map().  A present huge leaf above it is zapped (one
 * leaf zap for the fault's context); a fault retried before the walk
 * traces no request and zaps nothing.
 */
void engine_on_spte_request(struct engine *e, struct thread_ctx *t,
			    const struct model_event *ev)
{
	uint64_t spte;
	int level;

	if (t->ctx_kind == CTX_FAULT)
		host_level_note(e, t, ev);
	if (t->ctx_kind != CTX_FAULT || !fault_zaps_huge(e) ||
	    !engine_rule(e, RULE_HUGE_GOAL))
		return;
	level = tdp_leaf(&e->tdp_obs, 0, ev->u.req.gfn, &spte);
	t->ctx_predicted = level > TDP_LEVEL_4K && level > ev->u.req.level;
}

/* The fast path fixes a leaf in place without a spte_changed event. */
void engine_on_fast_fault(struct engine *e, const struct model_event *ev)
{
	uint64_t gfn = mev_gpa_to_gfn(ev->u.fault.gpa), spte;
	int level = tdp_leaf(&e->tdp_obs, 0, gfn, &spte);

	if (!level || spte != ev->fast_old || !engine_rule(e, RULE_FAST_FAULT))
		return;
	fault_leaf_granted(e, ev->tid, ev->seq, level, gfn, 1, spte,
			   ev->fast_new);
	if (tdp_set(&e->tdp_obs, 0, level, gfn, ev->fast_new) < 0)
		e->nomem = 1;
}

void engine_on_vcpu_exit(struct engine *e, struct thread_ctx *t,
			 const struct model_event *ev)
{
	engine_ctx_close(e, t);
	fault_vcpu_seen(e, t);
	t->exit_ts = ev->ts;
	if (ev->u.vcpu.reason == e->opts->npf_exit_reason) {
		t->npf_exit_ts = ev->ts;
		latency_npf_exit(t);
	}
}
