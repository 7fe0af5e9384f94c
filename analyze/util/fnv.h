/*
 * FNV-1a, 64 bits: a quick digest of bytes, for names and duplicate
 * checks, never a defence (anyone can make two inputs collide).
 */
#ifndef MMUREPLAY_UTIL_FNV_H
#define MMUREPLAY_UTIL_FNV_H

#include <stddef.h>
#include <stdint.h>

#define FNV_BASIS 0xcbf29ce484222325ULL

/* Returns h, the digest so far (FNV_BASIS to begin), with n more bytes. */
static inline uint64_t fnv_add(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ULL;
	return h;
}

#endif
