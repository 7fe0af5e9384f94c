/*
 * TDP state as 512-entry tables (see tdp.h).
 *
 * A level-L table holds the level-L entries of one level-(L+1) span:
 * entry i maps gfn base + i * 512^(L-1).  The table key packs (as_id,
 * level, gfn >> 9L).  A table moved to another as_id (tdp_move_as()) or
 * dropped (tdp_drop_as()) leaves its old key in the map with the value
 * 0, which reads as no table: the map has no removal, and its keys stay
 * bounded by the TDP_AS_IDS x level x span keys there can be.
 */
#include "model/tdp.h"

#include "util/alloc.h"
#include "util/assert.h"

#include <stdlib.h>

struct tdp_table {
	uint64_t spte[TDP_TABLE_ENTRIES];
	uint64_t seen[TDP_TABLE_ENTRIES / 64];  /* entry stored at least once */
	uint64_t flag[TDP_TABLE_ENTRIES / 64];  /* tdp_flag_set() */
	uint64_t base;          /* gfn of entry 0 */
	int as_id, level;
	int born;               /* allocated in the trace: all known */
};

static unsigned level_shift(int level)
{
	return 9U * (unsigned)(level - 1);
}

static uint64_t table_key(int as_id, int level, uint64_t gfn)
{
	MR_ASSERT_DBG(as_id >= 0 && as_id < TDP_AS_IDS);
	return ((uint64_t)(as_id & (TDP_AS_IDS - 1)) << 60) |
		((uint64_t)(level & 15) << 56) |
		((gfn >> (level_shift(level) + 9)) & ((1ULL << 56) - 1));
}

static size_t entry_index(int level, uint64_t gfn)
{
	return (size_t)(gfn >> level_shift(level)) & (TDP_TABLE_ENTRIES - 1);
}

static uint64_t table_span(int level)
{
	return tdp_level_pages(level) * TDP_TABLE_ENTRIES;
}

void tdp_init(struct tdp *t, const struct spte_format *fmt)
{
	int l;

	t->fmt = fmt;
	t->ignore_reachability = 0;
	u64map_init(&t->tables);
	for (l = 0; l <= TDP_MAX_LEVEL; l++) {
		t->list[l] = NULL;
		t->nlist[l] = t->caplist[l] = 0;
	}
	t->entries = 0;
	t->ntables = 0;
}

void tdp_free(struct tdp *t)
{
	size_t i;
	int l;

	for (l = 0; l <= TDP_MAX_LEVEL; l++) {
		for (i = 0; i < t->nlist[l]; i++)
			free(t->list[l][i]);
		free(t->list[l]);
	}
	u64map_free(&t->tables);
	tdp_init(t, t->fmt);
}

static struct tdp_table *table_find(const struct tdp *t, int as_id,
				    int level, uint64_t gfn)
{
	return (struct tdp_table *)(uintptr_t)
		u64map_get(&t->tables, table_key(as_id, level, gfn));
}

static struct tdp_table *table_create(struct tdp *t, int as_id, int level,
				      uint64_t gfn)
{
	struct tdp_table *tb;

	if (ALLOC_GROW(t->list[level], t->nlist[level] + 1, t->caplist[level]))
		return NULL;
	tb = calloc(1, sizeof(*tb));
	if (!tb)
		return NULL;
	if (u64map_put(&t->tables, table_key(as_id, level, gfn),
		       (uint64_t)(uintptr_t)tb) < 0) {
		free(tb);
		return NULL;
	}
	tb->base = gfn & ~(table_span(level) - 1);
	tb->as_id = as_id;
	tb->level = level;
	t->list[level][t->nlist[level]++] = tb;
	t->ntables++;
	return tb;
}

/* The table holding (as_id, level, gfn), created when missing; NULL
 * when out of memory. */
static struct tdp_table *table_get(struct tdp *t, int as_id, int level,
				   uint64_t gfn)
{
	struct tdp_table *tb;

	MR_ASSERT_DBG(level >= 1 && level <= TDP_MAX_LEVEL);
	tb = table_find(t, as_id, level, gfn);
	return tb ? tb : table_create(t, as_id, level, gfn);
}

/* Bit i of a table's per-entry bitmap. */
static int entry_bit(const uint64_t *bits, size_t i)
{
	return (bits[i / 64] >> (i % 64)) & 1;
}

