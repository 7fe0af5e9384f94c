/*
 * TDP page table state: for each (address space, level, gfn) the last
 * SPTE value the model knows.  A map, not a tree: the replay needs "the
 * leaf that maps gfn now" and "the leaves in [gfn, gfn+n)", and memory
 * must grow with the guest pages touched, never with the event count.
 *
 * Invariants: keys are level-aligned (gfn of a level-L entry is a
 * multiple of 512^(L-1)); an entry once created is kept (a zapped SPTE is
 * stored as its non-present value), so the table size is the number of
 * distinct entries ever seen.
 */
#ifndef MMUREPLAY_MODEL_TDP_H
#define MMUREPLAY_MODEL_TDP_H

#include "model/spte.h"
#include "util/u64map.h"

#include <stddef.h>
#include <stdint.h>

#define TDP_MAX_LEVEL 5

struct tdp {
	const struct spte_format *fmt;
	struct u64map map;      /* tdp key (see tdp.c) -> SPTE */
};

/* Entries stored. */
static inline size_t tdp_size(const struct tdp *t)
{
	return t->map.len;
}

void tdp_init(struct tdp *t, const struct spte_format *fmt);
void tdp_free(struct tdp *t);

static inline uint64_t tdp_level_pages(int level)
{
	return 1ULL << (9 * (level - 1));
}

static inline uint64_t tdp_align(uint64_t gfn, int level)
{
	return gfn & ~(tdp_level_pages(level) - 1);
}

/* Store the SPTE of (as_id, level, gfn); -1 when out of memory. */
int tdp_set(struct tdp *t, int as_id, int level, uint64_t gfn,
	    uint64_t spte);
/* The SPTE stored for (as_id, level, gfn), or 0 when never seen. */
uint64_t tdp_get(const struct tdp *t, int as_id, int level, uint64_t gfn);

/*
 * The present, reachable leaf mapping gfn, searched from 4K upwards;
 * returns its level (0: none) and stores the SPTE in *spte.
 */
int tdp_leaf(const struct tdp *t, int as_id, uint64_t gfn, uint64_t *spte);

/* Call fn for every present leaf with a gfn in [start, end). */
void tdp_for_each_leaf(const struct tdp *t, int as_id, uint64_t start,
		       uint64_t end,
		       void (*fn)(void *arg, int level, uint64_t gfn,
				  uint64_t spte), void *arg);

#endif
