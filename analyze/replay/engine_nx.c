/*
 * NX huge page recovery (see engine_int.h): the list of NX-split pages
 * KVM keeps for the recovery worker (as traced and as under the policy),
 * the worker's batches (one per wake-up; begin/end events on patched
 * kernels, gaps on stock ones), which wake-ups a policy's slower worker
 * runs, and which pages the policy leaves split.
 *
 * Invariants: nx_traced and nx_policy count the pages in their map
 * (never negative), each page once however often it is split again; a batch is active from its first worker event to
 * nx_batch_close(), which moves it to last_batch.
 */
#include "replay/engine_int.h"

#include "util/assert.h"

#include <string.h>

/*
 * The list is keyed by the 2M page the split L1 table maps.  A value
 * holds how many listed tables map it (NX_COUNT_BITS) and when the last
 * one was accounted.  Usually one: but a table unlinked under the read
 * lock is freed (and traced) after a vCPU may have linked and accounted
 * a new one at the same entry (6.12's read-locked recovery, a fault
 * retrying on the frozen entry), so for a while there are two.
 */
#define NX_COUNT_BITS 2
#define NX_COUNT_MASK ((1u << NX_COUNT_BITS) - 1)

static uint64_t nx_value(unsigned count, int64_t ts)
{
	return count ? (uint64_t)ts << NX_COUNT_BITS | count : 0;
}

static unsigned nx_value_count(uint64_t v)
{
	return (unsigned)(v & NX_COUNT_MASK);
}

static int64_t nx_value_ts(uint64_t v)
{
	return (int64_t)(v >> NX_COUNT_BITS);
}

int nx_listed(const struct engine *e, uint64_t gfn)
{
	return nx_value_count(u64map_get(&e->nx_traced.split_map,
					 tdp_align(gfn, TDP_LEVEL_4K + 1))) != 0;
}

/* The key is listed on a guess (nx_guess_settle()). */
static void nx_guess_add(struct engine *e, struct nx_splits *l,
			 uint64_t key)
{
	if (u64map_get(&l->guessed, key))
		return;
	MR_ASSERT_DBG(!(key & 3));
	if (u64map_put(&l->guessed, key, key | 1) < 0) {
		e->nomem = 1;
		return;
	}
	l->nguessed++;
}

/* The key left the list: if on a guess, the guess leaves with it; the
 * pages KVM lacks are among those still guessed. */
static void nx_guess_drop(struct engine *e, struct nx_splits *l,
			  uint64_t key)
{
	if (!u64map_get(&l->guessed, key))
		return;
	if (u64map_put(&l->guessed, key, 0) < 0)
		e->nomem = 1;
	l->nguessed--;
	if (l->absent > l->nguessed)
		l->absent = l->nguessed;
	MR_ASSERT_DBG(l->nguessed >= 0 && l->absent >= 0);
}

/* The pages of the list KVM counts. */
static int64_t nx_count(const struct nx_splits *l)
{
	MR_ASSERT_DBG(l->absent >= 0 && l->absent <= l->nguessed &&
		      l->nguessed <= l->nsplit);
	return l->nsplit - l->absent;
}

static void nx_split_add(struct engine *e, struct nx_splits *l,
			 uint64_t gfn, int64_t ts)
{
	uint64_t key = tdp_align(gfn, TDP_LEVEL_4K + 1);
	unsigned n = nx_value_count(u64map_get(&l->split_map, key));
	struct nx_recent *r;

	MR_ASSERT_DBG(ts >= 0 && ts < INT64_MAX >> NX_COUNT_BITS);
	if (n == NX_COUNT_MASK)
		return;         /* never seen: more than three tables */
	if (u64map_put(&l->split_map, key, nx_value(n + 1, ts)) < 0) {
		e->nomem = 1;
		return;
	}
	l->nsplit++;
	r = &l->recent[l->nrecent++ % NX_RECENT];
	r->key = key;
	r->ts = ts;
}

void nx_split_drop(struct engine *e, struct nx_splits *l, uint64_t gfn)
{
	uint64_t key = tdp_align(gfn, TDP_LEVEL_4K + 1);
	uint64_t v = u64map_get(&l->split_map, key);
	unsigned n = nx_value_count(v);

	if (!n)
		return;
	if (u64map_put(&l->split_map, key, nx_value(n - 1, nx_value_ts(v))) < 0)
		e->nomem = 1;
	l->nsplit--;
	if (n == 1)
		nx_guess_drop(e, l, key);
	MR_ASSERT_DBG(l->nsplit >= 0);
}

/*
 * Of the list's pages, those accounted at or after `since`.  Only the
 * last NX_RECENT splits are looked at: more inside one wait of the
 * worker for mmu_lock is more than a period's worth on any host seen.
 * A page split, recovered and split again is counted by its last split
 * only (the map holds that one's time).
 */
static int64_t nx_split_count_since(const struct nx_splits *l, int64_t since)
{
	unsigned i, n = l->nrecent < NX_RECENT ? l->nrecent : NX_RECENT;
	int64_t late = 0;
	uint64_t v;

	for (i = 0; i < n; i++) {
		const struct nx_recent *r = &l->recent[i];

		v = u64map_get(&l->split_map, r->key);
		if (r->ts >= since && nx_value_count(v) &&
		    nx_value_ts(v) == r->ts)
			late++;
	}
	return late;
}

