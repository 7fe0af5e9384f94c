/*
 * Distributions counted per distinct value (see valcount.h).
 */
#include "util/valcount.h"

#include "util/alloc.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

const double valcount_pct[VALCOUNT_PCTS] = { 0.5, 0.99, 0.999 };

void valcount_init(struct valcount *vc)
{
	memset(vc, 0, sizeof(*vc));
	u64map_init(&vc->count);
}

void valcount_free(struct valcount *vc)
{
	u64map_free(&vc->count);
	free(vc->vals);
	memset(vc, 0, sizeof(*vc));
}

int valcount_add_n(struct valcount *vc, int64_t v, int64_t k)
{
	struct u64map_slot *slot;

	if (k <= 0)
		return 0;
	slot = u64map_find(&vc->count, (uint64_t)v);
	if (slot) {
		slot->val += (uint64_t)k;
		vc->n += k;
		return 0;
	}
	if (ALLOC_GROW(vc->vals, vc->nvals + 1, vc->cap) < 0 ||
	    u64map_put(&vc->count, (uint64_t)v, (uint64_t)k) < 0)
		return -1;
	vc->vals[vc->nvals++] = v;
	vc->n += k;
	return 0;
}

int valcount_add(struct valcount *vc, int64_t v)
{
	return valcount_add_n(vc, v, 1);
}

int valcount_merge(struct valcount *dst, const struct valcount *src)
{
	size_t i;

	for (i = 0; i < src->nvals; i++)
		if (valcount_add_n(dst, src->vals[i],
				   valcount_of(src, src->vals[i])) < 0)
			return -1;
	return 0;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

void valcount_sort(struct valcount *vc)
{
	/* qsort() of no array is undefined: nothing to sort below two. */
	if (vc->nvals > 1)
		qsort(vc->vals, vc->nvals, sizeof(*vc->vals), cmp_i64);
}

int64_t valcount_of(const struct valcount *vc, int64_t v)
{
	return (int64_t)u64map_get(&vc->count, (uint64_t)v);
}

int64_t valcount_rank(double p, int64_t n)
{
	int64_t r = (int64_t)ceil(p * (double)n - 1e-9);

	return r < 1 ? 1 : r;
}

void valcount_quantiles(struct valcount *vc, const double *p, int np,
			int64_t *out, int64_t *max)
{
	int64_t rank = 0, v = 0;
	size_t i;
	int k = 0;

	memset(out, 0, (size_t)np * sizeof(*out));
	valcount_sort(vc);
	for (i = 0; i < vc->nvals; i++) {
		v = vc->vals[i];
		rank += valcount_of(vc, v);
		while (k < np && valcount_rank(p[k], vc->n) <= rank)
			out[k++] = v;
	}
	*max = v;
}

int64_t valcount_at_least(const struct valcount *vc, int64_t v)
{
	int64_t n = 0;
	size_t i;

	for (i = 0; i < vc->nvals; i++)
		if (vc->vals[i] >= v)
			n += valcount_of(vc, vc->vals[i]);
	return n;
}
