/*
 * Fidelity as a text table for a mail (see report.h): one row per
 * metric with the kind of check it is, then the faults a race explained,
 * then the mismatches; the first line gives the verdict and what failed.
 */
#include "report/report.h"

#include <inttypes.h>
#include <string.h>

/* Mismatches the text lists (a line each). */
#define TEXT_MISMATCHES 10

/* The stock upgrade inference scored against the measured flag (see
 * fidelity_json.c), when the capture has both. */
static void report_upgrade_inference_text(FILE *out,
					  const struct replay_result *r)
{
	int64_t tp = r->upgrade_infer[1][1], fp = r->upgrade_infer[1][0];
	int64_t fn = r->upgrade_infer[0][1], tn = r->upgrade_infer[0][0];
	char n[32];

	if (!(tp + fp + fn + tn))
		return;
	fprintf(out, "  stock upgrade inference against the measured flag, "
		"%s windows that\n  zapped: precision %.3f, recall %.3f\n",
		report_fmt_count(n, sizeof(n), tp + fp + fn + tn),
		tp + fp ? (double)tp / (double)(tp + fp) : 1.0,
		tp + fn ? (double)tp / (double)(tp + fn) : 1.0);
}

void report_fidelity_text(FILE *out, const struct fidelity *f,
			  const struct replay_result *r, const char *db_path)
{
	char a[32], b[32];
	const char *sep;
	int i;

	fprintf(out, "Fidelity of %s: replay under %s against the trace: "
		"%s\n", db_path, f->policy, f->ok ? "OK" : "FAILED");
	if (!f->ok)
		fprintf(out, "  failed on:%s%s%s%s\n",
			f->metrics_ok ? "" : " a metric off its tolerance;",
			f->mismatches ? " per-context mismatches;" : "",
			f->exempt_ok ? "" : " too many faults exempt;",
			f->vms_ok ? "" : " a VM's own self-check (below);");
	fprintf(out, "\n");
	report_damage_text(out, f);
	report_start_text(out, f, 0);
	/* A capture from the VM's creation reveals nothing: no column. */
	fprintf(out, "  %-16s %10s", "metric", "observed");
	if (f->began_mid_run)
		fprintf(out, " %10s", "revealed");
	fprintf(out, " %10s %8s %8s  %s\n", "predicted", "rel.err", "tol.",
		"check");
	fprintf(out, "  %-16s %10s", "----------------", "----------");
	if (f->began_mid_run)
		fprintf(out, " %10s", "----------");
	fprintf(out, " %10s %8s %8s  %s\n", "----------", "--------",
		"--------", "---------");
	for (i = 0; i < FID_METRICS; i++) {
		if (f->m[i].check == FID_CHECK_UNCHECKED)
			continue;       /* no prediction: not shown */
		fprintf(out, "  %-16s %10s", f->m[i].name,
			report_fmt_count(a, sizeof(a), f->m[i].observed));
		if (f->began_mid_run)
			fprintf(out, " %10s", report_fmt_count(
					a, sizeof(a), f->m[i].revealed));
		fprintf(out, " %10s %7.2f%% %7.2f%%  %s%s\n",
			report_fmt_count(b, sizeof(b), f->m[i].predicted),
			100.0 * f->m[i].rel_error, 100.0 * f->m[i].tolerance,
			fidelity_check_kind_names[f->m[i].check],
			f->m[i].ok ? "" : "  <-");
	}
	for (i = 0; i < FID_METRICS; i++)
		if (f->m[i].check == FID_CHECK_UNCHECKED)
			fprintf(out, "  not checked: %s (%s)\n", f->m[i].name,
				strcmp(f->m[i].observed_how, "unknown") == 0 ?
				"unknown: the source names no\n  threads and "
				"has no recovery events, so the worker's zaps "
				"cannot be\n  told; for perf, convert with "
				"--all" :
				"the recovery ratio is not known");
	fprintf(out, "\n  one_sided: a fault the state did not require fails; "
		"a missing fault\n  cannot be seen.  restated: both sides "
		"come from the zaps.\n");
	if (f->began_mid_run)
		fprintf(out, "  revealed: state from before the capture; "
			"rel.err compares the rest.\n");
	fprintf(out, "\n  faults explained by a change traced after them: "
		"%s (%.2f%% of faults,\n  capped at %.0f%%)", report_fmt_count(
			a, sizeof(a), f->exempt_total), 100.0 * f->exempt_share,
		100.0 * FIDELITY_MAX_EXEMPT_SHARE);
	for (i = 0, sep = ":"; i < EXEMPT_REASONS; i++)
		if (f->exempt[i]) {
			fprintf(out, "%s %s %" PRId64, sep,
				fault_exempt_names[i], f->exempt[i]);
			sep = ",";
		}
	fprintf(out, "%s\n", f->exempt_ok ? "" : "  <-");
	if (f->exempt_capped_share < f->exempt_share)
		fprintf(out, "  of which capped: %.2f%% (explained by a span: "
			"a window, a batch, an ioctl;\n  racing_vcpu, "
			"frozen_entry and write_gap are each tied to a change "
			"of the\n  faulting entry)\n",
			100.0 * f->exempt_capped_share);
	fprintf(out, "\n  memslots %s, permission upgrades %s, dirty logging "
		"%s, lock waits %s\n", replay_source_name(r->slots_src),
		replay_source_name(r->upgrade_src),
		replay_source_name(r->dirty_src),
		replay_source_name(r->lock_src));
	report_upgrade_inference_text(out, r);
	if (r->read_lock_unverifiable)
		fprintf(out, "  recovery under the read lock (the recorded "
			"policy's) cannot be verified here:\n  no traced "
			"recovery batch says which lock it took (a stock "
			"kernel's capture)\n");
	if (r->race_windows)
		fprintf(out, "  stock invalidations racing a fault's install, "
			"settled by the trace (not checked): %" PRId64
			", %" PRId64 " leaf zaps\n", r->race_windows,
			r->zaps_race_settled);
	if (r->nx_batches_settled)
		fprintf(out, "  NX recovery batches sized from a count read "
			"before splits accounted while\n  the worker waited for "
			"mmu_lock, settled by the trace (not checked): %"
			PRId64 "\n", r->nx_batches_settled);
	if (r->span_faults_settled)
		fprintf(out, "  exec faults during a memslot's dirty-logging "
			"change, whose memslots (before\n  or after the swap) "
			"KVM's NX count settled (not checked): %" PRId64
			", %" PRId64 " before\n", r->span_faults_settled,
			r->span_faults_old);
	if (r->nx_guessed_settled)
		fprintf(out, "  NX splits made on the guess that the host maps "
			"huge where nothing since the\n  capture began showed "
			"it: %" PRId64 "; of them KVM's count settled %" PRId64
			" (not checked)\n", r->nx_guessed_splits,
			r->nx_guessed_settled);
	/* Every kind's count, then the first few; all of them are in the
	 * JSON's first REPLAY_SHOWN_MISMATCHES and table replay_mismatch. */
	fprintf(out, "  mismatches: %" PRId64, r->mismatches_total);
	for (i = 0, sep = " ("; i < MISMATCH_KINDS; i++)
		if (r->mismatches_by_kind[i]) {
			fprintf(out, "%s%s %" PRId64, sep,
				mismatch_kind_names[i],
				r->mismatches_by_kind[i]);
			sep = ", ";
		}
	fprintf(out, "%s\n", r->mismatches_total ? ")" : "");
	for (i = 0; i < r->nmismatches && i < TEXT_MISMATCHES; i++) {
		const struct mismatch *m = &r->mismatches[i];

		fprintf(out, "    %-20s seq %" PRIu64 " at %.6f s, gfn 0x%"
			PRIx64 ": predicted %" PRId64 ", traced %" PRId64 "\n",
			mismatch_kind_names[m->kind], m->seq,
			(double)m->ts / 1e9, m->gfn, m->predicted,
			m->observed);
	}
	if (r->mismatches_total > TEXT_MISMATCHES)
		fprintf(out, "    (the first %d of %" PRId64 "; --json lists the "
			"first %d, and 'mmureplay replay'\n    stores every one "
			"in table replay_mismatch)\n", TEXT_MISMATCHES,
			r->mismatches_total, REPLAY_SHOWN_MISMATCHES);
}
