/*
 * Fuzz target: the packed replay stream's decoder (replay/stream.c) and
 * the check every decoded event passes (model_event_implausible), on a
 * chunk of any bytes in a real capture DB (in memory, the capture
 * schema, a stream written by the writer and then overwritten).
 * Invariant checked: the reader returns events, END or ERR, never
 * crashes or reads past the blob; what reaches the caller is plausible.
 */
#include "fuzz.h"

#include "db/db.h"
#include "replay/source.h"
#include "replay/stream.h"

#include <stdlib.h>
#include <string.h>

extern const char schema_capture_sql[];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct model_event ev = { 0 };
	struct stream_writer *w = NULL;
	struct source *src = NULL;
	sqlite3_stmt *st = NULL;
	sqlite3 *db = NULL;
	int n;

	if (size < 2 || sqlite3_open(":memory:", &db) != SQLITE_OK ||
	    db_exec(db, schema_capture_sql) != DB_OK ||
	    db_meta_set_int(db, "events", 1) != DB_OK ||
	    stream_writer_begin(db, &w) != STREAM_OK)
		goto end;
	ev.kind = MEV_SPTE_CHANGE;
	ev.seq = 0;
	ev.u.spte.level = 1;
	if (stream_writer_add(w, &ev) != STREAM_OK) {
		stream_writer_abort(w);
		goto end;
	}
	if (stream_writer_commit(w) != STREAM_OK)
		goto end;
	/* The first two bytes: the chunk's event count; the rest: its
	 * data. */
	if (sqlite3_prepare_v2(db, "UPDATE replay_stream SET events = ?, "
			       "data = ?", -1, &st, NULL) != SQLITE_OK)
		goto end;
	sqlite3_bind_int(st, 1, data[0] | (data[1] & 0x0f) << 8);
	sqlite3_bind_blob(st, 2, data + 2, (int)(size - 2), SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_DONE || !stream_current(db))
		goto end;
	src = source_open(db);
	for (n = 0; src && n < 1 << 16 &&
	     source_next(src, &ev) == SOURCE_OK; n++)
		if (model_event_implausible(&ev))
			abort();        /* source_next lets none through */
end:
	source_close(src);
	sqlite3_finalize(st);
	sqlite3_close(db);
	return 0;
}
