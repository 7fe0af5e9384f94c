/*
 * Roots that coexist (see engine_int.h): the old root a memslot change
 * invalidated, still being zapped, beside the new root the vCPUs build.
 *
 * KVM keeps one TDP root per address space while nothing invalidates
 * it.  kvm_mmu_zap_all_fast() (a memslot deleted or moved) marks every
 * root invalid and has the vCPUs load a new one (kvm_mmu_reload(),
 * kvm_tdp_mmu_get_vcpu_root_hpa(): the root's allocation is traced as a
 * shadow page of the root level at gfn 0); the old root is zapped
 * afterwards, by the ioctl's thread (6.12: kvm_tdp_mmu_zap_invalidated_
 * roots() under the read lock) or later (6.1), while the vCPUs fault
 * into the new root.  Faults never install into an invalid root (the
 * fault path retries on an obsolete root).  The tracepoint of an SPTE
 * change does not name its root: two roots hold entries with the same
 * (address space, level, gfn), often the same value (a page refaulted
 * into the new root maps the same pfn with the same bits).
 *
 * The model therefore keeps the old root apart (RULE_ROOTS): when a
 * new root is allocated while the current one still holds a present
 * entry, the current root's entries move to a retired address space of
 * the tdp (as_id RETIRED_FIRST and up, remembered as a root of its
 * address space), and the address space starts over with the new root.
 * A change then goes to the root it fits:
 *   - a thread tearing a retired root down (its teardown context began
 *     on that root, or on the current one before it was retired) works
 *     on that root alone, inside the context's span (the whole root, or
 *     the table it frees);
 *   - a thread outside any context (the first change of a root's zap)
 *     goes to the newest retired root whose entry holds the change's
 *     old value (both not present counts as holding it);
 *   - else the current root, where its entry holds the old value;
 *   - else the newest retired root whose entry holds it;
 *   - else, on a capture that began mid-run, a table's removal goes to
 *     the newest retired root where the trace never showed its entry;
 *   - else the current root, as without this rule.
 * A retired root with nothing present is dropped when the next root is
 * retired, and, with every retired slot taken, the oldest one goes.
 * What it cannot catch: a change that fits both roots, by a thread
 * tearing none down, goes to the current one (the counts it feeds are
 * the same either way unless the two roots differ there later).
 *
 * A capture that began mid-run may begin inside an old root's zap, the
 * new root already in use: the trace never showed the two apart.  A
 * thread whose first changes, outside any context, unlink a table or
 * mark a removed table's entries (handle_removed_pt()) is tearing
 * tables down since before the capture (the NX worker aside; an
 * invalidation zaps leaves only), until it does anything else.  Such a
 * change goes to a root of its own, unknown (every zap in it revealed),
 * unless it fits an entry the model knows in the current root (not one
 * it never showed, nor a table other than the one it holds there), and,
 * once the thread removed a table above 2M or marked the entries of
 * one, every change of it does: that is a root's zap (dirty logging's
 * collapse, also in a memslot ioctl, removes 4K tables only).  Its
 * tables' frees predict nothing (engine_teardown.c).  What this cannot
 * catch: a zap of the current root begun before the capture leaves
 * the model's entries of it present (known only where the trace showed
 * them since).
 */
#include "replay/engine_int.h"

#include "util/assert.h"

void roots_init(struct engine *e)
{
	int i;

	for (i = 0; i < TDP_AS_IDS; i++) {
		e->roots.orig[i] = i < RETIRED_FIRST ? i : -1;
		e->roots.unknown[i] = 0;
		e->roots.retired_seq[i] = 0;
		e->roots.zap_begun[i] = 0;
	}
	e->roots.nretired = 0;
}

int roots_orig(const struct engine *e, int as)
{
	MR_ASSERT_DBG(as >= 0 && as < TDP_AS_IDS);
	return e->roots.orig[as] < 0 ? as : e->roots.orig[as];
}