/* The page's split is in KVM's list: in the model's, and in the
 * policy's unless the policy avoided the fault; guessed, on the VM-wide
 * guess of the host's mapping (nx_guess_settle()). */
static void nx_split_account(struct engine *e, uint64_t gfn, int64_t ts,
			     int keep, int guessed)
{
	uint64_t key = tdp_align(gfn, TDP_LEVEL_4K + 1);

	nx_split_add(e, &e->nx_traced, gfn, ts);
	e->res->nx_splits_observed++;
	if (guessed)
		nx_guess_add(e, &e->nx_traced, key);
	e->res->nx_guessed_splits += guessed;
	if (keep)
		return;
	nx_split_add(e, &e->nx_policy, gfn, ts);
	if (guessed)
		nx_guess_add(e, &e->nx_policy, key);
}

/* nx_guess_shown_4k()'s walk. */
struct guess_walk {
	const struct engine *e;
	int64_t n;
};

static void guess_shown_4k(void *arg, uint64_t val)
{
	struct guess_walk *w = arg;

	if (val && u64map_get(&w->e->host_level, (val & ~3ull) >> 9) ==
	    HOST_4K)
		w->n++;
}

/* Of the listed guesses, those in a region the capture has since shown
 * the host mapping 4K. */
static int64_t nx_guess_shown_4k(const struct engine *e,
				 const struct nx_splits *l)
{
	struct guess_walk w = { e, 0 };

	if (l->nguessed)
		u64map_each(&l->guessed, guess_shown_4k, &w);
	return w.n;
}

/*
 * KVM's count (a write-locked batch's end event, patched kernels) against
 * the model's, on a capture that began mid-run.  Whether the host maps a
 * 2M region huge, and so whether an exec fault's table there is an NX
 * split KVM accounts (engine_on_sp_alloc()), shows only in the region's
 * faults and invalidations; where the capture showed none the model
 * takes the VM-wide guess, which a region split before the capture
 * began (KSM splits the THP it merges a page of) contradicts.  A guess
 * is taken for one only once the capture showed a region of the VM
 * mapped 4K (else the VM-wide guess stands: a VM backed huge
 * throughout, where a difference is the model's to answer for).  So a
 * difference no larger than what the guesses could make is theirs:
 * that many of them are not in KVM's list (or are after all), settled
 * by the count, not judged; which ones the count does not say, and the
 * later counts and batch sizes use the settled count.  Returns 1 when
 * settled, 0 when the difference is not the guesses' (a mismatch).
 * What this cannot catch: a guess wrong the other way (a table the
 * model did not count that KVM did) in a list whose wrong guesses
 * cancel out.
 *
 * On a capture from the VM's start, an exec fault in a region nothing
 * showed yet (the VM's first fault, at its code) takes the guess too:
 * there the model counted no more than KVM can be the guesses' only
 * where the capture has since shown their regions mapped 4K, and only
 * that many.
 */
static int nx_guess_settle(struct engine *e, int64_t kvm)
{
	struct nx_splits *l = &e->nx_traced, *p = &e->nx_policy;
	int64_t d = nx_count(l) - kvm;

	if (!engine_rule(e, RULE_NX_GUESS_SETTLE) || !d ||
	    d > l->nguessed - l->absent || -d > l->absent)
		return 0;
	if (!e->res->began_mid_run &&
	    (d < 0 || l->absent + d > nx_guess_shown_4k(e, l)))
		return 0;
	l->absent += d;
	e->res->nx_guessed_settled += d > 0 ? d : -d;
	/* The policy's list holds the same guesses but for the faults
	 * the policy avoided: as many of them, as far as it holds. */
	p->absent += d;
	if (p->absent > p->nguessed)
		p->absent = p->nguessed;
	if (p->absent < 0)
		p->absent = 0;
	return 1;
}

static void nx_split_unaccount(struct engine *e, uint64_t gfn, int keep)
{
	nx_split_drop(e, &e->nx_traced, gfn);
	e->res->nx_splits_observed--;
	if (!keep)
		nx_split_drop(e, &e->nx_policy, gfn);
}

/* nx_guess_touch()'s walk. */
struct guess_touch {
	struct engine *e;
	struct nx_splits *l;
	uint64_t gs, ge;
};

static void guess_touch(void *arg, uint64_t val)
{
	struct guess_touch *w = arg;
	uint64_t key = val & ~3ull;

	if ((val & 3) == 1 && key < w->ge && key + TDP_TABLE_ENTRIES > w->gs &&
	    u64map_put(&w->l->guessed, key, val | 2) < 0)
		w->e->nomem = 1;
}

/*
 * Marks list l's guessed regions that [gs, ge) meets.  Runs for every
 * range of every invalidation: a range of few 2M regions looks each up
 * (most invalidations cover a page or a few), else the guesses are
 * walked; either way the cost is at most the smaller count.
 */
static void guess_touch_list(struct guess_touch *w, struct nx_splits *l)
{
	uint64_t key = tdp_align(w->gs, TDP_LEVEL_4K + 1);
	uint64_t regions = (w->ge - key + TDP_TABLE_ENTRIES - 1) /
		TDP_TABLE_ENTRIES;

	w->l = l;
	if (!l->nguessed)
		return;
	if (regions > (uint64_t)l->nguessed) {
		u64map_each(&l->guessed, guess_touch, w);
		return;
	}
	for (; key < w->ge; key += TDP_TABLE_ENTRIES)
		guess_touch(w, u64map_get(&l->guessed, key));
}

