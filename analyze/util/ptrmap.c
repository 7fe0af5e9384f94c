/*
 * Iteration helpers of the pointer map (see ptrmap.h).
 */
#include "util/ptrmap.h"

#include <stdlib.h>

void ptrmap_each(const struct ptrmap *p, void (*fn)(void *arg, void *val),
		 void *arg)
{
	size_t i;

	for (i = 0; i < p->m.cap; i++)
		if (p->m.slots[i].key)
			fn(arg, (void *)(uintptr_t)p->m.slots[i].val);
}

static void free_one(void *arg, void *val)
{
	(void)arg;
	free(val);
}

void ptrmap_free_values(struct ptrmap *p)
{
	ptrmap_each(p, free_one, NULL);
	ptrmap_free(p);
}