static void slot_drop(struct engine *e, int slot)
{
	MR_ASSERT(slot >= RETIRED_FIRST && e->roots.orig[slot] >= 0);
	tdp_drop_as(&e->tdp_obs, slot);
	tdp_drop_as(&e->tdp_ovl, slot);
	tdp_drop_as(&e->tdp_kvmdirty, slot);
	tdp_drop_as(&e->tdp_doubt, slot);
	e->roots.orig[slot] = -1;
	e->roots.nretired--;
}

static void slot_used(void *arg, void *val)
{
	const struct thread_ctx *t = val;
	unsigned *used = arg;

	if (t->ctx_kind == CTX_TEARDOWN)
		*used |= 1u << t->ctx_as;
	*used |= 1u << t->unknown_root;
}

/* A slot for a root to retire: a free one, after dropping the retired
 * roots with nothing present that no thread tears down, else the
 * oldest's (one a thread tears down only if every slot is). */
static int slot_take(struct engine *e)
{
	int i, slot = -1, oldest = -1;
	unsigned used = 0;

	ptrmap_each(&e->threads, slot_used, &used);
	for (i = RETIRED_FIRST; i < TDP_AS_IDS; i++) {
		if (e->roots.orig[i] >= 0 && !(used & (1u << i)) &&
		    !tdp_as_present(&e->tdp_obs, i))
			slot_drop(e, i);
		if (e->roots.orig[i] < 0 && slot < 0)
			slot = i;
		if (e->roots.orig[i] >= 0 && (oldest < 0 ||
		    ((used >> oldest) & 1) > ((used >> i) & 1) ||
		    (((used >> oldest) & 1) == ((used >> i) & 1) &&
		     e->roots.retired_seq[i] < e->roots.retired_seq[oldest])))
			oldest = i;
	}
	if (slot >= 0)
		return slot;
	slot_drop(e, oldest);
	return oldest;
}

/* A slot taken for a root of address space as, retired at seq; unknown:
 * a teardown's begun before the capture (its entries never shown). */
static int slot_claim(struct engine *e, int as, int unknown, uint64_t seq)
{
	int slot = slot_take(e);

	e->roots.orig[slot] = (int8_t)as;
	e->roots.unknown[slot] = (int8_t)unknown;
	e->roots.retired_seq[slot] = seq;
	e->roots.zap_begun[slot] = (int8_t)unknown;
	e->roots.nretired++;
	return slot;
}

static void retarget(void *arg, void *val)
{
	const int *m = arg;
	struct thread_ctx *t = val;

	if (t->ctx_kind == CTX_TEARDOWN && t->ctx_as == m[0])
		t->ctx_as = m[1];
}

/* *arg: a slot; set to -1 when thread val tears it down. */
static void begun_on(void *arg, void *val)
{
	int *slot = arg;
	const struct thread_ctx *t = val;

	if (t->ctx_kind == CTX_TEARDOWN && t->ctx_as == *slot)
		*slot = -1;
}

void roots_on_root_alloc(struct engine *e, int as, uint64_t seq)
{
	int slot, m[2], i, torn;

	if (!engine_rule(e, RULE_ROOTS) || as < 0 || as >= RETIRED_FIRST)
		return;
	/* A root nothing the model knows of is present in is retired all
	 * the same while a thread tears it down (RULE_ZAPPED_ROOT): on a
	 * capture begun mid-run its upper tables, never shown, are still
	 * linked, and their removal after this allocation is the old
	 * root's, not the new one's. */
	m[0] = as;
	ptrmap_each(&e->threads, begun_on, m);
	torn = m[0] < 0;
	if (!tdp_as_present(&e->tdp_obs, as) &&
	    !(torn && engine_rule(e, RULE_ZAPPED_ROOT)))
		return;
	/* KVM zaps an invalid root soon after it invalidates it: one
	 * retired before this one whose zap the trace has not begun is
	 * not waited for any longer. */
	for (i = RETIRED_FIRST; i < TDP_AS_IDS; i++)
		if (e->roots.orig[i] == as)
			e->roots.zap_begun[i] = 1;
	slot = slot_claim(e, as, 0, seq);
	if (tdp_move_as(&e->tdp_obs, as, slot) < 0 ||
	    tdp_move_as(&e->tdp_ovl, as, slot) < 0 ||
	    tdp_move_as(&e->tdp_kvmdirty, as, slot) < 0 ||
	    tdp_move_as(&e->tdp_doubt, as, slot) < 0)
		e->nomem = 1;
	/* A teardown already under way is the old root's. */
	m[0] = as;
	m[1] = slot;
	ptrmap_each(&e->threads, retarget, m);
	e->roots.zap_begun[slot] = (int8_t)torn;
}

