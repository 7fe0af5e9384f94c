/*
 * ingest: the traces of one capture in, one capture database out.
 *
 *   TRACE... --(format by content: ingest/reader.h)--> CTF graph, or
 *            trace-cmd trace.dat, or tracefs text --> capture tables
 *            (ingest/tables.h) --> writer thread --> NAME.tmp-PID
 *            --> rename(2) --> NAME
 *
 * Guarantees: the output exists under its name only if ingest read the
 * input to its end or to the point where the trace itself breaks; in the
 * latter case it is marked truncated (meta 'truncated' = 1) and the status
 * says so.  Bad input never leaves a file behind.
 */
#ifndef MMUREPLAY_INGEST_INGEST_H
#define MMUREPLAY_INGEST_INGEST_H

#include <stdint.h>

enum ingest_status {
	INGEST_OK = 0,
	INGEST_ERR_INPUT,       /* missing path, no trace, unreadable trace,
				 * mixed formats */
	INGEST_ERR_OUTPUT,      /* cannot write the database */
	INGEST_PARTIAL,         /* trace broken mid-way: DB kept, truncated */
	INGEST_ERR_INTERNAL,    /* out of memory, babeltrace2 plugin missing */
};

struct ingest_opts {
	const char *const *inputs;
	int ninputs;
	const char *output;
	/* Stop a CTF read making no progress for this long (0: never), and
	 * exit with this code (util/watchdog.h). */
	unsigned watchdog_s;
	int watchdog_exit;
};

struct ingest_result {
	uint64_t events;
	uint64_t lost_events;
	int ntraces;
	/* Seconds: the run's wall time; the reading (decoding) thread's and
	 * the SQLite writer thread's CPU time, and each one's time spent
	 * waiting for the other (ingest/writer.h). */
	double wall_s, read_cpu_s, read_wait_s, write_cpu_s, write_wait_s;
};

enum ingest_status ingest_run(const struct ingest_opts *opts,
			      struct ingest_result *res);

#endif
