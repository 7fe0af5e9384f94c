/*
 * mmureplay: entry point, subcommand dispatch and the option parser
 * shared by every subcommand (see cli.h).
 */
#include "cli/cli.h"

#include "db/db.h"

#include <stdio.h>
#include <string.h>

static const struct cli_command *const commands[] = {
	&cli_cmd_ingest,
	&cli_cmd_summary,
	&cli_cmd_fidelity,
	&cli_cmd_replay,
	&cli_cmd_report,
	&cli_cmd_spikes,
	NULL,
};

static const char exit_codes[] =
	"Exit status:\n"
	"  0  success\n"
	"  1  bad command line\n"
	"  2  bad input (missing path, not a CTF trace, corrupt metadata,\n"
	"     not a capture DB, DB from a newer mmureplay)\n"
	"  3  the trace breaks mid-way: what was read is written and marked\n"
	"     truncated\n"
	"  4  cannot write the output (nothing is left half-written)\n"
	"  5  internal error (out of memory, babeltrace2 plugins missing)\n"
	"  6  the replay self-check (fidelity) is off its tolerance\n";

void cli_help(const struct cli_command *cmd)
{
	const struct cli_option *o;
	char left[64];

	printf("Usage: mmureplay %s %s\n\n%s\n", cmd->name, cmd->usage,
	       cmd->summary);
	if (cmd->details)
		printf("\n%s", cmd->details);
	printf("\nOptions:\n");
	for (o = cmd->options; o->name; o++) {
		if (o->short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s",
				 o->short_name, o->name, o->arg ? " " : "",
				 o->arg ? o->arg : "");
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->name,
				 o->arg ? " " : "", o->arg ? o->arg : "");
		printf("  %-24s %s\n", left, o->help);
	}
	printf("  %-24s %s\n\n%s", "-h, --help", "show this help",
	       exit_codes);
}

static const struct cli_option *find_opt(const struct cli_command *cmd,
					 const char *arg, int *idx)
{
	const struct cli_option *o;

	for (o = cmd->options; o->name; o++) {
		if ((arg[1] == '-' && strcmp(arg + 2, o->name) == 0) ||
		    (arg[1] != '-' && arg[2] == '\0' && o->short_name &&
		     arg[1] == o->short_name)) {
			*idx = (int)(o - cmd->options);
			return o;
		}
	}
	return NULL;
}

int cli_parse(const struct cli_command *cmd, int argc, char **argv,
	      const char **values, int *npos)
{
	static char joined[1024];       /* one repeatable option per call */
	const struct cli_option *o;
	int i, idx, only_pos = 0;

	*npos = 0;
	for (i = 0; cmd->options[i].name; i++)
		values[i] = NULL;
	for (i = 0; i < argc; i++) {
		const char *a = argv[i];

		if (only_pos || a[0] != '-' || a[1] == '\0') {
			argv[(*npos)++] = argv[i];
			continue;
		}
		if (strcmp(a, "--") == 0) {
			only_pos = 1;
			continue;
		}
		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			cli_help(cmd);
			return 1;
		}
		o = find_opt(cmd, a, &idx);
		if (!o) {
			fprintf(stderr, "mmureplay %s: unknown option '%s' "
				"(see --help)\n", cmd->name, a);
			return -1;
		}
		if (!o->arg) {
			values[idx] = "";
			continue;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "mmureplay %s: option '%s' needs %s\n",
				cmd->name, a, o->arg);
			return -1;
		}
		i++;
		/* A repeated option collects its values, comma-separated. */
		if (values[idx]) {
			size_t len = strlen(joined);

			if (values[idx] != joined)
				len = (size_t)snprintf(joined, sizeof(joined),
						       "%s", values[idx]);
			snprintf(joined + len, sizeof(joined) - len, ",%s",
				 argv[i]);
			values[idx] = joined;
		} else {
			values[idx] = argv[i];
		}
	}
	return 0;
}

int cli_open_db(const struct cli_command *cmd, int npos, char **argv,
		int read_only, sqlite3 **db)
{
	*db = NULL;
	if (npos != 1) {
		fprintf(stderr, "mmureplay %s: need exactly one DB (see "
			"--help)\n", cmd->name);
		return CLI_EXIT_USAGE;
	}
	return db_open(argv[0], read_only, db) == DB_OK ? CLI_EXIT_OK :
		CLI_EXIT_INPUT;
}

static void main_help(void)
{
	int i;

	printf("Usage: mmureplay COMMAND [OPTIONS] ARGS...\n\n"
	       "Trace-driven offline analysis of KVM TDP MMU event streams\n"
	       "recorded with LTTng.\n\nCommands:\n");
	for (i = 0; commands[i]; i++)
		printf("  %-10s %s\n", commands[i]->name,
		       commands[i]->summary);
	printf("\n'mmureplay COMMAND --help' describes a command.\n\n%s",
	       exit_codes);
}

int main(int argc, char **argv)
{
	int i;

	if (argc < 2) {
		main_help();
		return CLI_EXIT_USAGE;
	}
	if (strcmp(argv[1], "-h") == 0 || strcmp(argv[1], "--help") == 0 ||
	    strcmp(argv[1], "help") == 0) {
		main_help();
		return CLI_EXIT_OK;
	}
	if (strcmp(argv[1], "--version") == 0) {
		printf("mmureplay " MMUREPLAY_VERSION "\n");
		return CLI_EXIT_OK;
	}
	for (i = 0; commands[i]; i++)
		if (strcmp(argv[1], commands[i]->name) == 0)
			return commands[i]->run(argc - 2, argv + 2);
	fprintf(stderr, "mmureplay: unknown command '%s' (see --help)\n",
		argv[1]);
	return CLI_EXIT_USAGE;
}