void roots_on_zap_begun(struct engine *e, int as)
{
	if (as >= RETIRED_FIRST && as < TDP_AS_IDS && e->roots.orig[as] >= 0)
		e->roots.zap_begun[as] = 1;
}

/* Whether the entry of root `as` holds old (not present: any value that
 * is not present). */
static int holds(const struct engine *e, int as, int level, uint64_t gfn,
		 uint64_t old)
{
	uint64_t cur = tdp_get(&e->tdp_obs, as, level, gfn);

	if (!spte_present(e->fmt, old))
		return !spte_present(e->fmt, cur);
	return cur == old;
}

/* Whether the change removes a table or marks a removed table's entry:
 * a teardown's, never an invalidation's. */
static int tears_down(const struct engine *e, const struct model_event *ev)
{
	uint64_t old = ev->u.spte.old_spte, new = ev->u.spte.new_spte;
	int level = ev->u.spte.level;

	return (level > TDP_LEVEL_4K && spte_present(e->fmt, old) &&
		!spte_leaf(e->fmt, old, level) && !spte_present(e->fmt, new)) ||
		(!spte_present(e->fmt, old) && spte_removed(e->fmt, new));
}

/* Whether thread t tears down a root other than the current one of
 * address space as, in a context whose span holds gfn (a table's, or
 * the whole root's). */
static int tears_down_in(const struct thread_ctx *t, int as, uint64_t gfn)
{
	return t->ctx_kind == CTX_TEARDOWN && t->ctx_as != as &&
		gfn - t->ctx_gfn < tdp_level_pages(t->sp_level + 1);
}

/*
 * The root of a change no retired root takes (as: the current one), or,
 * on a capture that began mid-run (RULE_UNSEEN_ROOT), a root of the
 * thread's own, unknown, for the mark of a removed table's entry (not
 * present -> removed, handle_removed_pt()) where the current root holds
 * a present entry the trace showed: the table being removed had nothing
 * there, so it is not the current root's, but a root the capture never
 * showed apart (invalidated before the capture, its zap still going on
 * while the vCPUs fill the new root).  Written there, the mark would
 * wipe the leaf a vCPU installed in the current root.
 */
static int current_or_unseen(struct engine *e, struct thread_ctx *t,
			     const struct model_event *ev, int as)
{
	int level = ev->u.spte.level;
	uint64_t gfn = ev->u.spte.gfn, cur;

	if (!e->res->began_mid_run || !engine_rule(e, RULE_UNSEEN_ROOT) ||
	    spte_present(e->fmt, ev->u.spte.old_spte) ||
	    !spte_removed(e->fmt, ev->u.spte.new_spte) ||
	    !tdp_stored(&e->tdp_obs, as, level, gfn))
		return as;
	cur = tdp_get(&e->tdp_obs, as, level, gfn);
	if (!spte_present(e->fmt, cur))
		return as;
	if (!t->unknown_root || roots_orig(e, t->unknown_root) != as)
		t->unknown_root = slot_claim(e, as, 1, ev->seq);
	return t->unknown_root;
}

