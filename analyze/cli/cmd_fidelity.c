/*
 * mmureplay fidelity: replay a capture under the policy it was recorded
 * with and compare the model's predictions with the trace.
 */
#include "cli/cli.h"

#include "metrics/fidelity.h"
#include "replay/capture_info.h"
#include "replay/engine.h"
#include "report/report.h"
#include "util/log.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

enum { OPT_JSON, OPT_OUTPUT, OPT_POLICY, OPT_RATIO, OPT_VM, OPT_RULE_OFF,
	OPT_N };

static const struct cli_option options[] = {
	[OPT_JSON] = CLI_FLAG("json", 0, "JSON instead of a text table"),
	[OPT_OUTPUT] = CLI_OUTPUT,
	[OPT_POLICY] = CLI_STRING("recorded-policy", 0, "NAME",
				  "the policy the trace was recorded with "
				  "(default: from the manifest's knobs, else "
				  "baseline)"),
	[OPT_RATIO] = CLI_INT("nx-ratio", 0, "N", 1, UINT_MAX,
			      "NX recovery ratio the trace ran with (default: "
			      "from the manifest; unknown: batch sizes "
			      "unchecked)"),
	[OPT_VM] = CLI_VM,
	[OPT_RULE_OFF] = CLI_LIST("rule-off", 0, "NAME[,NAME]",
				  "for tests: switch model rules off, to see "
				  "the self-check notice (names: engine.h)"),
	[OPT_N] = CLI_END,
};

static int run(struct cli_args *a);

const struct cli_command cli_cmd_fidelity = {
	.name = "fidelity",
	.usage = "DB [--json] [-o FILE] [--recorded-policy NAME] [--vm ID]",
	.summary = "Self-check: replay under the recorded policy vs the trace.",
	.details =
	"Replays the capture under the policy it was recorded with and\n"
	"compares what the model predicts (faults the state requires, leaves\n"
	"each invalidation, recovery and teardown must zap, TLB flushes) with\n"
	"what was traced, and, when the NX recovery ratio is known, the pages\n"
	"each recovery batch takes (ceil(NX-split pages / ratio)).  Each\n"
	"metric says what kind of check it is: predicted (fails both ways),\n"
	"one_sided (faults: an unrequired fault fails, a missing one cannot\n"
	"be seen), restated (stock flush contexts come from the zaps),\n"
	"unchecked.  Exit 0 when every metric is within its tolerance\n"
	"(exact for faults, leaf zaps and recovered pages, 10% for\n"
	"flushes), no context mismatched, and at most 5% of the faults\n"
	"needed a race the kernel allows to be explained; 6 when not.\n",
	.options = options,
	.run = run,
};

/* "a,b": the rules named, as a mask; -1 after naming an unknown one. */
static int rules_parse(const char *arg, replay_rules_t *mask)
{
	char buf[256], *tok, *save = NULL;
	enum replay_rule r;

	snprintf(buf, sizeof(buf), "%s", arg);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		r = replay_rule_find(tok);
		if (r == REPLAY_RULES) {
			fprintf(stderr, "mmureplay fidelity: unknown rule "
				"'%s'\n", tok);
			return -1;
		}
		*mask |= REPLAY_RULE_BIT(r);
	}
	return 0;
}

struct fidelity_output {
	const struct fidelity *fid;
	const struct replay_result *res;
	const struct report_vms *vms;
};

static void text(FILE *out, const void *f, const char *db_path)
{
	const struct fidelity_output *o = f;

	report_fidelity_text(out, o->fid, o->res, db_path);
	report_vms_text(out, o->vms);
}

static int run(struct cli_args *a)
{
	const struct policy *pol = NULL;
	struct capture_info ci;
	struct replay_result res = { 0 };
	struct fidelity fid;
	struct report_vms vms = { 0 };
	struct fidelity_output fo = { &fid, &res, &vms };
	int i;
	replay_rules_t rules_off = 0;
	int rc = CLI_EXIT_USAGE;

	if (a->str[OPT_RULE_OFF] &&
	    rules_parse(a->str[OPT_RULE_OFF], &rules_off) < 0)
		goto end;
	if (a->str[OPT_POLICY] && !(pol = policy_find(a->str[OPT_POLICY]))) {
		fprintf(stderr, "mmureplay fidelity: unknown policy '%s'\n",
			a->str[OPT_POLICY]);
		goto end;
	}
	if (pol) {
		rc = CLI_EXIT_INPUT;
		if (capture_info_read(a->db, &ci) < 0)
			goto end;
		ci.recorded = pol;
	} else {
		rc = cli_recorded_policy(a->db, a->path, &ci);
		if (rc != CLI_EXIT_OK)
			goto end;
	}
	if (a->str[OPT_RATIO])
		ci.nx_ratio = a->num[OPT_RATIO];
	rc = cli_narrow_vm(a, OPT_VM, &ci);
	if (rc != CLI_EXIT_OK)
		goto end;
	rc = cli_replay_vms(a->db, a->path, &ci, ci.recorded, rules_off,
			    &vms, &res);
	if (rc != CLI_EXIT_OK)
		goto end;
	/* The capture's verdict is every VM's own. */
	for (i = 0; i < vms.n; i++)
		res.vms_failed += !vms.vm[i].fid.ok;
	fidelity_compute(&res, fidelity_default_tolerance, &fid);
	cli_capture_damage(&ci, a->path, &fid);
	rc = cli_output(a->str[OPT_OUTPUT], a->str[OPT_JSON] != NULL,
			a->str[OPT_JSON] ?
			report_fidelity_json_vms(&fid, &res, a->path, &vms) :
			NULL,
			text, &fo, a->path);
	if (rc == CLI_EXIT_OK && !fid.ok)
		rc = CLI_EXIT_CHECK;
end:
	replay_result_free(&res);
	cli_vms_free(&vms);
	return rc;
}
