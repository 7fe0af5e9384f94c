/*
 * mmureplay compare: run sets of captures side by side, in the shape of a
 * patch cover letter, with the what-if column (metrics/compare.h).
 */
#define _GNU_SOURCE
#include "cli/cli.h"

#include "db/db.h"
#include "metrics/compare.h"
#include "metrics/fidelity.h"
#include "replay/capture_info.h"
#include "replay/policy.h"
#include "report/report.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_A, OPT_B, OPT_THRESHOLD, OPT_JSON, OPT_HTML, OPT_OUTPUT, OPT_VM,
	OPT_N };

static const struct cli_option options[] = {
	[OPT_A] = CLI_MULTI("a", 0, "DB...", "the captures of side A (several "
			    "after one --a, repeated, or comma-separated)"),
	[OPT_B] = CLI_MULTI("b", 0, "DB...", "the captures of side B (as "
			    "--a)"),
	[OPT_THRESHOLD] = CLI_MULTI("threshold-ms", 0, "MS...",
				    "count intervals >= MS (as --a; default "
				    "1 and 3)"),
	[OPT_JSON] = CLI_FLAG("json", 0, "JSON instead of text tables"),
	[OPT_HTML] = CLI_FLAG("html", 0, "a self-contained HTML page instead "
			      "of text tables"),
	[OPT_OUTPUT] = CLI_OUTPUT,
	[OPT_VM] = CLI_VM,
	[OPT_N] = CLI_END,
};

static int run(struct cli_args *a);

const struct cli_command cli_cmd_compare = {
	.name = "compare",
	.usage = "--a DB... --b DB... [--threshold-ms MS...] [--json | "
		 "--html] [-o FILE] [--vm ID]",
	.summary = "Run sets side by side: the cover-letter table, with B "
		   "predicted from A.",
	.details =
	"Each figure (rates per second, NPF service time and probe latency\n"
	"percentiles, intervals >= each threshold, NX recovery, lock waits)\n"
	"as the median (min-max) over the runs of each side, B's change\n"
	"against A, and whether the ranges overlap.  Every run is replayed\n"
	"under its recorded policy first (the self-check, said per run); each\n"
	"A run whose self-check passes is also replayed under B's recorded\n"
	"policy: the what-if column puts that prediction beside B measured.\n"
	"The runs must share the kernel, the workload and every KVM parameter\n"
	"outside the policy, and each side one policy setting; otherwise the\n"
	"command refuses (exit 2) and says which runs differ.  The DBs are\n"
	"only read.  --vm ID compares VM ID of every run (runs of several\n"
	"VMs started in the same order): its own threads' figures, each\n"
	"replay that VM's own state.  Without it, runs that each hold the\n"
	"same number of VMs (two or more) get a block per VM below the\n"
	"tables, which are the host's total: each VM's rows as --vm gives\n"
	"them.\n",
	.options = options,
	.run = run,
};

static void text(FILE *out, const void *c, const char *db_path)
{
	(void)db_path;
	report_compare_text(out, c);
}

static void html(FILE *out, const void *c, const char *db_path)
{
	(void)db_path;
	report_compare_html(out, c);
}