void nx_guess_touch(struct engine *e, uint64_t gs, uint64_t ge)
{
	struct guess_touch w = { e, NULL, gs, ge };

	if (!engine_rule(e, RULE_NX_GUESS_SHOWN) || ge <= gs)
		return;
	guess_touch_list(&w, &e->nx_traced);
	guess_touch_list(&w, &e->nx_policy);
}

/*
 * A fault's pfn off its place in the 2M region at gfn shows the host
 * mapping the region 4K (engine_fault.c host_level_note()).  An NX
 * split the model accounted there on the guess of the host's mapping
 * (nx_split_account(): nothing had shown the region yet), with no
 * invalidation of the region since, was made under the same 4K host
 * mapping: the host maps a region huge only from a fault that maps a
 * whole THP (its pages in place) or a collapse, and changes it only
 * under an invalidation (a THP split, KSM's merge, reclaim, migration).
 * So KVM never accounted it (kvm_tdp_mmu_map() accounts a split only
 * where fault->req_level reaches 2M): it leaves both lists.  What this
 * cannot catch: a guess no later fault of the region contradicts before
 * the region is invalidated.
 */
void nx_guess_shown(struct engine *e, uint64_t gfn)
{
	uint64_t key = tdp_align(gfn, TDP_LEVEL_4K + 1);
	uint64_t v = u64map_get(&e->nx_traced.guessed, key);
	uint64_t pv = u64map_get(&e->nx_policy.guessed, key);

	if (!engine_rule(e, RULE_NX_GUESS_SHOWN) || v != (key | 1))
		return;
	nx_split_drop(e, &e->nx_traced, key);
	e->res->nx_splits_observed--;
	if (pv == (key | 1))
		nx_split_drop(e, &e->nx_policy, key);
}

/*
 * Exec faults inside a memslot flip's span (rule slot_swap).  A fault
 * reads the memslots once, early (kvm_faultin_pfn()), and the ioctl
 * swaps them at one instant between its entry and its traced event
 * (kvm_swap_active_memslots()), so the faults that saw the old ones
 * come first: the first s of the span's faults, in trace order.  Each
 * takes the new setting until the trace settles s (nx_span_old(),
 * nx_span_new_from()): a fault that saw dirty logging made no NX split,
 * one that did not made one, with the same SPTE changes.
 */
static void nx_span_note(struct engine *e, const struct thread_ctx *t,
			 const struct model_event *ev, int flip, int dirty)
{
	/* Past a settled swap every fault sees the new setting; faults
	 * of a second flip before the first is settled, or more than the
	 * list holds, keep the new setting unsettled (not seen yet). */
	if (flip == e->flip_swapped ||
	    (e->nundecided && e->undecided_flip != flip) ||
	    e->nundecided == NX_UNDECIDED)
		return;
	e->undecided_flip = flip;
	e->undecided_on = dirty;
	e->undecided[e->nundecided++] = (struct nx_undecided){
		ev->u.sp.gfn, ev->ts, t->ctx_keep,
	};
}

/* The span's first n faults saw the old memslots: their split is the
 * opposite of the new setting's.  A batch whose size is not settled
 * yet counts them: they were accounted before its worker woke. */
static void nx_span_old(struct engine *e, int n)
{
	struct batch *b = &e->batch;
	int i, sign = e->undecided_on ? 1 : -1;

	MR_ASSERT_DBG(n >= 0 && n <= e->nundecided);
	for (i = 0; i < n; i++) {
		const struct nx_undecided *u = &e->undecided[i];

		if (e->undecided_on)
			nx_split_account(e, u->gfn, u->ts, u->keep, 0);
		else
			nx_split_unaccount(e, u->gfn, u->keep);
		nx_table_listed(e, u->gfn, NX_TABLE_TRACED |
				(u->keep ? 0 : NX_TABLE_POLICY),
				e->undecided_on);
		b->n_traced += sign;
		b->n_policy += u->keep ? 0 : sign;
	}
	e->res->span_faults_settled += n;
	e->res->span_faults_old += n;
	e->nundecided -= n;
	memmove(e->undecided, e->undecided + n,
		(size_t)e->nundecided * sizeof(e->undecided[0]));
}

/* The span's faults from the i-th on saw the new memslots: the swap
 * came before them, and every later fault of the flip sees it too. */
static void nx_span_new_from(struct engine *e, int i)
{
	MR_ASSERT_DBG(i >= 0 && i <= e->nundecided);
	e->res->span_faults_settled += e->nundecided - i;
	e->nundecided = i;
	e->flip_swapped = e->undecided_flip;
}

static int nx_span_find(const struct engine *e, uint64_t gfn)
{
	uint64_t key = tdp_align(gfn, TDP_LEVEL_4K + 1);
	int i;

	for (i = 0; i < e->nundecided; i++)
		if (tdp_align(e->undecided[i].gfn, TDP_LEVEL_4K + 1) == key)
			return i;
	return -1;
}

/* A span fault's table freed: whatever it saw, the kernel's count no
 * longer holds it. */
void nx_span_forget(struct engine *e, uint64_t gfn)
{
	int i = nx_span_find(e, gfn);

	if (i < 0)
		return;
	e->nundecided--;
	memmove(e->undecided + i, e->undecided + i + 1,
		(size_t)(e->nundecided - i) * sizeof(e->undecided[0]));
}