/*
 * Whether the change of thread t begins the zap of retired root r
 * (RULE_INVALID_ROOT_ZAP).  On a capture begun mid-run a retired root
 * holds only what the trace showed of it since the capture began, and
 * the vCPUs refault the same pages into the new root with the same
 * SPTE values: the first leaf of the old root's zap, unknown in the old
 * root and known in the new one, would take the new root for the one
 * being zapped.  KVM zaps every root it invalidated, whole, once
 * (kvm_tdp_mmu_zap_invalidated_roots() in the memslot ioctl, or its
 * worker), and a root is retired here only when the vCPUs allocate a
 * new one, which KVM does only once the old one is invalid.  So a leaf
 * zap outside any context (not a vCPU's, not the NX worker's) on an
 * entry no retired root stores begins the zap of the newest retired
 * root whose zap has not begun.  It never takes the zap of a current
 * root while an invalidated one is still to be zapped: the VM's final
 * zap comes after every invalid root's.  What it cannot catch: the
 * zap of the current root (a second invalidation) traced before the
 * next root's allocation while the old root's zap is still to come; an
 * invalidated root the trace never showed (the capture began between
 * its invalidation and the new root's allocation: engine.c
 * in_another_root() makes that capture one begun mid-run) has no
 * retired root, and its zap goes to the current root as before.
 */
static int invalid_root_zap(const struct engine *e,
			    const struct thread_ctx *t,
			    const struct model_event *ev, int r)
{
	uint64_t old = ev->u.spte.old_spte;
	int level = ev->u.spte.level;

	return r >= 0 && e->res->began_mid_run &&
		engine_rule(e, RULE_INVALID_ROOT_ZAP) &&
		t->ctx_kind == CTX_NONE && !t->is_worker &&
		spte_present(e->fmt, old) && spte_leaf(e->fmt, old, level) &&
		!spte_present(e->fmt, ev->u.spte.new_spte) &&
		!tdp_stored(&e->tdp_obs, r, level, ev->u.spte.gfn);
}

static void leaf_seen(void *arg, int level, uint64_t gfn, uint64_t spte)
{
	(void)level;
	(void)gfn;
	(void)spte;
	*(int *)arg = 1;
}

/*
 * Whether ev, the removal of a top-level table, is another root's than
 * the current one (RULE_TOP_TABLE): the current root still holds a
 * present leaf the trace showed beneath it.  Only a root's zap removes
 * top-level entries (tdp_mmu_zap_root()), and it zaps every leaf first
 * (the 1G entries' pass, 6.1 and 6.12; 6.12's leaves before that), so
 * the current root's own zap would have traced those leaves' zaps
 * before.
 */
static int top_table_elsewhere(const struct engine *e,
			       const struct model_event *ev)
{
	uint64_t start = tdp_align(ev->u.spte.gfn, SP_MAX_LEVEL);
	int seen = 0;

	if (ev->u.spte.level != SP_MAX_LEVEL ||
	    !engine_rule(e, RULE_TOP_TABLE))
		return 0;
	tdp_for_each_leaf(&e->tdp_obs, ev->u.spte.as_id, start,
			  start + tdp_level_pages(SP_MAX_LEVEL), leaf_seen,
			  &seen);
	return seen;
}

/*
 * Whether the teardown change ev removes a table above 2M or marks an
 * entry of one: only a root's zap does.  A 2M entry marked removed
 * that was present may instead be frozen by a read-locked zap of that
 * entry alone (6.1's tdp_mmu_zap_spte_atomic(): the collapse of dirty
 * logging's split pages, a read-locked recovery), which traces the
 * freeze and not the clear; handle_removed_pt() under the read lock
 * marks every entry of the table it removes, the empty ones too, so an
 * empty 2M entry marked removed is a table's removal.
 */
static int tears_down_above_2m(const struct engine *e,
			       const struct model_event *ev)
{
	int level = ev->u.spte.level;

	return level > TDP_LEVEL_4K + 1 ||
		(level > TDP_LEVEL_4K &&
		 spte_removed(e->fmt, ev->u.spte.new_spte) &&
		 !spte_present(e->fmt, ev->u.spte.old_spte));
}