static int entry_seen(const struct tdp_table *tb, size_t i)
{
	return entry_bit(tb->seen, i);
}

int tdp_set(struct tdp *t, int as_id, int level, uint64_t gfn, uint64_t spte)
{
	struct tdp_table *tb = table_get(t, as_id, level, gfn);
	size_t i;

	if (!tb)
		return -1;
	i = entry_index(level, gfn);
	if (!(tb->seen[i / 64] & (1ULL << (i % 64)))) {
		tb->seen[i / 64] |= 1ULL << (i % 64);
		t->entries++;
		/* Distinct entries: at most a full table each. */
		MR_ASSERT_DBG(t->entries <= t->ntables * TDP_TABLE_ENTRIES);
	}
	tb->spte[i] = spte;
	return 0;
}

void tdp_clear(struct tdp *t, int as_id, int level, uint64_t gfn)
{
	struct tdp_table *tb;

	MR_ASSERT_DBG(level >= 1 && level <= TDP_MAX_LEVEL);
	tb = table_find(t, as_id, level, gfn);
	/* An entry never stored holds 0: its "seen" bit stays clear. */
	if (tb)
		tb->spte[entry_index(level, gfn)] = 0;
}

void tdp_forget(struct tdp *t, int as_id, int level, uint64_t gfn)
{
	struct tdp_table *tb;
	size_t i;

	MR_ASSERT_DBG(level >= 1 && level <= TDP_MAX_LEVEL);
	tb = table_find(t, as_id, level, gfn);
	if (!tb)
		return;
	i = entry_index(level, gfn);
	if (entry_seen(tb, i)) {
		MR_ASSERT_DBG(t->entries > 0);
		tb->seen[i / 64] &= ~(1ULL << (i % 64));
		t->entries--;
	}
	tb->spte[i] = 0;
}

int tdp_mark_born(struct tdp *t, int as_id, int level, uint64_t gfn)
{
	struct tdp_table *tb = table_get(t, as_id, level, gfn);

	if (!tb)
		return -1;
	tb->born = 1;
	return 0;
}

int tdp_known(const struct tdp *t, int as_id, int level, uint64_t gfn)
{
	const struct tdp_table *tb;

	MR_ASSERT_DBG(level >= 1 && level <= TDP_MAX_LEVEL);
	tb = table_find(t, as_id, level, gfn);
	return tb && (tb->born || entry_seen(tb, entry_index(level, gfn)));
}

void tdp_table_known(const struct tdp *t, int as_id, int level,
		     uint64_t gfn, int born,
		     uint64_t known[TDP_TABLE_ENTRIES / 64])
{
	const struct tdp_table *tb = table_find(t, as_id, level, gfn);
	size_t w;

	for (w = 0; w < TDP_TABLE_ENTRIES / 64; w++)
		known[w] = !tb ? 0 : born && tb->born ? ~0ULL : tb->seen[w];
}

int tdp_for_each_unknown(const struct tdp *t, int as_id, int level,
			 uint64_t start, uint64_t end,
			 int (*fn)(void *arg, uint64_t gfn), void *arg)
{
	uint64_t step = (uint64_t)1 << level_shift(level), span, g, next;
	const struct tdp_table *tb;
	int rc;

	MR_ASSERT_DBG(level >= 1 && level <= TDP_MAX_LEVEL);
	span = step * TDP_TABLE_ENTRIES;
	for (g = start & ~(step - 1); g < end; g = next) {
		next = (g & ~(span - 1)) + span;
		tb = table_find(t, as_id, level, g);
		if (tb && tb->born)
			continue;
		for (; g < next && g < end; g += step)
			if ((!tb || !entry_seen(tb, entry_index(level, g))) &&
			    (rc = fn(arg, g)) != 0)
				return rc;
	}
	return 0;
}

int tdp_flag_set(struct tdp *t, int as_id, int level, uint64_t gfn)
{
	struct tdp_table *tb = table_get(t, as_id, level, gfn);
	size_t i;

	if (!tb)
		return -1;
	i = entry_index(level, gfn);
	tb->flag[i / 64] |= 1ULL << (i % 64);
	return 0;
}

