/*
 * The kernel's semantics: what the 6.1 and 6.12 TDP MMU does, true on a
 * perfect trace (a leaf under a zapped table does not map, a huge leaf is
 * zapped whole, a teardown walks its tables in order, the NX worker's
 * list).  Each scenario is a sequence the kernel can trace and the figure
 * its code implies.
 */
#include "scenario.h"

static void test_unreachable_leaf(void)
{
	struct replay_result b;

	nev = 0;
	memslot(0);
	spte(VCPU, 2, 0, 0, TABLE);
	spte(VCPU, 1, 0, 0, RW_4K);
	entry();
	spte(WORKER, 2, 0, TABLE, 0);                   /* parent unlinked */
	fault(0, MEV_PFERR_USER);                       /* before children */
	entry();
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.faults_predicted == 1 && b.mismatches_total == 0);
	replay_result_free(&b);
}

/*
 * The patched end event's count, read under the write lock, must be
 * the model's: two splits, one recovered, 1 left (2 traced: a
 * mismatch); under the read lock faults account concurrently, so it is
 * not held against the model.
 */
static void test_nx_count(void)
{
	struct replay_result r;
	int lock, pages;

	for (lock = MEV_LOCK_WRITE; lock <= MEV_LOCK_READ; lock++) {
		for (pages = 1; pages <= 2; pages++) {
			nev = 0;
			memslot(0);
			nx_split(0x200);
			nx_split(0x400);
			nx_phase(MEV_NX_BEGIN, lock, 2);
			nx_recover(0x200);
			nx_phase(MEV_NX_END, lock, pages);
			recorded = lock == MEV_LOCK_READ ? &policy_nx_readlock :
				&policy_baseline;
			CHECK(run(recorded, &r) == REPLAY_OK);
			if (pages == 1 || lock == MEV_LOCK_READ)
				CHECK(r.mismatches_total == 0);
			else
				CHECK(r.mismatches_total == 1 &&
				      r.mismatches[0].kind == MISMATCH_NX_COUNT &&
				      r.mismatches[0].predicted == 1 &&
				      r.mismatches[0].observed == 2);
			replay_result_free(&r);
		}
	}
	recorded = &policy_baseline;
}

/*
 * 6.12's read-locked recovery unlinks a table and frees it (traced)
 * after a vCPU's exec refault linked and accounted a new one at the
 * same entry: for a while two tables map the 2M page.  The old one's
 * free must not take the new one off the model's list: the next
 * (write-locked) batch finds it (ratio 1: one page).
 */
static void test_nx_two_tables(void)
{
	struct replay_result r;

	nev = 0;
	memslot(0);
	nx_split(0x200);
	nx_phase(MEV_NX_BEGIN, MEV_LOCK_READ, 1);
	spte(WORKER, 2, 0x200, TABLE, 0);               /* old unlinked */
	fault(0x200, MEV_PFERR_USER | MEV_PFERR_FETCH); /* exec refault */
	spte(VCPU, 2, 0x200, 0, TABLE + 0x1000);        /* new linked */
	sp_event(MEV_SP_ALLOC, VCPU, 1, 0x200);
	spte(VCPU, 1, 0x200, 0, RW_4K + 0x1000);
	entry();
	sp_event(MEV_SP_FREE, WORKER, 1, 0x200);        /* old freed */
	spte(WORKER, 1, 0x200, RW_4K, REMOVED);
	nx_phase(MEV_NX_END, MEV_LOCK_READ, 1);
	ts_shift = 1000000000;
	nx_phase(MEV_NX_BEGIN, MEV_LOCK_WRITE, 1);
	nx_recover_table(0x200, TABLE + 0x1000, RW_4K + 0x1000);
	nx_phase(MEV_NX_END, MEV_LOCK_WRITE, 0);
	ts_shift = 0;
	nx_ratio = 1;
	nx_period_ms = 1000;
	recorded = &policy_nx_readlock;
	CHECK(run(&policy_nx_readlock, &r) == REPLAY_OK);
	CHECK(r.recovery_batches == 2 && r.nx_recovered_observed == 2 &&
	      r.nx_recovered_predicted == 2);
	replay_result_free(&r);
	recorded = &policy_baseline;
	nx_ratio = 0;
	nx_period_ms = 0;
}

