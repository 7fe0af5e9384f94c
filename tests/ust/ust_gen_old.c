/*
 * ust_gen_old: N events of the old, SYNTHETIC latency_sample layout
 * (ust/old_tp.h): probe = i, usec = 10 * i.
 */
#define LTTNG_UST_TRACEPOINT_CREATE_PROBES
#define LTTNG_UST_TRACEPOINT_DEFINE
#include "old_tp.h"

#include <stdlib.h>

int main(int argc, char **argv)
{
	unsigned int i, n = argc > 1 ? (unsigned int)atoi(argv[1]) : 5;

	for (i = 0; i < n; i++)
		lttng_ust_tracepoint(mmureplay, latency_sample, i, 10 * i);
	return 0;
}
