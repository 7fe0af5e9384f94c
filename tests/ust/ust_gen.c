/*
 * ust_gen: emits a known, SYNTHETIC sequence of mmureplay UST events, for
 * the ingest tests (exact counts and values) and the ingest benchmark
 * (millions of events).  Nothing here comes from KVM: the values are a
 * function of the index so a test can recompute every one of them.
 *
 *   latency_sample i: probe = i % 4, ns = 1000 + (i * 7919) % 100000,
 *                     gfn = 0x8000000000000000 | i  (exercises bit 63)
 *   stats_sample j:   vm = 1, stat = "pf_taken" (j even) or
 *                     "remote_tlb_flush" (j odd), value = j * 3
 */
#include "mmureplay_tp.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	uint64_t i, nlat, nstats;

	if (argc != 3 || strcmp(argv[1], "--help") == 0) {
		fprintf(stderr, "usage: ust_gen N_LATENCY N_STATS\n"
			"Emit synthetic mmureplay:latency_sample and "
			"mmureplay:stats_sample events.\n");
		return argc == 2 ? 0 : 1;
	}
	nlat = strtoull(argv[1], NULL, 10);
	nstats = strtoull(argv[2], NULL, 10);
	for (i = 0; i < nlat; i++)
		lttng_ust_tracepoint(mmureplay, latency_sample,
				     (uint32_t)(i % 4),
				     1000 + (i * 7919) % 100000,
				     0x8000000000000000ULL | i);
	for (i = 0; i < nstats; i++)
		lttng_ust_tracepoint(mmureplay, stats_sample, 1,
				     i % 2 ? "remote_tlb_flush" : "pf_taken",
				     i * 3);
	return 0;
}
