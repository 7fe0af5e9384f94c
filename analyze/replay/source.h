/*
 * Reading a capture DB as one time-ordered stream of model events.
 *
 * Each canonical table is read in seq (rowid) order by its own statement
 * and the streams are merged on seq, so nothing is sorted and memory does
 * not depend on the capture size.  The stream can be rewound for a second
 * pass (the replay's inference pre-pass).
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

struct source *source_open(sqlite3 *db);
/* The next event in seq order. */
enum source_status source_next(struct source *s, struct model_event *ev);
/* Start again from the first event. */
enum source_status source_rewind(struct source *s);
void source_close(struct source *s);

/* A source over an array (unit tests, synthetic sequences). */
struct source *source_from_array(const struct model_event *evs, size_t n);

#endif