/* The worker took a page: it was in KVM's list, an NX split.  Of a
 * span's fault, that settles which memslots it saw, and on which side
 * of the swap the faults before or after it are. */
static void nx_span_recovered(struct engine *e, uint64_t gfn)
{
	int i = nx_span_find(e, gfn);

	if (i < 0)
		return;
	if (e->undecided_on)
		nx_span_old(e, i + 1);
	else
		nx_span_new_from(e, i);
}

/*
 * The count KVM's worker read settles the span's faults: with logging
 * switched on, each that saw the old memslots is a split the model's
 * list lacks; switched off, one it holds too many.  Only once the
 * model's list is KVM's (on a capture that began mid-run, older splits
 * would count too).  The count may lack the splits accounted while the
 * worker waited (nx_count_late()): of the answers that leaves, the one
 * closest to the new setting is taken, and a write-locked batch's end
 * event checks it (nx_count).  What it cannot catch: a span fault
 * miscounted for another reason, which the settlement absorbs.
 */
static void nx_batch_span_settle(struct engine *e)
{
	struct batch *b = &e->batch;
	int64_t s, d = b->count_read - b->n_traced;

	if (!e->nundecided || b->count_read < 0 || !e->nx_list_known)
		return;
	s = e->undecided_on ? d : -d - b->late_traced;
	if (s < 0)
		s = 0;
	if (s > e->nundecided)
		s = e->nundecided;
	nx_span_old(e, (int)s);
	if (e->nundecided)
		nx_span_new_from(e, 0);
}

/*
 * An L1 table made by an exec fault outside dirty logging is an NX
 * split that recovery will come for (account_nx_huge_page()), where the
 * host could have mapped the 2M page huge: kvm_tdp_mmu_map() accounts
 * it only when fault->req_level reaches 2M, the host mapping's level
 * (kvm_mmu_max_mapping_level()).  A VM whose trace never shows a leaf
 * above 4K is taken as backed by 4K host pages (rule nx_huge_host),
 * and so is a 2M region whose last fault showed the host mapping it 4K
 * (rule nx_host_level, engine_fault.c
 * host_level_note(): KSM splits the THP it merges a page of).  The
 * region's own evidence of a huge host page (a fault's goal level, a
 * THP collapse: host_level_collapse()) stands against the VM-wide
 * guess: under KSM a VM may never show a huge leaf while khugepaged
 * collapses regions its exec faults then split.  What it cannot catch:
 * a VM backed huge whose capture shows neither (the recovery checks
 * then fail).
 *
 * "Outside dirty logging" as the fault saw the memslot: the fault reads
 * the memslots once, early, and a KVM_SET_USER_MEMORY_REGION that turns
 * logging on publishes the new ones only once no invalidation of the VM
 * is in progress (kvm_swap_active_memslots() waits while
 * mn_active_invalidate_count is not 0), then waits out the SRCU readers
 * and applies the flags (kvm_mmu_slot_apply_flags(): its write-protect
 * and eager split, the ioctl thread's first SPTE changes).  Under
 * reclaim and KSM invalidations never stop for long, so on a stock
 * capture the flip dates, for the faults, from that first change, not
 * from the ioctl's entry (rule swap_sweep; the patched memslot event
 * and KVM's count settle it, rule slot_swap).  What it cannot catch: a
 * swap early in the ioctl and a long SRCU wait after it, whose faults in
 * between saw logging on.
 */
static void nx_table_link(struct engine *e, uint64_t key, uint64_t addr,
			  unsigned flags);

void engine_on_sp_alloc(struct engine *e, struct thread_ctx *t,
			const struct model_event *ev)
{
	int level = mev_role_level(ev->u.sp.role);
	int flip = 0, dirty = 0;
	uint64_t host = engine_rule(e, RULE_NX_HOST_LEVEL) ?
		u64map_get(&e->host_level, ev->u.sp.gfn >> 9) : 0;

	/* A new root: its entries are known (tdp.h), none present.  A
	 * table below is known from its link (engine_on_spte()): a vCPU
	 * may allocate one where the table it replaces is still being
	 * removed, whose entries are not the new one's. */
	if (level == SP_MAX_LEVEL)
		roots_on_root_alloc(e, mev_role_as_id(ev->u.sp.role), ev->seq);
	if (level == SP_MAX_LEVEL &&
	    tdp_mark_born(&e->tdp_obs, mev_role_as_id(ev->u.sp.role), level,
			  ev->u.sp.gfn) < 0)
		e->nomem = 1;
	if (level != TDP_LEVEL_4K ||
	    t->ctx_kind != CTX_FAULT || !t->fault_fetch ||
	    (e->opts->nx_off && engine_rule(e, RULE_NX_OFF)) ||
	    (!e->scan->huge_leaves && engine_rule(e, RULE_NX_HUGE_HOST) &&
	     host != HOST_HUGE) ||
	    host == HOST_4K)
		return;
	if (engine_rule(e, RULE_NX_DIRTY_UNTRACKED)) {
		if (e->slots.measured && engine_rule(e, RULE_SLOT_SWAP))
			flip = scan_flip_at(e->scan, 0, ev->u.sp.gfn,
					    t->ctx_seq, &dirty);
		if (flip)
			nx_span_note(e, t, ev, flip, dirty);
		else
			dirty = engine_dirty_seen_at(e, ev->u.sp.gfn,
						     t->ctx_seq);
		if (dirty)
			return;
	}
	nx_split_account(e, ev->u.sp.gfn, ev->ts, t->ctx_keep,
			 !host && (e->res->began_mid_run ? e->host_4k_seen :
				   engine_rule(e, RULE_NX_HOST_LEVEL)));
	t->nx_alloc_key = tdp_align(ev->u.sp.gfn, TDP_LEVEL_4K + 1);
	t->nx_alloc_flags = NX_TABLE_TRACED |
		(t->ctx_keep ? 0 : NX_TABLE_POLICY);
	if (t->nx_link_valid && t->nx_link_key == t->nx_alloc_key &&
	    t->nx_link_ctx == t->ctx_seq) {
		nx_table_link(e, t->nx_alloc_key, t->nx_link_addr,
			      t->nx_alloc_flags);
		t->nx_alloc_flags = 0;
		t->nx_link_valid = 0;
	}
}

