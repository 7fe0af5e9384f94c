/*
 * The insert side of ingest: a thread that turns decoded rows into SQLite
 * inserts while the babeltrace2 graph decodes the next ones.
 *
 * Rows travel in fixed-size chunks through a bounded pool, so memory stays
 * constant whatever the trace size, and the decoder blocks (rather than
 * queueing without bound) when SQLite is the slower side.  Rows are
 * inserted in the order they were submitted, which is seq order.
 */
#ifndef MMUREPLAY_INGEST_WRITER_H
#define MMUREPLAY_INGEST_WRITER_H

#include "ingest/catalog.h"

#include <sqlite3.h>
#include <stdint.h>

#define ROW_MAX_VALS (CATALOG_MAX_COLS + 1)     /* + raw_id or derived */
#define CHUNK_ROWS 4096

/* Row kinds beyond the catalogue entries. */
#define ROW_KIND_THREAD(cat) ((cat)->nentries)

/* Bits of ingest_row.nullmask for the common columns. */
#define ROW_NULL_VM (1u << 29)
#define ROW_NULL_CPU (1u << 30)
#define ROW_NULL_TID (1u << 31)

/* One column value: an integer, or (textmask) an interned string that
 * outlives the insert. */
union ingest_val {
	int64_t i;
	const char *text;
};

struct ingest_row {
	uint32_t kind;          /* catalogue entry index, or ROW_KIND_* */
	uint32_t nullmask;      /* bit i: v[i] is NULL; ROW_NULL_* */
	uint32_t textmask;      /* bit i: v[i].text, else v[i].i */
	int64_t seq, ts, cpu, tid;
	int64_t vm;             /* ingest/vms.h */
	union ingest_val v[ROW_MAX_VALS];
};

struct ingest_chunk {
	int n;
	struct ingest_row rows[CHUNK_ROWS];
};

enum writer_status {
	WRITER_OK = 0,
	WRITER_ERR_SQL,
	WRITER_ERR_NOMEM,
};

struct writer;

/* Prepare one INSERT per catalogue entry and start the thread. */
enum writer_status writer_start(struct writer **out, sqlite3 *db,
				const struct catalog *cat);
/* An empty chunk to fill; blocks while all chunks are in flight. */
struct ingest_chunk *writer_chunk_get(struct writer *w);
/* Hand a filled chunk over for insertion. */
void writer_chunk_submit(struct writer *w, struct ingest_chunk *c);
/* Non-zero once an insert has failed (the rest are skipped). */
int writer_failed(struct writer *w);
/*
 * Where the two threads' time went, for `ingest --stats`: which side
 * bounds the run.  A side that waits little while the other waits much
 * is the bottleneck; both waiting little means both cores are busy.
 */
struct writer_stats {
	double cpu_s;           /* the writer thread's CPU time */
	double wait_rows_s;     /* the writer waiting for a full chunk */
	double wait_chunk_s;    /* the decoder waiting for a free chunk */
};

/* Insert what was submitted, stop the thread, free everything; stats
 * (may be NULL) receives the threads' times. */
enum writer_status writer_finish(struct writer *w, struct writer_stats *stats);

#endif
