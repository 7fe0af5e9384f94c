/*
 * Missing facts: what a stock kernel or a capture begun mid-run does not
 * show (an upgrade's cause, dirty logging, memslots, what was mapped
 * before the capture), inferred from what it does show, or counted as
 * revealed and never judged.
 */
#include "scenario.h"

/*
 * On 6.1 the patched recovery worker, a kthread made with the VM, traces
 * an empty batch as it starts, before the first vCPU allocates the root.
 * That batch meets no entry: the capture still began with the VM (was
 * decided mid-run by it, on the patched nx_huge_pages_test capture).
 */
static void test_empty_batch_before_root(void)
{
	struct replay_result b;

	nev = 0;
	late_capture = 1;
	nx_phase(MEV_NX_BEGIN, MEV_LOCK_WRITE, 0);
	nx_phase(MEV_NX_END, MEV_LOCK_WRITE, 0);
	sp_event(MEV_SP_ALLOC, VCPU, 4, 0);             /* the root */
	memslot(0);
	fault(5, MEV_PFERR_USER);
	spte(VCPU, 1, 5, 0, RO_4K);
	entry();
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(!b.began_mid_run && b.mismatches_total == 0);
	CHECK(b.faults_observed == 1 && b.faults_predicted == 1 &&
	      b.faults_revealed == 0);
	replay_result_free(&b);
	late_capture = 0;
}

/* The sequence of test_late_capture() from `memslot(0)` on. */
static void late_sequence(int first_fault)
{
	nev = 0;
	memslot(0);
	if (first_fault) {
		fault(9, MEV_PFERR_USER);       /* the VM's first fault */
		spte(VCPU, 1, 9, 0, RO_4K);
		entry();
	}
	notifier(5, 1);                         /* unprotect, from before */
	spte(VMM, 1, 5, RO_4K, 0);
	syscall_exit(VMM);
	fault(5, MEV_PFERR_USER);               /* read refault */
	spte(VCPU, 1, 5, 0, RO_4K);
	entry();
	fault(7, MEV_PFERR_USER);               /* a page never shown */
	spte(VCPU, 1, 7, 0, RO_4K);
	entry();
	fault(0x205, MEV_PFERR_USER);           /* below a table it links */
	spte(VCPU, 2, 0x200, 0, TABLE);
	spte(VCPU, 1, 0x205, 0, RO_4K);
	entry();
	fault(0x206, MEV_PFERR_USER);           /* in that table: known */
	spte(VCPU, 1, 0x206, 0, RO_4K);
	entry();
}

/*
 * A capture that began while the VM ran (no root allocation traced): a
 * leaf mapped before it is unknown, not absent.  Its zap by an
 * invalidation is revealed (neither predicted nor a mismatch), and so is
 * the window's flush; a fault on a page the trace never showed is
 * revealed, one on a page the trace showed (its zap) or whose table it
 * showed linked is predicted; perm-upgrade keeps the revealed leaf like any other, and
 * a refault on it is then avoided.  The same sequence after a root's
 * allocation began mid-run too: its first change zaps a leaf the new
 * root, empty there, cannot hold (engine.c in_another_root(); a capture
 * may begin with the new root of a memslot deletion).  After the VM's
 * first fault, it is a capture from the VM's creation and fails: the
 * model held no leaf there, and a gap in the model stays a mismatch.
 */