#define NX_TABLE_ADDR 0x000ffffffffff000ULL
#define NX_TABLE_VALID 0x800ULL

/*
 * Per 2M entry, the table linked there (nx_tables) and the one it
 * replaced whose unlink is not traced yet (nx_tables_old): its address
 * | NX_TABLE_VALID | the lists that hold it.  Keyed by entry, not by
 * address alone: tables at different entries never meet.
 */
static void nx_table_link(struct engine *e, uint64_t key, uint64_t addr,
			  unsigned flags)
{
	uint64_t cur = u64map_get(&e->nx_tables, key);

	if ((cur & NX_TABLE_VALID) && (cur & NX_TABLE_ADDR) != addr &&
	    u64map_put(&e->nx_tables_old, key, cur) < 0)
		e->nomem = 1;
	if (u64map_put(&e->nx_tables, key, addr | NX_TABLE_VALID | flags) < 0)
		e->nomem = 1;
}

static unsigned nx_table_unlink(struct engine *e, uint64_t key, uint64_t addr)
{
	struct u64map *m[2] = { &e->nx_tables, &e->nx_tables_old };
	uint64_t v;
	int i;

	for (i = 0; i < 2; i++) {
		v = u64map_get(m[i], key);
		if ((v & NX_TABLE_VALID) && (v & NX_TABLE_ADDR) == addr) {
			if (u64map_put(m[i], key, 0) < 0)
				e->nomem = 1;
			return (unsigned)(v & (NX_TABLE_TRACED | NX_TABLE_POLICY));
		}
	}
	return 0;
}

void nx_table_spte(struct engine *e, struct thread_ctx *t, int level,
		   uint64_t gfn, uint64_t old, uint64_t new)
{
	const struct spte_format *f = e->fmt;

	if (level != TDP_LEVEL_4K + 1)
		return;
	if (spte_present(f, old) && !spte_leaf(f, old, level)) {
		t->nx_unlinked_key = gfn;
		t->nx_unlinked_flags = NX_TABLE_KNOWN |
			nx_table_unlink(e, gfn, old & NX_TABLE_ADDR);
	}
	if (!spte_present(f, new) || spte_leaf(f, new, level))
		return;
	if (t->nx_alloc_flags && t->nx_alloc_key == gfn) {
		nx_table_link(e, gfn, new & NX_TABLE_ADDR, t->nx_alloc_flags);
		t->nx_alloc_flags = 0;
	} else {
		nx_table_link(e, gfn, new & NX_TABLE_ADDR, 0);
		t->nx_link_key = gfn;
		t->nx_link_addr = new & NX_TABLE_ADDR;
		t->nx_link_valid = 1;
		t->nx_link_ctx = t->ctx_seq;
	}
}

/* The L1 table at gfn freed by t: which lists held it.  Unknown (no
 * unlink traced): all, as before. */
unsigned nx_table_freed(struct thread_ctx *t, uint64_t gfn)
{
	uint64_t key = tdp_align(gfn, TDP_LEVEL_4K + 1);
	unsigned fl;

	if (!(t->nx_unlinked_flags & NX_TABLE_KNOWN) ||
	    t->nx_unlinked_key != key)
		return NX_TABLE_TRACED | NX_TABLE_POLICY;
	fl = t->nx_unlinked_flags;
	t->nx_unlinked_flags = 0;
	return fl;
}

/* The table linked at gfn's 2M entry left a list without being freed
 * (recovery skipped it: unaccount_nx_huge_page()). */
void nx_table_listed(struct engine *e, uint64_t gfn, unsigned flags, int on)
{
	uint64_t key = tdp_align(gfn, TDP_LEVEL_4K + 1);
	uint64_t v = u64map_get(&e->nx_tables, key);

	if (!(v & NX_TABLE_VALID))
		return;
	v = on ? v | flags : v & ~(uint64_t)flags;
	if (u64map_put(&e->nx_tables, key, v) < 0)
		e->nomem = 1;
}