/*
 * Lab capture a5 (6.12 patched, nx-skip-dirty): a page split before
 * dirty logging, skipped by a batch while logging (unaccounted, its
 * table stays), then collapsed when logging stops: the ioctl's thread
 * unlinks the 2M entry (read lock), a vCPU's exec refault allocates a
 * new table, which the kernel lists, and only then is the old table's
 * free traced (handle_removed_pt()).  The old table was on no list:
 * its free must leave the new one listed.  free_first: the free traced
 * before the new allocation (the order the model always handled).
 */
static void collapse_scenario(int free_first)
{
	struct model_event *e;

	nev = 0;
	memslot(0);
	nx_split(0x200);
	memslot_flags(1024, 0, KVM_MEM_LOG_DIRTY_PAGES);
	ts_shift = 1000000000;
	nx_phase(MEV_NX_BEGIN, MEV_LOCK_WRITE, 1);
	e = ev(MEV_NX_RECOVERY, WORKER);
	e->u.nx.phase = MEV_NX_PAGE;
	e->u.nx.lock_mode = MEV_LOCK_WRITE;
	e->u.nx.gfn = 0x200;
	e->u.nx.action = MEV_NX_SKIPPED_DIRTY;
	e->u.nx.level = 2;
	nx_phase(MEV_NX_END, MEV_LOCK_WRITE, 0);
	ts_shift = 1500000000;
	setregion_entry();
	memslot_flags(1024, KVM_MEM_LOG_DIRTY_PAGES, 0);
	spte(VMM, 2, 0x200, TABLE, 0);                  /* collapse */
	fault(0x200, MEV_PFERR_USER | MEV_PFERR_FETCH);
	if (free_first) {
		sp_event(MEV_SP_FREE, VMM, 1, 0x200);
		spte(VMM, 1, 0x200, RW_4K, REMOVED);
	}
	sp_event(MEV_SP_ALLOC, VCPU, 1, 0x200);         /* listed */
	if (!free_first) {
		sp_event(MEV_SP_FREE, VMM, 1, 0x200);   /* old, unlisted */
		spte(VMM, 1, 0x200, RW_4K, REMOVED);
	}
	spte(VCPU, 2, 0x200, 0, TABLE + 0x1000);
	spte(VCPU, 1, 0x200, 0, RW_4K + 0x1000);
	entry();
	syscall_exit(VMM);
	ts_shift = 2000000000;
	nx_phase(MEV_NX_BEGIN, MEV_LOCK_WRITE, 1);
	nx_recover_table(0x200, TABLE + 0x1000, RW_4K + 0x1000);
	nx_phase(MEV_NX_END, MEV_LOCK_WRITE, 0);
	ts_shift = 0;
}

static void test_collapse_free_after_new_table(void)
{
	struct replay_result r;
	int free_first;

	nx_ratio = 1;
	nx_period_ms = 1000;
	recorded = &policy_nx_skip_dirty;
	for (free_first = 0; free_first <= 1; free_first++) {
		collapse_scenario(free_first);
		CHECK(run(&policy_nx_skip_dirty, &r) == REPLAY_OK);
		CHECK(r.mismatches_total == 0 && r.recovery_batches == 2 &&
		      r.nx_recovered_observed == 2 &&
		      r.nx_recovered_predicted == 2);
		if (r.mismatches_total)
			fprintf(stderr, "free_first %d: %d mismatches, kind %d pred %lld obs %lld\n",
				free_first, (int)r.mismatches_total,
				(int)r.mismatches[0].kind,
				(long long)r.mismatches[0].predicted,
				(long long)r.mismatches[0].observed);
		replay_result_free(&r);
	}
	recorded = &policy_baseline;
	nx_ratio = 0;
	nx_period_ms = 0;
}

