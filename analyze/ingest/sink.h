/*
 * The babeltrace2 sink of ingest: consumes the time-ordered message stream
 * of the CTF traces (from ingest/merge.h, or utils.muxer) and turns it
 * into capture tables (ingest/tables.h): canonical rows for the writer
 * thread, traces, streams, raw event counts and the events the tracer
 * discarded.
 *
 * Memory: one descriptor per event class, stream and trace; nothing per
 * event.
 */
#ifndef MMUREPLAY_INGEST_SINK_H
#define MMUREPLAY_INGEST_SINK_H

#include "ingest/tables.h"

#include <babeltrace2/babeltrace.h>
#include <stdint.h>

struct ingest_sink;

struct ingest_sink *sink_create(struct ingest_tables *t);
void sink_destroy(struct ingest_sink *s);
/* perf samples dropped as exact repeats of the one before them. */
uint64_t sink_duplicates(const struct ingest_sink *s);
/* The event classes the traces' metadata declare, comma-separated
 * (malloc'd; NULL when none or out of memory). */
char *sink_declared(const struct ingest_sink *s);

/* One message of the time-ordered stream (the caller keeps its
 * reference); -1 once the sink has failed (out of memory). */
int sink_message(struct ingest_sink *s, const bt_message *msg);
/* After count messages: the writer's state, the watchdog, progress;
 * -1 once the sink or the writer has failed (stop the graph). */
int sink_batch_end(struct ingest_sink *s, uint64_t count);

/* bt_graph_add_simple_sink_component() callbacks; user_data is the sink. */
bt_graph_simple_sink_component_initialize_func_status
sink_bt_initialize(bt_message_iterator *it, void *user_data);
bt_graph_simple_sink_component_consume_func_status
sink_bt_consume(bt_message_iterator *it, void *user_data);
void sink_bt_finalize(void *user_data);

#endif
