/*
 * The trace readers of ingest, one per input format, each filling the
 * capture tables (ingest/tables.h) from its own kind of input:
 *
 *   ctf_read          LTTng CTF trace directories (babeltrace2 graph)
 *   tracecmd_read     a trace-cmd trace.dat file (libtracecmd, the event
 *                     formats stored in the file)
 *   ftrace_text_read  tracefs text: the `trace` / `trace_pipe` files or
 *                     `trace-cmd report` output (print formats known to
 *                     ingest/ftrace_formats.c)
 *
 * ingest_detect() tells them apart by content, never by file name.  A
 * reader returns INGEST_OK when it read to the end or to the point where
 * the input breaks (then rr->truncated, rr->why and rr->bad say so); an
 * error status after it has logged one line naming the input.
 */
#ifndef MMUREPLAY_INGEST_READER_H
#define MMUREPLAY_INGEST_READER_H

#include "ingest/ingest.h"
#include "ingest/tables.h"

#include <stdint.h>

enum ingest_format {
	INGEST_FMT_UNKNOWN = 0,
	INGEST_FMT_CTF,
	INGEST_FMT_TRACECMD,
	INGEST_FMT_FTRACE_TEXT,
};

struct reader_result {
	const char *format;     /* meta source_format */
	char *tracer;           /* meta source_tracer (malloc'ed) */
	char *events;           /* meta source_events, or NULL: names seen */
	char *lossy;            /* meta source_lossy: what the input could
				 * not give back, or NULL: nothing */
	int64_t ts_resolution_ns;
	uint64_t duplicates;    /* meta source_duplicates: repeats dropped */
	int ntraces;
	int truncated;
	char *why;              /* when truncated */
	char *bad;              /* the input at fault, when truncated */
};

/* The format of path by its first bytes (a directory: CTF); logs one line
 * naming path when it is none that ingest reads. */
enum ingest_format ingest_detect(const char *path);

enum ingest_status ctf_read(const struct ingest_opts *opts,
			    struct ingest_tables *t, struct reader_result *rr);
enum ingest_status tracecmd_read(const char *path, struct ingest_tables *t,
				 struct reader_result *rr);
enum ingest_status ftrace_text_read(const char *path,
				    struct ingest_tables *t,
				    struct reader_result *rr);

#endif
