/*
 * mmureplay merge: shards -> one fleet DB (fleet/merge.c).
 */
#include "cli/cli.h"

#include "fleet/fleet.h"

#include <stdio.h>

enum { OPT_OUTPUT, OPT_QUIET, OPT_N };

static const struct cli_option options[] = {
	[OPT_OUTPUT] = CLI_STRING("output", 'o', "FLEET_DB",
				  "the fleet DB (required): made, or rebuilt "
				  "with what it holds"),
	[OPT_QUIET] = CLI_FLAG("quiet", 'q', "no closing line on stderr"),
	[OPT_N] = CLI_END,
};

static int run(struct cli_args *a);

const struct cli_command cli_cmd_merge = {
	.name = "merge",
	.usage = "SHARD... -o FLEET_DB",
	.summary = "Put the shards of mmureplay analyze into one fleet DB.",
	.details =
	"Each SHARD is a shard directory (DIR/ID of mmureplay analyze), its\n"
	"shard.json, or a directory of shards (every DIR/ID under it).  The\n"
	"fleet DB (schemas/fleet.sql) gets a row per capture, per VM and per\n"
	"policy, each capture's labels, verdict and error, and the\n"
	"per-second series summed over the fleet by UTC second.  A fleet DB\n"
	"already at FLEET_DB keeps what it holds: merge rebuilds it from the\n"
	"shards it holds and those given, in ID order, so merging is\n"
	"order-independent and idempotent (a shard merged twice counts\n"
	"once; of two shards of one capture the better status wins) and the\n"
	"same shards give the same file.  A shard that is truncated, not a\n"
	"shard, or from a newer mmureplay is refused in one line naming it,\n"
	"and the others are merged (exit 2).  The DB is written as\n"
	"FLEET_DB.tmp-PID and renamed when whole.\n",
	.options = options,
	.run = run,
};

static int run(struct cli_args *a)
{
	int merged;

	if (a->npos == 0 || !a->str[OPT_OUTPUT]) {
		fprintf(stderr, "mmureplay merge: need SHARD... and -o FLEET_DB "
			"(see --help)\n");
		return CLI_EXIT_USAGE;
	}
	switch (fleet_merge((const char *const *)a->pos, a->npos,
			    a->str[OPT_OUTPUT], &merged)) {
	case FLEET_MERGE_OK:
		if (!a->str[OPT_QUIET])
			fprintf(stderr, "mmureplay: %s: %d captures\n",
				a->str[OPT_OUTPUT], merged);
		return CLI_EXIT_OK;
	case FLEET_MERGE_REFUSED:
		fprintf(stderr, "mmureplay: %s: %d captures; the shards "
			"named above were refused\n", a->str[OPT_OUTPUT],
			merged);
		return CLI_EXIT_INPUT;
	case FLEET_MERGE_ERR_INPUT:
		return CLI_EXIT_INPUT;
	case FLEET_MERGE_ERR_OUTPUT:
		return CLI_EXIT_OUTPUT;
	default:
		fprintf(stderr, "mmureplay: %s: out of memory\n",
			a->str[OPT_OUTPUT]);
		return CLI_EXIT_INTERNAL;
	}
}
