/*
 * Shadow pages freed (see engine_int.h): outside an invalidation or a
 * fault, a freed SP is torn down (memslot deleted or moved, VM gone) or,
 * by the NX recovery worker, recovered (engine_nx.c).  Either way its
 * context predicts that every leaf under the SP goes (with a teardown,
 * under the tables below it too, torn down inside it).
 *
 * The zap of the whole VM (kvm_mmu_zap_all() when the VM's mm or file
 * goes, kvm_mmu_zap_all_fast() for a memslot) may zap leaves before it
 * frees any table: tdp_mmu_zap_root() walks a root in passes of
 * decreasing granularity, on Linux 6.12 4K leaves first, then 2M,
 * 1G, the root's entries (6.1: 1G, then the root's entries, so the
 * first event was a table's removal).  A leaf zapped where no table's
 * removal explains it therefore begins a teardown of the whole address
 * space: every leaf goes, the tables it frees afterwards are part of it.
 * The thread that runs it is whichever drops the VM last; on 6.12 that
 * can be the NX recovery worker (a vhost task of the VM process), whose
 * teardown is then no recovery.  A leaf zap outside any context that is
 * not such a zap (kvm_zap_gfn_range() of a range) fails the prediction
 * as a zap_count mismatch, as it failed as zap_unexplained before.
 *
 * A table's entries are traced after its parent entry was cleared
 * (handle_removed_pt() runs on the unlinked table).  Under the read
 * lock (6.12's collapse of dirty-logged memory when logging stops, a
 * read-locked recovery) a fault may meanwhile link a new table at the
 * same parent and fill it; the old table's entries, traced after that,
 * are not the new table's, which the model keeps (RULE_REMOVED_TABLE);
 * nor is the unlink itself when the new table was traced first (the zap
 * froze the entry, flushed, cleared it, and the fault linked its table
 * before the zap's tracepoint fired).
 *
 * Teardown flushes are not predicted (the kernel batches them); under
 * every policy they stay as traced.
 */
#include "replay/engine_int.h"

#include "util/alloc.h"
#include "util/assert.h"

#include <string.h>

static int64_t replaced_take(struct engine *e, int32_t tid, int as_id,
			     int level, uint64_t gfn, int *relinked,
			     uint64_t known[TDP_TABLE_ENTRIES / 64]);

/*
 * Whether a 4K table thread t frees at gfn is the collapse of dirty
 * logging's split pages: when a memslot's dirty logging stops,
 * kvm_mmu_slot_apply_flags() -> kvm_mmu_zap_collapsible_sptes() zaps,
 * in the thread of KVM_SET_USER_MEMORY_REGION, each table that maps
 * what could be a huge page, so that faults map it huge again; the
 * memslot's deletion instead zaps whole roots (teardown_zap_all_*()).
 * Logging stops in this ioctl when the memslot event in it says so
 * (patched), or the stock inference's logging interval ends at its
 * entry (scan.h).
 */
static int collapse_of(const struct engine *e, const struct thread_ctx *t,
		       uint64_t gfn)
{
	int dirty;

	if (!t->in_setregion || !engine_rule(e, RULE_DIRTY_LOG_COLLAPSE))
		return 0;
	if (e->slots.measured)
		return scan_flip_at(e->scan, 0, gfn, t->setregion_seq,
				    &dirty) && !dirty;
	return t->setregion_seq && scan_dirty_at(e->scan,
						 t->setregion_seq - 1) &&
		!scan_dirty_at(e->scan, t->setregion_seq);
}

/* The walk of teardown_collapse_kept(). */
struct kept_collapse {
	struct engine *e;
	const struct thread_ctx *t;
	int64_t ts;
};

static void collapse_kept_leaf(void *arg, int level, uint64_t gfn,
			       uint64_t spte)
{
	struct kept_collapse *c = arg;
	struct engine *e = c->e;
	uint64_t base = tdp_align(gfn, TDP_LEVEL_4K + 1), parent;

	(void)spte;
	if (level != TDP_LEVEL_4K || !collapse_of(e, c->t, base) ||
	    !collapse_of(e, c->t, base + TDP_TABLE_ENTRIES - 1) ||
	    u64map_get(&e->host_level, base >> 9) == HOST_4K)
		return;
	/* The recorded run's table there: the collapse of it is traced
	 * (its free took the policy's leaves, overlay_context_range()),
	 * or the region could not map huge. */
	parent = tdp_get(&e->tdp_obs, 0, TDP_LEVEL_4K + 1, base);
	if (spte_present(e->fmt, parent) &&
	    !spte_present_leaf(e->fmt, parent, TDP_LEVEL_4K + 1))
		return;
	tdp_clear(&e->tdp_ovl, 0, level, gfn);
	overlay_zap(e, c->ts, ZAP_DIRTY_LOG_COLLAPSE, 0, level, gfn);
}

