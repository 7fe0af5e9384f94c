/*
 * A map from a 64-bit key (any value, 0 included) to a 64-bit value:
 * open addressing, linear probing, doubling at half load, no removal.
 * It carries the hot lookups of ingest (event class, stream, packet ->
 * descriptor) and of the replay (SPTE tables, threads by tid), so a
 * lookup is a hash and a probe or two.
 *
 * A slot holds its key + 1, so that 0 marks an empty slot without
 * taking a key from the caller; the one key whose + 1 wraps to 0
 * (UINT64_MAX) lives in a slot of its own.  Callers pass keys as they
 * are and never see the stored form.
 *
 * Invariants: len * 2 <= cap, so every probe sequence meets an empty
 * slot; a key once put stays.
 */
#ifndef MMUREPLAY_UTIL_U64MAP_H
#define MMUREPLAY_UTIL_U64MAP_H

#include <stddef.h>
#include <stdint.h>

struct u64map_slot {
	uint64_t stored_key;    /* key + 1; 0 = empty */
	uint64_t val;
};

struct u64map {
	struct u64map_slot *slots;
	size_t cap;     /* power of two, or 0 */
	size_t len;     /* keys in slots[] */
	struct u64map_slot max_slot;    /* key UINT64_MAX, when present */
};

void u64map_init(struct u64map *m);
void u64map_free(struct u64map *m);
/* The slot holding key, or NULL; only its val is the caller's. */
struct u64map_slot *u64map_find(const struct u64map *m, uint64_t key);
/* The value under key, or 0 when absent. */
uint64_t u64map_get(const struct u64map *m, uint64_t key);
/* Store val under key (replacing); -1 when out of memory. */
int u64map_put(struct u64map *m, uint64_t key, uint64_t val);
/* Call fn on every value, the order not specified (but fixed by the
 * keys and the order they were put). */
void u64map_each(const struct u64map *m, void (*fn)(void *arg, uint64_t val),
		 void *arg);

#endif
