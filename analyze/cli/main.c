/*
 * mmureplay: entry point, the commands[] table and the option parser
 * shared by every subcommand (see cli.h).
 *
 * main parses a command's options, applies its commands[] flags (the DB
 * it needs, opened with the schema check of db_open()), runs it, and
 * closes what it opened: a command never opens or closes its DB itself.
 */
#include "cli/cli.h"

#include "db/db.h"
#include "util/assert.h"
#include "util/cleanup.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
	const struct cli_command *cmd;
	unsigned flags;                 /* enum cli_command_flags */
} commands[] = {
	{ &cli_cmd_ingest, 0 },
	{ &cli_cmd_summary, CLI_NEEDS_DB },
	{ &cli_cmd_fidelity, CLI_NEEDS_DB },
	{ &cli_cmd_replay, CLI_NEEDS_DB | CLI_DB_WRITE },
	{ &cli_cmd_report, CLI_NEEDS_DB },
	{ &cli_cmd_spikes, CLI_NEEDS_DB },
	{ &cli_cmd_compare, 0 },
};
#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

#define CLI_EXIT_HELP_ENTRY(e, code, meaning) { code, meaning },
static const struct {
	int code;
	const char *meaning;
} exit_meanings[] = {
	CLI_EXIT_LIST(CLI_EXIT_HELP_ENTRY)
};

/* The signal handler (util/cleanup.c) exits with 128 + the signal. */
_Static_assert(CLI_EXIT_SIGHUP == 128 + SIGHUP &&
	       CLI_EXIT_SIGINT == 128 + SIGINT &&
	       CLI_EXIT_SIGTERM == 128 + SIGTERM,
	       "signal exit codes follow the shell's 128 + N");

/* "  N    meaning", wrapped at 72 columns under the meaning. */
static void exit_codes_print(void)
{
	const size_t width = 72 - 7;
	size_t i, len;
	const char *s;

	printf("Exit status:\n");
	for (i = 0; i < sizeof(exit_meanings) / sizeof(*exit_meanings); i++) {
		printf("  %-3d  ", exit_meanings[i].code);
		for (s = exit_meanings[i].meaning; *s; s += len) {
			len = strlen(s);
			if (len > width) {
				len = width;
				while (len > 0 && s[len] != ' ')
					len--;
			}
			printf("%.*s\n", (int)len, s);
			while (s[len] == ' ')
				len++;
			if (s[len])
				printf("       ");
		}
	}
}

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
		const char *sep = o->arg ? " " : "", *arg = o->arg ? o->arg : "";

		if (o->short_name)
			snprintf(left, sizeof(left), "-%c, --%s%s%s",
				 o->short_name, o->name, sep, arg);
		else
			snprintf(left, sizeof(left), "    --%s%s%s", o->name,
				 sep, arg);
		if (o->type == CLI_TYPE_INT)
			printf("  %-24s %s (%lld..%lld)\n", left, o->help,
			       o->min, o->max);
		else
			printf("  %-24s %s\n", left, o->help);
	}
	printf("  %-24s %s\n\n", "-h, --help", "show this help");
	exit_codes_print();
}

/* The option arg names ("--name", "--name=VALUE" or "-x"), or NULL;
 * *value: what follows '=', else NULL. */
static const struct cli_option *opt_find(const struct cli_command *cmd,
					 const char *arg, const char **value)
{
	const struct cli_option *o;
	const char *eq = NULL;
	size_t len = 0;

	*value = NULL;
	if (arg[1] == '-') {
		eq = strchr(arg + 2, '=');
		len = eq ? (size_t)(eq - (arg + 2)) : strlen(arg + 2);
	}
	for (o = cmd->options; o->name; o++) {
		if (arg[1] == '-' ? strlen(o->name) == len &&
		    strncmp(arg + 2, o->name, len) == 0 :
		    arg[2] == '\0' && o->short_name && arg[1] == o->short_name)
			break;
	}
	if (!o->name)
		return NULL;
	if (eq)
		*value = eq + 1;
	return o;
}

/* The value of an integer option, range-checked; -1 after the error. */
static int opt_int(const struct cli_command *cmd, const struct cli_option *o,
		   const char *value, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(value, &end, 10);
	if (*value && !*end && errno == 0 && *out >= o->min && *out <= o->max)
		return 0;
	fprintf(stderr, "mmureplay %s: --%s wants an integer in %lld..%lld, "
		"not '%s'\n", cmd->name, o->name, o->min, o->max, value);
	return -1;
}

/* A repeated CLI_TYPE_LIST option: "prev,value" in a->lists; NULL after
 * the error when they do not fit. */
