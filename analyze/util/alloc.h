/*
 * Growing arrays: the one way an array grows in mmureplay.
 *
 *   ALLOC_GROW(arr, need, cap)  make arr (cap elements) hold at least
 *                               need elements; 0, or -1 when out of
 *                               memory or need * size overflows (arr
 *                               and cap then unchanged).
 *
 * Capacity doubles (from 16) until it covers need, so n appends cost
 * O(n) copies; the new room is zeroed, so an element past the count
 * reads as 0 (callers that index by time or id rely on it).
 * cap is a size_t; the caller keeps its own count.  The macro assigns
 * arr itself (no void ** cast of a typed pointer) and evaluates its
 * arguments more than once.
 */
#ifndef MMUREPLAY_UTIL_ALLOC_H
#define MMUREPLAY_UTIL_ALLOC_H

#include <stddef.h>

/* The grown array (*cap updated), or NULL with arr and *cap unchanged. */
void *alloc_grow(void *arr, size_t *cap, size_t need, size_t elem);

#define ALLOC_GROW(arr, need, cap) __extension__ ({ \
	int alloc_rc_ = 0; \
	if ((size_t)(need) > (cap)) { \
		void *alloc_g_ = alloc_grow((arr), &(cap), (need), \
					    sizeof(*(arr))); \
		if (alloc_g_) \
			(arr) = alloc_g_; \
		else \
			alloc_rc_ = -1; \
	} \
	alloc_rc_; \
})

#endif
