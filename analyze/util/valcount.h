/*
 * A distribution of integer samples counted per distinct value: memory
 * grows with the distinct values (bounded by the range of the samples,
 * latencies in ns here), never with the number of samples, and nothing
 * is sorted but the distinct values.  Percentiles are nearest-rank (the
 * value at rank ceil(p * n) of the sorted samples), exact.
 *
 * Invariants: n is the sum of the counts in count; vals[0 .. nvals)
 * holds each distinct value once (sorted after valcount_sort(), until
 * the next add).
 */
#ifndef MMUREPLAY_UTIL_VALCOUNT_H
#define MMUREPLAY_UTIL_VALCOUNT_H

#include "util/u64map.h"

#include <stddef.h>
#include <stdint.h>

/* The percentiles mmureplay reports, those the reference mails quote:
 * p50, p99, p99.9 (the summary's distributions and the replay's). */
#define VALCOUNT_PCTS 3
extern const double valcount_pct[VALCOUNT_PCTS];

struct valcount {
	struct u64map count;    /* value -> samples of that value */
	int64_t *vals;          /* the distinct values */
	size_t nvals, cap;
	int64_t n;
};

void valcount_init(struct valcount *vc);
void valcount_free(struct valcount *vc);
/* Adds k samples of value v.  Returns 0, or -1 when out of memory. */
int valcount_add_n(struct valcount *vc, int64_t v, int64_t k);
/* Adds one sample of value v.  Returns 0, or -1 when out of memory. */
int valcount_add(struct valcount *vc, int64_t v);
/* Adds every sample of src to dst.  Returns 0, or -1 when out of
 * memory (dst then holds part of src). */
int valcount_merge(struct valcount *dst, const struct valcount *src);
/* Sorts vals[] so that a walk meets the values in increasing order. */
void valcount_sort(struct valcount *vc);
/* Returns the samples of value v (0 when none). */
int64_t valcount_of(const struct valcount *vc, int64_t v);
/* Returns the 1-based rank of percentile p (0 < p <= 1) among n
 * samples, nearest-rank. */
int64_t valcount_rank(double p, int64_t n);
/*
 * Fills out[i] with the nearest-rank value of percentile p[i] (p[]
 * increasing) and *max with the largest sample; all 0 when there is no
 * sample.  Sorts vc.
 */
void valcount_quantiles(struct valcount *vc, const double *p, int np,
			int64_t *out, int64_t *max);
/* Returns the samples of value at least v. */
int64_t valcount_at_least(const struct valcount *vc, int64_t v);

#endif