/*
 * With the NX mitigation off (manifest: kvm.nx_huge_pages N) exec
 * faults split nothing and the worker's thread recovers nothing: a
 * table it frees is a teardown (6.12: the vhost task can drop the VM).
 */
static void test_nx_off(void)
{
	struct replay_result r;

	nx_ratio = 4;
	nx_scenario(0, 0);
	nx_off = 1;
	CHECK(run(&policy_baseline, &r) == REPLAY_OK);
	CHECK(r.mismatches_total == 0 && r.recovery_batches == 0 &&
	      r.nx_recovered_observed == 0 && r.nx_recovered_predicted == 0);
	CHECK(r.zaps[ZAP_TEARDOWN] == 1 && r.zaps[ZAP_NX_RECOVERY] == 0);
	replay_result_free(&r);
	rules_off = REPLAY_RULE_BIT(RULE_NX_OFF);
	CHECK(run(&policy_baseline, &r) == REPLAY_OK);
	CHECK(r.recovery_batches == 1 && r.zaps[ZAP_NX_RECOVERY] == 1);
	replay_result_free(&r);
	rules_off = 0;
	nx_off = 0;
	nx_ratio = 0;
}

/*
 * A traced recovery batch ends at its end event, not at a pause: under
 * the read lock on a busy host the worker paused 200 ms between two
 * pages of one batch, which the gap rule of stock traces would have cut
 * in two (each then off the ratio's batch size).
 */
static void test_measured_batch_pause(void)
{
	struct replay_result b;

	nev = 0;
	memslot(0);
	nx_split(0x200);
	nx_split(0x400);
	nx_phase(0, MEV_LOCK_READ, 0);
	nx_recover(0x200);
	ts_shift = 200000000;
	nx_recover(0x400);
	nx_phase(1, MEV_LOCK_WRITE, 0);
	ts_shift = 0;
	nx_ratio = 1;                           /* ceil(2 / 1): both pages */
	recorded = &policy_nx_readlock;         /* the read lock: knob on */
	CHECK(run(&policy_nx_readlock, &b) == REPLAY_OK);
	CHECK(b.recovery_batches == 1 && b.nx_recovered_observed == 2 &&
	      b.nx_recovered_predicted == 2 && b.mismatches_total == 0);
	replay_result_free(&b);
	/* The same trace said to be recorded without the knob: the read
	 * lock the kernel took is not baseline's. */
	recorded = &policy_baseline;
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 1 &&
	      b.mismatches[0].kind == MISMATCH_POLICY_DECISION);
	nx_ratio = 0;
	replay_result_free(&b);
}

/* kvm_mmu_spte_requested of the open fault: its goal level. */
static void request(uint64_t gfn, int level)
{
	struct model_event *e = ev(MEV_SPTE_REQUEST, VCPU);

	e->u.req.gfn = gfn;
	e->u.req.level = level;
}

/*
 * Stock 6.1 lab, guest RAM on THP: after an mprotect RO/RW cycle the
 * host PMD is read-only, so the guest's code fetch maps the 2M page
 * read-only; its first write then faults with goal level 2 (the THP
 * stays huge) and kvm_tdp_mmu_map() updates the leaf in place: no zap.
 * An exec fault on an NX 2M leaf (goal 4K) zaps it.  The old rule ("a
 * huge leaf that forbids the access is replaced") predicted a zap for
 * the write fault too: one zap_count mismatch at gfn 0x100.
 */
