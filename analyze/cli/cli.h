/*
 * The mmureplay command line: one binary, one subcommand per pipeline
 * stage.  Each subcommand declares its options in a table (struct
 * cli_option) that drives both parsing and --help, so the two cannot
 * disagree.
 *
 * Exit codes (documented in --help and the README):
 */
#ifndef MMUREPLAY_CLI_CLI_H
#define MMUREPLAY_CLI_CLI_H

#include <sqlite3.h>

enum cli_exit {
	CLI_EXIT_OK = 0,
	CLI_EXIT_USAGE = 1,     /* bad command line */
	CLI_EXIT_INPUT = 2,     /* bad input: missing, not a trace/DB, newer
				 * schema, corrupt metadata */
	CLI_EXIT_PARTIAL = 3,   /* trace broken mid-way: result written,
				 * marked truncated */
	CLI_EXIT_OUTPUT = 4,    /* cannot write the result */
	CLI_EXIT_INTERNAL = 5,  /* out of memory, missing babeltrace2 plugin */
	CLI_EXIT_CHECK = 6,     /* the replay self-check is off tolerance */
};

struct cli_option {
	const char *name;       /* long name without "--" */
	char short_name;        /* 0: none */
	const char *arg;        /* NULL: a flag */
	const char *help;
};

struct cli_command {
	const char *name;
	const char *usage;      /* after "mmureplay NAME " */
	const char *summary;    /* one line */
	const char *details;    /* paragraph(s) for --help */
	const struct cli_option *options;   /* terminated by name == NULL */
	int (*run)(int argc, char **argv);
};

/*
 * Parse argv against cmd->options.  On return values[i] holds the
 * argument of option i ("" for a given flag, NULL if absent) and the
 * positional arguments are moved to argv[0..*npos).  Returns -1 after
 * printing a usage error, 1 when --help was printed, 0 otherwise.
 */
int cli_parse(const struct cli_command *cmd, int argc, char **argv,
	      const char **values, int *npos);
void cli_help(const struct cli_command *cmd);
/*
 * The command's one positional DB argument (npos of them were given),
 * opened; CLI_EXIT_OK, or the exit status after the error was printed.
 */
int cli_open_db(const struct cli_command *cmd, int npos, char **argv,
		int read_only, sqlite3 **db);

extern const struct cli_command cli_cmd_ingest;
extern const struct cli_command cli_cmd_summary;
extern const struct cli_command cli_cmd_fidelity;
extern const struct cli_command cli_cmd_replay;
extern const struct cli_command cli_cmd_report;
extern const struct cli_command cli_cmd_spikes;

struct capture_info;
struct policy;
struct replay_result;
/*
 * Replay db under each of pols[0..n) into res[] (shared by fidelity and
 * replay); a CLI_EXIT_*; *done results were filled (the caller frees
 * them).  A run is the self-check when its policy is the one ci says was
 * recorded.  The first pass is made once for all the policies.
 */
int cli_replay_policies(sqlite3 *db, const char *path,
			const struct capture_info *ci,
			const struct policy *const *pols, int n,
			unsigned rules_off, struct replay_result *res,
			int *done);
/* The same for one policy; rules_off: model rules a test switched off
 * (engine.h, enum replay_rule), 0 otherwise. */
int cli_replay_one(sqlite3 *db, const char *path,
		   const struct capture_info *ci, const struct policy *pol,
		   unsigned rules_off, struct replay_result *res);
/* The policy db was recorded with (CLI_EXIT_OK), or an error status. */
int cli_recorded_policy(sqlite3 *db, const char *path,
			struct capture_info *ci);
struct fidelity;
/* Copy the capture's damage into fid and warn about it on stderr. */
void cli_capture_damage(const struct capture_info *ci, const char *path,
			struct fidelity *fid);

#endif
