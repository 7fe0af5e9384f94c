/*
 * Interned strings: each distinct string is stored once and its address
 * is stable until strpool_free(), so rows can carry a pointer to it across
 * threads.  Memory grows with the number of distinct strings (event
 * names, process names, stat names), never with the number of events.
 */
#ifndef MMUREPLAY_UTIL_STRPOOL_H
#define MMUREPLAY_UTIL_STRPOOL_H

#include "util/ptrmap.h"

struct strpool {
	struct ptrmap by_hash;  /* hash -> struct strpool_node list */
};

void strpool_init(struct strpool *p);
void strpool_free(struct strpool *p);
/* The pool's copy of s, or NULL when out of memory. */
const char *strpool_intern(struct strpool *p, const char *s);

#endif
