/*
 * Shadow pages freed (see engine_int.h): outside an invalidation or a
 * fault, a freed SP is torn down (memslot deleted or moved, VM gone) or,
 * by the NX recovery worker, recovered (engine_nx.c).  Either way its
 * context predicts that every leaf under the SP goes (with a teardown,
 * under the tables below it too, torn down inside it).
 *
 * Teardown flushes are not predicted (the kernel batches them); under
 * every policy they stay as traced.
 */
#include "replay/engine_int.h"

void engine_on_sp_free(struct engine *e, struct thread_ctx *t,
		       const struct model_event *ev)
{
	int level = mev_role_level(ev->u.sp.role);
	uint64_t gfn = ev->u.sp.gfn;
	enum ctx_kind kind;

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
			nx_set(e, &e->nx_policy, gfn, 0);
			nx_set(e, &e->nx_traced, gfn, 0);
		}
		return;
	}
	/* Freed inside an invalidation or a fault: part of that context. */
	if (t->ctx_kind == CTX_WINDOW || t->ctx_kind == CTX_FAULT)
		return;
	kind = t->is_worker ? CTX_RECOVERY : CTX_TEARDOWN;
	engine_ctx_open(e, t, kind, ev, gfn);
	t->sp_level = level;
	if (kind == CTX_RECOVERY)
		nx_recovery_ctx_open(e, t, ev, level);
	else if (level == TDP_LEVEL_4K)
		nx_set(e, &e->nx_policy, gfn, 0);
	if (level == TDP_LEVEL_4K)
		nx_set(e, &e->nx_traced, gfn, 0);
	/* A teardown zaps every leaf below the table (nested tables with
	 * it, above); a recovery the leaves of its one table. */
	t->ctx_predicted =
		overlay_context_range(e, t, 0, gfn,
				      gfn + tdp_level_pages(level + 1),
				      kind == CTX_RECOVERY ||
				      !engine_rule(e, RULE_NESTED_TEARDOWN) ?
				      level : 0,
				      kind == CTX_RECOVERY ? ZAP_NX_RECOVERY :
				      ZAP_TEARDOWN);
}

void teardown_ctx_close(struct engine *e, struct thread_ctx *t)
{
	int64_t i;

	e->res->flushes_teardown += t->ctx_flushes;
	for (i = 0; i < t->ctx_flushes; i++)
		overlay_flush(e, t->ctx_ts);
}
