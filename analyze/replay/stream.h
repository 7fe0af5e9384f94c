/*
 * The replay stream: the capture's canonical events, in seq order,
 * packed for the replay.
 *
 * The canonical tables are what a user queries; reading them row by row
 * costs the replay about 0.9 us an event (SQLite column decoding and a
 * 15-way merge), several times the model's own cost, and the replay reads
 * the capture twice per policy.  So the first `mmureplay replay` of a DB
 * derives this copy (table replay_stream, in the same file): chunks of
 * about 64 KiB, each a run of events encoded as deltas and varints
 * (stream.c has the format).  Reading it is a blob per chunk and a few
 * byte loops per event.
 *
 * Invariants: the stream holds exactly the events of the canonical tables
 * (the source over the tables and the source over the stream return
 * identical model events: tests/stream_check.c, run by
 * tests/test_replay_fixture.py); it is written in one
 * transaction, so it is there whole or not at all; it is current only
 * while meta 'replay_stream_format' is this build's format and meta
 * 'replay_stream_of' equals the capture's meta 'events'.  A capture DB is
 * written once, by ingest, but a user may edit its tables: triggers the
 * writer installs on every table the stream was made from drop the
 * format key on any change.  A stale or foreign stream is ignored, never
 * read.
 */
#ifndef MMUREPLAY_REPLAY_STREAM_H
#define MMUREPLAY_REPLAY_STREAM_H

#include "model/event.h"

#include <sqlite3.h>
#include <stdint.h>

enum stream_status {
	STREAM_OK = 0,
	STREAM_END,         /* no more events */
	STREAM_ABSENT,      /* no current stream in the DB */
	STREAM_ERR,         /* SQL error or a corrupt chunk (logged) */
};

/* Is a current stream in the DB? */
int stream_current(sqlite3 *db);

/*
 * Writing a stream (source.c derives it from the canonical tables): begin
 * opens a transaction and drops any old stream, add appends one event (in
 * seq order), commit writes the meta keys and commits; abort rolls back.
 */
struct stream_writer;

enum stream_status stream_writer_begin(sqlite3 *db,
				       struct stream_writer **out);
/*
 * The stream goes stale when any of these tables (space-separated names)
 * changes: triggers on them drop meta 'replay_stream_format'.
 */
enum stream_status stream_writer_guard(struct stream_writer *w,
				       const char *tables);
enum stream_status stream_writer_add(struct stream_writer *w,
				     const struct model_event *ev);
enum stream_status stream_writer_commit(struct stream_writer *w);
void stream_writer_abort(struct stream_writer *w);

struct stream_reader;

/* STREAM_ABSENT when no current stream is there. */
enum stream_status stream_reader_open(sqlite3 *db,
				      struct stream_reader **out);
enum stream_status stream_reader_next(struct stream_reader *r,
				      struct model_event *ev);
enum stream_status stream_reader_rewind(struct stream_reader *r);
void stream_reader_close(struct stream_reader *r);

/* Bytes of the stream (for benchmarks); 0 when absent. */
int64_t stream_bytes(sqlite3 *db);

#endif
