/*
 * mmureplay analyze: what a fleet needs of one capture, in one process:
 * ingest, the self-check, the replay of the chosen policies, stored, and
 * one shard (fleet/fleet.h) published whole under the capture's ID.
 *
 * A capture that fails still makes a shard, one that says how and why
 * (status, stage, the first error line), so a fleet counts it once as a
 * failure instead of retrying it forever; only a command-line mistake,
 * an unwritable shard directory or a signal leave none.
 */
#include "cli/cli.h"

#include "db/db.h"
#include "fleet/fleet.h"
#include "ingest/ingest.h"
#include "replay/capture_info.h"
#include "replay/policy.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { OPT_OUTPUT, OPT_POLICY, OPT_SWEEPS, OPT_HOST, OPT_LABEL,
       OPT_VM_LABEL, OPT_N };

static const struct cli_option options[] = {
	[OPT_OUTPUT] = CLI_STRING("output", 'o', "DIR",
				  "the shards' directory (required; made if "
				  "missing): the shard is DIR/ID"),
	[OPT_POLICY] = CLI_LIST("policy", 'p', "NAME",
				"policy to replay (repeatable; default: "
				"every registered policy and the sweeps)"),
	[OPT_SWEEPS] = CLI_STRING("sweeps", 0, "F,F",
				  "NX recovery ratio and period sweeps, as "
				  "factors of the recorded values (default "
				  "2,4; 'none': no sweep)"),
	[OPT_HOST] = CLI_STRING("host", 0, "NAME",
				"the host's name in the fleet (default: the "
				"capture's)"),
	[OPT_LABEL] = CLI_LIST("label", 0, "KEY=VALUE",
			       "a label of the capture (repeatable)"),
	[OPT_VM_LABEL] = CLI_LIST("vm-label", 0, "ID=NAME",
				  "a name for VM ID (table vm; repeatable)"),
	[OPT_N] = CLI_END,
};

static int run(struct cli_args *a);

const struct cli_command cli_cmd_analyze = {
	.name = "analyze",
	.usage = "CAPTURE... -o DIR [--policy NAME]... [--host NAME] "
		 "[--label KEY=VALUE]...",
	.summary = "A fleet's unit of work: ingest, self-check and replay one "
		   "capture into a shard.",
	.details =
	"Runs, in one process, what a fleet needs of one capture: ingest of\n"
	"CAPTURE... (as mmureplay ingest reads them), the self-check, the\n"
	"replay of the policies (stored in the DB as mmureplay replay\n"
	"stores them; the what-if withheld after a failed self-check), and\n"
	"writes one shard: DIR/ID/capture.db and DIR/ID/shard.json (schemas/\n"
	"shard.schema.json: the capture, its VMs, the verdict, each policy's\n"
	"figures, per VM and per second).  ID is the capture's host, the UTC\n"
	"time of its first event and a hash of what identifies it, so the\n"
	"same capture gives the same shard wherever it is analysed.  The\n"
	"shard is made in DIR/.analyze.tmp-PID and renamed when whole; one\n"
	"already there is replaced.  The shard's path is printed on stdout.\n"
	"By default the replay covers every registered policy and the NX\n"
	"recovery sweeps nx-ratio and nx-period at 2 and 4 times the\n"
	"recorded values (when the manifest gives them).\n"
	"A capture that cannot be analysed still gets a shard saying so:\n"
	"status failed (unreadable; ID \"unreadable-\" and a hash of the\n"
	"paths), cannot (the events a replay needs were not recorded),\n"
	"check_failed (the self-check is off: no what-if), partial (the\n"
	"trace breaks mid-way) or ok; with the stage and the first error\n"
	"line.  The exit status is the capture's (0, 2, 3, 6 or 7), so a\n"
	"shell loop sees the failures; a usage error, a shard that cannot be\n"
	"written (4) or a signal leave no shard.  mmureplay merge puts shards\n"
	"into a fleet DB (docs/fleet.md).\n",
	.options = options,
	.run = run,
};

/*
 * The error lines of a run: while the capture is analysed, stderr (fd 2)
 * goes to an unlinked temporary file, which is copied to the real stderr
 * afterwards; its first error line becomes the shard's "error".
 */
struct errcap {
	int saved_fd;           /* the real stderr, or -1 */
	FILE *fp;               /* the capture file */
};

static void errcap_start(struct errcap *e)
{
	e->saved_fd = -1;
	e->fp = tmpfile();
	if (!e->fp)
		return;
	fflush(stderr);
	e->saved_fd = dup(STDERR_FILENO);
	if (e->saved_fd < 0 || dup2(fileno(e->fp), STDERR_FILENO) < 0) {
		if (e->saved_fd >= 0)
			close(e->saved_fd);
		e->saved_fd = -1;
		fclose(e->fp);
		e->fp = NULL;
	}
}