/*
 * Thread t's KVM_SET_USER_MEMORY_REGION returns.  Where dirty logging
 * stopped in it, kvm_mmu_zap_collapsible_sptes() zapped every table
 * under a 2M entry that could map huge (zap_collapsible_spte_range(),
 * 6.1 and 6.12 alike: an NX split's table is no exception), the tables
 * a policy kept as well as the recorded run's.  The trace shows the
 * recorded run's (collapse_of()); a 4K leaf the policy kept in a region
 * where the recorded run has no table (its worker recovered the page
 * and no fault mapped it again while logging was on) goes here, as the
 * collapse's, unless the host maps the region 4K (nothing collapses
 * there) or the region is not whole in the slot.  The faults on it
 * after are refaults.  Under the recorded policy the overlay is empty.
 */
void teardown_collapse_kept(struct engine *e, const struct thread_ctx *t,
			    int64_t ts)
{
	struct kept_collapse c = { .e = e, .t = t, .ts = ts };

	if (!t->in_setregion || !tdp_size(&e->tdp_ovl))
		return;
	tdp_for_each_leaf(&e->tdp_ovl, 0, 0, UINT64_MAX, collapse_kept_leaf,
			  &c);
}

/*
 * Whether the NX recovery worker's table free is a teardown.  On a
 * patched capture a batch is traced from its begin to its end event
 * (kernel-series patch 9): a free outside one is the VM's own teardown,
 * which on 6.12 the worker (a vhost task of the VM process) may finish
 * after another thread zapped the leaves (the VMM thread zaps every 4K
 * leaf, the worker frees the tables).
 */
static int worker_tears_down(const struct engine *e, int level, uint64_t gfn)
{
	/* A capture that began mid-batch frees before the first begin
	 * event: only once a traced batch ended is a free outside one
	 * known to be no recovery. */
	if (engine_rule(e, RULE_MEASURED_BATCH) &&
	    e->last_batch.batch_measured &&
	    !(e->batch.batch_active && e->batch.batch_measured))
		return 1;
	/*
	 * Without batch events (a stock kernel): the worker recovers only
	 * tables KVM's list holds (kvm_recover_nx_huge_pages() takes them
	 * from possible_nx_huge_pages), so its free of an L1 table the list
	 * does not hold, once the model's list is KVM's, is a teardown.
	 * Where the trace shows KVM_RUN (syscall events), only while every
	 * vCPU has left it: a VM whose vCPUs run is not being torn down,
	 * so there an unlisted free is a recovery the model's list missed,
	 * which the batch's size check fails on.  What this cannot catch:
	 * a list the model holds wrong on a capture without syscall
	 * events, or at a moment no vCPU runs.
	 */
	return engine_rule(e, RULE_UNLISTED_FREE) && level == TDP_LEVEL_4K &&
		e->nx_list_known && !e->scan->seen[MEV_NX_RECOVERY] &&
		!nx_listed(e, gfn) &&
		(!e->scan->seen[MEV_SYSCALL] ||
		 e->vcpus_left == e->vcpu_threads);
}