static void test_late_capture(void)
{
	struct replay_result b, p;

	late_sequence(0);
	late_capture = 1;
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.began_mid_run && b.mismatches_total == 0);
	CHECK(b.zaps_observed == 1 && b.zaps_revealed == 1 &&
	      b.zaps_predicted == 0);
	CHECK(b.flushes_observed == 1 && b.flushes_revealed == 1 &&
	      b.flushes_predicted == 0);
	/* 5 (its zap stored it) and 0x206 (its table linked) known. */
	CHECK(b.faults_observed == 4 && b.faults_revealed == 2 &&
	      b.faults_predicted == 2);
	CHECK(b.warmup_ts == evs[10].ts);       /* the fault on 0x205 */
	CHECK(run(&policy_perm_upgrade, &p) == REPLAY_OK);
	CHECK(p.zaps_kept == 1 && p.faults_avoided == 1 && p.flushes == 0);
	/* Faults on pages the trace had not shown mapped: 7, 0x205, 0x206
	 * (5 was shown, by its zap). */
	CHECK(p.faults_undecided == 3);
	replay_result_free(&b);
	replay_result_free(&p);

	late_capture = 0;
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.began_mid_run && b.mismatches_total == 0 &&
	      b.zaps_revealed == 1);
	replay_result_free(&b);

	late_sequence(1);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(!b.began_mid_run && b.zaps_revealed == 0 &&
	      b.mismatches_by_kind[MISMATCH_ZAP_COUNT] == 1);
	replay_result_free(&b);
}

/*
 * Stock kernel: an invalidation by a thread in no syscall that could
 * loosen a page (ksmd, kswapd, khugepaged, NUMA hinting) whose zapped
 * leaf refaults identical is no permission upgrade (rule
 * upgrade_cause); one inside UFFDIO_WRITEPROTECT whose leaf does is an
 * unprotect.  Without the rule, identical refaults alone made both
 * upgrades, and perm-upgrade kept the first zap.
 */

static void stock_window(int tid, uint64_t gfn)
{
	struct model_event *e = ev(MEV_NOTIFIER, tid);

	e->u.notifier.hva_start = HVA + (gfn << 12);
	e->u.notifier.hva_end = HVA + ((gfn + 1) << 12);
	spte(tid, 1, gfn, RO_4K, 0);
}

static void test_stock_upgrade_cause(void)
{
	struct replay_result p;
	struct model_event *e;
	int off;

	for (off = 0; off <= 1; off++) {
		nev = 0;
		fault(5, MEV_PFERR_USER);
		spte(VCPU, 1, 5, 0, RO_4K);
		fault(6, MEV_PFERR_USER);
		spte(VCPU, 1, 6, 0, RO_4K);
		entry();
		stock_window(KTHREAD, 5);
		e = ev(MEV_SYSCALL, VMM);
		e->u.sys.entry = 1;
		e->u.sys.call = MSYS_IOCTL;
		e->u.sys.a1 = UFFDIO_WRITEPROTECT;
		stock_window(VMM, 6);
		syscall_exit(VMM);
		fault(5, MEV_PFERR_USER);
		spte(VCPU, 1, 5, 0, RO_4K);
		fault(6, MEV_PFERR_USER);
		spte(VCPU, 1, 6, 0, RO_4K);
		entry();
		rules_off = off ? REPLAY_RULE_BIT(RULE_UPGRADE_CAUSE) : 0;
		CHECK(run(&policy_perm_upgrade, &p) == REPLAY_OK);
		CHECK(p.upgrade_src == REPLAY_SRC_INFERRED);
		CHECK(p.upgrade_windows == 1 + off);
		CHECK(p.zaps_kept == 1 + off && p.zaps_kept_inferred == 1 + off &&
		      p.faults_avoided == 1 + off &&
		      p.faults == 3 - off && p.mismatches_total == 0);
		replay_result_free(&p);
	}
	rules_off = 0;
}

/* Stock kernel: mprotect(PROT_READ) then mprotect(PROT_READ|WRITE)
 * before the guest touches the page refaults an identical SPTE, yet the
 * first invalidation restricted: perm-upgrade must still zap it. */