void nx_batch_close(struct engine *e)
{
	struct batch *b = &e->batch;

	if (!b->batch_active)
		return;
	e->res->recovery_batches++;
	e->res->recovery_batches_measured += b->batch_measured;
	if (e->opts->nx_ratio > 0) {
		/* A count read before splits the model holds: the trace
		 * settles how many it missed (nx_count_late()). */
		if (b->sps_observed < b->sps_predicted &&
		    b->sps_observed >= b->sps_min) {
			b->sps_predicted = b->sps_observed;
			e->res->nx_batches_settled++;
		}
		e->res->nx_recovered_observed += b->sps_observed;
		if (b->batch_revealed) {
			engine_revealed(e, &e->res->nx_recovered_revealed,
					b->sps_observed, b->batch_last_ts);
			e->res->nx_batches_revealed++;
		} else {
			e->res->nx_recovered_predicted += b->sps_predicted;
		}
		if (!b->batch_revealed && b->sps_observed != b->sps_predicted)
			engine_mismatch(e, MISMATCH_RECOVERY_BATCH,
					b->batch_first_seq, b->batch_start_ts,
					0, b->sps_predicted, b->sps_observed);
	}
	/* Recovery under the read lock (kernel-series patch 8) flushes
	 * the TLB after each page it zaps, under the write lock once per
	 * lock hold.  A table a traced batch zapped counts as a zap that
	 * flushes, empty or not: kvm_tdp_mmu_zap_sp() returns true for
	 * every table it unlinks (NUMA hinting may have zapped all its
	 * leaves before). */
	overlay_flush_account(e, b->batch_first_seq, b->batch_last_ts, 0,
			      b->zaps_predicted + b->tables_zapped,
			      b->zaps_observed + b->tables_zapped,
			      b->zaps_revealed,
			      b->zaps_policy + b->policy_pages,
			      b->flushes_traced,
			      e->opts->policy->recovery_read_lock &&
			      !b->batch_read_lock ? b->policy_pages : -1);
	e->last_batch = *b;
	memset(b, 0, sizeof(*b));
	/* Faults waiting on this batch's zaps wait no longer. */
	if (e->npending)
		fault_pending_expire(e, 0);
}

/* How early a worker may wake: a jiffy (10 ms at HZ=100). */
#define NX_WAKE_SLACK_NS 10000000

/*
 * Which wake-up of the recorded worker a new batch is, and whether a
 * worker with a period k times longer would have run it.  Wake-ups are
 * counted from the first batch (whose phase the trace cannot tell: it is
 * taken as one the policy's worker runs); the gap to the previous batch,
 * rounded to whole periods, is how many wake-ups passed (the worker
 * sleeps a little longer than its period, so absolute times drift, the
 * gaps do not).
 */
static void batch_wake(struct engine *e, struct batch *b,
		       const struct model_event *ev)
{
	int64_t period = e->opts->nx_period_ms * 1000000, gap;

	/* The recorded period against the worker's wake-ups: it sleeps a
	 * period of jiffies after its previous batch returned (6.1
	 * kvm_nx_lpage_recovery_worker(), 6.12 nx_huge_page_last), so a
	 * batch that begins much sooner says the period is not the one
	 * the kernel ran with.  A quarter of the period is allowed: in
	 * the QEMU TCG lab jiffies run unevenly against the trace clock.
	 * Jiffies that lag when the previous batch returns (the tick held
	 * back) make the worker wake both late and then early: a short
	 * gap right after a long one is a catch-up, not a shorter period,
	 * while the two gaps together still span three quarters of two
	 * periods; before the first batch of a capture begun mid-run the
	 * worker waited at least since the capture began.  Only between
	 * traced batches (the patched begin and end events): an inferred
	 * batch may be one split at a long pause.  What it cannot
	 * catch: a recorded period shorter than the real one (a worker
	 * may wake late), or off by less than a quarter, or by less
	 * than a quarter over a late and an early wake together. */
	if (!e->batches_seen && e->res->began_mid_run &&
	    ev->kind == MEV_NX_RECOVERY && ev->u.nx.phase == MEV_NX_BEGIN)
		/* The worker ran before the capture: it waited at least
		 * since the capture began. */
		b->batch_gap = b->batch_start_ts - e->res->first_ts;
	if (e->batches_seen && period > 0 &&
	    ev->kind == MEV_NX_RECOVERY && ev->u.nx.phase == MEV_NX_BEGIN &&
	    e->last_batch.batch_measured) {
		b->batch_gap = b->batch_start_ts - e->last_batch.batch_last_ts;
		if (b->batch_gap < period / 4 * 3 &&
		    (!e->last_batch.batch_gap ||
		     !engine_rule(e, RULE_BATCH_CATCH_UP) ||
		     b->batch_gap + e->last_batch.batch_gap < period / 2 * 3))
			engine_mismatch(e, MISMATCH_RECOVERY_PERIOD,
					b->batch_first_seq, b->batch_start_ts,
					0, e->opts->nx_period_ms,
					b->batch_gap / 1000000);
	}
	if (e->batches_seen++ && period > 0) {
		gap = (b->batch_start_ts - e->last_batch.batch_start_ts +
		       period / 2) / period;
		b->batch_wake = e->last_batch.batch_wake + (gap > 0 ? gap : 1);
	}
	b->batch_skipped = e->period_factor > 1 &&
		b->batch_wake % e->period_factor;
	if (!b->batch_skipped)
		e->res->recovery_batches_run++;
}

/*
 * Splits the worker's count may lack.  kvm_recover_nx_lpages() (6.1;
 * kvm_recover_nx_huge_pages() on 6.12) reads nx_lpage_splits before it
 * takes mmu_lock, and a fault that holds mmu_lock for read accounts its
 * split before the worker gets the lock: the count can miss the splits
 * accounted after the worker woke.  The worker wakes a period after its
 * previous batch returned (counted in jiffies: up to one early, 10 ms
 * at HZ=100); with the period or a previous batch unknown, none.
 */