int roots_route(struct engine *e, struct thread_ctx *t,
		const struct model_event *ev)
{
	int as = ev->u.spte.as_id, level = ev->u.spte.level, i, best = -1;
	int newest = -1, pending = -1, td;
	uint64_t gfn = ev->u.spte.gfn, old = ev->u.spte.old_spte;

	if (as < 0 || as >= RETIRED_FIRST || !engine_rule(e, RULE_ROOTS))
		return as;
	/* Every use of it is on a capture that began mid-run. */
	td = e->res->began_mid_run && tears_down(e, ev);
	/* A thread outside any context (not the NX worker) tears a root
	 * down since before the capture when it is traced from the
	 * capture's first moments; when its first event, however late,
	 * removes a table above 2M or marks an entry of one
	 * (RULE_FIRST_REMOVAL: a zap begun in the capture follows its
	 * thread's memslot change or ioctl); or when a top-level table it
	 * removes is not the current root's (RULE_TOP_TABLE). */
	if (td && !t->is_worker && t->ctx_kind == CTX_NONE &&
	    (t->fresh ||
	     (!t->seen && tears_down_above_2m(e, ev) &&
	      engine_rule(e, RULE_FIRST_REMOVAL)) ||
	     (!e->roots.nretired && top_table_elsewhere(e, ev))))
		t->teardown_before = 1;
	if (t->teardown_before && td && tears_down_above_2m(e, ev))
		t->teardown_before = 2;
	if (t->teardown_before && !tears_down_in(t, as, gfn) &&
	    (t->teardown_before == 2 ||
	     !tdp_known(&e->tdp_obs, as, level, gfn) ||
	     !holds(e, as, level, gfn, old))) {
		/* A root of its own, holding nothing (every entry
		 * unknown). */
		if (!t->unknown_root ||
		    roots_orig(e, t->unknown_root) != as)
			t->unknown_root = slot_claim(e, as, 1, ev->seq);
		return t->unknown_root;
	}
	if (!e->roots.nretired)
		return current_or_unseen(e, t, ev, as);
	if (tears_down_in(t, as, gfn) && roots_orig(e, t->ctx_as) == as)
		return t->ctx_as;
	for (i = RETIRED_FIRST; i < TDP_AS_IDS; i++) {
		if (e->roots.orig[i] != as)
			continue;
		if (!e->roots.unknown[i] && (newest < 0 ||
		    e->roots.retired_seq[i] > e->roots.retired_seq[newest]))
			newest = i;
		if (!e->roots.zap_begun[i] && (pending < 0 ||
		    e->roots.retired_seq[i] > e->roots.retired_seq[pending]))
			pending = i;
		if (tdp_stored(&e->tdp_obs, i, level, gfn) &&
		    holds(e, i, level, gfn, old) &&
		    (best < 0 ||
		     e->roots.retired_seq[i] > e->roots.retired_seq[best]))
			best = i;
	}
	/* A thread outside any context that changes an entry a retired
	 * root holds begins that root's zap: KVM zaps a whole root once it
	 * is invalid (or at the VM's end, when no new root follows). */
	if (best >= 0 && t->ctx_kind == CTX_NONE)
		return best;
	if (best < 0 && invalid_root_zap(e, t, ev, pending))
		return pending;
	if (holds(e, as, level, gfn, old))
		return as;
	if (best >= 0)
		return best;
	/* A capture that began mid-run: a table's removal that fits no
	 * root where the model knows the entries is the old root's, whose
	 * entry there the trace never showed, rather than the new root's
	 * (a root retired in the trace is zapped next; not an unknown
	 * one, whose zap began before the capture). */
	if (td && newest >= 0 &&
	    !tdp_known(&e->tdp_obs, newest, level, gfn))
		return newest;
	return current_or_unseen(e, t, ev, as);
}
