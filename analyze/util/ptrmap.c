/*
 * Pointer-keyed open-addressing map (see ptrmap.h).
 * Invariant: len * 2 <= cap, so an empty slot always exists.
 */
#include "util/ptrmap.h"

#include <assert.h>
#include <stdlib.h>

static size_t slot_of(uint64_t key, size_t cap)
{
	/* Pointers are aligned: mix the bits so buckets spread. */
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdULL;
	key ^= key >> 33;
	return (size_t)key & (cap - 1);
}

void ptrmap_init(struct ptrmap *m)
{
	m->slots = NULL;
	m->cap = 0;
	m->len = 0;
}

void ptrmap_free(struct ptrmap *m)
{
	free(m->slots);
	ptrmap_init(m);
}

void *ptrmap_get(const struct ptrmap *m, uint64_t key)
{
	size_t i;

	if (m->cap == 0)
		return NULL;
	for (i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->slots[i].key == key)
			return m->slots[i].val;
		if (m->slots[i].key == 0)
			return NULL;
	}
}

static int grow(struct ptrmap *m)
{
	size_t ncap = m->cap ? m->cap * 2 : 64;
	struct ptrmap_slot *ns = calloc(ncap, sizeof(*ns));
	size_t i, j;

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

int ptrmap_put(struct ptrmap *m, uint64_t key, void *val)
{
	size_t i;

	assert(key != 0);
	if ((m->len + 1) * 2 > m->cap && grow(m) < 0)
		return -1;
	for (i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
		if (m->slots[i].key == key) {
			m->slots[i].val = val;
			return 0;
		}
		if (m->slots[i].key == 0) {
			m->slots[i].key = key;
			m->slots[i].val = val;
			m->len++;
			return 0;
		}
	}
}
