/*
 * TDP state map (see tdp.h): open addressing on a 64-bit key packing
 * (as_id, level, gfn), linear probing, doubling at half load.
 */
#include "model/tdp.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

/* bit 63 marks a used slot; as_id bits 60-61, level 56-59, gfn 0-55. */
static uint64_t tdp_key(int as_id, int level, uint64_t gfn)
{
	return (1ULL << 63) | ((uint64_t)(as_id & 3) << 60) |
		((uint64_t)(level & 15) << 56) | (gfn & ((1ULL << 56) - 1));
}

static size_t tdp_hash(uint64_t key, size_t cap)
{
	key ^= key >> 31;
	key *= 0x9e3779b97f4a7c15ULL;
	key ^= key >> 29;
	return (size_t)key & (cap - 1);
}

void tdp_init(struct tdp *t, const struct spte_format *fmt)
{
	memset(t, 0, sizeof(*t));
	t->fmt = fmt;
}

void tdp_free(struct tdp *t)
{
	free(t->slots);
	t->slots = NULL;
	t->cap = t->len = 0;
}

static struct tdp_slot *tdp_find(const struct tdp *t, uint64_t key)
{
	size_t i;

	if (!t->cap)
		return NULL;
	for (i = tdp_hash(key, t->cap);; i = (i + 1) & (t->cap - 1)) {
		if (t->slots[i].key == key)
			return &t->slots[i];
		if (!t->slots[i].key)
			return NULL;
	}
}

static int tdp_grow(struct tdp *t)
{
	size_t ncap = t->cap ? t->cap * 2 : 1024, i, j;
	struct tdp_slot *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -1;
	for (i = 0; i < t->cap; i++) {
		if (!t->slots[i].key)
			continue;
		for (j = tdp_hash(t->slots[i].key, ncap); ns[j].key;
		     j = (j + 1) & (ncap - 1))
			;
		ns[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = ns;
	t->cap = ncap;
	return 0;
}

int tdp_set(struct tdp *t, int as_id, int level, uint64_t gfn, uint64_t spte)
{
	uint64_t key = tdp_key(as_id, level, tdp_align(gfn, level));
	struct tdp_slot *s = tdp_find(t, key);
	size_t i;

	if (s) {
		s->spte = spte;
		return 0;
	}
	if ((t->len + 1) * 2 > t->cap && tdp_grow(t) < 0)
		return -1;
	for (i = tdp_hash(key, t->cap); t->slots[i].key;
	     i = (i + 1) & (t->cap - 1))
		;
	t->slots[i].key = key;
	t->slots[i].spte = spte;
	t->len++;
	return 0;
}

uint64_t tdp_get(const struct tdp *t, int as_id, int level, uint64_t gfn)
{
	struct tdp_slot *s = tdp_find(t, tdp_key(as_id, level,
						 tdp_align(gfn, level)));

	return s ? s->spte : 0;
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
	struct tdp_slot *s;
	int p;

	for (p = level + 1; p <= TDP_MAX_LEVEL; p++) {
		s = tdp_find(t, tdp_key(as_id, p, tdp_align(gfn, p)));
		if (s && (!spte_present(t->fmt, s->spte) ||
			  spte_leaf(t->fmt, s->spte, p)))
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
	if (end - start > t->len) {
		for (i = 0; i < t->cap; i++) {
			const struct tdp_slot *s = &t->slots[i];
			int level = (int)((s->key >> 56) & 15);
			uint64_t gfn = s->key & ((1ULL << 56) - 1);

			if (!s->key || (int)((s->key >> 60) & 3) != as_id)
				continue;
			if (gfn + tdp_level_pages(level) <= start ||
			    gfn >= end)
				continue;
			if (spte_present_leaf(t->fmt, s->spte, level))
				fn(arg, level, gfn, s->spte);
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
