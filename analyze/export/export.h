/*
 * Exports of a capture DB to other tools' formats.
 *
 * perfetto.c writes Perfetto's protobuf trace format (Trace /
 * TracePacket, TrackDescriptor, TrackEvent, interned event names,
 * counter tracks), which ui.perfetto.dev and trace_processor load: a
 * process track per VM, a thread track per thread that did something
 * shown (NPF service slices from exit to entry with the lock waits
 * inside them, invalidation windows with their leaf zaps, NX recovery
 * batches, latency probe spikes), and counters per VM (faults, leaf
 * zaps and invalidations per second); with a policy, its stored
 * replay's faults and leaf zaps per second beside the recorded run's,
 * and each fault it avoids and leaf zap it keeps as an instant on the
 * thread that traced it (the replay run again, told through a hook).
 *
 * Invariants of the output: each thread's events are one packet
 * sequence whose timestamps never go back (each the nanoseconds since
 * the sequence's previous packet, on a clock of the sequence's own),
 * the what-if's instants of a thread one more per replay run, and a
 * thread's slices nest (a lock
 * wait begins no earlier than the NPF slice it is in, clamped to it when
 * the trace's clocks disagree by a few nanoseconds); every slice begun
 * is ended, at the capture's last event if the trace ends inside it.
 */
#ifndef MMUREPLAY_EXPORT_EXPORT_H
#define MMUREPLAY_EXPORT_EXPORT_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

struct replay_hook;

struct export_opts {
	const char *db_path;            /* for messages */
	const char *policy;             /* NULL: no what-if */
	int vm;                         /* 0: every VM */
	int64_t spike_ns;               /* probe samples at or above; 0: p99 */
	/* With policy: replays the capture (--vm narrowed) under it, hook
	 * told each decision.  Returns 0, or -1 after saying why. */
	int (*replay)(void *arg, const struct replay_hook *hook);
	void *replay_arg;
};

struct export_stats {
	int64_t packets, slices, instants, counters, tracks;
	int64_t bytes;
};

enum export_status {
	EXPORT_OK = 0,
	EXPORT_ERR_INPUT,       /* the DB cannot be read (said) */
	EXPORT_ERR_CANNOT,      /* no stored, verified replay of the policy */
	EXPORT_ERR_OUTPUT,      /* out cannot be written */
	EXPORT_ERR_NOMEM,
};

/* Writes db as a Perfetto trace to out.  Returns a status, after one
 * line on stderr for an error. */
enum export_status export_perfetto(sqlite3 *db, const struct export_opts *o,
				   FILE *out, struct export_stats *st);

#endif