static void test_stock_mprotect_restriction(void)
{
	struct replay_result p;

	nev = 0;
	fault(5, MEV_PFERR_USER);
	spte(VCPU, 1, 5, 0, RW_4K);
	entry();
	sys(1, MSYS_MPROTECT, 1);
	ev(MEV_NOTIFIER, VMM)->u.notifier.hva_start = HVA + (5 << 12);
	evs[nev - 1].u.notifier.hva_end = HVA + (6 << 12);
	spte(VMM, 1, 5, RW_4K, 0);
	sys(0, MSYS_MPROTECT, 0);
	sys(1, MSYS_MPROTECT, 3);
	ev(MEV_NOTIFIER, VMM)->u.notifier.hva_start = HVA + (5 << 12);
	evs[nev - 1].u.notifier.hva_end = HVA + (6 << 12);
	sys(0, MSYS_MPROTECT, 0);
	fault(5, MEV_PFERR_USER | MEV_PFERR_WRITE);
	spte(VCPU, 1, 5, 0, RW_4K);
	entry();
	CHECK(run(&policy_perm_upgrade, &p) == REPLAY_OK);
	CHECK(p.upgrade_src == REPLAY_SRC_INFERRED);
	CHECK(p.upgrade_windows == 1);          /* the PROT_WRITE one */
	CHECK(p.zaps_kept == 0 && p.faults == 2 && p.mismatches_total == 0);
	replay_result_free(&p);
}

/*
 * A capture that began while dirty logging was on: only LTTng's state
 * dump (a memslot row of change MEMSLOT_STATE_DUMP) says so, at the
 * session's start (dump 1) or, regenerated for a snapshot, at its end
 * (dump 2).  With it, nx-skip-dirty keeps the recovered page of the
 * dirty-logged slot from the capture's start; without it the slot is
 * unknown, taken as not logged, and the page is recovered.  A dump row
 * of a slot the trace saw created lists nothing new.
 */
static void dump_row(void)
{
	struct model_event *e = ev(MEV_MEMSLOT, VMM);

	e->u.memslot.change = MEMSLOT_STATE_DUMP;
	e->u.memslot.npages = 1024;
	e->u.memslot.hva = HVA;
	e->u.memslot.old_flags = KVM_MEM_LOG_DIRTY_PAGES;
	e->u.memslot.new_flags = KVM_MEM_LOG_DIRTY_PAGES;
}

static void state_dump_scenario(int dump, int created)
{
	nev = 0;
	if (created) {
		/* Split, listed, then logging on: the page is the
		 * worker's to take. */
		memslot(0);
		nx_split(0x200);
		memslot_flags(1024, 0, KVM_MEM_LOG_DIRTY_PAGES);
	}
	if (dump == 1)
		dump_row();
	if (!created)
		nx_split(0x200);
	nx_recover(0x200);
	fault(0x200, MEV_PFERR_USER | MEV_PFERR_FETCH);
	spte(VCPU, 1, 0x200, 0, RW_4K);
	entry();
	if (dump == 2)
		dump_row();
}

static void test_state_dump_memslots(void)
{
	struct replay_result r;
	int dump;

	late_capture = 1;
	for (dump = 1; dump <= 2; dump++) {
		state_dump_scenario(dump, 0);
		CHECK(run(&policy_nx_skip_dirty, &r) == REPLAY_OK);
		CHECK(r.began_mid_run && r.memslots_dumped == 1);
		CHECK(r.zaps[ZAP_NX_RECOVERY] == 0 && r.zaps_kept == 1 &&
		      r.faults_avoided == 1);
		replay_result_free(&r);
	}

	state_dump_scenario(0, 0);
	CHECK(run(&policy_nx_skip_dirty, &r) == REPLAY_OK);
	CHECK(r.memslots_dumped == 0 && r.zaps[ZAP_NX_RECOVERY] == 1 &&
	      r.zaps_kept == 0);
	replay_result_free(&r);
	late_capture = 0;

	state_dump_scenario(1, 1);
	CHECK(run(&policy_nx_skip_dirty, &r) == REPLAY_OK);
	CHECK(!r.began_mid_run && r.memslots_dumped == 0 &&
	      r.zaps[ZAP_NX_RECOVERY] == 0 && r.zaps_kept == 1);
	replay_result_free(&r);
}

/*
 * Stock (memslots inferred from the windows): a first window over pages
 * [0x100, 0x300) of the slot zaps only the 2M leaf at 0x200, whose
 * upper half lies beyond the window's end.  Read as "the window holds
 * [0x200, 0x3ff]", the slot's offset came out 1 MiB low and the next
 * window, over page 0x10, mapped to gfn 0x110: its zap of 0x10 was
 * predicted 0 and outside its range.
 */
