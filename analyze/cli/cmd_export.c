/*
 * mmureplay export: a capture DB in another tool's format (export/).
 */
#include "cli/cli.h"

#include "export/export.h"
#include "replay/policy.h"
#include "util/log.h"
#include "util/outfile.h"

#include <stdio.h>

enum { OPT_PERFETTO, OPT_POLICY, OPT_VM, OPT_SPIKE, OPT_QUIET, OPT_N };

static const struct cli_option options[] = {
	[OPT_PERFETTO] = CLI_STRING("perfetto", 0, "FILE",
				    "write a Perfetto trace (protobuf) to FILE "
				    "(required)"),
	[OPT_POLICY] = CLI_STRING("policy", 'p', "NAME",
				  "add the policy's stored replay: its faults "
				  "and leaf zaps per second beside the "
				  "recorded run's, and what it avoids as "
				  "instants"),
	[OPT_VM] = CLI_VM,
	[OPT_SPIKE] = CLI_INT("spike-us", 0, "US", 1, 1000000000,
			      "probe samples of at least US microseconds are "
			      "spikes (default: the samples' p99)"),
	[OPT_QUIET] = CLI_FLAG("quiet", 'q', "no closing line on stderr"),
	[OPT_N] = CLI_END,
};

static int run(struct cli_args *a);

const struct cli_command cli_cmd_export = {
	.name = "export",
	.usage = "DB --perfetto FILE [--policy NAME] [--vm ID]",
	.summary = "Write the capture as a Perfetto trace (ui.perfetto.dev, "
		   "trace_processor).",
	.details =
	"Writes Perfetto's protobuf trace format: a process track per VM\n"
	"(and one for the host's threads of no VM), a thread track per\n"
	"thread with: NPF service slices (the NPF exit to the thread's next\n"
	"entry), mmu_lock waits inside them (patched kernels), invalidation\n"
	"windows (patched: slices from start to end with their leaf zaps;\n"
	"stock: an instant at each start), NX recovery batches (patched),\n"
	"and the latency probe's spikes (samples at or above --spike-us,\n"
	"default their p99); and counter tracks per VM: faults, leaf zaps\n"
	"and invalidations per second.  --policy NAME adds, from the replay\n"
	"stored in the DB (mmureplay replay DB --policy NAME; a verified\n"
	"one), that policy's faults and leaf zaps per second beside the\n"
	"recorded run's, and, replaying the capture under it again, each\n"
	"fault it avoids and each leaf zap it keeps as an instant on the\n"
	"thread that traced it (\"fault avoided (NAME)\", \"leaf zap kept\n"
	"(NAME)\").  Each thread is one packet sequence with a clock of its\n"
	"own (each packet's timestamp the ns since the previous one); the\n"
	"times are the capture's (ns since the epoch).  The file is written\n"
	"as FILE.tmp-PID and renamed when whole.\n",
	.options = options,
	.run = run,
};

/* The policy's replay for the what-if's instants (export_opts.replay). */
static int replay_policy(void *arg, const struct replay_hook *hook)
{
	struct cli_args *a = arg;
	const struct policy *pol = policy_find(a->str[OPT_POLICY]);
	struct capture_info ci;
	struct replay_result res;
	int rc;

	if (!pol) {
		log_error("%s: no policy %s (mmureplay replay --help lists "
			  "them)", a->path, a->str[OPT_POLICY]);
		return -1;
	}
	rc = cli_recorded_policy(a->db, a->path, &ci);
	if (rc == CLI_EXIT_OK)
		rc = cli_narrow_vm(a, OPT_VM, &ci);
	if (rc == CLI_EXIT_OK)
		rc = cli_replay_hooked(a->db, a->path, &ci, pol, hook, &res);
	if (rc != CLI_EXIT_OK)
		return -1;
	replay_result_free(&res);
	return 0;
}

static int run(struct cli_args *a)
{
	struct export_opts o = { 0 };
	struct export_stats st;
	struct outfile of;
	int rc;

	if (!a->str[OPT_PERFETTO]) {
		fprintf(stderr, "mmureplay export: need --perfetto FILE (see "
			"--help)\n");
		return CLI_EXIT_USAGE;
	}
	rc = cli_narrow_db(a, OPT_VM, 1);
	if (rc != CLI_EXIT_OK)
		return rc;
	o.db_path = a->path;
	o.policy = a->str[OPT_POLICY];
	o.vm = a->str[OPT_VM] ? (int)a->num[OPT_VM] : 0;
	o.spike_ns = a->str[OPT_SPIKE] ? a->num[OPT_SPIKE] * 1000 : 0;
	o.replay = replay_policy;
	o.replay_arg = a;
	if (outfile_open(&of, a->str[OPT_PERFETTO]) < 0)
		return CLI_EXIT_OUTPUT;
	switch (export_perfetto(a->db, &o, of.fp, &st)) {
	case EXPORT_OK:
		break;
	case EXPORT_ERR_CANNOT:
		outfile_discard(&of);
		return CLI_EXIT_CANNOT;
	case EXPORT_ERR_OUTPUT:
		outfile_discard(&of);
		fprintf(stderr, "mmureplay: %s: cannot write\n",
			a->str[OPT_PERFETTO]);
		return CLI_EXIT_OUTPUT;
	case EXPORT_ERR_NOMEM:
		outfile_discard(&of);
		return CLI_EXIT_INTERNAL;
	default:
		outfile_discard(&of);
		return CLI_EXIT_INPUT;
	}
	if (outfile_commit(&of) < 0)
		return CLI_EXIT_OUTPUT;
	if (!a->str[OPT_QUIET])
		fprintf(stderr, "mmureplay: %s: %lld packets, %lld tracks, %lld "
			"slices, %lld instants, %lld counter values, %lld "
			"bytes\n", a->str[OPT_PERFETTO], (long long)st.packets,
			(long long)st.tracks, (long long)st.slices,
			(long long)st.instants, (long long)st.counters,
			(long long)st.bytes);
	return CLI_EXIT_OK;
}