static void test_huge_fault_in_place(void)
{
	struct replay_result b;

	nev = 0;
	memslot(0);
	fault(0x1, MEV_PFERR_USER | MEV_PFERR_FETCH);  /* code fetch */
	request(0x1, 2);
	spte(VCPU, 2, 0, 0, RO_2M);
	entry();
	fault(0x100, MEV_PFERR_USER | MEV_PFERR_WRITE |
	      MEV_PFERR_PRESENT);                       /* first data write */
	request(0x100, 2);
	spte(VCPU, 2, 0, RO_2M, RW_2M);
	entry();
	/* An NX huge page: the exec fault maps 4K below it. */
	spte(VCPU, 2, 0x200, 0, NX_2M);
	fault(0x201, MEV_PFERR_USER | MEV_PFERR_FETCH);
	request(0x201, 1);
	spte(VCPU, 2, 0x200, NX_2M, REMOVED);
	spte(VCPU, 2, 0x200, REMOVED, 0);
	spte(VCPU, 2, 0x200, 0, TABLE);
	spte(VCPU, 1, 0x201, 0, RW_4K);
	entry();
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.faults_observed == 3 && b.faults_predicted == 3);
	CHECK(b.zaps_observed == 1 && b.zaps_predicted == 1);
	CHECK(b.flushes_predicted == 1 && b.flushes_observed == 1);
	CHECK(b.mismatches_total == 0);
	replay_result_free(&b);
}

/*
 * mprotect of [1.5 MiB, ...) with a 2M leaf at gfn 0: the notifier's gfn
 * range starts at 0x180, the walk zaps the leaf whole and traces it at
 * gfn 0.  It is inside the range, not a zap_outside_range.
 */
static void test_huge_leaf_at_range_boundary(void)
{
	struct replay_result b;
	struct model_event *e;

	nev = 0;
	memslot(0);
	fault(0x180, MEV_PFERR_USER | MEV_PFERR_WRITE);
	request(0x180, 2);
	spte(VCPU, 2, 0, 0, RW_2M);
	entry();
	e = ev(MEV_NOTIFIER, VMM);
	e->u.notifier.hva_start = HVA + (0x180ULL << 12);
	e->u.notifier.hva_end = HVA + (0x300ULL << 12);
	spte(VMM, 2, 0, RW_2M, 0);
	syscall_exit(VMM);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.zaps_observed == 1 && b.zaps_predicted == 1);
	CHECK(b.mismatches_total == 0);
	replay_result_free(&b);
}

/*
 * Dirty logging on: the eager split replaces the 2M leaf by a table of
 * 512 4K leaves in one traced change (tdp_mmu_split_huge_page()), then
 * write-protection changes the writable ones.  A read-only 2M leaf's
 * children stay untraced; a later invalidation of two of them zaps both,
 * and a write fault on one of them is required (its leaf forbids it).
 */
static void test_eager_split_children(void)
{
	struct replay_result b;
	struct model_event *e;

	nev = 0;
	memslot(0);
	fault(0x1, MEV_PFERR_USER);
	request(0x1, 2);
	spte(VCPU, 2, 0, 0, RO_2M);
	entry();
	spte(VMM, 2, 0, RO_2M, TABLE);                  /* split */
	syscall_exit(VMM);
	fault(0x7, MEV_PFERR_USER | MEV_PFERR_WRITE | MEV_PFERR_PRESENT);
	request(0x7, 1);
	spte(VCPU, 1, 0x7, (RO_2M & ~0x80ULL) | (0x7ULL << 12), RW_4K);
	entry();
	e = ev(MEV_NOTIFIER, VMM);
	e->u.notifier.hva_start = HVA + (0x10ULL << 12);
	e->u.notifier.hva_end = HVA + (0x12ULL << 12);
	spte(VMM, 1, 0x10, (RO_2M & ~0x80ULL) | (0x10ULL << 12), 0);
	spte(VMM, 1, 0x11, (RO_2M & ~0x80ULL) | (0x11ULL << 12), 0);
	syscall_exit(VMM);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.faults_observed == 2 && b.faults_predicted == 2);
	CHECK(b.zaps_observed == 2 && b.zaps_predicted == 2);
	CHECK(b.mismatches_total == 0);
	replay_result_free(&b);
}

/*
 * Stock 6.12, two VMs under KSM: ksmd's window over a 2M region zapped
 * the 2M leaf there (traced at its aligned gfn, 0) and, with no end
 * event, stayed open in the model; the VMM's invalidation of page 1
 * later zapped a 4K leaf a fault had put in the region since.  Its walk
 * being at gfn 0, not past the 2M leaf's span, ksmd's window took that
 * zap for a removal ahead of its walk (rule window_removal): predicted
 * 0, traced 1.
 */
