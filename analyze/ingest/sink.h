/*
 * The babeltrace2 sink of ingest: consumes the muxed message stream and
 * turns it into canonical rows (handed to the writer thread) plus the
 * small per-capture tables (traces, streams, raw event counts, lost
 * events) that are kept in memory and written at the end.
 *
 * Memory: one descriptor per event class, stream, trace, thread and
 * distinct raw name; nothing per event.
 */
#ifndef MMUREPLAY_INGEST_SINK_H
#define MMUREPLAY_INGEST_SINK_H

#include "ingest/catalog.h"
#include "ingest/writer.h"

#include <babeltrace2/babeltrace.h>
#include <sqlite3.h>
#include <stdint.h>

struct ingest_sink;

enum sink_status {
	SINK_OK = 0,
	SINK_ERR_NOMEM,
	SINK_ERR_SQL,
};

struct ingest_sink *sink_create(const struct catalog *cat, struct writer *w);
void sink_destroy(struct ingest_sink *s);

/* bt_graph_add_simple_sink_component() callbacks; user_data is the sink. */
bt_graph_simple_sink_component_initialize_func_status
sink_bt_initialize(bt_message_iterator *it, void *user_data);
bt_graph_simple_sink_component_consume_func_status
sink_bt_consume(bt_message_iterator *it, void *user_data);
void sink_bt_finalize(void *user_data);

/* Hand the last partial chunk to the writer (call before writer_finish). */
void sink_flush(struct ingest_sink *s);

/* Events seen so far (mapped or not). */
uint64_t sink_event_count(const struct ingest_sink *s);
/* Discarded events reported by the tracer so far. */
uint64_t sink_lost_count(const struct ingest_sink *s);

/* Write traces, streams, threads' done, raw event counts, lost events and
 * the time base into db (the writer must have finished). */
enum sink_status sink_store_tables(struct ingest_sink *s, sqlite3 *db);

#endif