void engine_on_sp_free(struct engine *e, struct thread_ctx *t,
		       const struct model_event *ev)
{
	int level = mev_role_level(ev->u.sp.role);
	uint64_t gfn = ev->u.sp.gfn;
	enum ctx_kind kind;
	int64_t leaves;
	int as, replaced = 0, relinked, root;
	unsigned fl;

	if (level < 1 || level > SP_MAX_LEVEL)
		return;
	/*
	 * Freed inside the teardown of a table above it: part of that
	 * teardown.  handle_removed_pt() walks a table's entries in order
	 * and tears down a child table where it meets one, so the leaves of
	 * a table that maps both (a 2M page split to 4K beside 2M leaves)
	 * are traced before and after its child's.
	 */
	if (t->ctx_kind == CTX_TEARDOWN && level < t->sp_level &&
	    gfn - t->ctx_gfn < tdp_level_pages(t->sp_level + 1) &&
	    engine_rule(e, RULE_NESTED_TEARDOWN)) {
		if (level == TDP_LEVEL_4K) {
			unsigned tf = nx_table_freed(t, gfn);

			if (tf & NX_TABLE_POLICY)
				nx_split_drop(e, &e->nx_policy, gfn);
			nx_span_forget(e, gfn);
			if (tf & NX_TABLE_TRACED)
				nx_split_drop(e, &e->nx_traced, gfn);
		}
		return;
	}
	/* Freed inside an invalidation or a fault: part of that context. */
	if (t->ctx_kind == CTX_WINDOW || t->ctx_kind == CTX_FAULT)
		return;
	kind = t->is_worker && !worker_tears_down(e, level, gfn) ?
		CTX_RECOVERY :
		CTX_TEARDOWN;
	engine_ctx_open(e, t, kind, ev, gfn);
	t->sp_level = level;
	/* A retired root's table when its parent entry's removal, this
	 * thread's last change, was the retired root's (engine_roots.c). */
	as = mev_role_as_id(ev->u.sp.role);
	root = t->route_as >= RETIRED_FIRST &&
		roots_orig(e, t->route_as) == as ? t->route_as : 0;
	t->ctx_as = root;
	if (kind == CTX_TEARDOWN)
		roots_on_zap_begun(e, root);
	t->ctx_collapse = kind == CTX_TEARDOWN && level == TDP_LEVEL_4K &&
		collapse_of(e, t, gfn);
	/* What the model knows of the table's entries now: of a table a
	 * new one already replaced (its parent entry present again), only
	 * what the trace stored, not the new table's birth. */
	if (level == TDP_LEVEL_4K) {
		if (root)
			as = root;
		replaced = spte_present(e->fmt, tdp_get(&e->tdp_obs, as,
				level + 1, tdp_align(gfn, level + 1)));
		tdp_table_known(&e->tdp_obs, as, level, gfn, !replaced,
				t->sp_known);
	}
	/* The worker recovers only listed tables; other frees drop what
	 * the freed table held (tdp_mmu_unlink_sp()). */
	fl = level == TDP_LEVEL_4K ? nx_table_freed(t, gfn) : 0;
	if (kind == CTX_RECOVERY)
		fl = NX_TABLE_TRACED | NX_TABLE_POLICY;
	if (kind == CTX_RECOVERY)
		nx_recovery_ctx_open(e, t, ev, level);
	else if (fl & NX_TABLE_POLICY)
		nx_split_drop(e, &e->nx_policy, gfn);
	if (level == TDP_LEVEL_4K) {
		nx_span_forget(e, gfn);
		if (fl & NX_TABLE_TRACED)
			nx_split_drop(e, &e->nx_traced, gfn);
	}
	/* A new table took its place before this free was traced: the
	 * free zaps the removed one's leaves, which the model set aside
	 * when the new one was linked. */
	leaves = replaced_take(e, ev->tid, root, level + 1,
			       tdp_align(gfn, level + 1), &relinked,
			       t->sp_known);
	/* A teardown zaps every leaf below the table (nested tables with
	 * it, above); a recovery the leaves of its one table.  Never a
	 * leaf above the table's level: one there is what a fault linked
	 * in its place (a capture cut mid-fault does not show the fault).
	 * Where the new table's link was traced, the leaves the model
	 * holds there are the new table's (a vCPU may have mapped the
	 * same gfn in it before this free was traced): none of them
	 * goes. */
	if (replaced && relinked)
		t->ctx_predicted = 0;
	else
		t->ctx_predicted =
		overlay_context_range(e, t, root, gfn,
				      gfn + tdp_level_pages(level + 1),
				      kind == CTX_RECOVERY ||
				      !engine_rule(e, RULE_NESTED_TEARDOWN) ?
				      level : TDP_LEVEL_4K, level,
				      kind == CTX_RECOVERY ? ZAP_NX_RECOVERY :
				      t->ctx_collapse ? ZAP_DIRTY_LOG_COLLAPSE :
				      ZAP_TEARDOWN);
	if (!t->ctx_keep)
		t->ctx_predicted += leaves;
	/* A piece of a teardown begun before a mid-run capture (its
	 * thread's first changes tore tables down, engine_roots.c): which
	 * root's table it frees the trace may not tell, so its zaps are
	 * revealed and it predicts none. */
	if (t->teardown_before)
		t->ctx_predicted = 0;
}

