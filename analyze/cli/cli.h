/*
 * The mmureplay command line: one binary, one subcommand per pipeline
 * stage.
 *
 * Three tables drive it, so that what is parsed, what is checked and
 * what --help says cannot disagree:
 *   - each subcommand's options (struct cli_option): typed, an integer
 *     option with its range, parsed once by cli_parse() for every
 *     command ("--name VALUE", "--name=VALUE", "-x VALUE");
 *   - main.c's commands[], with flags (CLI_NEEDS_DB) that main applies
 *     before the command runs, so every command that reads a DB takes
 *     it, opens it and fails on it the same way;
 *   - CLI_EXIT_LIST below: the exit codes and their meaning, printed by
 *     every --help.  The README's table says the same
 *     (tests/test_exit_codes.py compares them).
 *
 * Invariants: a command returns an enum cli_exit; an error is one line
 * on stderr, printed where it is detected; the same failure has the same
 * code in every command (a DB that cannot be read or queried: INPUT; out
 * of memory: INTERNAL; a result that cannot be written: OUTPUT).
 */
#ifndef MMUREPLAY_CLI_CLI_H
#define MMUREPLAY_CLI_CLI_H

#include "metrics/fidelity.h"
#include "metrics/replay_metrics.h"
#include "replay/engine.h"
#include "report/report.h"

#include <sqlite3.h>
#include <stdio.h>

/* X(enumerator, code, meaning) */
#define CLI_EXIT_LIST(X) \
	X(CLI_EXIT_OK, 0, "success") \
	X(CLI_EXIT_USAGE, 1, "bad command line: unknown command, option or " \
	  "name, an option's value missing or out of its range") \
	X(CLI_EXIT_INPUT, 2, "bad input: missing path, not a trace (CTF, " \
	  "trace.dat or ftrace text), corrupt metadata or headers, a text " \
	  "line that does not follow its event's format, not a capture DB, " \
	  "DB from a newer schema, a CTF read stopped by the no-progress " \
	  "watchdog") \
	X(CLI_EXIT_PARTIAL, 3, "the trace breaks mid-way (e.g. a stream " \
	  "file or a text copy cut short): what was read is written and " \
	  "marked truncated") \
	X(CLI_EXIT_OUTPUT, 4, "the output cannot be written (nothing is " \
	  "left half-written)") \
	X(CLI_EXIT_INTERNAL, 5, "internal error (out of memory, babeltrace2 " \
	  "plugins missing)") \
	X(CLI_EXIT_CHECK, 6, "the replay self-check is off its tolerance " \
	  "(what-if withheld)") \
	X(CLI_EXIT_CANNOT, 7, "the source cannot answer the command: the " \
	  "events it needs were not recorded (said in one line, naming " \
	  "them)") \
	X(CLI_EXIT_SIGHUP, 129, "stopped by SIGHUP: the unfinished output " \
	  "is removed, an earlier one is untouched") \
	X(CLI_EXIT_SIGINT, 130, "stopped by SIGINT (Ctrl-C), the same way") \
	X(CLI_EXIT_SIGTERM, 143, "stopped by SIGTERM, the same way")

#define CLI_EXIT_ENUM_ENTRY(e, code, meaning) e = code,
enum cli_exit {
	CLI_EXIT_LIST(CLI_EXIT_ENUM_ENTRY)
};

enum cli_opt_type {
	CLI_TYPE_FLAG,          /* no value */
	CLI_TYPE_STRING,        /* one value; given twice, the last */
	CLI_TYPE_LIST,          /* repeatable: the values, comma-joined */
	/* as CLI_TYPE_LIST, and the words after its value up to the next
	 * option are values too ("--a X Y --b Z"): only for a command
	 * without positional arguments, which those words would be */
	CLI_TYPE_MULTI,
	CLI_TYPE_INT,           /* a decimal integer in [min, max] */
};

struct cli_option {
	const char *name;       /* long name without "--" */
	char short_name;        /* 0: none */
	enum cli_opt_type type;
	const char *arg;        /* the value's name in --help */
	const char *help;
	long long min, max;     /* CLI_TYPE_INT */
};

#define CLI_FLAG(l, s, h) { (l), (s), CLI_TYPE_FLAG, NULL, (h), 0, 0 }
#define CLI_STRING(l, s, a, h) { (l), (s), CLI_TYPE_STRING, (a), (h), 0, 0 }
#define CLI_LIST(l, s, a, h) { (l), (s), CLI_TYPE_LIST, (a), (h), 0, 0 }
#define CLI_MULTI(l, s, a, h) { (l), (s), CLI_TYPE_MULTI, (a), (h), 0, 0 }
#define CLI_INT(l, s, a, lo, hi, h) \
	{ (l), (s), CLI_TYPE_INT, (a), (h), (lo), (hi) }
/* -o FILE of every command that writes a result (cli_output()). */
#define CLI_OUTPUT CLI_STRING("output", 'o', "FILE", \
			      "write to FILE (temp + rename) instead of stdout")
