/*
 * Reading a capture DB as one time-ordered stream of model events.
 *
 * Two ways to the same events: the replay stream (stream.h), when the DB
 * has a current one, or the canonical tables, each read in seq (rowid)
 * order by its own statement (made from the kind's field list,
 * model/event_fields.h) and merged on seq.  Either way nothing is sorted
 * and memory does not depend on the capture size.  A source can be
 * rewound for a second pass (the replay's inference pre-pass).  A source
 * over a DB borrows it: the DB must stay open until source_close().
 */
#ifndef MMUREPLAY_REPLAY_SOURCE_H
#define MMUREPLAY_REPLAY_SOURCE_H

#include "model/event.h"

#include <sqlite3.h>
#include <stddef.h>

struct source;

enum source_status {
	SOURCE_OK = 0,
	SOURCE_END,             /* no more events */
	SOURCE_ERR,             /* a read error or a corrupt event (logged) */
};

/*
 * Open a source over the replay stream when the DB has a current one,
 * else over the canonical tables.  Returns the source; NULL on error
 * (a failed SQL statement, logged) or when out of memory.
 */
struct source *source_open(sqlite3 *db);
/*
 * Open a source for a DB opened read-only (fidelity, compare, report),
 * which cannot keep a replay stream: the DB's stream when current, else
 * the tables read once into a stream in a temporary file (SQLite's,
 * deleted at source_close()) that every pass then reads.  A replay makes
 * two passes or more, and a pass over the tables costs several over the
 * stream.  When the temporary copy cannot be made it warns and reads the
 * tables in every pass.  Returns the source; NULL after a corrupt event
 * or a failed read of the tables (logged), or when out of memory.
 */
struct source *source_open_spooled(sqlite3 *db);
/*
 * Open a source over the canonical tables, whatever stream the DB has
 * (deriving the stream, tests).  Returns the source, its first rows read;
 * NULL on error (a failed SQL statement, logged) or when out of memory.
 */
struct source *source_open_tables(sqlite3 *db);
/* Returns 1 when s reads a replay stream (the DB's or a temporary one),
 * 0 when it reads the tables or an array. */
int source_is_stream(const struct source *s);

/*
 * Derive the replay stream from the canonical tables and keep it in the
 * DB (opened read-write), in one transaction, unless the DB has a current
 * one.  Returns 0 when the DB has a current stream afterwards; -1 on
 * error (a corrupt event or a failed write, logged), the DB then as it
 * was.
 */
int source_stream_ensure(sqlite3 *db);
/*
 * Show the pass's progress on a terminal under what (log_progress_of:
 * events returned of the source's count, rate, ETA) until source_next()
 * returns anything but SOURCE_OK, which ends the line.
 */
void source_progress(struct source *s, const char *what);
/*
 * Read the next event in seq order into *ev.  Returns SOURCE_OK; SOURCE_END
 * after the last event; SOURCE_ERR on a failed read or a corrupt event
 * (one model_event_implausible() refuses, or a time outside the
 * capture), logged with the event's table and seq.  On anything but
 * SOURCE_OK, *ev holds no event to use.
 */
enum source_status source_next(struct source *s, struct model_event *ev);
/*
 * From now on source_next() returns only the events of VM vm (the DB's
 * vm column, else attr's decision; attr may be NULL), or, with vm 0,
 * every event.  attr must outlive the narrowing.
 */
struct vm_attr;
void source_narrow(struct source *s, int vm, const struct vm_attr *attr);
/*
 * Splits src's events by VM (vm_attr_of(attr, ev); src not narrowed)
 * into out[0..nvms), the sources of VMs 1..nvms, each over a temporary
 * stream of that VM's events alone, in one pass over src (rewound
 * first); events of no VM are left out.  Each reads as src narrowed to
 * its VM would, at the cost of its own events: replaying N VMs this way
 * costs what their events cost, where narrowing costs N passes over all
 * of them.  db is src's DB.  Returns 0, the caller closing each out[v];
 * -1 when src cannot be read (a corrupt event or a failed read, logged),
 * -2 when a temporary stream cannot be made (no room, out of memory);
 * out then holds nothing.
 */
int source_split_vms(struct source *src, sqlite3 *db, int nvms,
		     const struct vm_attr *attr, struct source **out);
/*
 * Start again from the first event (a further pass).  Returns SOURCE_OK;
 * SOURCE_ERR when the tables cannot be read again (logged).
 */
enum source_status source_rewind(struct source *s);
/* Free s, its statements and its temporary copy; s may be NULL.  The DB
 * stays open. */
void source_close(struct source *s);

/*
 * Open a source over evs[0..n) (unit tests, synthetic sequences), which
 * it borrows: they must outlive the source.  Its events pass the same
 * plausibility check, with no bound on time.  Returns the source; NULL
 * when out of memory.
 */
struct source *source_from_array(const struct model_event *evs, size_t n);

#endif
