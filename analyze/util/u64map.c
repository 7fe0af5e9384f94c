/*
 * Open-addressing u64 -> u64 map (see u64map.h).
 */
#include "util/u64map.h"

#include "util/assert.h"

#include <stdlib.h>

static size_t slot_of(uint64_t key, size_t cap)
{
	/* Keys are pointers (aligned) or packed fields: mix all bits. */
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

void u64map_init(struct u64map *m)
{
	m->slots = NULL;
	m->cap = 0;
	m->len = 0;
}

void u64map_free(struct u64map *m)
{
	free(m->slots);
	u64map_init(m);
}

struct u64map_slot *u64map_find(const struct u64map *m, uint64_t key)
{
	size_t i;

	if (m->cap == 0)
		return NULL;
	for (i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->slots[i].key == key)
			return &m->slots[i];
		if (m->slots[i].key == 0)
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
		if (!m->slots[i].key)
			continue;
		for (j = slot_of(m->slots[i].key, ncap); ns[j].key;
		     j = (j + 1) & (ncap - 1))
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
	size_t i;

	MR_ASSERT_DBG(key != 0);
	if (s) {
		s->val = val;
		return 0;
	}
	if ((m->len + 1) * 2 > m->cap && grow(m) < 0)
		return -1;
	for (i = slot_of(key, m->cap); m->slots[i].key;
	     i = (i + 1) & (m->cap - 1))
		;
	m->slots[i].key = key;
	m->slots[i].val = val;
	m->len++;
	MR_ASSERT_DBG(m->len * 2 <= m->cap);
	return 0;
}