static void test_window_walk_huge(void)
{
	struct replay_result b;
	struct model_event *e;

	nev = 0;
	memslot(0);
	fault(0, MEV_PFERR_USER);
	spte(VCPU, 2, 0, 0, RW_2M);
	entry();
	e = ev(MEV_NOTIFIER, KTHREAD);
	e->u.notifier.hva_start = HVA;
	e->u.notifier.hva_end = HVA + (512 << 12);
	spte(KTHREAD, 2, 0, RW_2M, 0);
	fault(1, MEV_PFERR_USER);
	spte(VCPU, 2, 0, 0, TABLE);
	spte(VCPU, 1, 1, 0, RW_4K);
	entry();
	stock_notifier(1, 1);
	spte(VMM, 1, 1, RW_4K, 0);
	syscall_exit(VMM);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.zaps_observed == 2 && b.zaps_predicted == 2);
	CHECK(b.mismatches_total == 0);
	replay_result_free(&b);
}

/*
 * VM teardown (basic --hugepage --split, 64 MiB): the 2M page at gfn 0
 * was split to 4K, the rest are 2M leaves.  handle_removed_pt() of the
 * L2 table meets entry 0, a table, and tears down that L1 table first
 * (its free, its 4K leaves), then zaps the 2M leaves after it.  Read as
 * two contexts, the L2 one predicted the 2M leaves and saw none, the L1
 * one saw them beside its own.
 */
static void test_nested_teardown(void)
{
	struct replay_result b;

	nev = 0;
	vm_split_beside_huge();
	spte(VCPU, 2, 0x400, 0, RW_2M);
	entry();
	syscall_exit(VMM);
	spte(VMM, 3, 0, TABLE, 0);                      /* vm_destroy */
	sp_event(MEV_SP_FREE, VMM, 2, 0);                       /* the L2 table */
	spte(VMM, 2, 0, TABLE, REMOVED);
	sp_event(MEV_SP_FREE, VMM, 1, 0);                       /* its L1 child */
	spte(VMM, 1, 0x1, RW_4K, REMOVED);
	spte(VMM, 1, 0x100, RW_4K, REMOVED);
	spte(VMM, 2, 0x200, RW_2M, REMOVED);
	spte(VMM, 2, 0x400, RW_2M, REMOVED);
	syscall_exit(VMM);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.zaps_observed == 4 && b.zaps_predicted == 4);
	CHECK(b.mismatches_total == 0);
	replay_result_free(&b);
}

/*
 * The VM's zap as Linux 6.12 traces it (tdp_mmu_zap_root(): 4K leaves,
 * then 2M, then 1G, then the root's entries), run by the NX recovery
 * worker: the 4K leaves go before any table, then the L1 table (empty
 * by now) with the 2M pass, the L2 table with the 1G pass.  One
 * teardown of everything, predicted exactly; no recovery batch.  With
 * the rule off, the leaves are unexplained.
 */
static void test_zap_all_leaves_first(void)
{
	struct replay_result b;

	nev = 0;
	nx_ratio = 4;
	vm_split_beside_huge();
	entry();
	syscall_exit(VMM);
	spte(WORKER, 1, 0x1, RW_4K, NONPRESENT_612);           /* 4K pass */
	spte(WORKER, 1, 0x100, RW_4K, NONPRESENT_612);
	spte(WORKER, 2, 0x200, RW_2M, NONPRESENT_612);         /* 2M pass */
	spte(WORKER, 2, 0, TABLE, NONPRESENT_612);
	sp_event(MEV_SP_FREE, WORKER, 1, 0);                            /* its L1 */
	spte(WORKER, 3, 0, TABLE, NONPRESENT_612);             /* 1G pass */
	sp_event(MEV_SP_FREE, WORKER, 2, 0);                            /* the L2 */
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.zaps_observed == 3 && b.zaps_predicted == 3);
	CHECK(b.recovery_batches == 0 && b.nx_recovered_observed == 0);
	CHECK(b.mismatches_total == 0);
	replay_result_free(&b);

	rules_off = REPLAY_RULE_BIT(RULE_ZAP_ALL);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total > 0 &&
	      b.mismatches[0].kind == MISMATCH_ZAP_UNEXPLAINED);
	replay_result_free(&b);
	rules_off = 0;
	nx_ratio = 0;
}

