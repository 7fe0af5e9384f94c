/*
 * Plausibility of a model event (see event.h): the bounds the kernel's
 * own types put on the fields the model indexes or shifts by.  A trace
 * damaged in a way its format cannot see (CTF has no checksums), or a DB
 * edited by hand, fails here instead of inside the model.
 */
#include "model/event.h"

/* x86: at most 52 physical address bits (5-level paging), so a gfn
 * below 2^40; KVM has two address spaces (normal and SMM); TDP levels
 * are 1 (4K) to 5. */
#define EV_GFN_LIMIT (1ULL << 40)
#define EV_AS_IDS 2
#define EV_LEVEL_MAX 5

static int level_ok(int level)
{
	return level >= 1 && level <= EV_LEVEL_MAX;
}

const char *model_event_implausible(const struct model_event *ev)
{
	switch (ev->kind) {
	case MEV_SPTE_CHANGE:
		if (!level_ok(ev->u.spte.level))
			return "SPTE level outside 1..5";
		if (ev->u.spte.as_id < 0 || ev->u.spte.as_id >= EV_AS_IDS)
			return "address space outside 0..1";
		if (ev->u.spte.gfn >= EV_GFN_LIMIT)
			return "gfn beyond 52 physical address bits";
		return 0;
	case MEV_SPTE_REQUEST:
		if (!level_ok(ev->u.req.level))
			return "goal level outside 1..5";
		if (ev->u.req.gfn >= EV_GFN_LIMIT)
			return "gfn beyond 52 physical address bits";
		return 0;
	case MEV_FAULT:
	case MEV_FAST_FAULT:
		if (mev_gpa_to_gfn(ev->u.fault.gpa) >= EV_GFN_LIMIT)
			return "gpa beyond 52 physical address bits";
		return 0;
	case MEV_NX_RECOVERY:
		if (ev->u.nx.phase == MEV_NX_PAGE &&
		    (!level_ok(ev->u.nx.level) || ev->u.nx.gfn >= EV_GFN_LIMIT))
			return "recovered page's level or gfn out of range";
		return 0;
	case MEV_UNMAP_DECISION:
		if (ev->u.unmap.as_id < 0 || ev->u.unmap.as_id >= EV_AS_IDS)
			return "address space outside 0..1";
		if (ev->u.unmap.gfn_start > ev->u.unmap.gfn_end)
			return "gfn range ends before it starts";
		return 0;
	case MEV_MEMSLOT:
		if (ev->u.memslot.as_id < 0 ||
		    ev->u.memslot.as_id >= EV_AS_IDS)
			return "address space outside 0..1";
		if (ev->u.memslot.base_gfn >= EV_GFN_LIMIT ||
		    ev->u.memslot.npages > EV_GFN_LIMIT - ev->u.memslot.base_gfn)
			return "memslot beyond 52 physical address bits";
		return 0;
	case MEV_NOTIFIER:
		if (ev->u.notifier.hva_start > ev->u.notifier.hva_end)
			return "hva range ends before it starts";
		return 0;
	default:
		return 0;
	}
}
