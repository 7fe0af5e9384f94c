/*
 * Trace timing: a change and its tracepoint apart in time (the SPTE is
 * written before kvm_tdp_mmu_spte_changed fires, an NPF is traced at the
 * exit before mmu_lock, a memslot swap comes before its commit event, the
 * NX worker reads its count before the lock, another thread works ahead
 * of a walk).  Each scenario is an order of events the kernel can trace
 * that a model reading the trace as instants would get wrong.
 */
#include "scenario.h"

/*
 * Two vCPUs fault on one page (kvm_page_table_test with 2 vCPUs): the
 * second vCPU's NPF was taken before the first installed the leaf, its
 * fault is traced after.  Exempt as racing_vcpu when the install came
 * after the faulting vCPU's last entry; a mismatch when it came before
 * (the vCPU entered with the leaf there), when the faulting vCPU made
 * the leaf itself, or with the rule off.
 */
static void race_scenario(int enter_after_install)
{
	nev = 0;
	ev(MEV_VCPU_ENTRY, VCPU);
	ev(MEV_VCPU_ENTRY, VCPU2);
	vcpu_fault(VCPU2, 9, MEV_PFERR_USER);
	spte(VCPU2, 1, 9, 0, RO_4K);
	ev(MEV_VCPU_ENTRY, VCPU2);
	if (enter_after_install) {
		vcpu_fault(VCPU, 3, MEV_PFERR_USER);
		spte(VCPU, 1, 3, 0, RO_4K);
		entry();
	}
	vcpu_fault(VCPU, 9, MEV_PFERR_USER);    /* the leaf is there */
	entry();
	/* A write needs what the read-only leaf does not give: a real
	 * fault, whoever installed the leaf. */
	vcpu_fault(VCPU, 9, MEV_PFERR_USER | MEV_PFERR_WRITE);
	spte(VCPU, 1, 9, RO_4K, RW_4K);
	entry();
}

static void test_racing_vcpus(void)
{
	struct replay_result r;

	race_scenario(0);
	CHECK(run(&policy_baseline, &r) == REPLAY_OK);
	CHECK(r.mismatches_total == 0 && r.faults_observed == 3 &&
	      r.faults_exempt[EXEMPT_RACING_VCPU] == 1);
	replay_result_free(&r);

	rules_off = REPLAY_RULE_BIT(RULE_RACING_VCPU);
	CHECK(run(&policy_baseline, &r) == REPLAY_OK);
	CHECK(r.mismatches_total == 1 &&
	      r.mismatches[0].kind == MISMATCH_FAULT_NOT_REQUIRED &&
	      r.faults_exempt[EXEMPT_RACING_VCPU] == 0);
	replay_result_free(&r);
	rules_off = 0;

	race_scenario(1);
	CHECK(run(&policy_baseline, &r) == REPLAY_OK);
	CHECK(r.mismatches_total == 1 &&
	      r.mismatches[0].kind == MISMATCH_FAULT_NOT_REQUIRED &&
	      r.faults_exempt[EXEMPT_RACING_VCPU] == 0);
	replay_result_free(&r);

	/* The vCPU's own install, then its fault on it: not a race. */
	nev = 0;
	ev(MEV_VCPU_ENTRY, VCPU);
	ev(MEV_VCPU_ENTRY, VCPU2);
	vcpu_fault(VCPU, 9, MEV_PFERR_USER);
	spte(VCPU, 1, 9, 0, RO_4K);
	vcpu_fault(VCPU, 9, MEV_PFERR_USER);
	entry();
	CHECK(run(&policy_baseline, &r) == REPLAY_OK);
	CHECK(r.mismatches_total == 1 &&
	      r.faults_exempt[EXEMPT_RACING_VCPU] == 0);
	replay_result_free(&r);
}

/*
 * The worker reads its count of NX splits before it takes mmu_lock: a
 * split accounted after it woke (a period after its previous batch
 * returned) may be missing from the count, one accounted before it
 * may not.  Ratio 1, period 1 s: the first batch at ~3 ms recovers
 * 0x200; 0x400 is split at ~0.5 s and 0x600 (late) or 0x800 (not late)
 * at ~1 s or ~0.9 s; the next batch recovers 0x400 only.
 */