void teardown_unlinked(struct engine *e, int32_t tid, int as_id, int level,
		       uint64_t gfn)
{
	e->replaced[e->nreplaced++ % REPLACED_TABLES] = (struct replaced_table){
		.as_id = as_id, .level = level, .gfn = gfn, .tid = tid,
		.active = 1,
	};
}

static struct replaced_table *replaced_find(struct engine *e, int as_id,
					    int level, uint64_t gfn,
					    int32_t tid, int any_tid)
{
	unsigned i, n = e->nreplaced < REPLACED_TABLES ? e->nreplaced :
		REPLACED_TABLES;

	for (i = 0; i < n; i++) {
		struct replaced_table *r = &e->replaced[i];

		if (r->active && r->as_id == as_id && r->level == level &&
		    r->gfn == gfn && (any_tid || r->tid == tid))
			return r;
	}
	return NULL;
}

void teardown_replaced(struct engine *e, int as_id, int level, uint64_t gfn,
		       int64_t leaves,
		       const uint64_t known[TDP_TABLE_ENTRIES / 64])
{
	struct replaced_table *r = replaced_find(e, as_id, level, gfn, 0, 1);

	if (r) {
		r->leaves += leaves;
		r->relinked = 1;
		memcpy(r->known, known, sizeof(r->known));
	}
}

/* The leaves of the table thread tid unlinked at the entry (as_id,
 * level, gfn) that a new table hid from the model; its record ends. */
static int64_t replaced_take(struct engine *e, int32_t tid, int as_id,
			     int level, uint64_t gfn, int *relinked,
			     uint64_t known[TDP_TABLE_ENTRIES / 64])
{
	struct replaced_table *r = replaced_find(e, as_id, level, gfn, tid, 0);

	*relinked = 0;
	if (!r)
		return 0;
	r->active = 0;
	if (!engine_rule(e, RULE_REMOVED_TABLE))
		return 0;
	*relinked = r->relinked;
	if (r->relinked)
		memcpy(known, r->known, sizeof(r->known));
	return r->leaves;
}

/* Physical address bits of an SPTE (which table or page it points to). */
#define SPTE_ADDR_MASK 0x000ffffffffff000ULL

/* Whether the change of thread t at (as, level, gfn) from old belongs to
 * a table that another one already replaced: the unlink of a table
 * other than the one the model holds there, or an entry of the table
 * its teardown or recovery removes while the parent entry, cleared when
 * that table was unlinked, is present again. */
int teardown_entry_replaced(struct engine *e, const struct thread_ctx *t,
			    int as, int level, uint64_t gfn, uint64_t old)
{
	int plevel = t->sp_level + 1;
	uint64_t cur;

	if (!engine_rule(e, RULE_REMOVED_TABLE))
		return 0;
	if (level > TDP_LEVEL_4K && spte_present(e->fmt, old) &&
	    !spte_leaf(e->fmt, old, level)) {
		cur = tdp_get(&e->tdp_obs, as, level, gfn);
		return spte_present(e->fmt, cur) &&
			!spte_leaf(e->fmt, cur, level) &&
			((cur ^ old) & SPTE_ADDR_MASK);
	}
	if ((t->ctx_kind != CTX_TEARDOWN && t->ctx_kind != CTX_RECOVERY) ||
	    t->sp_level >= SP_MAX_LEVEL || level > t->sp_level ||
	    gfn - t->ctx_gfn >= tdp_level_pages(plevel))
		return 0;
	return spte_present(e->fmt, tdp_get(&e->tdp_obs, as, plevel,
					     tdp_align(t->ctx_gfn, plevel)));
}

/* Address spaces a zap of the VM covers (x86: normal and SMM). */
#define ZAP_ALL_AS_IDS 2

/*
 * Whether the leaf zap ev of thread t begins the zap of the whole VM:
 * outside any context, or outside the table the open teardown or
 * recovery removes (a table's removal zaps only the leaves under it),
 * or not past the last leaf that removal zapped: handle_removed_pt()
 * walks the table's entries once, in gfn order (nested tables in
 * place), so a leaf at or below one it zapped is a leaf of a table
 * linked there since (rule removal_walk).
 */
