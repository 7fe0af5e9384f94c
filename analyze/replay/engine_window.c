/*
 * mmu_notifier invalidation windows (see engine_int.h): a window opens at
 * the notifier's start event, maps its hva range to gfn ranges through
 * the memslots, asks the policy whether it keeps the leaves there, and
 * predicts the zaps; the patched end event (or the thread's next event)
 * closes it.
 *
 * Invariant: open_windows holds exactly the threads whose context is
 * CTX_WINDOW (window_ctx_close() finds each one; engine.c checks the list is
 * empty at the end).
 */
#include "replay/engine_int.h"

#include "util/alloc.h"
#include "util/assert.h"

static void window_add_range(void *arg, int as_id, uint64_t gs,
			     uint64_t ge)
{
	struct thread_ctx *t = arg;

	if (t->win_nranges < WINDOW_MAX_RANGES)
		t->win_ranges[t->win_nranges++] =
			(struct gfn_range){ as_id, gs, ge };
}

static void window_list_add(struct engine *e, struct thread_ctx *t)
{
	if (ALLOC_GROW(e->open_windows, e->nopen_windows + 1,
		       e->capopen_windows)) {
		e->nomem = 1;
		return;
	}
	e->open_windows[e->nopen_windows++] = t;
}

static void window_list_remove(struct engine *e, struct thread_ctx *t)
{
	size_t i;

	for (i = 0; i < e->nopen_windows; i++)
		if (e->open_windows[i] == t) {
			e->open_windows[i] =
				e->open_windows[--e->nopen_windows];
			return;
		}
	/* Every window context was added when it opened. */
	MR_UNREACHABLE();
}

/* The key of win_unknown. */
static uint64_t win_unknown_key(int as_id, int level, uint64_t gfn)
{
	return (uint64_t)as_id << 56 | (uint64_t)level << 52 | gfn;
}

struct unknown_note {
	struct engine *e;
	int as_id, level;
	uint64_t seq;
};

static int unknown_put(void *arg, uint64_t gfn)
{
	struct unknown_note *n = arg;

	if (u64map_put(&n->e->win_unknown,
		       win_unknown_key(n->as_id, n->level, gfn), n->seq) < 0) {
		n->e->nomem = 1;
		return 1;
	}
	return 0;
}

/* Ranges larger than this (pages) are not noted: their unknown entries
 * stay judged by what they are when zapped. */
#define WINDOW_UNKNOWN_MAX (1ull << 18)

/*
 * On a capture that began mid-run, the entries of the window's range
 * the model does not know when it opens: its prediction counts only the
 * leaves it knows then, so its zap of one of these is revealed, not
 * judged, even where the entry became known meanwhile (a walk that
 * yields mmu_lock while another thread, dirty logging for one, changes
 * the leaves it has not reached: the capture shows them then, not when
 * the window opened).
 */
static void window_unknown_note(struct engine *e, struct thread_ctx *t)
{
	struct unknown_note n = { .e = e, .seq = t->ctx_seq };
	int i;

	if (!e->res->began_mid_run)
		return;
	for (i = 0; i < t->win_nranges; i++) {
		if (t->win_ranges[i].end - t->win_ranges[i].start >
		    WINDOW_UNKNOWN_MAX)
			continue;
		n.as_id = t->win_ranges[i].as_id;
		for (n.level = TDP_LEVEL_4K; n.level <= TDP_MAX_LEAF_LEVEL;
		     n.level++)
			tdp_for_each_unknown(&e->tdp_obs, n.as_id, n.level,
					     t->win_ranges[i].start,
					     t->win_ranges[i].end,
					     unknown_put, &n);
	}
}

/* The window counts the entry in its prediction after all. */
static void window_unknown_forget(struct engine *e, const struct thread_ctx *t,
				  int as_id, int level, uint64_t gfn)
{
	uint64_t key = win_unknown_key(as_id, level, gfn);

	if (u64map_get(&e->win_unknown, key) == t->ctx_seq &&
	    u64map_put(&e->win_unknown, key, 0) < 0)
		e->nomem = 1;
}

int window_unknown_at_open(const struct engine *e, const struct thread_ctx *t,
			   int as_id, int level, uint64_t gfn)
{
	return t->ctx_kind == CTX_WINDOW && e->res->began_mid_run &&
		engine_rule(e, RULE_WINDOW_UNKNOWN) &&
		u64map_get(&e->win_unknown,
			   win_unknown_key(as_id, level, gfn)) == t->ctx_seq;
}


