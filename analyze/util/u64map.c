/*
 * Open-addressing u64 -> u64 map (see u64map.h).
 */
#include "util/u64map.h"

#include "util/assert.h"

#include <stdlib.h>

static size_t slot_of(uint64_t stored, size_t cap)
{
	/* Keys are pointers (aligned) or packed fields: mix all bits. */
	stored ^= stored >> 33;
	stored *= 0xff51afd7ed558ccdULL;
	stored ^= stored >> 33;
	return (size_t)stored & (cap - 1);
}

void u64map_init(struct u64map *m)
{
	m->slots = NULL;
	m->cap = 0;
	m->len = 0;
	m->max_slot.stored_key = 0;
	m->max_slot.val = 0;
}

void u64map_free(struct u64map *m)
{
	free(m->slots);
	u64map_init(m);
}

struct u64map_slot *u64map_find(const struct u64map *m, uint64_t key)
{
	uint64_t stored = key + 1;
	size_t i;

	if (stored == 0)
		return m->max_slot.stored_key ?
			(struct u64map_slot *)&m->max_slot : NULL;
	if (m->cap == 0)
		return NULL;
	for (i = slot_of(stored, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->slots[i].stored_key == stored)
			return &m->slots[i];
		if (m->slots[i].stored_key == 0)
			return NULL;
	}
}

uint64_t u64map_get(const struct u64map *m, uint64_t key)
{
	const struct u64map_slot *s = u64map_find(m, key);

	return s ? s->val : 0;
}

static int grow(struct u64map *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64, i, j;
	struct u64map_slot *ns = calloc(ncap, sizeof(*ns));

	if (!ns)
		return -1;
	for (i = 0; i < m->cap; i++) {
		if (!m->slots[i].stored_key)
			continue;
		for (j = slot_of(m->slots[i].stored_key, ncap);
		     ns[j].stored_key; j = (j + 1) & (ncap - 1))
			;
		ns[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = ns;
	m->cap = ncap;
	return 0;
}

int u64map_put(struct u64map *m, uint64_t key, uint64_t val)
{
	struct u64map_slot *s = u64map_find(m, key);
	uint64_t stored = key + 1;
	size_t i;

	if (s) {
		s->val = val;
		return 0;
	}
	if (stored == 0) {
		/* Any non-zero mark: the slot is outside slots[]. */
		m->max_slot.stored_key = 1;
		m->max_slot.val = val;
		return 0;
	}
	if ((m->len + 1) * 2 > m->cap && grow(m) < 0)
		return -1;
	for (i = slot_of(stored, m->cap); m->slots[i].stored_key;
	     i = (i + 1) & (m->cap - 1))
		;
	m->slots[i].stored_key = stored;
	m->slots[i].val = val;
	m->len++;
	MR_ASSERT_DBG(m->len * 2 <= m->cap);
	return 0;
}

void u64map_each(const struct u64map *m, void (*fn)(void *arg, uint64_t val),
		 void *arg)
{
	size_t i;

	for (i = 0; i < m->cap; i++)
		if (m->slots[i].stored_key)
			fn(arg, m->slots[i].val);
	if (m->max_slot.stored_key)
		fn(arg, m->max_slot.val);
}