/*
 * Restores stderr, copies what was said to it, and returns the first
 * error line (malloc'd, without "mmureplay: " and with every "strip"
 * removed from it), or NULL.
 */
static char *errcap_stop(struct errcap *e, const char *strip)
{
	char line[1024], *first = NULL, *p, *s;
	size_t n;

	if (!e->fp)
		return NULL;
	fflush(stderr);
	dup2(e->saved_fd, STDERR_FILENO);
	close(e->saved_fd);
	rewind(e->fp);
	while (fgets(line, sizeof(line), e->fp)) {
		fputs(line, stderr);
		if (first || strncmp(line, "mmureplay", 9) ||
		    strstr(line, ": warning: "))
			continue;
		p = line + 9;
		if (!strncmp(p, ": ", 2))
			p += 2;
		p[strcspn(p, "\n")] = 0;
		n = strlen(strip);
		while (n && (s = strstr(p, strip)))
			memmove(s, s + n, strlen(s + n) + 1);
		first = strdup(p);
	}
	fclose(e->fp);
	e->fp = NULL;
	return first;
}

/* mkdir -p: 0, or -1 with errno. */
static int mkdir_p(const char *dir)
{
	char buf[PATH_MAX], *p;

	snprintf(buf, sizeof(buf), "%s", dir);
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = 0;
		if (mkdir(buf, 0777) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	return mkdir(buf, 0777) < 0 && errno != EEXIST ? -1 : 0;
}

/* Removes dir and the files in it (a shard holds no subdirectory). */
static void rm_shard_dir(const char *dir)
{
	char path[PATH_MAX];
	struct dirent *de;
	DIR *d = opendir(dir);

	while (d && (de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* Removes the .analyze.tmp-PID directories of processes that are gone
 * (killed while they worked). */
static void reap_stale(const char *dir)
{
	static const char prefix[] = ".analyze.tmp-";
	char path[PATH_MAX], *end;
	struct dirent *de;
	DIR *d = opendir(dir);
	long pid;

	while (d && (de = readdir(d))) {
		if (strncmp(de->d_name, prefix, sizeof(prefix) - 1))
			continue;
		pid = strtol(de->d_name + sizeof(prefix) - 1, &end, 10);
		if (*end || pid <= 0 || pid == (long)getpid() ||
		    kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		rm_shard_dir(path);
	}
	if (d)
		closedir(d);
}

/* The policies to replay by default, comma-joined into buf: every
 * registered one, and the sweeps at each factor of the recorded ratio
 * and period.  Returns buf. */
static const char *default_policies(char *buf, size_t len,
				    const char *sweeps,
				    const struct capture_info *ci)
{
	char copy[256], *tok, *save = NULL;
	size_t used = 0;
	long f;
	int i;

	buf[0] = 0;
	for (i = 0; policy_registry[i]; i++)
		used += (size_t)snprintf(buf + used, len - used, "%s%s",
					 used ? "," : "",
					 policy_registry[i]->name);
	if (!strcmp(sweeps, "none"))
		return buf;
	snprintf(copy, sizeof(copy), "%s", sweeps);
	for (tok = strtok_r(copy, ",", &save); tok && used < len;
	     tok = strtok_r(NULL, ",", &save)) {
		f = strtol(tok, NULL, 10);
		if (f < 2)
			continue;
		if (ci->nx_ratio > 0)
			used += (size_t)snprintf(buf + used, len - used,
						 ",nx-ratio=%lld",
						 (long long)(ci->nx_ratio * f));
		if (ci->nx_period_ms > 0 && used < len)
			used += (size_t)snprintf(buf + used, len - used,
						 ",nx-period=%lld",
						 (long long)(ci->nx_period_ms *
							     f));
	}
	return buf;
}

/* The self-check's failure in a line: the metrics off, the exemption
 * cap, the VMs that fail. */
static void check_reason(char *buf, size_t len, const struct fidelity *f)
{
	size_t used = 0;
	int i;

	buf[0] = 0;
	for (i = 0; i < FID_METRICS && used < len; i++) {
		if (f->m[i].ok)
			continue;
		used += (size_t)snprintf(buf + used, len - used,
					 "%s%s %lld predicted, %lld traced",
					 used ? "; " : "", f->m[i].name,
					 (long long)f->m[i].predicted,
					 (long long)f->m[i].observed);
	}
	if (!f->exempt_ok && used < len)
		used += (size_t)snprintf(buf + used, len - used,
					 "%sexempt share %.1f%% over %.0f%%",
					 used ? "; " : "",
					 100.0 * f->exempt_capped_share,
					 100.0 * FIDELITY_MAX_EXEMPT_SHARE);
	if (!f->vms_ok && used < len)
		used += (size_t)snprintf(buf + used, len - used,
					 "%sa VM's own self-check fails",
					 used ? "; " : "");
	if (!used)
		snprintf(buf, len, "per-context mismatches: %lld",
			 (long long)f->mismatches);
}

/* What each fleet figure of each policy replayed is. */
static void kinds_fill(const struct cli_replay *r, const char *recorded,
		       struct fleet_kinds *out)
{
	static const enum policy_figure figs[FLEET_FIGURES] = {
		POLICY_FIG_FAULTS, POLICY_FIG_LEAF_ZAPS,
		POLICY_FIG_TLB_FLUSHES, POLICY_FIG_LOCK_WAITS,
	};
	int i, f;

	for (i = 0; i < r->n; i++) {
		out[i].policy = r->pols[i]->name;
		for (f = 0; f < FLEET_FIGURES; f++)
			out[i].kind[f] = policy_figure_kind_name(
				replay_metrics_figure_kind(&r->met[i],
							   recorded,
							   figs[f]));
	}
}

/* The analysis proper, with stderr captured: fills in and, when the DB
 * could be opened, leaves it open in in->db.  Returns the exit code. */
static int analyze(struct cli_args *a, char *db_path,
		   struct fleet_shard_in *in, struct cli_replay **rp,
		   struct fleet_kinds *kinds, char *reason, size_t reason_len)
{
	struct ingest_opts opts = { 0 };
	struct ingest_result ires;
	struct capture_info ci;
	char pols[1024];
	int rc, truncated;

	opts.inputs = (const char *const *)a->pos;
	opts.ninputs = a->npos;
	opts.output = db_path;
	opts.watchdog_s = 60;
	opts.watchdog_exit = CLI_EXIT_INPUT;
	in->stage = "ingest";
	in->status = FLEET_FAILED;
	rc = cli_exit_ingest(ingest_run(&opts, &ires));
	if (rc != CLI_EXIT_OK && rc != CLI_EXIT_PARTIAL)
		return rc;
	truncated = rc == CLI_EXIT_PARTIAL;
	if (db_open(db_path, 0, &in->db) != DB_OK) {
		in->db = NULL;
		return CLI_EXIT_INPUT;
	}
	in->stage = "replay";
	rc = cli_recorded_policy(in->db, db_path, &ci);
	if (rc == CLI_EXIT_CANNOT)
		in->status = FLEET_CANNOT;
	if (rc != CLI_EXIT_OK)
		return rc;
	in->recorded_policy = ci.recorded->name;
	in->nx_ratio = ci.nx_ratio;
	in->nx_period_ms = ci.nx_period_ms;
	rc = cli_replay_stored(in->db, db_path, &ci, "analyze",
			       a->str[OPT_POLICY] ? a->str[OPT_POLICY] :
			       default_policies(pols, sizeof(pols),
						a->str[OPT_SWEEPS] ?
						a->str[OPT_SWEEPS] : "2,4",
						&ci), 0, rp);
	if (rc != CLI_EXIT_OK)
		return rc;
	kinds_fill(*rp, ci.recorded->name, kinds);
	in->kinds = kinds;
	in->nkinds = (*rp)->n;
	in->stage = NULL;
	if (!(*rp)->fid.ok) {
		check_reason(reason, reason_len, &(*rp)->fid);
		in->check_reason = reason;
		in->status = FLEET_CHECK_FAILED;
		return CLI_EXIT_CHECK;
	}
	in->status = truncated ? FLEET_PARTIAL : FLEET_OK;
	return truncated ? CLI_EXIT_PARTIAL : CLI_EXIT_OK;
}

/* Writes text as path; 0, or -1 after saying why. */
static int write_file(const char *path, const char *text)
{
	FILE *fp = fopen(path, "w");
	int bad;

	if (!fp) {
		log_error("%s: cannot write: %s", path, strerror(errno));
		return -1;
	}
	bad = fputs(text, fp) < 0 || fputc('\n', fp) == EOF;
	bad |= fflush(fp) != 0 || fsync(fileno(fp)) != 0;
	bad |= fclose(fp) != 0;
	if (bad)
		log_error("%s: cannot write: %s", path, strerror(errno));
	return bad ? -1 : 0;
}

/* Renames the finished tmp over dir/id, replacing a shard there.
 * Returns 0, or -1 after saying why. */
static int publish(const char *tmp, const char *dir, const char *id,
		   char *final, size_t len)
{
	char old[PATH_MAX];
	int tries;

	snprintf(final, len, "%s/%s", dir, id);
	cleanup_signals_hold();
	for (tries = 0; tries < 8; tries++) {
		if (rename(tmp, final) == 0) {
			cleanup_signals_published();
			return 0;
		}
		if (errno != ENOTEMPTY && errno != EEXIST)
			break;
		/* A shard of the same capture (an earlier run, or another
		 * worker given the same task): set it aside, then drop it. */
		snprintf(old, sizeof(old), "%s/.analyze.old-%ld-%d", dir,
			 (long)getpid(), tries);
		if (rename(final, old) == 0)
			rm_shard_dir(old);
	}
	log_error("%s: cannot publish the shard: %s", final, strerror(errno));
	cleanup_signals_release();
	return -1;
}

static int run(struct cli_args *a)
{
	struct fleet_shard_in in = { 0 };
	struct cli_replay *r = NULL;
	struct errcap ec;
	char tmp[PATH_MAX - 64], db_path[PATH_MAX], final[PATH_MAX];
	char json_path[PATH_MAX], strip[PATH_MAX + 1], reason[512];
	struct fleet_kinds kinds[CLI_MAX_POLICIES];
	char **abs = NULL, *error = NULL, *id = NULL, *json = NULL;
	const char *dir = a->str[OPT_OUTPUT];
	int rc, capture_rc, i;

	if (a->npos == 0 || !dir) {
		fprintf(stderr, "mmureplay analyze: need CAPTURE... and -o DIR "
			"(see --help)\n");
		return CLI_EXIT_USAGE;
	}
	if (strlen(dir) > sizeof(tmp) - 64) {
		log_error("%s: path too long", dir);
		return CLI_EXIT_USAGE;
	}
	if (mkdir_p(dir) < 0) {
		log_error("%s: cannot make the shards' directory: %s", dir,
			  strerror(errno));
		return CLI_EXIT_OUTPUT;
	}
	reap_stale(dir);
	snprintf(tmp, sizeof(tmp), "%s/.analyze.tmp-%ld", dir, (long)getpid());
	rm_shard_dir(tmp);
	if (mkdir(tmp, 0777) < 0) {
		log_error("%s: cannot write: %s", tmp, strerror(errno));
		return CLI_EXIT_OUTPUT;
	}
	abs = calloc((size_t)a->npos, sizeof(*abs));
	if (!abs) {
		rc = CLI_EXIT_INTERNAL;
		goto end;
	}
	for (i = 0; i < a->npos; i++) {
		abs[i] = realpath(a->pos[i], NULL);
		if (!abs[i])
			abs[i] = strdup(a->pos[i]);
		if (!abs[i]) {
			rc = CLI_EXIT_INTERNAL;
			goto end;
		}
	}
	in.sources = (const char *const *)abs;
	in.nsources = a->npos;
	in.host = a->str[OPT_HOST];
	in.labels = a->str[OPT_LABEL];
	in.vm_labels = a->str[OPT_VM_LABEL];
	snprintf(db_path, sizeof(db_path), "%s/capture.db", tmp);
	snprintf(strip, sizeof(strip), "%s/", tmp);
	errcap_start(&ec);
	capture_rc = analyze(a, db_path, &in, &r, kinds, reason,
			     sizeof(reason));
	error = errcap_stop(&ec, strip);
	in.exit_code = capture_rc;
	in.error = capture_rc == CLI_EXIT_OK || capture_rc == CLI_EXIT_CHECK ?
		   NULL : error;
	if (capture_rc == CLI_EXIT_OUTPUT || capture_rc == CLI_EXIT_INTERNAL) {
		/* Not the capture's fault: no shard, so it is redone. */
		rc = capture_rc;
		goto end;
	}
	rc = CLI_EXIT_INTERNAL;
	id = fleet_shard_id(&in);
	if (!id)
		goto end;
	json = fleet_shard_json(&in, id);
	if (!json)
		goto end;
	if (in.db) {
		sqlite3_close(in.db);
		in.db = NULL;
	}
	snprintf(json_path, sizeof(json_path), "%s/shard.json", tmp);
	rc = CLI_EXIT_OUTPUT;
	if (write_file(json_path, json) < 0 ||
	    publish(tmp, dir, id, final, sizeof(final)) < 0)
		goto end;
	printf("%s\n", final);
	rc = fflush(stdout) == 0 ? capture_rc : CLI_EXIT_OUTPUT;
end:
	if (in.db)
		sqlite3_close(in.db);
	rm_shard_dir(tmp);
	cli_replay_free(r);
	for (i = 0; abs && i < a->npos; i++)
		free(abs[i]);
	free(abs);
	free(error);
	free(id);
	free(json);
	return rc;
}