/*
 * An exec fault below an NX 2M leaf on a kernel that splits it in place
 * (Linux 6.12: the leaf becomes a table in one change, its 512
 * children untraced) zaps nothing; the child the fault then makes
 * executable changes in place.  The 6.1 way (zap, then link a table) is
 * test_huge_fault_in_place().
 */
static void test_fault_split_in_place(void)
{
	struct replay_result b;
	uint64_t child = (NX_2M & ~0x80ULL) | (0x1ULL << 12);

	nev = 0;
	memslot(0);
	spte(VCPU, 3, 0, 0, TABLE);
	spte(VCPU, 2, 0x200, 0, NX_2M);
	entry();
	fault(0x201, MEV_PFERR_USER | MEV_PFERR_FETCH);
	request(0x201, 1);
	spte(VCPU, 2, 0x200, NX_2M, TABLE);
	spte(VCPU, 1, 0x201, child, child & ~(1ULL << 63));
	entry();
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.faults_observed == 1 && b.faults_predicted == 1);
	CHECK(b.zaps_observed == 0 && b.zaps_predicted == 0);
	CHECK(b.mismatches_total == 0);
	replay_result_free(&b);
}

/*
 * Dirty logging off on 6.12: the collapse unlinks the L1 table of the 2M
 * region at 0x200 and walks its three leaves under the read lock; after
 * the first, a vCPU's write fault links a new (empty) table there and
 * installs 0x201; the walk then traces the old 0x201 and 0x202.  The
 * teardown zapped its three leaves; the model keeps the new 0x201 (the
 * later invalidation of the region zaps exactly it), and not the old
 * 0x202.  With the rule off the invalidation's prediction is wrong.
 */
static void test_removed_table_replaced(void)
{
	int off;

	for (off = 0; off <= 1; off++) {
		nev = 0;
		rules_off = off ? REPLAY_RULE_BIT(RULE_REMOVED_TABLE) : 0;
		memslot(0);
		spte(VCPU, 3, 0, 0, TABLE);
		spte(VCPU, 2, 0x200, 0, TABLE);
		spte(VCPU, 1, 0x200, 0, RW_4K);
		spte(VCPU, 1, 0x201, 0, RW_4K + 0x1000);
		spte(VCPU, 1, 0x202, 0, RW_4K + 0x2000);
		entry();
		spte(VMM, 2, 0x200, TABLE, NONPRESENT_612);    /* unlinked */
		sp_event(MEV_SP_FREE, VMM, 1, 0x200);
		spte(VMM, 1, 0x200, RW_4K, FROZEN_612);
		fault(0x201, MEV_PFERR_USER | MEV_PFERR_WRITE);
		request(0x201, 1);
		spte(VCPU, 2, 0x200, NONPRESENT_612, TABLE + 0x1000);
		spte(VCPU, 1, 0x201, NONPRESENT_612, RW_4K + 0x1000);
		entry();
		spte(VMM, 1, 0x201, RW_4K + 0x1000, FROZEN_612);  /* old */
		spte(VMM, 1, 0x202, RW_4K + 0x2000, FROZEN_612);
		syscall_exit(VMM);
		stock_notifier(0x200, 4);
		spte(VMM, 1, 0x201, RW_4K + 0x1000, NONPRESENT_612);
		syscall_exit(VMM);
		zaps_judged(off, 4);
	}
	rules_off = 0;
}

/*
 * Dirty logging stops (patched memslot event inside
 * KVM_SET_USER_MEMORY_REGION): the ioctl's thread frees the 4K table
 * under the 2M entry, its two leaves with it, and the vCPU refaults one.
 * Zaps and refault are the collapse's; with the rule off, a teardown's.
 */
