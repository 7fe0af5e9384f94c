/*
 * TDP state map (see tdp.h): a u64 map on a key packing (as_id, level,
 * gfn).
 */
#include "model/tdp.h"

#include <assert.h>

/* bit 63 marks a used slot; as_id bits 60-61, level 56-59, gfn 0-55. */
static uint64_t tdp_key(int as_id, int level, uint64_t gfn)
{
	return (1ULL << 63) | ((uint64_t)(as_id & 3) << 60) |
		((uint64_t)(level & 15) << 56) | (gfn & ((1ULL << 56) - 1));
}

void tdp_init(struct tdp *t, const struct spte_format *fmt)
{
	t->fmt = fmt;
	u64map_init(&t->map);
}

void tdp_free(struct tdp *t)
{
	u64map_free(&t->map);
}

int tdp_set(struct tdp *t, int as_id, int level, uint64_t gfn, uint64_t spte)
{
	return u64map_put(&t->map, tdp_key(as_id, level, tdp_align(gfn, level)),
			  spte);
}

uint64_t tdp_get(const struct tdp *t, int as_id, int level, uint64_t gfn)
{
	return u64map_get(&t->map, tdp_key(as_id, level,
					   tdp_align(gfn, level)));
}

/*
 * A leaf is reachable only while every table entry above it that the
 * trace has shown is present and not itself a leaf: zapping a parent
 * unlinks the whole table at once, before its children are marked
 * removed (the NX recovery worker does exactly that).
 */
static int tdp_reachable(const struct tdp *t, int as_id, uint64_t gfn,
			 int level)
{
	const struct u64map_slot *s;
	int p;

	for (p = level + 1; p <= TDP_MAX_LEVEL; p++) {
		s = u64map_find(&t->map, tdp_key(as_id, p, tdp_align(gfn, p)));
		if (s && (!spte_present(t->fmt, s->val) ||
			  spte_leaf(t->fmt, s->val, p)))
			return 0;
	}
	return 1;
}

int tdp_leaf(const struct tdp *t, int as_id, uint64_t gfn, uint64_t *spte)
{
	uint64_t v;
	int level;

	for (level = 1; level <= 3; level++) {
		v = tdp_get(t, as_id, level, gfn);
		if (spte_present_leaf(t->fmt, v, level) &&
		    tdp_reachable(t, as_id, gfn, level)) {
			*spte = v;
			return level;
		}
	}
	*spte = 0;
	return 0;
}

void tdp_for_each_leaf(const struct tdp *t, int as_id, uint64_t start,
		       uint64_t end,
		       void (*fn)(void *arg, int level, uint64_t gfn,
				  uint64_t spte), void *arg)
{
	size_t i;

	assert(start <= end);
	/*
	 * A scan of the table costs its size; a probe per gfn costs the
	 * range.  Pick the cheaper: notifier ranges are often whole slots.
	 */
	if (end - start > t->map.len) {
		for (i = 0; i < t->map.cap; i++) {
			const struct u64map_slot *s = &t->map.slots[i];
			int level = (int)((s->key >> 56) & 15);
			uint64_t gfn = s->key & ((1ULL << 56) - 1);

			if (!s->key || (int)((s->key >> 60) & 3) != as_id)
				continue;
			if (gfn + tdp_level_pages(level) <= start ||
			    gfn >= end)
				continue;
			if (spte_present_leaf(t->fmt, s->val, level))
				fn(arg, level, gfn, s->val);
		}
		return;
	}
	for (uint64_t g = start; g < end; g++) {
		int level;

		for (level = 1; level <= 3; level++) {
			uint64_t base = tdp_align(g, level), v;

			/* A large leaf is reported once, at its first gfn
			 * inside the range. */
			if (level > 1 && base < start && g != start)
				continue;
			if (level > 1 && base != g && g != start)
				continue;
			v = tdp_get(t, as_id, level, g);
			if (spte_present_leaf(t->fmt, v, level))
				fn(arg, level, base, v);
		}
	}
}