int tdp_flag(const struct tdp *t, int as_id, int level, uint64_t gfn)
{
	const struct tdp_table *tb;

	MR_ASSERT_DBG(level >= 1 && level <= TDP_MAX_LEVEL);
	tb = table_find(t, as_id, level, gfn);
	return tb && entry_bit(tb->flag, entry_index(level, gfn));
}

int tdp_stored(const struct tdp *t, int as_id, int level, uint64_t gfn)
{
	const struct tdp_table *tb;

	MR_ASSERT_DBG(level >= 1 && level <= TDP_MAX_LEVEL);
	tb = table_find(t, as_id, level, gfn);
	return tb && entry_seen(tb, entry_index(level, gfn));
}

int tdp_path_known(const struct tdp *t, int as_id, uint64_t gfn)
{
	uint64_t v;
	int level;

	for (level = TDP_MAX_LEVEL; level >= 1; level--) {
		if (!tdp_known(t, as_id, level, gfn))
			continue;
		v = tdp_get(t, as_id, level, gfn);
		if (!spte_present(t->fmt, v) || spte_leaf(t->fmt, v, level))
			return 1;
	}
	return 0;
}

uint64_t tdp_get(const struct tdp *t, int as_id, int level, uint64_t gfn)
{
	const struct tdp_table *tb;

	MR_ASSERT_DBG(level >= 1 && level <= TDP_MAX_LEVEL);
	tb = table_find(t, as_id, level, gfn);
	return tb ? tb->spte[entry_index(level, gfn)] : 0;
}

/*
 * Zapping a parent unlinks the whole table at once, before its children
 * are marked removed (the NX recovery worker does exactly that), so a
 * shown parent that is non-present or a leaf hides what is below.
 */
static int tdp_reachable(const struct tdp *t, int as_id, uint64_t gfn,
			 int level)
{
	const struct tdp_table *tb;
	uint64_t v;
	size_t i;
	int p;

	for (p = level + 1; p <= TDP_MAX_LEVEL; p++) {
		tb = table_find(t, as_id, p, gfn);
		if (!tb)
			continue;
		i = entry_index(p, gfn);
		v = tb->spte[i];
		if (entry_seen(tb, i) && (!spte_present(t->fmt, v) ||
					  spte_leaf(t->fmt, v, p)))
			return 0;
	}
	return 1;
}

int tdp_leaf(const struct tdp *t, int as_id, uint64_t gfn, uint64_t *spte)
{
	uint64_t v;
	int level;

	for (level = 1; level <= TDP_MAX_LEAF_LEVEL; level++) {
		v = tdp_get(t, as_id, level, gfn);
		if (spte_present_leaf(t->fmt, v, level) &&
		    (t->ignore_reachability ||
		     tdp_reachable(t, as_id, gfn, level))) {
			*spte = v;
			return level;
		}
	}
	*spte = 0;
	return 0;
}

/* The present leaves of one table with entries in [lo, hi] (indexes). */
static void table_leaves(const struct tdp *t, const struct tdp_table *tb,
			 size_t lo, size_t hi,
			 void (*fn)(void *, int, uint64_t, uint64_t),
			 void *arg)
{
	size_t w, i;
	uint64_t bits;

	for (w = lo / 64; w <= hi / 64; w++) {
		bits = tb->seen[w];
		while (bits) {
			i = w * 64 + (size_t)__builtin_ctzll(bits);
			bits &= bits - 1;
			if (i < lo || i > hi)
				continue;
			if (spte_present_leaf(t->fmt, tb->spte[i], tb->level))
				fn(arg, tb->level, tb->base +
				   (uint64_t)i * tdp_level_pages(tb->level),
				   tb->spte[i]);
		}
	}
}

/* Clip [start, end) to one table's entries: first and last index. */
static void table_clip(const struct tdp_table *tb, uint64_t start,
		       uint64_t end, size_t *lo, size_t *hi)
{
	uint64_t span = table_span(tb->level);
	uint64_t a = start > tb->base ? start : tb->base;
	uint64_t b = end - tb->base < span ? end : tb->base + span;

	*lo = entry_index(tb->level, a);
	*hi = entry_index(tb->level, b - 1);
}