static void test_dirty_log_collapse(void)
{
	struct replay_result b;
	int off;

	for (off = 0; off <= 1; off++) {
		nev = 0;
		rules_off = off ? REPLAY_RULE_BIT(RULE_DIRTY_LOG_COLLAPSE) : 0;
		memslot(0);
		memslot_flags(1024, 0, KVM_MEM_LOG_DIRTY_PAGES);
		spte(VCPU, 3, 0, 0, TABLE);
		spte(VCPU, 2, 0, 0, TABLE + 0x1000);
		spte(VCPU, 1, 0x1, 0, RW_4K);
		spte(VCPU, 1, 0x2, 0, RW_4K + 0x1000);
		entry();
		setregion_entry();
		memslot_flags(1024, KVM_MEM_LOG_DIRTY_PAGES, 0);
		spte(VMM, 2, 0, TABLE + 0x1000, 0);
		sp_event(MEV_SP_FREE, VMM, 1, 0);
		spte(VMM, 1, 0x1, RW_4K, REMOVED);
		spte(VMM, 1, 0x2, RW_4K + 0x1000, REMOVED);
		syscall_exit(VMM);
		fault(0x1, MEV_PFERR_USER | MEV_PFERR_WRITE);
		spte(VCPU, 2, 0, 0, RW_2M);
		entry();
		CHECK(run(&policy_baseline, &b) == REPLAY_OK);
		CHECK(b.mismatches_total == 0);
		CHECK(b.zaps[off ? ZAP_TEARDOWN : ZAP_DIRTY_LOG_COLLAPSE] == 2);
		CHECK(b.zaps[off ? ZAP_DIRTY_LOG_COLLAPSE : ZAP_TEARDOWN] == 0);
		CHECK(b.refaults[off ? ZAP_TEARDOWN :
				 ZAP_DIRTY_LOG_COLLAPSE] == 1);
		replay_result_free(&b);
	}
	rules_off = 0;
}

/* A fresh sequence: one L1 table at gfn 0x200 mapping a written leaf
 * at 0x201 (6.12 values). */
static void leaf_in_table(void)
{
	nev = 0;
	memslot(0);
	spte(VCPU, 3, 0, 0, TABLE);
	spte(VCPU, 2, 0x200, 0, TABLE);
	spte(VCPU, 1, 0x201, 0, RW_4K);
	entry();
}

/*
 * The same zap, and the vCPU's fault links a new table at the cleared
 * entry and installs 0x201 before the zap's tracepoint fires: the unlink
 * traced afterwards names the old table, the removal its old leaf.  The
 * model keeps the new table and leaf: a later invalidation zaps it.
 */
static void test_unlink_after_new_table(void)
{
	struct replay_result b;

	leaf_in_table();
	ranged_flush(VMM, 0x200, 512);
	fault(0x201, MEV_PFERR_USER | MEV_PFERR_WRITE);
	request(0x201, 1);
	spte(VCPU, 2, 0x200, NONPRESENT_612, TABLE + 0x1000);
	spte(VCPU, 1, 0x201, NONPRESENT_612, RW_4K + 0x1000);
	entry();
	spte(VMM, 2, 0x200, TABLE, NONPRESENT_612);     /* the old table */
	sp_event(MEV_SP_FREE, VMM, 1, 0x200);
	spte(VMM, 1, 0x201, RW_4K, FROZEN_612);
	syscall_exit(VMM);
	stock_notifier(0x200, 4);
	spte(VMM, 1, 0x201, RW_4K + 0x1000, NONPRESENT_612);
	ranged_flush(VMM, 0x200, 4);    /* the flush after the zap */
	syscall_exit(VMM);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.faults_observed == 1 && b.faults_predicted == 1);
	CHECK(b.zaps_observed == 2 && b.zaps_predicted == 2);
	CHECK(b.mismatches_total == 0);
	replay_result_free(&b);

	rules_off = REPLAY_RULE_BIT(RULE_REMOVED_TABLE);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total > 0);
	replay_result_free(&b);
	rules_off = 0;
}

