/*
 * An OLDER layout of mmureplay:latency_sample (a "usec" field instead of
 * "ns"), for the test that an unknown event version is counted, reported,
 * and not mapped.  SYNTHETIC: no shipped provider ever had this layout.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER mmureplay

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "old_tp.h"

#if !defined(OLD_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define OLD_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

LTTNG_UST_TRACEPOINT_EVENT(mmureplay, latency_sample,
	LTTNG_UST_TP_ARGS(uint32_t, probe, uint32_t, usec),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint32_t, probe, probe)
		lttng_ust_field_integer(uint32_t, usec, usec)
	)
)

#endif

#include <lttng/tracepoint-event.h>
