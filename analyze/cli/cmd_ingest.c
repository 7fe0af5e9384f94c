/*
 * mmureplay ingest: CTF trace directories, a trace-cmd trace.dat or
 * ftrace text -> capture DB.
 */
#include "cli/cli.h"

#include "ingest/ingest.h"

#include <stdio.h>

enum { OPT_OUTPUT, OPT_QUIET, OPT_STATS, OPT_WATCHDOG, OPT_N };

static const struct cli_option options[] = {
	[OPT_OUTPUT] = CLI_STRING("output", 'o', "DB",
				  "capture database to write (required)"),
	[OPT_QUIET] = CLI_FLAG("quiet", 'q', "no closing line on stderr"),
	[OPT_STATS] = CLI_FLAG("stats", 0, "one more line on stderr: each "
			       "thread's CPU time and waits"),
	[OPT_WATCHDOG] = CLI_INT("watchdog", 0, "SECONDS", 0, 86400,
				 "stop a CTF read that makes no progress for "
				 "SECONDS (default 60; 0: never)"),
	[OPT_N] = CLI_END,
};

static int run(struct cli_args *a);

const struct cli_command cli_cmd_ingest = {
	.name = "ingest",
	.usage = "TRACE... -o DB",
	.summary = "Load the traces of one capture (LTTng CTF, trace-cmd "
		   "trace.dat, ftrace text) into a SQLite DB.",
	.details =
	"The input's format is told by its content.  A directory: every\n"
	"directory under it that holds a 'metadata' file is read as one CTF\n"
	"trace (kernel and UST traces of one capture go into one DB, merged\n"
	"in time order).  A file: a trace-cmd trace.dat (every CPU and\n"
	"instance, fields by name from the formats stored in it), or tracefs\n"
	"text ('trace', 'trace_pipe', 'trace-cmd report [-R] [-t]'; the\n"
	"stock KVM events' print formats; microsecond timestamps are kept\n"
	"as such, meta ts_resolution_ns = 1000).  The capture's manifest.json\n"
	"is read from the input's directory or the one above.  meta\n"
	"source_format, source_tracer and source_events record the source.\n"
	"Events named in schemas/events.json\n"
	"become rows of the canonical tables; every raw event name is counted\n"
	"in raw_event, discarded events and packets go to lost.  The DB is\n"
	"written as DB.tmp-PID and renamed when complete.  A trace that\n"
	"breaks mid-way keeps what was read, marked truncated (exit 3).\n"
	"Each CTF metadata file is checked before babeltrace2 reads it (a\n"
	"packet cut short, bad headers, text ending inside a declaration:\n"
	"exit 2), and a CTF read that makes no progress for --watchdog\n"
	"seconds is stopped with exit 2: babeltrace2 2.0.4 can spin forever\n"
	"on damaged metadata.\n"
	"Two threads do the work: one reads (the babeltrace2 graph, or the\n"
	"trace-cmd or text parser) and one inserts into SQLite.  --stats\n"
	"prints, after the closing line, the run's wall time, each thread's\n"
	"CPU time and how long each waited for the other: the side that\n"
	"waits least bounds the run; neither waiting means both cores are\n"
	"busy.\n",
	.options = options,
	.run = run,
};

static void stats_print(const struct ingest_opts *opts,
			const struct ingest_result *res)
{
	fprintf(stderr, "mmureplay: %s: %.3f s wall; reading thread %.3f s "
		"CPU, waited %.3f s for the writer; writer thread %.3f s CPU, "
		"waited %.3f s for rows\n", opts->output, res->wall_s,
		res->read_cpu_s, res->read_wait_s, res->write_cpu_s,
		res->write_wait_s);
}

static int run(struct cli_args *a)
{
	struct ingest_opts opts;
	struct ingest_result res;
	int rc;

	if (a->npos == 0 || !a->str[OPT_OUTPUT]) {
		fprintf(stderr, "mmureplay ingest: need TRACE... and -o DB "
			"(see --help)\n");
		return CLI_EXIT_USAGE;
	}
	opts.inputs = (const char *const *)a->pos;
	opts.ninputs = a->npos;
	opts.output = a->str[OPT_OUTPUT];
	opts.watchdog_s = a->str[OPT_WATCHDOG] ?
		(unsigned)a->num[OPT_WATCHDOG] : 60;
	opts.watchdog_exit = CLI_EXIT_INPUT;
	rc = cli_exit_ingest(ingest_run(&opts, &res));
	if (rc == CLI_EXIT_OK && !a->str[OPT_QUIET])
		fprintf(stderr, "mmureplay: %s: %llu events from %d trace(s), "
			"%llu lost\n", opts.output,
			(unsigned long long)res.events, res.ntraces,
			(unsigned long long)res.lost_events);
	if (rc == CLI_EXIT_OK && a->str[OPT_STATS])
		stats_print(&opts, &res);
	return rc;
}
