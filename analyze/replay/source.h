/*
 * Reading a capture DB as one time-ordered stream of model events.
 *
 * Two ways to the same events: the replay stream (stream.h), when the DB
 * has a current one, or the canonical tables, each read in seq (rowid)
 * order by its own statement and merged on seq.  Either way nothing is
 * sorted and memory does not depend on the capture size.  A source can be
 * rewound for a second pass (the replay's inference pre-pass).
 */
#ifndef MMUREPLAY_REPLAY_SOURCE_H
#define MMUREPLAY_REPLAY_SOURCE_H

#include "model/event.h"

#include <sqlite3.h>
#include <stddef.h>

struct source;

enum source_status {
	SOURCE_OK = 0,
	SOURCE_END,
	SOURCE_ERR,
};

/* The replay stream when current, else the canonical tables. */
struct source *source_open(sqlite3 *db);
/*
 * The replay stream when current; else the tables read once into a
 * stream in a temporary file (SQLite's, deleted at close) and that read
 * in every pass: a replay makes two passes or more, and a pass over the
 * tables costs several over the stream.  For a DB opened read-only
 * (fidelity, compare, report), which cannot keep the stream.  When the
 * temporary file cannot be made, a warning and the tables.  NULL after a
 * corrupt event (logged).
 */
struct source *source_open_spooled(sqlite3 *db);
/* Always the canonical tables (deriving the stream, tests). */
struct source *source_open_tables(sqlite3 *db);
/* Is the source reading the replay stream? */
int source_is_stream(const struct source *s);

/*
 * Derive the replay stream from the canonical tables unless the DB has a
 * current one (one transaction; the DB open read-write).  0 or -1
 * (logged).
 */
int source_stream_ensure(sqlite3 *db);
/*
 * Show the pass's progress on a terminal (log_progress_of: events
 * returned of the source's count, rate, ETA) under what, until
 * source_next() says the source is done.
 */
void source_progress(struct source *s, const char *what);
/* The next event in seq order. */
enum source_status source_next(struct source *s, struct model_event *ev);
/* Start again from the first event. */
enum source_status source_rewind(struct source *s);
void source_close(struct source *s);

/* A source over an array (unit tests, synthetic sequences). */
struct source *source_from_array(const struct model_event *evs, size_t n);

#endif