static void snapshot_scenario(int late)
{
	nev = 0;
	ts_shift = 0;
	memslot(0);
	nx_split(0x200);
	nx_recover(0x200);                      /* ends at ~14 ms */
	ts_shift = 500000000;
	nx_split(0x400);
	ts_shift = late ? 1000000000 : 900000000;
	nx_split(late ? 0x600 : 0x800);
	nx_recover(0x400);
	ts_shift = 0;
}

static void test_nx_snapshot(void)
{
	struct replay_result r;

	nx_ratio = 1;
	nx_period_ms = 1000;
	snapshot_scenario(1);
	CHECK(run(&policy_baseline, &r) == REPLAY_OK);
	CHECK(r.mismatches_total == 0 && r.recovery_batches == 2 &&
	      r.nx_batches_settled == 1);
	CHECK(r.nx_recovered_observed == 2 && r.nx_recovered_predicted == 2);
	replay_result_free(&r);
	rules_off = REPLAY_RULE_BIT(RULE_NX_SNAPSHOT);
	CHECK(run(&policy_baseline, &r) == REPLAY_OK);
	CHECK(r.mismatches_total == 1 && r.nx_batches_settled == 0 &&
	      r.mismatches[0].kind == MISMATCH_RECOVERY_BATCH &&
	      r.mismatches[0].predicted == 2 && r.mismatches[0].observed == 1);
	replay_result_free(&r);
	rules_off = 0;
	/* Split before the worker woke: in its count, so a mismatch. */
	snapshot_scenario(0);
	CHECK(run(&policy_baseline, &r) == REPLAY_OK);
	CHECK(r.mismatches_total == 1 && r.nx_batches_settled == 0 &&
	      r.mismatches[0].kind == MISMATCH_RECOVERY_BATCH);
	replay_result_free(&r);
	/* Without the period nothing is excused. */
	nx_period_ms = 0;
	snapshot_scenario(1);
	CHECK(run(&policy_baseline, &r) == REPLAY_OK);
	CHECK(r.mismatches_total == 1 && r.nx_batches_settled == 0);
	replay_result_free(&r);
	nx_ratio = 0;
}

/*
 * Two exec faults inside KVM_SET_USER_MEMORY_REGION, which turns dirty
 * logging on, before its memslot event: each saw the memslots before
 * the swap (an NX split) or after it (none), with the same SPTE
 * changes.  The worker's count (ratio 1: a page each) says how many
 * saw the old ones, the first in trace order: `old` of the two.
 */
static void memslot_swap_scenario(int old)
{
	nev = 0;
	memslot(0);
	evs[0].u.memslot.npages = 0x1000;       /* 8 2M pages */
	nx_split(0x200);
	setregion_entry();
	nx_split(0x400);
	nx_split(0x600);
	memslot_flags(0x1000, 0, KVM_MEM_LOG_DIRTY_PAGES);
	syscall_exit(VMM);
	nx_phase(MEV_NX_BEGIN, MEV_LOCK_WRITE, 1 + old);
	nx_recover(0x200);
	if (old)
		nx_recover(0x400);
	if (old > 1)
		nx_recover(0x600);
	nx_phase(MEV_NX_END, MEV_LOCK_WRITE, 0);
}

static void test_memslot_swap(void)
{
	struct replay_result r;
	int old;

	nx_ratio = 1;
	nx_period_ms = 1000;
	for (old = 0; old <= 2; old++) {
		memslot_swap_scenario(old);
		CHECK(run(&policy_baseline, &r) == REPLAY_OK);
		CHECK(r.mismatches_total == 0 && r.recovery_batches == 1 &&
		      r.nx_recovered_predicted == 1 + old);
			CHECK(r.span_faults_settled == 2 && r.span_faults_old == old);
		replay_result_free(&r);
	}
	/* Without the rule both faults saw the old memslots: three splits
	 * where the worker counted two, and one left after it. */
	rules_off = REPLAY_RULE_BIT(RULE_SLOT_SWAP);
	memslot_swap_scenario(1);
	CHECK(run(&policy_baseline, &r) == REPLAY_OK);
	CHECK(r.mismatches_total == 2 && r.span_faults_settled == 0 &&
	      r.mismatches_by_kind[MISMATCH_NX_COUNT] == 1 &&
	      r.mismatches_by_kind[MISMATCH_RECOVERY_BATCH] == 1);
	replay_result_free(&r);
	rules_off = 0;
	nx_ratio = 0;
	nx_period_ms = 0;
}