static const char *opt_join(const struct cli_command *cmd,
			    const struct cli_option *o, struct cli_args *a,
			    const char *prev, const char *value)
{
	size_t room = sizeof(a->lists) - a->lists_used;
	char *s = a->lists + a->lists_used;
	int n = snprintf(s, room, "%s,%s", prev, value);

	if (n < 0 || (size_t)n >= room) {
		fprintf(stderr, "mmureplay %s: --%s: too many values\n",
			cmd->name, o->name);
		return NULL;
	}
	a->lists_used += (size_t)n + 1;
	return s;
}

enum cli_parse_status cli_parse(const struct cli_command *cmd, int argc,
				char **argv, struct cli_args *a)
{
	const struct cli_option *o;
	const char *value;
	int i, idx, only_pos = 0;

	memset(a, 0, sizeof(*a));
	a->pos = argv;
	for (o = cmd->options; o->name; o++)
		;
	MR_ASSERT(o - cmd->options <= CLI_MAX_OPTIONS);
	for (i = 0; i < argc; i++) {
		const char *arg = argv[i];

		if (only_pos || arg[0] != '-' || arg[1] == '\0') {
			argv[a->npos++] = argv[i];
			continue;
		}
		if (strcmp(arg, "--") == 0) {
			only_pos = 1;
			continue;
		}
		if (strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0) {
			cli_help(cmd);
			return CLI_PARSE_HELP;
		}
		o = opt_find(cmd, arg, &value);
		if (!o) {
			fprintf(stderr, "mmureplay %s: unknown option '%s' "
				"(see --help)\n", cmd->name, arg);
			return CLI_PARSE_ERROR;
		}
		idx = (int)(o - cmd->options);
		if (o->type == CLI_TYPE_FLAG) {
			if (value) {
				fprintf(stderr, "mmureplay %s: --%s takes no "
					"value\n", cmd->name, o->name);
				return CLI_PARSE_ERROR;
			}
			a->str[idx] = "";
			continue;
		}
		if (!value) {
			if (i + 1 >= argc) {
				fprintf(stderr, "mmureplay %s: option '%s' "
					"needs %s\n", cmd->name, arg, o->arg);
				return CLI_PARSE_ERROR;
			}
			value = argv[++i];
		}
		if (o->type == CLI_TYPE_INT &&
		    opt_int(cmd, o, value, &a->num[idx]) < 0)
			return CLI_PARSE_ERROR;
		if (o->type == CLI_TYPE_LIST && a->str[idx] &&
		    !(value = opt_join(cmd, o, a, a->str[idx], value)))
			return CLI_PARSE_ERROR;
		a->str[idx] = value;
	}
	return CLI_PARSE_OK;
}

static int command_run(const struct cli_command *cmd, unsigned flags,
		       int argc, char **argv)
{
	struct cli_args a;
	int rc, lock_fd = -1;

	switch (cli_parse(cmd, argc, argv, &a)) {
	case CLI_PARSE_OK:
		break;
	case CLI_PARSE_HELP:
		return CLI_EXIT_OK;
	default:
		return CLI_EXIT_USAGE;
	}
	if (flags & CLI_NEEDS_DB) {
		if (a.npos != 1) {
			fprintf(stderr, "mmureplay %s: need exactly one DB "
				"(see --help)\n", cmd->name);
			return CLI_EXIT_USAGE;
		}
		a.path = a.pos[0];
		if ((flags & CLI_DB_WRITE) && (lock_fd = db_writer_lock(a.path)) < 0)
			return CLI_EXIT_INPUT;
		switch (db_open(a.path, !(flags & CLI_DB_WRITE), &a.db)) {
		case DB_OK:
			break;
		case DB_ERR_IO:         /* read-only: the result has nowhere
					 * to go */
			rc = CLI_EXIT_OUTPUT;
			goto end;
		default:
			rc = CLI_EXIT_INPUT;
			goto end;
		}
	}
	rc = cmd->run(&a);
end:
	if (a.db)
		sqlite3_close(a.db);
	db_writer_unlock(lock_fd);
	return rc;
}

static void main_help(void)
{
	size_t i;

	printf("Usage: mmureplay COMMAND [OPTIONS] ARGS...\n\n"
	       "Trace-driven offline analysis of KVM TDP MMU event streams\n"
	       "recorded with LTTng.\n\nCommands:\n");
	for (i = 0; i < NCOMMANDS; i++)
		printf("  %-10s %s\n", commands[i].cmd->name,
		       commands[i].cmd->summary);
	printf("\n'mmureplay COMMAND --help' describes a command.\n\n");
	exit_codes_print();
}

int main(int argc, char **argv)
{
	size_t i;

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
	cleanup_signals_install();
	for (i = 0; i < NCOMMANDS; i++)
		if (strcmp(argv[1], commands[i].cmd->name) == 0)
			return command_run(commands[i].cmd, commands[i].flags,
					   argc - 2, argv + 2);
	fprintf(stderr, "mmureplay: unknown command '%s' (see --help)\n",
		argv[1]);
	return CLI_EXIT_USAGE;
}
