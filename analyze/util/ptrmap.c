/*
 * Iteration helpers of the pointer map (see ptrmap.h).
 */
#include "util/ptrmap.h"

#include <stdlib.h>

struct each_call {
	void (*fn)(void *arg, void *val);
	void *arg;
};

static void each_one(void *arg, uint64_t val)
{
	const struct each_call *c = arg;

	c->fn(c->arg, (void *)(uintptr_t)val);
}

void ptrmap_each(const struct ptrmap *p, void (*fn)(void *arg, void *val),
		 void *arg)
{
	struct each_call c = { fn, arg };

	u64map_each(&p->m, each_one, &c);
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
