/*
 * The verdict: how the self-check judges the model against the trace
 * (per context, under the recorded policy).
 */
#include "scenario.h"

/* Recorded with the perm-upgrade knob on: the kernel kept the leaf, the
 * upgrade invalidation zapped nothing.  The self-check holds under
 * perm-upgrade and fails under baseline, which predicts the zap. */
static void test_recorded_with_knob(void)
{
	struct replay_result k, b;

	nev = 0;
	memslot(0);
	fault(5, MEV_PFERR_USER);
	spte(VCPU, 1, 5, 0, RO_4K);
	entry();
	notifier(5, 1);
	syscall_exit(VMM);                              /* nothing zapped */
	recorded = &policy_perm_upgrade;
	CHECK(run(&policy_perm_upgrade, &k) == REPLAY_OK);
	CHECK(k.mismatches_total == 0 && k.zaps_predicted == 0);
	recorded = &policy_baseline;
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 1 && b.zaps_predicted == 1 &&
	      b.mismatches[0].kind == MISMATCH_ZAP_COUNT);
	replay_result_free(&k);
	replay_result_free(&b);
}

static void test_self_check_fails(void)
{
	struct replay_result b;

	/* A fault while a writable leaf maps the page: not required. */
	nev = 0;
	memslot(0);
	fault(7, MEV_PFERR_USER);
	spte(VCPU, 1, 7, 0, RW_4K);
	entry();
	fault(7, MEV_PFERR_USER | MEV_PFERR_WRITE);     /* nothing to fix */
	entry();
	/* An invalidation of two pages that zaps only one of two leaves. */
	fault(8, MEV_PFERR_USER);
	spte(VCPU, 1, 8, 0, RW_4K);
	entry();
	notifier(7, 0);
	evs[nev - 1].u.notifier.hva_end += 4096;        /* pages 7 and 8 */
	spte(VMM, 1, 7, RW_4K, 0);
	syscall_exit(VMM);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.faults_observed == 3 && b.faults_predicted == 2);
	CHECK(b.zaps_observed == 1 && b.zaps_predicted == 2);
	CHECK(b.mismatches_total == 2);
	CHECK(b.nmismatches == 2 &&
	      b.mismatches[0].kind == MISMATCH_FAULT_NOT_REQUIRED &&
	      b.mismatches[0].gfn == 7 &&
	      b.mismatches[1].kind == MISMATCH_ZAP_COUNT &&
	      b.mismatches[1].predicted == 2 && b.mismatches[1].observed == 1);
	replay_result_free(&b);
}

/*
 * Two invalidations, one zapping a leaf more than the model holds, one
 * a leaf less: the totals agree, the verdict does not.
 */
static void test_verdict_per_context(void)
{
	struct replay_result b;
	struct fidelity f;

	nev = 0;
	memslot(0);
	mapped(7, RW_4K);
	mapped(8, RW_4K);
	notifier(7, 0);                         /* page 7 only ... */
	spte(VMM, 1, 7, RW_4K, 0);
	spte(VMM, 1, 8, RW_4K, 0);              /* ... zaps 8 too */
	syscall_exit(VMM);
	mapped(9, RW_4K);
	notifier(9, 0);                         /* zaps nothing */
	syscall_exit(VMM);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.zaps_observed == 2 && b.zaps_predicted == 2);
	fidelity_compute(&b, fidelity_default_tolerance, &f);
	CHECK(f.m[FID_LEAF_ZAPS].ok && f.m[FID_FAULTS].ok &&
	      f.mismatches == 3 && !f.ok);
	replay_result_free(&b);

	/* More than 5% of the faults explained by races: not ok. */
	memset(&b, 0, sizeof(b));
	b.faults_observed = b.faults_predicted = 100;
	b.faults_exempt[EXEMPT_WINDOW] = 6;
	fidelity_compute(&b, fidelity_default_tolerance, &f);
	CHECK(f.metrics_ok && !f.exempt_ok && !f.ok);
	b.faults_exempt[EXEMPT_WINDOW] = 5;
	fidelity_compute(&b, fidelity_default_tolerance, &f);
	CHECK(f.exempt_ok && f.ok);
	CHECK(f.m[FID_FAULTS].check == FID_CHECK_ONE_SIDED &&
	      f.m[FID_LEAF_ZAPS].check == FID_CHECK_PREDICTED &&
	      f.m[FID_TLB_FLUSHES].check == FID_CHECK_RESTATED &&
	      f.m[FID_NX_RECOVERED].check == FID_CHECK_UNCHECKED);
}

const struct scenario rules_verdict[] = {
	{ "self_check_under_recorded_knob", test_recorded_with_knob },
	{ "verdict_per_context", test_verdict_per_context },
	{ "self_check_reports_mismatches", test_self_check_fails },
};
const int rules_verdict_n =
	(int)(sizeof(rules_verdict) / sizeof(rules_verdict[0]));