/*
 * A fresh 6.12 read-lock lab run: the collapse when dirty logging stops
 * unlinks a table (VMM thread), a vCPU's fault links a new one at the
 * entry, and only then is the old table's free traced, then its leaf
 * (frozen).  The free's prediction is the removed table's leaf, which
 * the model no longer holds there: one zap predicted, one traced.
 */
static void test_free_after_new_table(void)
{
	struct replay_result b;

	leaf_in_table();
	spte(VMM, 2, 0x200, TABLE, NONPRESENT_612);     /* unlinked */
	fault(0x201, MEV_PFERR_USER | MEV_PFERR_WRITE);
	spte(VCPU, 2, 0x200, NONPRESENT_612, TABLE + 0x1000);
	entry();
	sp_event(MEV_SP_FREE, VMM, 1, 0x200);   /* then freed */
	spte(VMM, 1, 0x201, RW_4K, FROZEN_612);
	syscall_exit(VMM);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.zaps_observed == 1 && b.zaps_predicted == 1);
	CHECK(b.mismatches_total == 0);
	replay_result_free(&b);
}

/*
 * Reclaim inside a vCPU's fault (the host page the fault needs is
 * allocated under a memory cgroup limit): the page aging clears another
 * leaf's accessed bit and flushes (clear_flush_young).  The flush is
 * the aging's; the fault, which zaps nothing, has none.  With the rule
 * off the fault's context flushes without a zap (flush_context).
 */
static void test_aging_flush(void)
{
	struct replay_result b;
	int off;

	for (off = 0; off <= 1; off++) {
		rules_off = off ? REPLAY_RULE_BIT(RULE_AGING_FLUSH) : 0;
		leaf_at_1();
		entry();
		fault(0x5, MEV_PFERR_USER | MEV_PFERR_WRITE);
		spte(VCPU, 1, 0x1, RW_4K, RW_4K & ~0x20ULL);
		ev(MEV_TLB_FLUSH, VCPU);
		spte(VCPU, 1, 0x5, 0, RW_4K + 0x4000);
		entry();
		CHECK(run(&policy_baseline, &b) == REPLAY_OK);
		CHECK(b.faults_observed == 1);
		if (!off)
			CHECK(b.faults_predicted == 1 && b.flushes_other == 1 &&
			      b.mismatches_total == 0);
		else
			CHECK(b.mismatches_total > 0 &&
			      b.mismatches[0].kind == MISMATCH_FLUSH_CONTEXT);
		replay_result_free(&b);
	}
	rules_off = 0;
}

const struct scenario rules_kernel[] = {
	{ "window_walk_passes_huge_leaf", test_window_walk_huge },
	{ "nx_off_worker_free_is_teardown", test_nx_off },
	{ "nx_count_checked_under_write_lock", test_nx_count },
	{ "aging_flush_is_not_the_faults", test_aging_flush },
	{ "nx_two_tables_at_one_entry_612", test_nx_two_tables },
	{ "traced_batch_spans_pause", test_measured_batch_pause },
	{ "leaf_under_zapped_table_unmapped", test_unreachable_leaf },
	{ "huge_fault_zaps_below_goal_only", test_huge_fault_in_place },
	{ "huge_leaf_at_range_boundary", test_huge_leaf_at_range_boundary },
	{ "eager_split_untraced_children", test_eager_split_children },
	{ "nested_teardown_one_walk", test_nested_teardown },
	{ "zap_all_leaves_first_612", test_zap_all_leaves_first },
	{ "fault_split_in_place_612", test_fault_split_in_place },
	{ "removed_table_replaced_612", test_removed_table_replaced },
	{ "unlink_after_new_table_612", test_unlink_after_new_table },
	{ "free_after_new_table_612", test_free_after_new_table },
	{ "collapse_free_after_new_table_612",
	  test_collapse_free_after_new_table },
	{ "dirty_log_collapse_zap_cause", test_dirty_log_collapse },
};
const int rules_kernel_n =
	(int)(sizeof(rules_kernel) / sizeof(rules_kernel[0]));
