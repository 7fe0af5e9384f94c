/*
 * LTTng-UST provider "mmureplay": what user space adds to a capture.
 *
 *   mmureplay:stats_sample    one KVM statistic of one VM at one instant
 *                             (KVM_GET_STATS_FD or debugfs), e.g.
 *                             pf_taken, remote_tlb_flush, pages_4k
 *   mmureplay:latency_sample  one guest access timed by a latency probe
 *                             (the paced one-byte-per-page read of the
 *                             perm-upgrade mail): probe id, ns, gfn
 *
 * Field names are matched by schemas/events.json; change both together.
 */
#undef LTTNG_UST_TRACEPOINT_PROVIDER
#define LTTNG_UST_TRACEPOINT_PROVIDER mmureplay

#undef LTTNG_UST_TRACEPOINT_INCLUDE
#define LTTNG_UST_TRACEPOINT_INCLUDE "mmureplay_tp.h"

#if !defined(MMUREPLAY_TP_H) || defined(LTTNG_UST_TRACEPOINT_HEADER_MULTI_READ)
#define MMUREPLAY_TP_H

#include <lttng/tracepoint.h>
#include <stdint.h>

LTTNG_UST_TRACEPOINT_EVENT(mmureplay, stats_sample,
	LTTNG_UST_TP_ARGS(uint32_t, vm, const char *, stat, uint64_t, value),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint32_t, vm, vm)
		lttng_ust_field_string(stat, stat)
		lttng_ust_field_integer(uint64_t, value, value)
	)
)

LTTNG_UST_TRACEPOINT_EVENT(mmureplay, latency_sample,
	LTTNG_UST_TP_ARGS(uint32_t, probe, uint64_t, ns, uint64_t, gfn),
	LTTNG_UST_TP_FIELDS(
		lttng_ust_field_integer(uint32_t, probe, probe)
		lttng_ust_field_integer(uint64_t, ns, ns)
		lttng_ust_field_integer_hex(uint64_t, gfn, gfn)
	)
)

#endif /* MMUREPLAY_TP_H */

#include <lttng/tracepoint-event.h>