static void test_inferred_slot_huge_leaf(void)
{
	struct replay_result b;

	nev = 0;
	fault(0x10, MEV_PFERR_USER | MEV_PFERR_WRITE);
	spte(VCPU, 1, 0x10, 0, RW_4K);
	entry();
	fault(0x200, MEV_PFERR_USER | MEV_PFERR_WRITE);
	spte(VCPU, 2, 0x200, 0, RW_2M);
	entry();
	stock_notifier(0x100, 0x200);
	spte(VMM, 2, 0x200, RW_2M, 0);
	syscall_exit(VMM);
	stock_notifier(0x10, 1);
	spte(VMM, 1, 0x10, RW_4K, 0);
	syscall_exit(VMM);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.slots_src == REPLAY_SRC_INFERRED);
	CHECK(b.zaps_observed == 2 && b.zaps_predicted == 2);
	CHECK(b.mismatches_total == 0);
	replay_result_free(&b);
}

/* The VMM's memslot ioctl cmd (either version), write-protecting page
 * 0x1 (dirty logging on), then again without a sweep (off). */
static void sweep_scenario(uint64_t cmd)
{
	struct model_event *e;
	int i;

	nev = 0;
	spte(VCPU, 3, 0, 0, TABLE);
	spte(VCPU, 2, 0, 0, TABLE + 0x1000);
	spte(VCPU, 1, 0x1, 0, RW_4K);
	entry();
	for (i = 0; i < 2; i++) {
		e = ev(MEV_SYSCALL, VMM);
		e->u.sys.entry = 1;
		e->u.sys.call = MSYS_IOCTL;
		e->u.sys.a1 = cmd;
		if (!i)
			spte(VMM, 1, 0x1, RW_4K, RW_4K & ~0x2ULL);
		syscall_exit(VMM);
	}
}

/*
 * Stock kernels: a slot created with dirty logging on (the dirty ring's
 * way: no write-protect sweep) shows logging on at the VMM's first
 * KVM_RESET_DIRTY_RINGS, as at a KVM_GET_DIRTY_LOG.
 */
static void test_dirty_ring_reset(void)
{
	static const uint64_t cmds[] = {
		KVM_GET_DIRTY_LOG, KVM_RESET_DIRTY_RINGS,
	};
	struct model_event *e;
	struct replay_result b;
	size_t i;

	for (i = 0; i < 2; i++) {
		nev = 0;
		e = ev(MEV_SYSCALL, VMM);
		e->u.sys.entry = 1;
		e->u.sys.call = MSYS_IOCTL;
		e->u.sys.a1 = KVM_SET_USER_MEMORY_REGION2;
		syscall_exit(VMM);
		spte(VCPU, 3, 0, 0, TABLE);
		spte(VCPU, 2, 0, 0, TABLE + 0x1000);
		spte(VCPU, 1, 0x1, 0, RW_4K);
		entry();
		e = ev(MEV_SYSCALL, VMM);
		e->u.sys.entry = 1;
		e->u.sys.call = MSYS_IOCTL;
		e->u.sys.a1 = cmds[i];
		spte(VMM, 1, 0x1, RW_4K, RW_4K & ~0x2ULL);
		syscall_exit(VMM);
		CHECK(run(&policy_baseline, &b) == REPLAY_OK);
		CHECK(b.dirty_src == REPLAY_SRC_INFERRED);
		CHECK(b.mismatches_total == 0);
		replay_result_free(&b);
	}
}

/*
 * Stock kernels: dirty logging inferred from the write-protect sweep
 * inside a memslot ioctl, whichever version sets it
 * (KVM_SET_USER_MEMORY_REGION2 on 6.8+: 6.12's selftests, QEMU 8.2+).
 */
