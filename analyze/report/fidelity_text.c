/*
 * Fidelity as a text table for a mail (see report.h).
 */
#include "report/report.h"

#include <inttypes.h>

void report_fidelity_text(FILE *out, const struct fidelity *f,
			  const struct replay_result *r, const char *db_path)
{
	char a[32], b[32];
	int i;

	fprintf(out, "Fidelity of %s: replay under %s against the trace: "
		"%s\n\n", db_path, f->policy, f->ok ? "OK" : "FAILED");
	report_damage_text(out, f);
	fprintf(out, "  %-26s %12s %12s %9s %9s\n", "metric", "observed",
		"predicted", "rel.err", "tolerance");
	fprintf(out, "  %-26s %12s %12s %9s %9s\n", "--------------------------",
		"------------", "------------", "---------", "---------");
	for (i = 0; i < FID_METRICS; i++) {
		char name[40];

		if (f->m[i].observed_how[0] == 'u')
			continue;       /* unchecked: not shown */
		snprintf(name, sizeof(name), "%s%s", f->m[i].name,
			 f->m[i].observed_how[0] == 'i' ? " (inferred)" : "");
		fprintf(out, "  %-26s %12s %12s %8.2f%% %8.2f%%%s\n", name,
			report_fmt_count(a, sizeof(a), f->m[i].observed),
			report_fmt_count(b, sizeof(b), f->m[i].predicted),
			100.0 * f->m[i].rel_error, 100.0 * f->m[i].tolerance,
			f->m[i].ok ? "" : "  <-");
	}
	fprintf(out, "\n  memslots %s, permission upgrades %s, dirty logging "
		"%s, lock waits %s\n", replay_source_name(r->slots_src),
		replay_source_name(r->upgrade_src),
		replay_source_name(r->dirty_src),
		replay_source_name(r->lock_src));
	fprintf(out, "  mismatches: %" PRId64 "\n", r->mismatches_total);
	for (i = 0; i < r->nmismatches && i < 10; i++) {
		const struct mismatch *m = &r->mismatches[i];

		fprintf(out, "    %-20s seq %" PRIu64 " at %.6f s, gfn 0x%"
			PRIx64 ": predicted %" PRId64 ", traced %" PRId64 "\n",
			mismatch_kind_names[m->kind], m->seq,
			(double)m->ts / 1e9, m->gfn, m->predicted,
			m->observed);
	}
}