static int64_t nx_count_late(const struct engine *e,
			     const struct nx_splits *l)
{
	int64_t period = e->opts->nx_period_ms * 1000000;

	if (!engine_rule(e, RULE_NX_SNAPSHOT) || !e->batches_seen ||
	    period <= 0)
		return 0;
	return nx_split_count_since(l, e->last_batch.batch_last_ts + period -
				    NX_WAKE_SLACK_NS);
}

static int64_t ceil_div(int64_t n, int64_t d)
{
	return n > 0 ? (n + d - 1) / d : 0;
}

/* kvm_recover_nx_lpages(): to_zap = ceil(splits / ratio), from the
 * counts the batch began with (nx_batch_touch()). */
static void nx_batch_size(struct engine *e)
{
	struct batch *b = &e->batch;
	int64_t ratio = e->opts->nx_ratio, pr, missed = 0;

	if (ratio <= 0)
		return;
	pr = e->opts->policy->nx_ratio ? e->opts->policy->nx_ratio : ratio;
	b->sps_predicted = ceil_div(b->n_traced, ratio);
	b->sps_min = ceil_div(b->n_traced - b->late_traced, ratio);
	/* The patched begin event gives the count read: the policy's
	 * worker misses as many of its own. */
	if (b->count_read >= 0 && b->n_traced - b->count_read > 0 &&
	    b->n_traced - b->count_read <= b->late_traced)
		missed = b->n_traced - b->count_read;
	b->policy_quota = ceil_div(b->n_policy - (missed < b->late_policy ?
						  missed : b->late_policy), pr);
}

/*
 * A pause ends an untraced batch: one longer than the gap, or, with the
 * period known (rule batch_period), than half of it.  The worker sleeps
 * a period after a batch returned (less a jiffy), so a pause shorter
 * than half of it is the batch yielding mmu_lock (cond_resched_rwlock_*()
 * in the loop) on a busy host.
 */
int64_t nx_batch_gap(const struct engine *e)
{
	int64_t half = e->opts->nx_period_ms * 1000000 / 2;

	/* A traced batch ends at its end event (measured_batch); with that
	 * rule off, at the plain gap. */
	return !e->batch.batch_measured && engine_rule(e, RULE_BATCH_PERIOD) &&
		half > BATCH_GAP_NS ? half : BATCH_GAP_NS;
}

void nx_batch_touch(struct engine *e, const struct model_event *ev)
{
	struct batch *b = &e->batch;

	/* Without begin/end events (stock kernels) a pause ends a batch;
	 * with them only the end does: a batch that yields the lock, or
	 * flushes per page under the read lock on a busy host, pauses for
	 * longer than any gap rule. */
	if (b->batch_active &&
	    (!b->batch_measured || !engine_rule(e, RULE_MEASURED_BATCH)) &&
	    ev->ts - b->batch_last_ts > nx_batch_gap(e))
		nx_batch_close(e);
	if (!b->batch_active) {
		b->batch_active = 1;
		b->batch_start_ts = ev->ts;
		b->batch_first_seq = ev->seq;
		batch_wake(e, b, ev);
		b->n_traced = nx_count(&e->nx_traced);
		b->n_policy = nx_count(&e->nx_policy);
		b->late_traced = nx_count_late(e, &e->nx_traced);
		b->late_policy = nx_count_late(e, &e->nx_policy);
		b->count_read = ev->kind == MEV_NX_RECOVERY &&
			ev->u.nx.phase == MEV_NX_BEGIN ? ev->u.nx.pages : -1;
		nx_batch_span_settle(e);
		nx_batch_size(e);
	}
	b->batch_last_ts = ev->ts;
	b->batch_quiet = 0;
}

/*
 * Whether the policy leaves a page the worker recovered.  The policy's
 * own NX list decides, when the ratio is known: each batch takes
 * ceil(policy splits / ratio) pages (the policy's ratio for a sweep),
 * skipped dirty-logged ones included (they are dropped from the list, as
 * upstream's unaccount does); pages beyond that stay split and tracked.
 * Pages a policy batch would take that the traced batch did not are not
 * modelled: a sweep to a smaller ratio than recorded undercounts.
 */
static int recovery_keep(struct engine *e, const struct replay_recovery *rec,
			 int level)
{
	struct batch *b = &e->batch;
	int skip = policy_skips_recovery(e->opts->policy, rec);

	/* A batch the policy's (slower) worker does not run keeps all. */
	if (b->batch_skipped)
		return 1;
	/* The recorded policy's batches are the traced ones. */
	if (level != TDP_LEVEL_4K || e->opts->self_check)
		return skip;
	/* A batch sized by pages split before the capture: its size is
	 * the traced one under a policy of the same ratio. */
	if (e->opts->nx_ratio > 0 && !b->batch_revealed &&
	    b->policy_taken >= b->policy_quota)
		return 1;
	b->policy_taken++;
	nx_split_drop(e, &e->nx_policy, rec->gfn);
	return skip;
}

/*
 * The first page of a batch, on a capture that began mid-run before the
 * model's NX list is known to be KVM's.  KVM's list is in split order
 * (account_nx_huge_page() adds at the tail, the worker takes from the
 * head), so pages split before the capture come first: a batch whose
 * first page the model's list holds found none of them left, and from
 * it the list is known; a batch whose first page it lacks was sized by
 * a count the model cannot know: revealed, not judged.  What this
 * cannot catch: a batch that began with a page of the trace although
 * older ones were left (KVM never does this; the check after it would
 * fail).
 */