/*
 * Lab run (busy host): the worker began a write-locked batch, cleared a
 * parent SPTE, and was preempted before its tracepoint; the vCPU's NPF on
 * the page it unmapped was traced first (0.8 ms).  Not a mismatch while
 * the batch is open.  Stock (no begin event), the batch is seen from
 * its first traced zap: a fault traced 2.7 us before it (a stock
 * nxrecovery capture) is explained by it, as long as the faulting vCPU
 * traced nothing in between: under the write lock the zap is traced
 * before the fault path can go on (vcpu_first: it did, a mismatch).
 * The worker traced nothing between the fault and that zap: the write
 * came in its gap (rule write_gap, no flush events here), an exemption
 * tied to the entry; with another page of the batch traced in between
 * (worker_between), the batch's span explains it (nx_recovery_batch).
 */
static void racing_scenario(int with_begin, int vcpu_first,
			    int worker_between)
{
	nev = 0;
	memslot(0);
	nx_split(0x200);
	if (worker_between)
		nx_split(0x400);
	if (with_begin) {
		nx_phase(0, MEV_LOCK_WRITE, 0);        /* write lock */
	}
	fault(0x200, MEV_PFERR_USER);           /* traced before the zap */
	if (vcpu_first)
		entry();
	if (worker_between)
		nx_recover(0x400);
	nx_recover(0x200);
	if (with_begin) {
		nx_phase(1, MEV_LOCK_WRITE, 0);
	}
	spte(VCPU, 1, 0x200, 0, RW_4K);
	entry();
}

static void test_fault_racing_recovery(void)
{
	struct replay_result b;

	racing_scenario(1, 0, 0);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 0 && b.recovery_batches == 1);
	replay_result_free(&b);
	racing_scenario(0, 0, 0);               /* stock: first zap next */
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 0 &&
	      b.faults_exempt[EXEMPT_WRITE_GAP] == 1);
	replay_result_free(&b);
	racing_scenario(0, 0, 1);               /* another page first */
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 0 &&
	      b.faults_exempt[EXEMPT_NX_BATCH] == 1 &&
	      b.faults_exempt[EXEMPT_WRITE_GAP] == 0);
	replay_result_free(&b);
	rules_off = REPLAY_RULE_BIT(RULE_WRITE_GAP);
	racing_scenario(0, 0, 0);               /* the gap as a span */
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	rules_off = 0;
	CHECK(b.mismatches_total == 0 &&
	      b.faults_exempt[EXEMPT_NX_BATCH] == 1);
	replay_result_free(&b);
	racing_scenario(0, 1, 0);               /* the vCPU went on first */
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 1 &&
	      b.mismatches[0].kind == MISMATCH_FAULT_NOT_REQUIRED);
	replay_result_free(&b);
}

static void test_exemption_bounded(void)
{
	struct replay_result b;

	nev = 0;
	memslot(0);
	nx_split(0x200);
	mapped(0x400, RW_4K);
	nx_phase(0, MEV_LOCK_WRITE, 0);
	fault(0x400, MEV_PFERR_USER);           /* its leaf permits reading */
	entry();
	nx_recover(0x200);                      /* another page */
	nx_phase(1, MEV_LOCK_WRITE, 0);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 1 &&
	      b.mismatches[0].kind == MISMATCH_FAULT_NOT_REQUIRED &&
	      b.mismatches[0].gfn == 0x400);
	CHECK(b.faults_exempt[EXEMPT_NX_BATCH] == 0);
	CHECK(b.faults_avoided == 0 && b.faults == b.faults_observed);
	replay_result_free(&b);

	/* Stock: the batch is only its worker's events. */
	nev = 0;
	memslot(0);
	nx_split(0x200);
	mapped(0x400, RW_4K);
	nx_recover(0x200);
	ts_shift = 100000000;                   /* 100 ms later */
	fault(0x400, MEV_PFERR_USER);
	entry();
	ts_shift = 0;
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.recovery_batches == 1 && b.mismatches_total == 1 &&
	      b.mismatches[0].gfn == 0x400);
	replay_result_free(&b);

	/* The racing fault itself is explained, and counted as such. */
	racing_scenario(1, 0, 0);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 0 &&
	      b.faults_exempt[EXEMPT_WRITE_GAP] == 1 &&
	      b.faults_predicted == b.faults_observed);
	CHECK(b.faults_avoided == 0);
	replay_result_free(&b);
}