void tdp_for_each_leaf(const struct tdp *t, int as_id, uint64_t start,
		       uint64_t end,
		       void (*fn)(void *arg, int level, uint64_t gfn,
				  uint64_t spte), void *arg)
{
	const struct tdp_table *tb;
	uint64_t first, g, span;
	size_t i, lo, hi;
	int level;

	MR_ASSERT(start <= end);
	if (start == end)
		return;
	for (level = 1; level <= TDP_MAX_LEAF_LEVEL; level++) {
		span = table_span(level);
		/* Leaves that start before start but cover it count too. */
		first = tdp_align(start, level);
		/*
		 * A probe per table span costs the range; a scan of the
		 * level's tables costs their number.  Pick the cheaper:
		 * notifier ranges are often whole slots, teardown the whole
		 * address space.
		 */
		if ((end - first) / span >= t->nlist[level]) {
			for (i = 0; i < t->nlist[level]; i++) {
				tb = t->list[level][i];
				if (tb->as_id != as_id || tb->base >= end ||
				    tb->base + span <= first)
					continue;
				table_clip(tb, first, end, &lo, &hi);
				table_leaves(t, tb, lo, hi, fn, arg);
			}
			continue;
		}
		for (g = first & ~(span - 1); g < end; g += span) {
			tb = table_find(t, as_id, level, g);
			if (tb) {
				table_clip(tb, first, end, &lo, &hi);
				table_leaves(t, tb, lo, hi, fn, arg);
			}
			if (g > UINT64_MAX - span)
				break;  /* the last span of the gfn space */
		}
	}
}

/* Every table of as_id, with fn(arg, table, level, index in list[]),
 * from the end of each level's list (fn may remove the one it is
 * given). */
static void as_tables(struct tdp *t, int as_id,
		      void (*fn)(struct tdp *t, struct tdp_table *tb,
				 size_t i, void *arg), void *arg)
{
	size_t i;
	int l;

	for (l = 1; l <= TDP_MAX_LEVEL; l++)
		for (i = t->nlist[l]; i-- > 0;)
			if (t->list[l][i]->as_id == as_id)
				fn(t, t->list[l][i], i, arg);
}

static void unkey(struct tdp *t, const struct tdp_table *tb)
{
	struct u64map_slot *s = u64map_find(&t->tables,
					    table_key(tb->as_id, tb->level,
						      tb->base));

	MR_ASSERT(s && s->val == (uint64_t)(uintptr_t)tb);
	s->val = 0;
}

static void table_drop(struct tdp *t, struct tdp_table *tb, size_t i,
		       void *arg)
{
	size_t w;
	int l = tb->level;

	(void)arg;
	unkey(t, tb);
	for (w = 0; w < TDP_TABLE_ENTRIES / 64; w++)
		t->entries -= (size_t)__builtin_popcountll(tb->seen[w]);
	t->list[l][i] = t->list[l][--t->nlist[l]];
	t->ntables--;
	free(tb);
}

void tdp_drop_as(struct tdp *t, int as_id)
{
	as_tables(t, as_id, table_drop, NULL);
}

struct move_arg {
	int to;
	int failed;
};

static void table_move(struct tdp *t, struct tdp_table *tb, size_t i,
		       void *arg)
{
	struct move_arg *m = arg;

	(void)i;
	unkey(t, tb);
	tb->as_id = m->to;
	if (u64map_put(&t->tables, table_key(m->to, tb->level, tb->base),
		       (uint64_t)(uintptr_t)tb) < 0)
		m->failed = 1;
}

int tdp_move_as(struct tdp *t, int from, int to)
{
	struct move_arg m = { .to = to };

	MR_ASSERT(from != to);
	tdp_drop_as(t, to);
	as_tables(t, from, table_move, &m);
	return m.failed ? -1 : 0;
}

static void table_present(struct tdp *t, struct tdp_table *tb, size_t i,
			  void *arg)
{
	size_t k;

	(void)i;
	for (k = 0; k < TDP_TABLE_ENTRIES && !*(int *)arg; k++)
		*(int *)arg = spte_present(t->fmt, tb->spte[k]);
}

int tdp_as_present(const struct tdp *t, int as_id)
{
	int any = 0;

	/* as_tables() changes nothing unless its fn does. */
	as_tables((struct tdp *)(uintptr_t)t, as_id, table_present, &any);
	return any;
}