void engine_on_notifier(struct engine *e, struct thread_ctx *t,
			const struct model_event *ev)
{
	struct replay_invalidation inv;
	int i;

	/* The stock and the patched start event of one invalidation (see
	 * scan.c): the window is already open. */
	if (ev->u.notifier.phase == MEV_PHASE_START &&
	    engine_rule(e, RULE_DOUBLE_START) &&
	    t->ctx_kind == CTX_WINDOW && !t->ctx_observed &&
	    t->win_hva_start == ev->u.notifier.hva_start &&
	    t->win_hva_end == ev->u.notifier.hva_end) {
		t->win_measured |= ev->u.notifier.has_event;
		return;
	}
	if (ev->u.notifier.phase != MEV_PHASE_START) {
		engine_ctx_close(e, t);
		return;
	}
	engine_ctx_open(e, t, CTX_WINDOW, ev, 0);
	t->win_measured = ev->u.notifier.has_event;
	t->win_racing = 0;
	t->win_walked = 0;
	t->win_decided = t->win_decided_keep = 0;
	t->win_first_ts = 0;
	t->win_zapped = 0;
	t->win_hva_start = ev->u.notifier.hva_start;
	t->win_hva_end = ev->u.notifier.hva_end;
	slots_hva_to_gfn(&e->slots, ev->u.notifier.hva_start,
			 ev->u.notifier.hva_end, window_add_range, t);
	if (t->win_nranges)
		t->ctx_gfn = t->win_ranges[0].start;
	window_unknown_note(e, t);
	inv.seq = ev->seq;
	inv.hva_start = ev->u.notifier.hva_start;
	inv.hva_end = ev->u.notifier.hva_end;
	inv.is_upgrade = scan_is_upgrade(e->scan, ev->seq);
	inv.upgrade_src = e->scan->upgrade_src;
	e->res->upgrade_windows += inv.is_upgrade;
	t->ctx_keep = policy_keeps_invalidation(e->opts->policy, &inv);
	for (i = 0; i < t->win_nranges; i++) {
		host_level_part(e, t->win_ranges[i].start,
				t->win_ranges[i].end);
		nx_guess_touch(e, t->win_ranges[i].start,
			       t->win_ranges[i].end);
		if (t->is_collapser || t->in_madv_collapse)
			host_level_collapse(e, t->win_ranges[i].start,
					    t->win_ranges[i].end);
		t->ctx_predicted +=
			overlay_context_range(e, t, t->win_ranges[i].as_id,
					      t->win_ranges[i].start,
					      t->win_ranges[i].end,
					      TDP_LEVEL_4K,
					      TDP_MAX_LEAF_LEVEL,
					      ZAP_NOTIFIER);
	}
	window_list_add(e, t);
}

static void window_settle(struct engine *e, struct thread_ctx *t);

void window_ctx_close(struct engine *e, struct thread_ctx *t)
{
	window_list_remove(e, t);
	window_settle(e, t);
	lock_holder_push(e, t);
	overlay_flush_account(e, t->ctx_seq, t->ctx_ts, t->ctx_gfn,
			      t->ctx_predicted, t->ctx_observed,
			      t->ctx_revealed, t->ctx_policy_zaps,
			      t->ctx_flushes, -1);
}

/*
 * The zap walk visits every leaf whose span meets the range
 * (tdp_mmu_zap_leafs(): the iterator starts at the range's first gfn
 * rounded down to each level), so a 2M leaf at the boundary of an
 * unaligned range is zapped whole and traced at its own, aligned, gfn.
 */
int window_covers(const struct thread_ctx *t, int as_id, uint64_t gfn,
		  int level)
{
	uint64_t n = tdp_level_pages(level);
	int j;

	for (j = 0; j < t->win_nranges; j++)
		if (t->win_ranges[j].as_id == as_id &&
		    gfn < t->win_ranges[j].end &&
		    t->win_ranges[j].start < gfn + n)
			return 1;
	return 0;
}

int window_any_covers(struct engine *e, int as_id, uint64_t gfn,
		      int zapping)
{
	size_t i;

	for (i = 0; i < e->nopen_windows; i++)
		if ((!zapping || !e->open_windows[i]->ctx_keep) &&
		    window_covers(e->open_windows[i], as_id, gfn,
				  TDP_LEVEL_4K))
			return 1;
	return 0;
}