/*
 * Stock 6.1, bgsnapshot at scale: a vCPU's fault on page 5 passed its
 * retry check, the saver's unprotect of page 5 traced its notifier start,
 * the fault installed the leaf, then the saver's walk took mmu_lock and
 * zapped it.  The model held page 5 absent at the window's start:
 * predicted 0, traced 1.  Without invalidate_range_end in the trace the
 * install could as well have come after the end (no zap): the window is
 * settled by the trace and counted.  With a leaf of its own to zap
 * (page 6), the walk comes after any install before its first zap, so
 * both zaps are predicted; an install after its first zap is not its.
 */
static void test_stock_window_race(void)
{
	struct replay_result b;

	nev = 0;
	memslot(0);
	fault(5, MEV_PFERR_USER);
	stock_notifier(5, 1);
	spte(VCPU, 1, 5, 0, RO_4K);                     /* racing install */
	entry();
	spte(VMM, 1, 5, RO_4K, 0);                      /* zapped by the walk */
	syscall_exit(VMM);
	fault(9, MEV_PFERR_USER);
	stock_notifier(9, 1);
	spte(VCPU, 1, 9, 0, RO_4K);                     /* after the end */
	entry();
	syscall_exit(VMM);                              /* nothing zapped */
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.zaps_observed == 1 && b.zaps_predicted == 1);
	CHECK(b.race_windows == 2 && b.zaps_race_settled == 1);
	CHECK(b.mismatches_total == 0);
	replay_result_free(&b);

	nev = 0;
	memslot(0);
	fault(6, MEV_PFERR_USER);
	spte(VCPU, 1, 6, 0, RO_4K);
	entry();
	fault(5, MEV_PFERR_USER);
	stock_notifier(5, 2);                           /* pages 5 and 6 */
	spte(VCPU, 1, 5, 0, RO_4K);                     /* before the walk */
	entry();
	spte(VMM, 1, 5, RO_4K, 0);
	spte(VMM, 1, 6, RO_4K, 0);
	syscall_exit(VMM);
	fault(8, MEV_PFERR_USER);
	spte(VCPU, 1, 8, 0, RO_4K);
	entry();
	stock_notifier(7, 2);                           /* pages 7 and 8 */
	spte(VMM, 1, 8, RO_4K, 0);
	fault(7, MEV_PFERR_USER);
	spte(VCPU, 1, 7, 0, RO_4K);                     /* after the walk */
	entry();
	syscall_exit(VMM);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.zaps_observed == 3 && b.zaps_predicted == 3);
	CHECK(b.race_windows == 0 && b.mismatches_total == 0);
	replay_result_free(&b);
}

/*
 * Stock 6.12, two VMs under one memory cgroup: the VM's zap at its exit
 * (the NX worker, 4K leaves in gfn order) yields mmu_lock after its
 * first leaf, and the VMM thread, in reclaim, unmaps page 0x180 ahead
 * of the walk; the walk then finds it gone.  The zap of the whole VM
 * predicted 4 leaves and zapped 3 (rule teardown_removal); off, it
 * fails zap_count 4 against 3.
 */
static void test_zap_all_removal_ahead(void)
{
	struct replay_result b;

	nev = 0;
	vm_split_beside_huge();
	spte(VCPU, 1, 0x180, 0, RW_4K);
	entry();
	syscall_exit(VMM);
	spte(WORKER, 1, 0x1, RW_4K, NONPRESENT_612);           /* 4K pass */
	stock_notifier(0x180, 1);                               /* reclaim */
	spte(VMM, 1, 0x180, RW_4K, NONPRESENT_612);
	syscall_exit(VMM);
	spte(WORKER, 1, 0x100, RW_4K, NONPRESENT_612);
	spte(WORKER, 2, 0x200, RW_2M, NONPRESENT_612);         /* 2M pass */
	spte(WORKER, 2, 0, TABLE, NONPRESENT_612);
	sp_event(MEV_SP_FREE, WORKER, 1, 0);                            /* its L1 */
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.zaps_observed == 4 && b.zaps_predicted == 4);
	CHECK(b.mismatches_total == 0);
	replay_result_free(&b);

	rules_off = REPLAY_RULE_BIT(RULE_TEARDOWN_REMOVAL);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 1 &&
	      b.mismatches[0].kind == MISMATCH_ZAP_COUNT &&
	      b.mismatches[0].predicted == 4 &&
	      b.mismatches[0].observed == 3);
	replay_result_free(&b);
	rules_off = 0;
}