int teardown_zap_all_starts(struct engine *e, const struct thread_ctx *t,
			    const struct model_event *ev)
{
	if (!engine_rule(e, RULE_ZAP_ALL))
		return 0;
	if (t->ctx_kind == CTX_NONE)
		return 1;
	if (t->ctx_kind != CTX_TEARDOWN && t->ctx_kind != CTX_RECOVERY)
		return 0;
	if (t->sp_level < SP_MAX_LEVEL && t->ctx_walk_next &&
	    ev->u.spte.gfn < t->ctx_walk_next &&
	    engine_rule(e, RULE_REMOVAL_WALK))
		return 1;
	return ev->u.spte.gfn - t->ctx_gfn >= tdp_level_pages(t->sp_level + 1);
}

void teardown_zap_all_open(struct engine *e, struct thread_ctx *t,
			   const struct model_event *ev)
{
	int as;

	engine_ctx_open(e, t, CTX_TEARDOWN, ev, 0);
	t->sp_level = SP_MAX_LEVEL;
	t->ctx_predicted = 0;
	if (ALLOC_GROW(e->open_zap_alls, e->nopen_zap_alls + 1,
		       e->capopen_zap_alls)) {
		e->nomem = 1;
	} else {
		e->open_zap_alls[e->nopen_zap_alls++] = t;
		t->ctx_zap_all = 1;
	}
	/* The zap of a retired root (engine_roots.c) zaps that root. */
	if (ev->u.spte.as_id >= RETIRED_FIRST) {
		t->ctx_as = ev->u.spte.as_id;
		roots_on_zap_begun(e, t->ctx_as);
		t->ctx_predicted =
			overlay_context_range(e, t, t->ctx_as, 0,
					      tdp_level_pages(SP_MAX_LEVEL + 1),
					      TDP_LEVEL_4K, TDP_MAX_LEAF_LEVEL,
					      ZAP_TEARDOWN);
		return;
	}
	for (as = 0; as < ZAP_ALL_AS_IDS; as++)
		t->ctx_predicted +=
			overlay_context_range(e, t, as, 0,
					      tdp_level_pages(SP_MAX_LEVEL + 1),
					      TDP_LEVEL_4K, TDP_MAX_LEAF_LEVEL,
					      ZAP_TEARDOWN);
}

/*
 * A leaf another thread removes ahead of the walk of an open zap of a
 * whole root is not that zap's: the walk finds it gone.  The zap
 * yields mmu_lock on its way (tdp_mmu_iter_cond_resched()), and an
 * invalidation of the VM's memory takes the lock then.
 *
 * The walk is where its last zap was: 6.12 zaps a root in passes, 4K
 * leaves first, then 2M, then 1G, each in gfn order, so a leaf of a
 * higher level than the walk's last, or of its level at a gfn past it,
 * is ahead (6.1's one pass walks every level in gfn order: a leaf of a
 * lower level past the walk is ahead too but not taken so, and the
 * mismatch stays).  Only while the walk has leaves the model counted
 * left to zap, and only a leaf the model held (its caller checks): one
 * a capture begun mid-run had not shown was in no count.  What it
 * cannot catch: a leaf installed after the zap began and removed ahead
 * of its walk (no vCPU runs in a VM being zapped whole at its exit; a
 * memslot's zap takes retired roots).
 */
void teardown_removal(struct engine *e, const struct thread_ctx *self,
		      int as_id, int level, uint64_t gfn)
{
	struct thread_ctx *z;
	size_t i;

	for (i = 0; i < e->nopen_zap_alls; i++) {
		z = e->open_zap_alls[i];
		MR_ASSERT_DBG(z->ctx_kind == CTX_TEARDOWN && z->ctx_zap_all);
		if (z == self || z->ctx_keep || !z->ctx_walk_next ||
		    z->ctx_walk_as != as_id ||
		    z->ctx_observed >= z->ctx_predicted)
			continue;
		if (level > z->ctx_walk_level ||
		    (level == z->ctx_walk_level && gfn >= z->ctx_walk_next))
			z->ctx_predicted--;
	}
}

/* Its flushes were counted as they came (engine_on_tlb_flush()). */
void teardown_ctx_close(struct engine *e, struct thread_ctx *t)
{
	size_t i;

	e->res->flushes_teardown += t->ctx_flushes;
	if (!t->ctx_zap_all)
		return;
	t->ctx_zap_all = 0;
	for (i = 0; i < e->nopen_zap_alls; i++)
		if (e->open_zap_alls[i] == t) {
			e->open_zap_alls[i] =
				e->open_zap_alls[--e->nopen_zap_alls];
			return;
		}
	/* Every zap of a whole root was added when it opened. */
	MR_UNREACHABLE();
}