static void test_dirty_logging_region2(void)
{
	static const uint64_t cmds[] = {
		KVM_SET_USER_MEMORY_REGION, KVM_SET_USER_MEMORY_REGION2,
	};
	struct replay_result b;
	size_t i;

	for (i = 0; i < 2; i++) {
		sweep_scenario(cmds[i]);
		CHECK(run(&policy_baseline, &b) == REPLAY_OK);
		CHECK(b.dirty_src == REPLAY_SRC_INFERRED);
		CHECK(b.mismatches_total == 0);
		replay_result_free(&b);
	}
}

/*
 * A reclaim call of the VMM thread on a page outside guest RAM (a stock
 * start event, no end), then the VM's zap by the same thread when its mm
 * goes, by teardown(): the window ended before it.  Checked with every
 * rule on (each zap the teardown's, no mismatch) and with off_rules
 * switched off (its zaps taken as the window's: zap_outside_range).
 */
static void window_then_teardown(replay_rules_t off_rules,
				 void (*teardown)(void))
{
	struct replay_result b;
	int off;

	for (off = 0; off <= 1; off++) {
		rules_off = off ? off_rules : 0;
		leaf_at_1();
		spte(VCPU, 1, 0x5, 0, RW_4K);
		entry();
		ev(MEV_NOTIFIER, VMM)->u.notifier.hva_start = HVA - 0x10000;
		evs[nev - 1].u.notifier.hva_end = HVA - 0xf000;
		teardown();
		CHECK(run(&policy_baseline, &b) == REPLAY_OK);
		CHECK(b.zaps_observed == 2);
		if (!off)
			CHECK(b.zaps_predicted == 2 && b.mismatches_total == 0);
		else
			CHECK(b.mismatches_total > 0 &&
			      b.mismatches[0].kind == MISMATCH_ZAP_OUTSIDE);
		replay_result_free(&b);
	}
	rules_off = 0;
}

/* Stock 6.1's teardown: the root's entry cleared, its tables frozen,
 * the leaves below zapped. */
static void teardown_61(void)
{
	spte(VMM, 3, 0, TABLE, 0);
	spte(VMM, 2, 0, TABLE, REMOVED);
	spte(VMM, 1, 0x1, RW_4K, REMOVED);
	spte(VMM, 1, 0x5, RW_4K, REMOVED);
	sp_event(MEV_SP_FREE, VMM, 1, 0);
	sp_event(MEV_SP_FREE, VMM, 2, 0);
}

/* An invalidation zaps leaves only, so a table's removal ends the
 * window (window_leaves); window_exit alone would end it at the first
 * leaf, which lies outside its range too, so both go off. */
static void test_window_leaves(void)
{
	window_then_teardown(REPLAY_RULE_BIT(RULE_WINDOW_LEAVES) |
			     REPLAY_RULE_BIT(RULE_WINDOW_EXIT), teardown_61);
}

/* 6.12's zap of the VM at its exit: every 4K leaf before any table. */
static void teardown_612(void)
{
	spte(VMM, 1, 0x1, RW_4K, 0);
	spte(VMM, 1, 0x5, RW_4K, 0);
}

/* The first change after the window is a leaf outside its range, which
 * ends it (window_exit); the zap of the whole VM begins there. */
static void test_window_exit(void)
{
	window_then_teardown(REPLAY_RULE_BIT(RULE_WINDOW_EXIT), teardown_612);
}

const struct scenario rules_facts[] = {
	{ "late_capture_reveals", test_late_capture },
	{ "empty_batch_before_root", test_empty_batch_before_root },
	{ "state_dump_memslots", test_state_dump_memslots },
	{ "perm_upgrade_inferred_restriction_zapped",
	  test_stock_mprotect_restriction },
	{ "stock_upgrade_needs_a_cause", test_stock_upgrade_cause },
	{ "stock_window_ends_at_table_removal", test_window_leaves },
	{ "stock_window_ends_at_leaf_outside", test_window_exit },
	{ "inferred_slot_huge_leaf", test_inferred_slot_huge_leaf },
	{ "dirty_logging_region2", test_dirty_logging_region2 },
	{ "dirty_ring_reset_shows_logging", test_dirty_ring_reset },
};
const int rules_facts_n = (int)(sizeof(rules_facts) / sizeof(rules_facts[0]));
