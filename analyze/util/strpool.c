/*
 * String interning over ptrmap (see strpool.h).  Hash collisions are
 * chained, so equal hashes of different strings stay distinct.
 */
#include "util/strpool.h"

#include <stdlib.h>
#include <string.h>

struct strpool_node {
	struct strpool_node *next;
	char s[];
};

static uint64_t hash_str(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (*s) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ULL;
	}
	return h | 1;   /* ptrmap reserves key 0 */
}

void strpool_init(struct strpool *p)
{
	ptrmap_init(&p->by_hash);
}

static void chain_free(void *arg, void *head)
{
	struct strpool_node *n, *next;

	(void)arg;
	for (n = head; n; n = next) {
		next = n->next;
		free(n);
	}
}

void strpool_free(struct strpool *p)
{
	ptrmap_each(&p->by_hash, chain_free, NULL);
	ptrmap_free(&p->by_hash);
}

const char *strpool_intern(struct strpool *p, const char *s)
{
	uint64_t h = hash_str(s);
	struct strpool_node *head = ptrmap_get(&p->by_hash, h), *n;
	size_t len;

	for (n = head; n; n = n->next)
		if (strcmp(n->s, s) == 0)
			return n->s;
	len = strlen(s);
	n = malloc(sizeof(*n) + len + 1);
	if (!n)
		return NULL;
	memcpy(n->s, s, len + 1);
	n->next = head;
	if (ptrmap_put(&p->by_hash, h, n) < 0) {
		free(n);
		return NULL;
	}
	return n->s;
}
