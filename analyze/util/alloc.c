/*
 * Array growth (see alloc.h).
 */
#include "util/alloc.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void *alloc_grow(void *arr, size_t *cap, size_t need, size_t elem)
{
	size_t ncap;
	char *g;

	if (need <= *cap)
		return arr;
	ncap = *cap ? *cap : 16;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return NULL;
		ncap *= 2;
	}
	if (elem && ncap > SIZE_MAX / elem)
		return NULL;
	g = realloc(arr, ncap * elem);
	if (!g)
		return NULL;
	memset(g + *cap * elem, 0, (ncap - *cap) * elem);
	*cap = ncap;
	return g;
}
