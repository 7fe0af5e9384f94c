/*
 * A map from a pointer (or any non-zero 64-bit key) to a pointer, open
 * addressing with linear probing.  Used where babeltrace2 hands us the
 * same object (event class, stream, packet) for millions of events and a
 * lookup must cost a few instructions.  Keys are never removed; the table
 * doubles when it is half full, so a probe sequence always ends.
 */
#ifndef MMUREPLAY_UTIL_PTRMAP_H
#define MMUREPLAY_UTIL_PTRMAP_H

#include <stddef.h>
#include <stdint.h>

struct ptrmap_slot {
	uint64_t key;   /* 0 = empty */
	void *val;
};

struct ptrmap {
	struct ptrmap_slot *slots;
	size_t cap;     /* power of two */
	size_t len;
};

void ptrmap_init(struct ptrmap *m);
void ptrmap_free(struct ptrmap *m);
/* The value stored under key, or NULL. */
void *ptrmap_get(const struct ptrmap *m, uint64_t key);
/* Store val under key (replacing).  Returns -1 when out of memory. */
int ptrmap_put(struct ptrmap *m, uint64_t key, void *val);

#endif
