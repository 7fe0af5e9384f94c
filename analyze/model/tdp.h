/*
 * TDP page table state: for each (address space, level, gfn) the last
 * SPTE value the model knows.
 *
 * Stored as KVM stores it: 512-entry tables, one per (as_id, level, the
 * span of a level-(L+1) entry), found through a hash on the table key.
 * The replay asks "the leaf that maps gfn now" (one table lookup per
 * level) and "the leaves in [gfn, gfn+n)" (one lookup per 512 entries,
 * then a scan of the entries the trace has shown), and memory grows with
 * the guest pages touched (a table is allocated when the trace first
 * shows an entry in it), never with the event count.
 *
 * Known and unknown entries: a capture that begins while the VM runs
 * cannot show what its tables held before.  An entry is known once the
 * trace stored it, or when the trace showed its table allocated (a new
 * table is zeroed: every entry not present); any other entry is unknown,
 * not absent.  tdp_known() and tdp_path_known() tell them apart (the
 * replay asks them only of a capture that began while the VM ran).
 *
 * Invariants: an entry once stored is kept (a zapped SPTE is stored as
 * its non-present value, and its "seen" bit stays set), so tdp_size() is
 * the number of distinct entries ever seen in the address spaces the tdp
 * holds; an entry never seen reads as 0 and does not block the
 * reachability of the entries below it; a table is freed only with its
 * whole address space (tdp_drop_as(), tdp_free()), and a table once born
 * stays born.
 */
#ifndef MMUREPLAY_MODEL_TDP_H
#define MMUREPLAY_MODEL_TDP_H

#include "model/spte.h"
#include "util/assert.h"
#include "util/u64map.h"

#include <stddef.h>
#include <stdint.h>

#define TDP_MAX_LEVEL 5
/* as_id values a tdp holds: KVM's address spaces (normal, SMM), and
 * more for the caller's own use (the replay's retired roots). */
#define TDP_AS_IDS 16
#define TDP_TABLE_ENTRIES 512
/* Leaves are 4K, 2M or 1G: levels 1 to 3. */
#define TDP_LEVEL_4K 1
#define TDP_MAX_LEAF_LEVEL 3

struct tdp_table;

struct tdp {
	const struct spte_format *fmt;
	struct u64map tables;   /* table key (see tdp.c) -> struct tdp_table * */
	struct tdp_table **list[TDP_MAX_LEVEL + 1];     /* by level */
	size_t nlist[TDP_MAX_LEVEL + 1], caplist[TDP_MAX_LEVEL + 1];
	size_t entries;         /* distinct entries ever stored */
	size_t ntables;
	int ignore_reachability;        /* tests only: see tdp_leaf() */
};

/* Entries stored. */
static inline size_t tdp_size(const struct tdp *t)
{
	return t->entries;
}

void tdp_init(struct tdp *t, const struct spte_format *fmt);
void tdp_free(struct tdp *t);

/* Returns the pages an entry of level (1: 4K ... 5) maps. */
static inline uint64_t tdp_level_pages(int level)
{
	MR_ASSERT_DBG(level >= 1 && level <= TDP_MAX_LEVEL + 1);
	return 1ULL << (9 * (level - 1));
}

static inline uint64_t tdp_align(uint64_t gfn, int level)
{
	return gfn & ~(tdp_level_pages(level) - 1);
}

/*
 * Every table of as_id `from` becomes a table of `to`, entries, known
 * and flag bits as they were; what `to` held before is dropped first.
 * Returns 0, or -1 when out of memory (some tables then belong to
 * neither).  Costs one step per table the tdp holds.
 */
int tdp_move_as(struct tdp *t, int from, int to);
/* Every table of as_id is freed: its entries read 0 and unknown, and
 * tdp_size() no longer counts them. */
void tdp_drop_as(struct tdp *t, int as_id);
/* Returns 1 when some entry of as_id holds a present SPTE. */
int tdp_as_present(const struct tdp *t, int as_id);

/* Store the SPTE of (as_id, level, gfn); -1 when out of memory. */
int tdp_set(struct tdp *t, int as_id, int level, uint64_t gfn,
	    uint64_t spte);