/* --vm ID of every command that may narrow to one VM (cli_narrow_vm()). */
#define CLI_VM CLI_INT("vm", 0, "ID", 1, 1 << 30, \
		       "this VM alone (table vm's id; summary lists them)")
#define CLI_END { NULL, 0, CLI_TYPE_FLAG, NULL, NULL, 0, 0 }

/* Options one command may have (its table, CLI_END excluded). */
#define CLI_MAX_OPTIONS 16

/* What main hands a command: its options, parsed, and its DB. */
struct cli_args {
	/* Option i as given ("" for a flag), NULL when absent. */
	const char *str[CLI_MAX_OPTIONS];
	long long num[CLI_MAX_OPTIONS];         /* CLI_TYPE_INT: the value */
	char **pos;                             /* positional arguments */
	int npos;
	const char *path;                       /* CLI_NEEDS_DB: the DB */
	sqlite3 *db;                            /* open; main closes it */
	/* Where repeated CLI_TYPE_LIST values are joined (str[] points in). */
	char lists[4096];
	size_t lists_used;
};

/* commands[] flags (main.c), applied before the command runs. */
enum cli_command_flags {
	CLI_NEEDS_DB = 1 << 0,  /* exactly one positional DB, opened */
	CLI_DB_WRITE = 1 << 1,  /* ... read-write (default read-only) */
};

struct cli_command {
	const char *name;
	const char *usage;      /* after "mmureplay NAME " */
	const char *summary;    /* one line */
	const char *details;    /* paragraph(s) for --help */
	const struct cli_option *options;   /* ends with CLI_END */
	int (*run)(struct cli_args *a);     /* an enum cli_exit */
};

enum cli_parse_status {
	CLI_PARSE_OK = 0,
	CLI_PARSE_HELP,         /* --help was printed */
	CLI_PARSE_ERROR,        /* a usage error was printed */
};

/*
 * Parses argv against cmd->options into *a, the positional arguments
 * into a->pos.  Returns CLI_PARSE_OK; CLI_PARSE_HELP after printing
 * --help; CLI_PARSE_ERROR after printing the usage error on stderr.
 */
enum cli_parse_status cli_parse(const struct cli_command *cmd, int argc,
				char **argv, struct cli_args *a);
/* Prints cmd's --help (usage, details, options, exit codes) on stdout. */
void cli_help(const struct cli_command *cmd);

/* Writes res as text, naming the DB it came from. */
typedef void cli_text_fn(FILE *out, const void *res, const char *db_path);
/*
 * Writes a command's result to path (NULL or "-": stdout), whole or not
 * at all: json (malloc'd, freed here; NULL means out of memory) when
 * as_json, else text(res).  Returns CLI_EXIT_OK; on error, after saying
 * why on stderr, CLI_EXIT_OUTPUT (path cannot be written) or
 * CLI_EXIT_INTERNAL (out of memory).
 */
int cli_output(const char *path, int as_json, char *json,
	       cli_text_fn *text, const void *res, const char *db_path);

/* Returns the exit code for summary_compute()'s status
 * (metrics/summary.h): CLI_EXIT_OK, CLI_EXIT_INTERNAL or
 * CLI_EXIT_INPUT. */
int cli_exit_summary(int summary_status);
/* Returns the exit code for ingest_run()'s status (ingest/ingest.h). */
int cli_exit_ingest(int ingest_status);

extern const struct cli_command cli_cmd_ingest;
extern const struct cli_command cli_cmd_summary;
extern const struct cli_command cli_cmd_fidelity;
extern const struct cli_command cli_cmd_replay;
extern const struct cli_command cli_cmd_report;
extern const struct cli_command cli_cmd_spikes;
extern const struct cli_command cli_cmd_compare;
extern const struct cli_command cli_cmd_export;
extern const struct cli_command cli_cmd_analyze;
extern const struct cli_command cli_cmd_merge;
extern const struct cli_command cli_cmd_fleet_report;

/* cli/replay_common.c: what the commands that replay share. */
struct capture_info;
struct fidelity;
struct policy;
struct replay_result;

/*
 * Replays db (path names it in messages) under each of pols[0..n), in
 * one first pass and one pass per policy, into res[0..n).  A run is the
 * self-check when its policy is the one ci says was recorded; rules_off
 * holds model rules a test switched off (engine.h, enum replay_rule), 0
 * otherwise.  Sets *done to the number of results filled, which the
 * caller frees with replay_result_free(), on success and on error.
 * A capture of several VMs is replayed VM by VM, each alone, and res
 * holds the sums; vms, when not NULL, receives each VM's figures under
 * each policy (report_vm.met; vms->n 0 for a capture of one state, and
 * one VM under --vm), which the caller frees with cli_vms_free().
 * Returns CLI_EXIT_OK; on error, after saying why on stderr,
 * CLI_EXIT_USAGE (a policy's period is not a multiple of the recorded
 * one), CLI_EXIT_INTERNAL (out of memory) or CLI_EXIT_INPUT (the DB
 * cannot be read).
 */
