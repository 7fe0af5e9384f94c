/*
 * Memslot table, measured or inferred (see slots.h).
 */
#include "model/slots.h"

#include <string.h>

#define PAGE_SHIFT 12

void slots_init(struct slots *ss)
{
	memset(ss, 0, sizeof(*ss));
}

static struct slot *slot_find(struct slots *ss, int as_id, int id)
{
	int i;

	for (i = 0; i < ss->n; i++)
		if (!ss->s[i].inferred && ss->s[i].as_id == as_id &&
		    ss->s[i].id == id)
			return &ss->s[i];
	if (ss->n == SLOTS_MAX)
		return NULL;
	memset(&ss->s[ss->n], 0, sizeof(ss->s[0]));
	ss->s[ss->n].as_id = as_id;
	ss->s[ss->n].id = id;
	return &ss->s[ss->n++];
}

void slots_apply_event(struct slots *ss, int as_id, int id, int change,
		       uint64_t base_gfn, uint64_t npages, uint64_t hva,
		       uint64_t new_flags)
{
	struct slot *s = slot_find(ss, as_id, id);
	int i;

	if (!ss->measured) {
		/* Measured slots replace whatever was inferred. */
		for (i = 0; i < ss->n; i++)
			if (ss->s[i].inferred)
				ss->s[i].live = 0;
		ss->measured = 1;
	}
	if (!s)
		return;
	s->live = change != KVM_MR_DELETE;
	s->base_gfn = base_gfn;
	s->npages = npages;
	s->off_lo = s->off_hi = (int64_t)(hva - (base_gfn << PAGE_SHIFT));
	s->dirty_log = (new_flags & KVM_MEM_LOG_DIRTY_PAGES) != 0;
}

int slots_traced(const struct slots *ss, int as_id, int id)
{
	int i;

	for (i = 0; i < ss->n; i++)
		if (!ss->s[i].inferred && ss->s[i].as_id == as_id &&
		    ss->s[i].id == id)
			return 1;
	return 0;
}

void slots_infer(struct slots *ss, int64_t lo, int64_t hi, uint64_t first)
{
	struct slot *s;
	int i;

	if (ss->measured || lo > hi)
		return;
	for (i = 0; i < ss->n; i++) {
		s = &ss->s[i];
		if (!s->inferred || lo > s->off_hi || hi < s->off_lo)
			continue;
		if (lo > s->off_lo)
			s->off_lo = lo;
		if (hi < s->off_hi)
			s->off_hi = hi;
		if (first < s->base_gfn)
			s->base_gfn = first;
		return;
	}
	if (ss->n == SLOTS_MAX)
		return;
	s = &ss->s[ss->n++];
	memset(s, 0, sizeof(*s));
	s->id = -1;
	s->inferred = s->live = 1;
	s->off_lo = lo;
	s->off_hi = hi;
	s->base_gfn = first;
}

/*
 * The offset (hva - gfn * 4096) a slot maps by.  A measured one is
 * exact; an inferred one is a range until windows pin it, and then the
 * offset in it that puts hva and gfn at the same place in a 2 MiB page
 * is taken when there is one: KVM maps a slot's memory huge only where
 * they agree (kvm_alloc_memslot_metadata() disallows huge pages in a
 * slot whose userspace_addr and base_gfn differ there), so VMMs align
 * guest RAM that way (seen on stock 6.12: windows bounded a slot to
 * two offsets one page apart, and the lower one took a one-page
 * invalidation for the page after it).  Else the range's low end.
 */
static uint64_t slot_off(const struct slot *s)
{
	const int64_t huge = (int64_t)1 << (PAGE_SHIFT + 9);
	int64_t aligned;

	if (!s->inferred || s->off_lo >= s->off_hi)
		return (uint64_t)s->off_lo;
	aligned = (s->off_lo + huge - 1) & ~(huge - 1);
	if (aligned <= s->off_hi && aligned + huge > s->off_hi)
		return (uint64_t)aligned;
	return (uint64_t)s->off_lo;
}

int slots_hva_to_gfn(const struct slots *ss, uint64_t hs, uint64_t he,
		     void (*fn)(void *arg, int as_id, uint64_t gs,
				uint64_t ge), void *arg)
{
	int i, used = 0;

	for (i = 0; i < ss->n; i++) {
		const struct slot *s = &ss->s[i];
		uint64_t off = slot_off(s), gs, ge;

		if (!s->live || he <= off)
			continue;
		gs = hs > off ? (hs - off) >> PAGE_SHIFT : 0;
		ge = (he - off + (1 << PAGE_SHIFT) - 1) >> PAGE_SHIFT;
		if (s->npages) {
			if (gs < s->base_gfn)
				gs = s->base_gfn;
			if (ge > s->base_gfn + s->npages)
				ge = s->base_gfn + s->npages;
		}
		if (gs >= ge)
			continue;
		fn(arg, s->as_id, gs, ge);
		used++;
	}
	return used;
}

int slots_dirty_logged(const struct slots *ss, int as_id, uint64_t gfn)
{
	int i;

	for (i = 0; i < ss->n; i++) {
		const struct slot *s = &ss->s[i];

		if (s->live && s->dirty_log && s->as_id == as_id &&
		    gfn >= s->base_gfn && (!s->npages ||
					   gfn < s->base_gfn + s->npages))
			return 1;
	}
	return 0;
}

int slots_inferred(const struct slots *ss)
{
	return !ss->measured;
}