/*
 * Two vCPUs walk down one path: VCPU links the L2 table at the L3 entry
 * (gfn 0), VCPU2 links an L1 table beneath it and installs a leaf, and
 * VCPU's link is traced last.  The leaf is the new table's: the VM's
 * zap takes it as predicted.  With rule late_link off the link drops it
 * as a removed table's, and the zap is a zap_count mismatch.
 */
static void test_late_link(void)
{
	int off;

	for (off = 0; off <= 1; off++) {
		nev = 0;
		rules_off = off ? REPLAY_RULE_BIT(RULE_LATE_LINK) : 0;
		memslot(0);
		spte(VCPU, 4, 0, NONPRESENT_612, TABLE);
		spte(VCPU2, 2, 0x200, NONPRESENT_612, TABLE + 0x1000);
		spte(VCPU2, 1, 0x200, NONPRESENT_612, RW_4K);
		spte(VCPU, 3, 0, NONPRESENT_612, TABLE + 0x2000);  /* late */
		entry();
		spte(VMM, 1, 0x200, RW_4K, NONPRESENT_612);     /* VM's zap */
		syscall_exit(VMM);
		zaps_judged(off, 1);
	}
	rules_off = 0;
}

/*
 * tdp_mmu_zap_spte_atomic() on 6.12: the 2M region's table entry is
 * frozen and its range flushed (traced), the vCPU faults on it twice
 * (retrying on the frozen entry), then the zap is traced.  Both faults
 * are explained by that zap: exempt as frozen_entry (in the exempt
 * share, outside the cap), no other reason.  With the rule off the leaf
 * they fault on is present for the model: fault_not_required.
 */
static void test_frozen_entry(void)
{
	struct replay_result b;
	int off, i;

	for (off = 0; off <= 1; off++) {
		nev = 0;
		rules_off = off ? REPLAY_RULE_BIT(RULE_FROZEN_ENTRY) : 0;
		memslot(0);
		spte(VCPU, 3, 0, 0, TABLE);
		spte(VCPU, 2, 0x200, 0, TABLE);
		spte(VCPU, 1, 0x201, 0, RW_4K);
		entry();
		ranged_flush(VMM, 0x200, 512);
		fault(0x201, MEV_PFERR_USER);
		entry();
		fault(0x201, MEV_PFERR_USER);
		entry();
		spte(VMM, 2, 0x200, TABLE, NONPRESENT_612);
		sp_event(MEV_SP_FREE, VMM, 1, 0x200);
		spte(VMM, 1, 0x201, RW_4K, FROZEN_612);
		syscall_exit(VMM);
		CHECK(run(&policy_baseline, &b) == REPLAY_OK);
		if (!off) {
			CHECK(b.faults_observed == 2 &&
			      b.faults_predicted == 2);
			for (i = 0; i < EXEMPT_REASONS; i++)
				CHECK(b.faults_exempt[i] ==
				      (i == EXEMPT_FROZEN_ENTRY ? 2 : 0));
			CHECK(b.mismatches_total == 0);
		} else {
			CHECK(b.mismatches_total > 0 &&
			      b.mismatches[0].kind ==
			      MISMATCH_FAULT_NOT_REQUIRED);
		}
		replay_result_free(&b);
	}
	rules_off = 0;
}

const struct scenario rules_timing[] = {
	{ "racing_vcpus", test_racing_vcpus },
	{ "nx_snapshot_late_split_settled", test_nx_snapshot },
	{ "memslot_swap_settled_by_count", test_memslot_swap },
	{ "fault_before_recovery_zap_explained", test_fault_racing_recovery },
	{ "race_exemption_bounded", test_exemption_bounded },
	{ "stock_window_race_settled", test_stock_window_race },
	{ "zap_all_removal_ahead_612", test_zap_all_removal_ahead },
	{ "frozen_entry_faults_required_612", test_frozen_entry },
	{ "late_link_612", test_late_link },
};
const int rules_timing_n =
	(int)(sizeof(rules_timing) / sizeof(rules_timing[0]));