/*
 * Store 0 for (as_id, level, gfn) if an entry is stored there (a leaf
 * dropped, a mark cleared); an entry never stored stays unstored (it
 * reads 0 already), so unlike tdp_set() it adds no entry to tdp_size()
 * or to what blocks reachability.  Allocates nothing: it cannot fail.
 */
void tdp_clear(struct tdp *t, int as_id, int level, uint64_t gfn);
/*
 * Forget (as_id, level, gfn): it reads 0 and is never stored again
 * until the next tdp_set(), as if the trace had not shown it (a table
 * born in the trace still makes it known: tdp_known()).  Allocates
 * nothing: it cannot fail.
 */
void tdp_forget(struct tdp *t, int as_id, int level, uint64_t gfn);
/*
 * The table holding the level-`level` entry of gfn was allocated in the
 * trace (its shadow page's allocation, or its link, was traced): its
 * entries never stored are known not present.  Returns 0, or -1 when
 * out of memory.
 */
int tdp_mark_born(struct tdp *t, int as_id, int level, uint64_t gfn);
/* Returns 1 when the entry (as_id, level, gfn) is known: stored, or in
 * a table born in the trace; 0 when the trace has not shown it. */
int tdp_known(const struct tdp *t, int as_id, int level, uint64_t gfn);
/* Stores in known[] one bit per entry of the table holding the level-
 * `level` entry of gfn (bit i: entry i), set where tdp_known() holds,
 * or, without born, where tdp_stored() does. */
void tdp_table_known(const struct tdp *t, int as_id, int level,
		     uint64_t gfn, int born,
		     uint64_t known[TDP_TABLE_ENTRIES / 64]);
/* A bit per entry for the caller's own use (the replay: a present
 * leaf shown there), kept beside the entries at 64 bytes a table:
 * tdp_flag_set() sets it (-1 when out of memory), tdp_flag() reads it
 * (0 where never set).  Neither stores the entry. */
int tdp_flag_set(struct tdp *t, int as_id, int level, uint64_t gfn);
int tdp_flag(const struct tdp *t, int as_id, int level, uint64_t gfn);
/* Calls fn(arg, gfn) for each level-`level` entry of [start, end) that
 * tdp_known() says is unknown, in gfn order: one table lookup per 512
 * entries.  Stops at fn's first non-zero return, which it returns;
 * else 0. */
int tdp_for_each_unknown(const struct tdp *t, int as_id, int level,
			 uint64_t start, uint64_t end,
			 int (*fn)(void *arg, uint64_t gfn), void *arg);
/* Returns 1 when the entry (as_id, level, gfn) was ever stored. */
int tdp_stored(const struct tdp *t, int as_id, int level, uint64_t gfn);
/*
 * Returns 1 when the walk to gfn is known to end where the model says:
 * walking down from the top level, the first entry that is known and
 * either not present or a leaf decides it.  Returns 0 when every entry
 * on the path is unknown or a table: a leaf the trace never showed may
 * map gfn.
 */
int tdp_path_known(const struct tdp *t, int as_id, uint64_t gfn);
/* The SPTE stored for (as_id, level, gfn), or 0 when never seen. */
uint64_t tdp_get(const struct tdp *t, int as_id, int level, uint64_t gfn);

/*
 * The present, reachable leaf mapping gfn, searched from 4K upwards;
 * returns its level (0: none) and stores the SPTE in *spte.  A leaf is
 * reachable while no entry above it that the trace has shown is
 * non-present or itself a leaf.
 */
int tdp_leaf(const struct tdp *t, int as_id, uint64_t gfn, uint64_t *spte);

/*
 * Call fn for every present leaf (levels 1-3) whose span intersects
 * [start, end), with the leaf's own (level-aligned) gfn, in no particular
 * order.  fn may store into t entries that already exist (a zap), not
 * create new ones.
 */
void tdp_for_each_leaf(const struct tdp *t, int as_id, uint64_t start,
		       uint64_t end,
		       void (*fn)(void *arg, int level, uint64_t gfn,
				  uint64_t spte), void *arg);

#endif