/* Split a comma-joined list in place; the count, or -1 if too many. */
static int split(char *list, char **out, int max)
{
	char *p, *save = NULL;
	int n = 0;

	for (p = strtok_r(list, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
		if (n == max)
			return -1;
		out[n++] = p;
	}
	return n;
}

/*
 * Replay one capture under its recorded policy and, when whatif_pol is
 * given, under that one too; add its figures to side s, run i.  *pol_out:
 * the capture's recorded policy.
 */
static int add_run(struct compare *c, enum compare_side s, int i,
		   const char *path, const struct policy *whatif_pol,
		   const struct policy **pol_out)
{
	struct replay_result res[2];
	const struct policy *pols[2];
	struct capture_info ci;
	struct fidelity fid;
	sqlite3 *db = NULL;
	int rc, done = 0, n;

	memset(res, 0, sizeof(res));
	if (db_open(path, 1, &db) != DB_OK) {
		rc = CLI_EXIT_INPUT;
		goto end;
	}
	rc = cli_recorded_policy(db, path, &ci);
	if (rc != CLI_EXIT_OK)
		goto end;
	rc = cli_vm_check(path, c->vm, ci.nvms);
	if (rc != CLI_EXIT_OK)
		goto end;
	ci.vm = c->vm;
	*pol_out = ci.recorded;
	pols[0] = ci.recorded;
	pols[1] = whatif_pol;
	n = whatif_pol && whatif_pol != ci.recorded ? 2 : 1;
	rc = cli_replay_policies(db, path, &ci, pols, n, 0, res, &done, NULL);
	if (rc != CLI_EXIT_OK)
		goto end;
	/* The replay narrowed its source; the measured figures narrow the
	 * DB, once the replay is done. */
	if (c->vm && db_narrow_vm(db, c->vm, 0) != DB_OK) {
		rc = CLI_EXIT_INPUT;
		goto end;
	}
	fidelity_compute(&res[0], fidelity_default_tolerance, &fid);
	if (!fid.ok)
		log_warn("%s: the self-check fails: no what-if from this run",
			 path);
	switch (compare_add_run(c, s, i, path, db, &ci, &res[0], fid.ok,
				whatif_pol && fid.ok ? &res[n - 1] : NULL)) {
	case COMPARE_OK:
		rc = CLI_EXIT_OK;
		break;
	case COMPARE_ERR_NOMEM:
		log_error("%s: out of memory", path);
		rc = CLI_EXIT_INTERNAL;
		break;
	default:
		rc = CLI_EXIT_INPUT;
	}
end:
	while (done > 0)
		replay_result_free(&res[--done]);
	if (db)
		sqlite3_close(db);
	return rc;
}

/*
 * Both sides' runs into c: B first, whose recorded policy is what each
 * A is replayed under, then A; then checked and finished.
 */
static int add_runs(struct compare *c, char *paths[][COMPARE_MAX_RUNS],
		    const int *n)
{
	const struct policy *pol_b = NULL, *pol;
	int i, rc;

	for (i = 0; i < n[COMPARE_B]; i++) {
		rc = add_run(c, COMPARE_B, i, paths[COMPARE_B][i], NULL, &pol);
		if (rc != CLI_EXIT_OK)
			return rc;
		pol_b = pol_b ? pol_b : pol;
	}
	for (i = 0; i < n[COMPARE_A]; i++) {
		rc = add_run(c, COMPARE_A, i, paths[COMPARE_A][i], pol_b, &pol);
		if (rc != CLI_EXIT_OK)
			return rc;
	}
	if (compare_check(c) != COMPARE_OK) {
		log_error("%s", c->why);
		return CLI_EXIT_INPUT;
	}
	compare_finish(c);
	return CLI_EXIT_OK;
}

/* Runs of the same number of VMs, two or more, without --vm: each VM
 * of every run compared alone too (compare.vms). */
static int add_vms(struct compare *c, char *paths[][COMPARE_MAX_RUNS],
		   const int *n)
{
	int nvms = compare_same_vms(c), v, rc;

	if (c->vm || nvms < 2)
		return CLI_EXIT_OK;
	c->vms = calloc((size_t)nvms, sizeof(*c->vms));
	if (!c->vms) {
		log_error("compare: out of memory");
		return CLI_EXIT_INTERNAL;
	}
	for (v = 1; v <= nvms; v++) {
		struct compare *one = &c->vms[v - 1];

		compare_init(one, c->threshold_ms, c->nthresholds);
		one->vm = v;
		c->nvms = v;
		rc = add_runs(one, paths, n);
		if (rc != CLI_EXIT_OK)
			return rc;
	}
	return CLI_EXIT_OK;
}

static int run(struct cli_args *a)
{
	char lists[3][4096], *paths[COMPARE_SIDES][COMPARE_MAX_RUNS];
	char *thr[COMPARE_MAX_THRESHOLDS], *end;
	double thr_ms[COMPARE_MAX_THRESHOLDS] = { 1, 3 };
	struct compare *c = NULL;
	int n[COMPARE_SIDES], nthr = 2, i, rc = CLI_EXIT_USAGE;

	if (a->str[OPT_JSON] && a->str[OPT_HTML]) {
		fprintf(stderr, "mmureplay compare: --json or --html, not "
			"both\n");
		goto end;
	}
	if (!a->str[OPT_A] || !a->str[OPT_B] || a->npos) {
		fprintf(stderr, "mmureplay compare: need --a DB... and --b "
			"DB... (see --help)\n");
		goto end;
	}
	snprintf(lists[0], sizeof(lists[0]), "%s", a->str[OPT_A]);
	snprintf(lists[1], sizeof(lists[1]), "%s", a->str[OPT_B]);
	n[COMPARE_A] = split(lists[0], paths[COMPARE_A], COMPARE_MAX_RUNS);
	n[COMPARE_B] = split(lists[1], paths[COMPARE_B], COMPARE_MAX_RUNS);
	if (n[COMPARE_A] <= 0 || n[COMPARE_B] <= 0) {
		fprintf(stderr, "mmureplay compare: 1 to %d DBs a side\n",
			COMPARE_MAX_RUNS);
		goto end;
	}
	if (a->str[OPT_THRESHOLD]) {
		snprintf(lists[2], sizeof(lists[2]), "%s",
			 a->str[OPT_THRESHOLD]);
		nthr = split(lists[2], thr, COMPARE_MAX_THRESHOLDS);
		for (i = 0; i < nthr; i++) {
			thr_ms[i] = strtod(thr[i], &end);
			if (*end || !(thr_ms[i] > 0) || thr_ms[i] > 1e6)
				nthr = -1;
		}
		if (nthr <= 0) {
			fprintf(stderr, "mmureplay compare: --threshold-ms: "
				"1 to %d numbers of ms above 0\n",
				COMPARE_MAX_THRESHOLDS);
			goto end;
		}
	}
	rc = CLI_EXIT_INTERNAL;
	c = malloc(sizeof(*c));
	if (!c) {
		log_error("compare: out of memory");
		goto end;
	}
	compare_init(c, thr_ms, nthr);
	c->vm = a->str[OPT_VM] ? (int)a->num[OPT_VM] : 0;
	rc = add_runs(c, paths, n);
	if (rc == CLI_EXIT_OK)
		rc = add_vms(c, paths, n);
	if (rc != CLI_EXIT_OK)
		goto end;
	rc = cli_output(a->str[OPT_OUTPUT], a->str[OPT_JSON] != NULL,
			a->str[OPT_JSON] ? report_compare_json(c) : NULL,
			a->str[OPT_HTML] ? html : text, c, "compare");
end:
	if (c)
		compare_free(c);
	free(c);
	return rc;
}
