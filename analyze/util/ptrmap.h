/*
 * A map from a pointer (or any 64-bit key, a thread id) to a pointer:
 * the u64 map with pointer values, for descriptors that babeltrace2
 * objects or thread ids lead to.  A NULL value reads as absent.
 */
#ifndef MMUREPLAY_UTIL_PTRMAP_H
#define MMUREPLAY_UTIL_PTRMAP_H

#include "util/u64map.h"

#include <stdint.h>

struct ptrmap {
	struct u64map m;
};

static inline void ptrmap_init(struct ptrmap *p)
{
	u64map_init(&p->m);
}

static inline void ptrmap_free(struct ptrmap *p)
{
	u64map_free(&p->m);
}

/* The value stored under key, or NULL. */
static inline void *ptrmap_get(const struct ptrmap *p, uint64_t key)
{
	return (void *)(uintptr_t)u64map_get(&p->m, key);
}

/* Store val under key (replacing).  Returns -1 when out of memory. */
static inline int ptrmap_put(struct ptrmap *p, uint64_t key, void *val)
{
	return u64map_put(&p->m, key, (uint64_t)(uintptr_t)val);
}

/* Call fn on every value (u64map_each()'s order). */
void ptrmap_each(const struct ptrmap *p, void (*fn)(void *arg, void *val),
		 void *arg);
/* free(3) every value, then the map. */
void ptrmap_free_values(struct ptrmap *p);

#endif
