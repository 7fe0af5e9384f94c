/*
 * Number formatting and latency row naming shared by the emitters (see
 * report.h).
 */
#include "report/report.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

char *report_fmt_count(char *buf, size_t len, int64_t n)
{
	char digits[32];
	size_t nd, i, o = 0;
	int neg = n < 0;

	snprintf(digits, sizeof(digits), "%" PRIu64,
		 neg ? (uint64_t)0 - (uint64_t)n : (uint64_t)n);
	nd = strlen(digits);
	if (neg && o + 1 < len)
		buf[o++] = '-';
	for (i = 0; i < nd && o + 1 < len; i++) {
		if (i && (nd - i) % 3 == 0 && o + 2 < len)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
	return buf;
}

void report_latency_each(const struct latency *l,
			 void (*row)(void *arg, const char *name,
				     const struct latency_dist *d),
			 void *arg)
{
	char name[40];
	int i;

	for (i = 0; i < l->nprobes; i++) {
		snprintf(name, sizeof(name), "probe %lld",
			 (long long)l->probe_id[i]);
		row(arg, name, &l->probe[i]);
	}
	if (l->npf.n)
		row(arg, "NPF exit -> entry", &l->npf);
}

/* v with thousands separators and the row's decimals, or "-". */
char *report_fmt_num(char *buf, size_t len, double v, int decimals)
{
	char whole[32];
	long long scale, units;

	if (isnan(v)) {
		snprintf(buf, len, "-");
		return buf;
	}
	if (decimals == 0 || fabs(v) >= 1e5) {
		report_fmt_count(buf, len, (int64_t)llround(v));
		return buf;
	}
	/* Rounded once, as a whole count of the last decimal: a fraction
	 * that rounds up carries into the whole part (0.96 -> "1.0"). */
	scale = (long long)pow(10, decimals);
	units = llround(fabs(v) * (double)scale);
	report_fmt_count(whole, sizeof(whole), (int64_t)(units / scale));
	snprintf(buf, len, "%s%s.%0*lld", v < 0 ? "-" : "", whole, decimals,
		 units % scale);
	return buf;
}