struct report_vms;
int cli_replay_policies(sqlite3 *db, const char *path,
			const struct capture_info *ci,
			const struct policy *const *pols, int n,
			replay_rules_t rules_off, struct replay_result *res,
			int *done, struct report_vms *vms);
/* CLI_EXIT_OK when the capture's nvms VMs hold VM vm (0: none asked
 * for); else, after one line on stderr, CLI_EXIT_USAGE (narrow.c). */
int cli_vm_check(const char *path, long long vm, int nvms);
/* Narrows a->db to the VM option opt names, if given (narrow.c,
 * db_narrow_vm(), keeping the rows of no VM with with_none):
 * CLI_EXIT_OK, or, after saying why on stderr, CLI_EXIT_USAGE (the DB
 * has no such VM) or CLI_EXIT_INPUT. */
int cli_narrow_db(const struct cli_args *a, int opt, int with_none);
/* Narrows ci to the VM option opt names, if given: CLI_EXIT_OK, or,
 * after saying why on stderr, CLI_EXIT_USAGE (the DB has no such VM). */
int cli_narrow_vm(const struct cli_args *a, int opt,
		  struct capture_info *ci);
/*
 * Replays db under pol per VM (each VM alone, its own state), or the one
 * ci->vm narrows to: each VM's result and self-check in vms (the caller
 * frees it with cli_vms_free()), their sum in *total.  A capture with
 * fewer than two VMs and no --vm is replayed as one state: vms->n 0.
 * Returns what cli_replay_one() does.
 */
int cli_replay_vms(sqlite3 *db, const char *path,
		   const struct capture_info *ci, const struct policy *pol,
		   replay_rules_t rules_off, struct report_vms *vms,
		   struct replay_result *total);
void cli_vms_free(struct report_vms *vms);
/* Replays db under pol alone into *res, as cli_replay_policies() does;
 * returns its exit code, and res holds a result (to free) only when
 * that is CLI_EXIT_OK. */
int cli_replay_one(sqlite3 *db, const char *path,
		   const struct capture_info *ci, const struct policy *pol,
		   replay_rules_t rules_off, struct replay_result *res);
/* As cli_replay_one(), with hook told each decision of the policy
 * (replay_opts.hook): mmureplay export --policy. */
int cli_replay_hooked(sqlite3 *db, const char *path,
		      const struct capture_info *ci, const struct policy *pol,
		      const struct replay_hook *hook,
		      struct replay_result *res);
/*
 * Fills *ci with what the replay needs to know of db (capture_info.h),
 * the policy it was recorded with among it.  Returns CLI_EXIT_OK; on
 * error, after saying why on stderr, CLI_EXIT_CANNOT (the source lacks
 * the events a replay needs), CLI_EXIT_INTERNAL (out of memory) or
 * CLI_EXIT_INPUT (the DB cannot be read, or the recorded knobs make no
 * policy).
 */
int cli_recorded_policy(sqlite3 *db, const char *path,
			struct capture_info *ci);
/* Copies the damage ci says the capture carries (lost events, a stream
 * cut short) into fid, and warns on stderr when there is any. */
void cli_capture_damage(const struct capture_info *ci, const char *path,
			struct fidelity *fid);


/*
 * One replay of a DB under its policies, stored in it: what replay and
 * analyze do alike.  pols[0] is the recorded policy; res, met hold each
 * policy's result and figures; fid the self-check; vms each VM's
 * figures (vms.n 0 for a capture of one state); shown the policies
 * whose figures may be shown (0 after a failed self-check without
 * force).
 */
#define CLI_MAX_POLICIES 16
struct cli_replay {
	const struct policy *pols[CLI_MAX_POLICIES];
	struct replay_result res[CLI_MAX_POLICIES];
	struct replay_metrics met[CLI_MAX_POLICIES];
	struct fidelity fid;
	struct report_vms vms;
	int n, shown, done;
};
/*
 * Replays db (path names it) under the recorded policy and those
 * policy_list names (comma-separated; NULL: every registered policy),
 * computes the self-check, and stores the runs (replay_run and the
 * tables beside it; only the recorded policy's after a failed
 * self-check, unless force).  cmd names the command in messages.
 * *out receives the result, which the caller frees with
 * cli_replay_free() whatever the return.  Returns CLI_EXIT_OK (the
 * self-check's verdict is in (*out)->fid.ok); on error, after saying
 * why on stderr, CLI_EXIT_USAGE (an unknown policy, too many, a period
 * that is no multiple of the recorded one), CLI_EXIT_OUTPUT (the DB
 * cannot be written), CLI_EXIT_INPUT or CLI_EXIT_INTERNAL.
 */
int cli_replay_stored(sqlite3 *db, const char *path,
		      const struct capture_info *ci, const char *cmd,
		      const char *policy_list, int force,
		      struct cli_replay **out);
void cli_replay_free(struct cli_replay *r);

#endif