/*
 * A leaf installed in the range of an open invalidation by another thread
 * (a fault that passed its retry check before the notifier took
 * mmu_lock) is zapped by that invalidation's walk: the kernel emits the
 * notifier tracepoints before mmu_invalidate_begin().  Once the walk has
 * begun no fault installs in the range until invalidate_range_end (it
 * sees the invalidation in progress and retries).
 *
 * A window the patched end event closes counts every such install.  A
 * stock window stays open in the model past invalidate_range_end, when
 * faults install again, and its walk is seen only by its zaps: installs
 * before its first traced zap are racing (win_racing, settled in
 * window_settle()), later ones are not its business.
 */
void window_install(struct engine *e, struct thread_ctx *self, int as_id,
		    int level, uint64_t gfn)
{
	struct thread_ctx *win;
	size_t i;

	for (i = 0; i < e->nopen_windows; i++) {
		win = e->open_windows[i];
		if (win == self || win->ctx_keep ||
		    !window_covers(win, as_id, gfn, level))
			continue;
		if (win->win_measured)
			win->ctx_predicted++;
		else if (!win->ctx_observed && engine_rule(e, RULE_STOCK_RACE))
			win->win_racing++;
		else
			continue;
		/* Counted now: its zap is judged, unknown at the open or
		 * not. */
		window_unknown_forget(e, win, as_id, level, gfn);
	}
}

/*
 * Where t's walk is: past the last gfn its zap of the leaf at (as_id,
 * level, gfn) covered.  A huge leaf is traced at its aligned gfn and
 * zapped whole: the walk is past its whole span.
 */
void window_walked(struct thread_ctx *t, int as_id, int level, uint64_t gfn)
{
	uint64_t last = gfn + tdp_level_pages(level) - 1;
	int j;

	for (j = 0; j < t->win_nranges; j++)
		if (t->win_ranges[j].as_id == as_id &&
		    gfn < t->win_ranges[j].end &&
		    last >= t->win_ranges[j].start) {
			t->win_walked = 1;
			t->win_walk_range = j;
			t->win_walk_gfn = last;
			return;
		}
}

/*
 * A leaf of an open invalidation's range that another thread removes
 * before the invalidation's walk reached it is not the walk's: the walk
 * finds it gone.  kvm_tdp_mmu_unmap_gfn_range() walks each range in gfn
 * order and may yield mmu_lock on the way (tdp_mmu_iter_cond_resched(),
 * a blockable notifier), and the NX recovery worker takes the lock
 * then.  A leaf behind the walk was zapped by it, so one removed there
 * now was installed after it and was never counted.  Only while the
 * walk has leaves the model counted left to zap (it zapped fewer than
 * predicted): a stock start event has no end, so a window stays open
 * after its walk, and a later removal in its range is of a leaf
 * installed since.  A leaf the model does not hold was never counted,
 * so its removal takes nothing off; the caller asks only for those it
 * holds.  What it cannot catch: a walk that does not go in gfn order, a range
 * of several memslots walked out of the model's order.
 */
void window_removal(struct engine *e, struct thread_ctx *self, int as_id,
		    int level, uint64_t gfn)
{
	struct thread_ctx *win;
	size_t i;
	int j;

	for (i = 0; i < e->nopen_windows; i++) {
		win = e->open_windows[i];
		if (win == self || win->ctx_keep ||
		    win->ctx_observed >= win->ctx_predicted)
			continue;
		for (j = 0; j < win->win_nranges; j++)
			if (win->win_ranges[j].as_id == as_id &&
			    gfn < win->win_ranges[j].end &&
			    win->win_ranges[j].start < gfn +
			    tdp_level_pages(level))
				break;
		if (j == win->win_nranges)
			continue;
		if (win->win_walked && (j < win->win_walk_range ||
					(j == win->win_walk_range &&
					 gfn <= win->win_walk_gfn)))
			continue;
		win->ctx_predicted--;
	}
}

/*
 * A stock window's racing installs at its close.  When the model holds
 * leaves the walk must zap, the walk ran after the installs (they came
 * before its first zap, and none can come between mmu_lock and the
 * walk): they are zapped too.  When it holds none, nothing in the trace
 * says whether the walk took mmu_lock before or after them
 * (invalidate_range_end is not traced): each may have been zapped, or
 * installed after the end.  Such a window is settled by its traced zaps
 * when they are at most its racing installs, and counted
 * (zaps_race_settled): the self-check cannot see a zap missing there.
 */
static void window_settle(struct engine *e, struct thread_ctx *t)
{
	if (!t->win_racing)
		return;
	if (t->ctx_predicted > 0) {
		t->ctx_predicted += t->win_racing;
	} else if (t->ctx_observed <= t->win_racing) {
		t->ctx_predicted = t->ctx_observed;
		e->res->race_windows++;
		e->res->zaps_race_settled += t->ctx_observed;
	}
}
