/*
 * A map from a non-zero 64-bit key to a 64-bit value: open addressing,
 * linear probing, doubling at half load, no removal.  It carries the hot
 * lookups of ingest (event class, stream, packet -> descriptor) and of
 * the replay (SPTE by (as_id, level, gfn)), so a lookup is a hash and a
 * probe or two.
 *
 * Invariants: len * 2 <= cap, so every probe sequence meets an empty
 * slot; key 0 marks an empty slot; a key once put stays.
 */
#ifndef MMUREPLAY_UTIL_U64MAP_H
#define MMUREPLAY_UTIL_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map_slot {
	uint64_t key;   /* 0 = empty */
	uint64_t val;
};

struct u64map {
	struct u64map_slot *slots;
	size_t cap;     /* power of two, or 0 */
	size_t len;
};

void u64map_init(struct u64map *m);
void u64map_free(struct u64map *m);
/* The slot holding key, or NULL. */
struct u64map_slot *u64map_find(const struct u64map *m, uint64_t key);
/* The value under key, or 0 when absent. */
uint64_t u64map_get(const struct u64map *m, uint64_t key);
/* Store val under key (replacing); -1 when out of memory. */
int u64map_put(struct u64map *m, uint64_t key, uint64_t val);

#endif
