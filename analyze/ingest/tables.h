/*
 * The capture tables every trace reader fills, whatever the trace format:
 * canonical rows (handed to the writer thread in chunks), and the small
 * per-capture tables kept in memory and written at the end (trace,
 * stream, raw_event, lost, thread, the time base).
 *
 * A reader (the babeltrace2 sink for CTF, the trace-cmd reader, the
 * tracefs text reader) resolves each raw event class once: tables_raw()
 * numbers its name, tables_class_map() binds the catalogue entry's
 * columns to the class's fields through the reader's own field lookup.
 * Per event it takes tables_seq(), fills a row from tables_row_next()
 * and commits it.  Invariants:
 *   - seq increases by one per event, mapped or not, so raw counts and
 *     canonical rows share one numbering;
 *   - a class whose required columns are missing is counted, never
 *     mapped, and the reason is kept for the raw_event table;
 *   - nothing here touches SQLite before tables_store(): the writer
 *     thread owns the connection until it has finished.
 * Memory: one descriptor per trace, stream, thread and distinct raw name;
 * nothing per event.
 */
#ifndef MMUREPLAY_INGEST_TABLES_H
#define MMUREPLAY_INGEST_TABLES_H

#include "ingest/catalog.h"
#include "ingest/writer.h"

#include <sqlite3.h>
#include <stdint.h>

enum tables_status {
	TABLES_OK = 0,
	TABLES_ERR_NOMEM,
	TABLES_ERR_SQL,
};

/* Where a column's value comes from, per event class. */
enum col_src {
	COL_ABSENT = 0,         /* optional field not in this class: NULL */
	COL_UNSIGNED,
	COL_SIGNED,
	COL_BOOL,
	COL_STRING,
	COL_CONST,
	COL_RAW_ID,
};

/* A raw event class bound to its catalogue entry. */
struct tables_class {
	uint32_t raw_id;
	int kind;               /* catalogue entry index, -1: count only */
	int ncols;
	struct {
		enum col_src src;
		uint64_t member;        /* the reader's handle of the field */
		int64_t cval;
	} col[ROW_MAX_VALS];
};

/* The reader's field lookup: the source type of field name in its class
 * (COL_ABSENT when there is none) and its handle in *member. */
typedef enum col_src (*tables_field_find_fn)(const void *cls,
					     const char *name,
					     uint64_t *member);

/*
 * The trace environment entries a trace row keeps: X(index, CTF key,
 * column of table trace).  The enum, the CTF lookups and the INSERT are
 * generated from this list.
 */
#define TRACE_ENV_LIST(X) \
	X(ENV_HOSTNAME, "hostname", "hostname") \
	X(ENV_DOMAIN, "domain", "domain") \
	X(ENV_SYSNAME, "sysname", "sysname") \
	X(ENV_KERNEL_RELEASE, "kernel_release", "kernel_release") \
	X(ENV_KERNEL_VERSION, "kernel_version", "kernel_version") \
	X(ENV_TRACER_NAME, "tracer_name", "tracer_name") \
	/* LTTng writes it as tracer_major/minor/patchlevel */ \
	X(ENV_TRACER_VERSION, "tracer_version", "tracer_version") \
	X(ENV_TRACE_NAME, "trace_name", "trace_name") \
	X(ENV_CREATION_DATETIME, "trace_creation_datetime", \
	  "creation_datetime")

#define TRACE_ENV_ENUM(e, key, col) e,
enum tables_env {
	TRACE_ENV_LIST(TRACE_ENV_ENUM)
	ENV_N
};

struct tables_trace {
	int64_t id;
	char *path;
	char *env[ENV_N];
};

struct tables_stream {
	int64_t id;
	struct tables_trace *trace;
	char *name;
	uint64_t events;
	/* Its first event's time (ns from the clock's origin), once it has
	 * one with a clock. */
	int64_t first_ns;
	int has_first;
};

struct ingest_tables;

struct ingest_tables *tables_create(const struct catalog *cat,
				    struct writer *w);
void tables_destroy(struct ingest_tables *t);

const struct catalog *tables_catalog(const struct ingest_tables *t);

/* Index of the raw name, registering it on first sight; -1: no memory. */
int64_t tables_raw(struct ingest_tables *t, const char *name);
/* Count one event of raw index raw. */
void tables_raw_count(struct ingest_tables *t, uint32_t raw);
/* Say why raw index raw is counted but not mapped (the first note
 * stays). */
