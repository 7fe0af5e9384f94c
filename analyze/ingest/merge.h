/*
 * The time merge of ingest's babeltrace2 graph: a sink component with one
 * input port per stream port of the CTF sources, which merges them by
 * time and hands each message to the ingest sink (ingest/sink.h).
 *
 * It stands where utils.muxer and a simple sink stood, and keeps the
 * muxer's order of babeltrace2 2.0 exactly: the message with the
 * smallest time first; a message without a time (no clock snapshot, no
 * clock class) takes the last returned time; ties are broken by trace
 * UUID, trace name, stream class id, stream id, then message type
 * (stream beginning < packet beginning < event < discarded events <
 * packet end < inactivity < discarded packets < stream end), then port
 * order.  The muxer goes on to compare the two messages' contents when
 * all of those are equal; here that cannot happen, because each port
 * carries one stream and the sources' trace names are distinct paths
 * (ingest/tracedirs.h).  A time going backwards, or a stream with no
 * clock class beside one with a clock class, fails the run as it fails
 * the muxer.  Every message merged before an upstream error reaches the
 * sink before the error (the muxer's rule too), so a broken trace keeps
 * the same events.
 *
 * Why not the muxer: a third of the decoding thread's time was the
 * muxer's per-message queues and lookups; this merge keeps each port's
 * message batch and takes the next ones from the same port while they
 * stay ahead of every other port's head.
 */
#ifndef MMUREPLAY_INGEST_MERGE_H
#define MMUREPLAY_INGEST_MERGE_H

#include "ingest/sink.h"

#include <babeltrace2/babeltrace.h>
#include <stdint.h>

enum merge_status {
	MERGE_OK = 0,
	MERGE_ERR,              /* babeltrace2 error left on the thread */
};

/* Add the merging sink, named name, with nports input ports, feeding s;
 * *out: the component, to connect its ports. */
enum merge_status merge_sink_add(bt_graph *graph, const char *name,
				 struct ingest_sink *s, uint64_t nports,
				 const bt_component_sink **out);

#endif