static void nx_batch_first_page(struct engine *e, uint64_t gfn)
{
	uint64_t key = tdp_align(gfn, TDP_LEVEL_4K + 1);

	if (e->nx_list_known || e->batch.sps_observed)
		return;
	if (nx_value_count(u64map_get(&e->nx_traced.split_map, key))) {
		e->nx_list_known = 1;
		/* The count this batch began with settles a flip's span
		 * now, and so its size. */
		if (e->nundecided && e->batch.count_read >= 0) {
			nx_batch_span_settle(e);
			nx_batch_size(e);
		}
	} else {
		e->batch.batch_revealed = 1;
	}
}

/* The worker freed a shadow page (its context just opened): one page of
 * the current batch, kept or recovered under the policy. */
void nx_recovery_ctx_open(struct engine *e, struct thread_ctx *t,
			  const struct model_event *ev, int level)
{
	struct replay_recovery rec;
	uint64_t gfn = ev->u.sp.gfn;

	nx_batch_touch(e, ev);
	if (level == TDP_LEVEL_4K) {
		nx_span_recovered(e, gfn);
		nx_batch_first_page(e, gfn);
	}
	e->batch.sps_observed += level == TDP_LEVEL_4K;
	/* Only in a traced batch: a free outside one may be the VM's
	 * teardown (a late cut sees no batch end to tell it by), which
	 * flushes nothing of its own. */
	e->batch.tables_zapped += level == TDP_LEVEL_4K &&
		e->batch.batch_measured;
	rec.gfn = gfn;
	rec.dirty_logged = engine_dirty_logged_at(e, gfn, ev->seq);
	rec.dirty_src = e->slots.measured ? REPLAY_SRC_MEASURED :
		e->scan->dirty_src;
	t->ctx_keep = recovery_keep(e, &rec, level);
	e->batch.policy_pages += level == TDP_LEVEL_4K && !t->ctx_keep;
}

/* A recovery context's zaps and flushes count with its batch. */
void nx_recovery_ctx_close(struct engine *e, struct thread_ctx *t)
{
	e->batch.zaps_predicted += t->ctx_predicted;
	e->batch.zaps_observed += t->ctx_observed;
	e->batch.zaps_revealed += t->ctx_revealed;
	e->batch.zaps_policy += t->ctx_policy_zaps;
	lock_holder_push(e, t);
}

void engine_on_nx_recovery(struct engine *e, struct thread_ctx *t,
			   const struct model_event *ev)
{
	engine_ctx_close(e, t);
	if (ev->u.nx.phase == MEV_NX_BEGIN)
		nx_batch_close(e);      /* a begin without its end */
	nx_batch_touch(e, ev);
	e->batch.batch_measured |= ev->u.nx.phase == MEV_NX_BEGIN;
	e->batch.batch_read_lock = ev->u.nx.lock_mode == MEV_LOCK_READ;
	/* The patched kernel says which lock the batch took: the policy's
	 * (kernel-series patch 8 falls back to the write lock once a
	 * shadow root exists, which a TDP-only trace cannot show). */
	if (ev->u.nx.phase == MEV_NX_BEGIN &&
	    e->batch.batch_read_lock != !!e->opts->policy->recovery_read_lock)
		engine_mismatch(e, MISMATCH_POLICY_DECISION, ev->seq, ev->ts, 0,
				e->opts->policy->recovery_read_lock,
				e->batch.batch_read_lock);
	/* Patched: a page the recorded kernel skipped (dirty-logged) uses
	 * up the batch and leaves the list, without an SP free. */
	if (ev->u.nx.phase == MEV_NX_PAGE &&
	    ev->u.nx.action == MEV_NX_SKIPPED_DIRTY) {
		struct replay_recovery rec = {
			.gfn = ev->u.nx.gfn,
			.dirty_logged = engine_dirty_logged_at(e, ev->u.nx.gfn,
							       ev->seq),
		};

		/* A policy that recovers it would not have skipped it. */
		if (!policy_skips_recovery(e->opts->policy, &rec))
			engine_mismatch(e, MISMATCH_POLICY_DECISION, ev->seq,
					ev->ts, ev->u.nx.gfn, 0, 1);
		nx_span_recovered(e, ev->u.nx.gfn);
		nx_batch_first_page(e, ev->u.nx.gfn);
		e->batch.sps_observed++;
		nx_split_drop(e, &e->nx_traced, ev->u.nx.gfn);
		nx_split_drop(e, &e->nx_policy, ev->u.nx.gfn);
		nx_table_listed(e, ev->u.nx.gfn,
				NX_TABLE_TRACED | NX_TABLE_POLICY, 0);
	}
	/* The patched end event gives the kernel's count, read under the
	 * lock: under the write lock no fault is between its table's link
	 * and its accounting, so the model's list must hold as many.
	 * (Under the read lock faults account concurrently: not checked.) */
	if (ev->u.nx.phase == MEV_NX_END && e->nx_list_known &&
	    ev->u.nx.lock_mode == MEV_LOCK_WRITE &&
	    nx_count(&e->nx_traced) != ev->u.nx.pages &&
	    !nx_guess_settle(e, ev->u.nx.pages))
		engine_mismatch(e, MISMATCH_NX_COUNT, ev->seq, ev->ts, 0,
				nx_count(&e->nx_traced), ev->u.nx.pages);
	if (ev->u.nx.phase == MEV_NX_END)
		nx_batch_close(e);
}