void tables_raw_note(struct ingest_tables *t, uint32_t raw, const char *note);
/* Bind c (raw_id set) to its catalogue entry, if the raw name has one:
 * the entry's columns onto the fields find() knows in cls. */
void tables_class_map(struct ingest_tables *t, struct tables_class *c,
		      tables_field_find_fn find, const void *cls);

/* A new trace (path: relative to the input) / stream of it; NULL: no
 * memory.  env values are set by the caller (malloc'ed strings). */
struct tables_trace *tables_trace_add(struct ingest_tables *t,
				      const char *path);
struct tables_stream *tables_stream_add(struct ingest_tables *t,
					struct tables_trace *tr,
					const char *name);

/* The next event's seq; its timestamp (ns from the Unix epoch or from
 * the tracer's clock origin) sets the time base at the first event. */
uint64_t tables_seq(struct ingest_tables *t, int64_t ns);
/* ns relative to the time base. */
int64_t tables_ts(const struct ingest_tables *t, int64_t ns);

/* A row to fill (all of it) and commit. */
struct ingest_row *tables_row_next(struct ingest_tables *t);
void tables_row_commit(struct ingest_tables *t);
/* Intern a string that a row carries; NULL: no memory. */
const char *tables_intern(struct ingest_tables *t, const char *s);
/* A thread row the first time (tid, procname) is seen, with its
 * process (pid; -1: the trace does not say: a thread named before with
 * its process and the same name keeps it); -1: no memory. */
int tables_thread_note(struct ingest_tables *t, int64_t tid, int64_t pid,
		       const char *procname, uint64_t seq);

/* Discarded events (is_packets 0) or packets the tracer reported;
 * begin/end in the reader's ns (has_range), count if has_count. */
int tables_lost_add(struct ingest_tables *t, const struct tables_stream *s,
		    int is_packets, int has_range, int64_t begin_ns,
		    int64_t end_ns, int has_count, uint64_t count);

/*
 * Records that stream s begins at its tracer's packet first_seq (> 0):
 * the packets before it are not in the trace (an LTTng snapshot keeps
 * only the last packets of each ring buffer; a trace cut at its start
 * does the same).  They are lost packets before the stream's first
 * event (the row's end; it has no begin) and, since nothing says how
 * many events they held, of unknown event count.  Returns 0, or -1 when
 * out of memory.
 */
int tables_stream_late_start(struct ingest_tables *t,
			     const struct tables_stream *s,
			     uint64_t first_seq);
/* Returns how many streams began late (tables_stream_late_start()). */
uint64_t tables_late_streams(const struct ingest_tables *t);
/* Returns the stream named name (a CTF stream's file path), or NULL. */
const struct tables_stream *tables_stream_find(const struct ingest_tables *t,
					       const char *name);

/* The first trace added, or NULL. */
const struct tables_trace *tables_trace_first(const struct ingest_tables *t);
/* The raw names seen, comma-separated (malloc'ed; NULL: no memory). */
char *tables_raw_names(const struct ingest_tables *t);

uint64_t tables_event_count(const struct ingest_tables *t);
uint64_t tables_lost_count(const struct ingest_tables *t);

/* Non-zero once the writer thread has failed (stop reading). */
int tables_writer_failed(const struct ingest_tables *t);
/* Hand the last partial chunk to the writer (call before writer_finish). */
void tables_flush(struct ingest_tables *t);
/*
 * Decodes the fault rows committed before the ISA was known (a capture
 * whose first events are faults), by the first traced exit's ISA or,
 * without one, by fallback_isa (the manifest's CPU vendor; 0: none).
 * Sets *isa to the ISA the fault table is decoded by (0: none, the
 * decoded columns stay NULL).  Returns TABLES_OK, or TABLES_ERR_SQL
 * after logging the error.  The writer must have finished.
 */
enum tables_status tables_fault_decode_rest(struct ingest_tables *t,
					    sqlite3 *db, int fallback_isa,
					    int *isa);
/* Write trace, stream, raw_event, lost and the time base into db (the
 * writer must have finished). */
enum tables_status tables_store(struct ingest_tables *t, sqlite3 *db);

#endif
