/*
 * The policies: what a what-if changes (perm-upgrade, nx-skip-dirty,
 * nx-readlock, nx-period, their combinations) and the figures it gives
 * (faults, zaps, flushes, lock waits, latency).
 */
#include "scenario.h"

static void test_perm_upgrade(void)
{
	struct replay_result b, p;

	nev = 0;
	memslot(0);
	fault(5, MEV_PFERR_USER);                       /* read */
	spte(VCPU, 1, 5, 0, RO_4K);
	entry();
	notifier(5, 1);                                 /* uffd unprotect */
	spte(VMM, 1, 5, RO_4K, 0);
	syscall_exit(VMM);
	fault(5, MEV_PFERR_USER);                       /* read refault */
	spte(VCPU, 1, 5, 0, RO_4K);
	entry();
	fault(5, MEV_PFERR_USER | MEV_PFERR_WRITE |
	      MEV_PFERR_PRESENT);                       /* write */
	spte(VCPU, 1, 5, RO_4K, RW_4K);
	entry();

	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 0);
	CHECK(b.faults_observed == 3 && b.faults_predicted == 3);
	CHECK(b.faults == 3 && b.faults_avoided == 0);
	CHECK(b.zaps[ZAP_NOTIFIER] == 1 && b.refaults[ZAP_NOTIFIER] == 1);
	CHECK(b.flushes == 1 && b.flushes_predicted == 1);
	CHECK(b.upgrade_src == REPLAY_SRC_MEASURED);

	CHECK(run(&policy_perm_upgrade, &p) == REPLAY_OK);
	CHECK(p.faults_avoided == 1);           /* the read refault */
	CHECK(p.faults == 2);                   /* first read, the write */
	CHECK(p.zaps[ZAP_NOTIFIER] == 0 && p.zaps_kept == 1);
	CHECK(p.flushes == 0);
	replay_result_free(&b);
	replay_result_free(&p);
}

static void vcpu_exit(int64_t reason)
{
	ev(MEV_VCPU_EXIT, VCPU)->u.vcpu.reason = reason;
}

/* A sample of the latency probe, traced by the vCPU's thread. */
static void probe_sample(int64_t ns)
{
	ev(MEV_LATENCY_SAMPLE, VCPU)->u.lat.ns = ns;
}

/*
 * The latency what-if (engine_latency.c): under perm-upgrade the read
 * refault on the kept leaf is not taken, so its NPF exit (3 ms, exit to
 * entry) leaves the service times, and the probe sample whose window
 * (its 4.5 ms before the I/O exit that reported it) held that exit is
 * 3 ms shorter.  The first read's exit and its sample stay.  Under the
 * recorded policy both are as traced.
 */
static void test_latency_whatif(void)
{
	struct replay_result b, p;

	nev = 0;
	memslot(0);
	vcpu_exit(0x400);                               /* 1 ms */
	fault(5, MEV_PFERR_USER);                       /* read */
	spte(VCPU, 1, 5, 0, RO_4K);
	entry();                                        /* 4 ms */
	vcpu_exit(0x7b);                                /* I/O: 5 ms */
	probe_sample(4500000);
	entry();
	notifier(5, 1);                                 /* uffd unprotect */
	spte(VMM, 1, 5, RO_4K, 0);
	syscall_exit(VMM);
	vcpu_exit(0x400);                               /* 11 ms */
	fault(5, MEV_PFERR_USER);                       /* read refault */
	spte(VCPU, 1, 5, 0, RO_4K);
	entry();                                        /* 14 ms */
	vcpu_exit(0x7b);
	probe_sample(4500000);
	entry();

	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 0);
	CHECK(b.lat.npf.n == 2 && b.lat.npf_exits_removed == 0);
	CHECK(b.lat.npf_pct[0] == 3000000 && b.lat.npf_max == 3000000);
	CHECK(b.lat.probe.n == 2 && b.lat.probe_pct[0] == 4500000);
	CHECK(b.lat.probe_long[0] == 2 && b.lat.probe_long[1] == 2);
	CHECK(b.lat.probe_removed_ns == 0);

	CHECK(run(&policy_perm_upgrade, &p) == REPLAY_OK);
	CHECK(p.faults_avoided == 1);
	CHECK(p.lat.npf.n == 1 && p.lat.npf_exits_removed == 1);
	CHECK(p.lat.npf_removed_ns == 3000000);
	CHECK(p.lat.probe.n == 2 && p.lat.probe_removed_ns == 3000000);
	CHECK(p.lat.probe_pct[0] == 1500000 && p.lat.probe_max == 4500000);
	CHECK(p.lat.probe_long[0] == 2 && p.lat.probe_long[1] == 1);
	replay_result_free(&b);
	replay_result_free(&p);
}

static void test_restriction_is_not_kept(void)
{
	struct replay_result p;

	nev = 0;
	memslot(0);
	fault(5, MEV_PFERR_USER);
	spte(VCPU, 1, 5, 0, RW_4K);
	entry();
	notifier(5, 0);                                 /* write-protect */
	spte(VMM, 1, 5, RW_4K, 0);
	syscall_exit(VMM);
	fault(5, MEV_PFERR_USER);
	spte(VCPU, 1, 5, 0, RO_4K);
	entry();
	CHECK(run(&policy_perm_upgrade, &p) == REPLAY_OK);
	CHECK(p.faults == 2 && p.faults_avoided == 0 && p.zaps_kept == 0);
	replay_result_free(&p);
}

static void test_nx_skip_dirty(void)
{
	struct replay_result b, s, c;

	nx_scenario(1, 0);                              /* dirty-logged */
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 0);
	CHECK(b.zaps[ZAP_NX_RECOVERY] == 1 && b.zaps[ZAP_FAULT_PATH] == 1);
	CHECK(b.faults == 2 && b.refaults[ZAP_NX_RECOVERY] == 1);
	CHECK(b.recovery_batches == 1);
	CHECK(run(&policy_nx_skip_dirty, &s) == REPLAY_OK);
	CHECK(s.zaps[ZAP_NX_RECOVERY] == 0 && s.zaps_kept == 1);
	CHECK(s.faults == 1 && s.faults_avoided == 1);
	CHECK(s.dirty_src == REPLAY_SRC_MEASURED);

	nx_scenario(0, 0);                              /* not logged */
	CHECK(run(&policy_nx_skip_dirty, &c) == REPLAY_OK);
	CHECK(c.zaps[ZAP_NX_RECOVERY] == 1 && c.faults == 2);
	replay_result_free(&c);

	/* One NX split, ratio 1: the batch takes ceil(1 / 1) = 1 page; a
	 * page split while dirty logging is on is not tracked: ceil(0) = 0
	 * differs from the 1 page the worker took.  (Such a page is never
	 * listed, so the worker's free of it is a teardown under rule
	 * unlisted_free: the batch size is checked with that rule off.) */
	nx_ratio = 1;
	CHECK(run(&policy_baseline, &c) == REPLAY_OK);
	CHECK(c.nx_recovered_observed == 1 && c.nx_recovered_predicted == 1 &&
	      c.mismatches_total == 0);
	replay_result_free(&c);
	nev = 0;
	memslot(KVM_MEM_LOG_DIRTY_PAGES);
	nx_split(0x200);
	nx_recover(0x200);
	rules_off = REPLAY_RULE_BIT(RULE_UNLISTED_FREE);
	CHECK(run(&policy_baseline, &c) == REPLAY_OK);
	rules_off = 0;
	CHECK(c.nx_recovered_predicted == 0 && c.mismatches_total == 1 &&
	      c.mismatches[0].kind == MISMATCH_RECOVERY_BATCH);
	nx_ratio = 0;
	replay_result_free(&b);
	replay_result_free(&s);
	replay_result_free(&c);
}

/*
 * A page recovered while dirty logging was on and not executed again
 * before logging stops: nx-skip-dirty keeps its table, and the collapse
 * when logging stops (kvm_mmu_zap_collapsible_sptes(), which spares no
 * NX split) zaps it, though the recorded run, whose worker had freed
 * it, traces no collapse there; the read fault after it maps 2M under
 * both, a refault of the collapse under the policy, not avoided.
 */
static void test_collapse_kept(void)
{
	struct replay_result b, s;

	nev = 0;
	memslot(0);
	nx_split(0x200);
	setregion_entry();
	memslot_flags(1024, 0, KVM_MEM_LOG_DIRTY_PAGES);
	syscall_exit(VMM);
	nx_recover(0x200);
	setregion_entry();
	memslot_flags(1024, KVM_MEM_LOG_DIRTY_PAGES, 0);
	syscall_exit(VMM);
	fault(0x200, MEV_PFERR_USER);
	spte(VCPU, 2, 0x200, 0, RW_2M);
	entry();
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 0 && b.faults == 2 &&
	      b.zaps[ZAP_DIRTY_LOG_COLLAPSE] == 0);
	CHECK(run(&policy_nx_skip_dirty, &s) == REPLAY_OK);
	CHECK(s.zaps_kept == 1 && s.zaps[ZAP_NX_RECOVERY] == 0);
	CHECK(s.zaps[ZAP_DIRTY_LOG_COLLAPSE] == 1);
	CHECK(s.faults == 2 && s.faults_avoided == 0 &&
	      s.refaults[ZAP_DIRTY_LOG_COLLAPSE] == 1);
	replay_result_free(&b);
	replay_result_free(&s);
}

/*
 * Knob policies combined: a recovery in a dirty-logged slot and a pure
 * upgrade, each followed by a refault.  Each knob alone avoids its own
 * refault, the combination both; the name is canonical whatever order
 * it is given in, and only knob policies combine.
 */
static void test_policy_combined(void)
{
	const struct policy *c = policy_find("nx-skip-dirty+perm-upgrade");
	struct replay_result b, p, s, r;

	CHECK(c && strcmp(c->name, "perm-upgrade+nx-skip-dirty") == 0 &&
	      c == policy_find("perm-upgrade+nx-skip-dirty") &&
	      c->nparts == 2 && !c->recovery_read_lock && c->limits);
	CHECK(policy_find("nx-skip-dirty+nx-readlock") &&
	      policy_find("nx-skip-dirty+nx-readlock")->recovery_read_lock);
	CHECK(!policy_find("perm-upgrade+perm-upgrade") &&
	      !policy_find("baseline+perm-upgrade") &&
	      !policy_find("perm-upgrade+") && !policy_find("+") &&
	      !policy_find("perm-upgrade+nx-ratio=2") &&
	      !policy_find("perm-upgrade+no-such-policy"));
	nx_scenario(1, 0);                      /* recovery, dirty-logged */
	fault(5, MEV_PFERR_USER);               /* then a pure upgrade */
	spte(VCPU, 1, 5, 0, RO_4K);
	entry();
	notifier(5, 1);
	spte(VMM, 1, 5, RO_4K, 0);
	syscall_exit(VMM);
	fault(5, MEV_PFERR_USER);
	spte(VCPU, 1, 5, 0, RO_4K);
	entry();
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 0 && b.faults == 4);
	CHECK(run(&policy_perm_upgrade, &p) == REPLAY_OK);
	CHECK(run(&policy_nx_skip_dirty, &s) == REPLAY_OK);
	CHECK(run(c, &r) == REPLAY_OK);
	CHECK(p.faults_avoided == 1 && p.zaps_kept == 1 &&
	      p.zaps[ZAP_NOTIFIER] == 0 && p.zaps[ZAP_NX_RECOVERY] == 1);
	CHECK(s.faults_avoided == 1 && s.zaps_kept == 1 &&
	      s.zaps[ZAP_NOTIFIER] == 1 && s.zaps[ZAP_NX_RECOVERY] == 0);
	CHECK(r.faults_avoided == 2 && r.zaps_kept == 2 && r.faults == 2 &&
	      r.zaps[ZAP_NOTIFIER] == 0 && r.zaps[ZAP_NX_RECOVERY] == 0);
	replay_result_free(&b);
	replay_result_free(&p);
	replay_result_free(&s);
	replay_result_free(&r);
}

static void test_nx_readlock(void)
{
	struct replay_result b, r;

	/* The wait (1.5 ms, ending 1 ms after the recovery's last event)
	 * overlaps the write-locked recovery batch. */
	nx_scenario(0, 1500000);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.lock_src == REPLAY_SRC_MEASURED);
	CHECK(b.lock_wait_ns == 1500000 && b.lock_waits == 1);
	CHECK(run(&policy_nx_readlock, &r) == REPLAY_OK);
	CHECK(r.lock_wait_ns == 0 && r.lock_wait_removed_ns == 1500000);
	/* The faults and zaps are the baseline's. */
	CHECK(r.faults == b.faults && r.zaps[ZAP_NX_RECOVERY] == 1);
	replay_result_free(&b);
	replay_result_free(&r);
}

/*
 * Patched: a write-locked batch's worker holds mmu_lock from before its
 * begin event to after its end.  A vCPU's wait traced between two of
 * its pages, beginning after the last page so far, waited for the
 * worker: nx-readlock removes it.  Before, a wait counted as inside a
 * batch only up to the batch's last traced event, so this one stayed.
 */
static void test_nx_readlock_between_pages(void)
{
	struct replay_result b, r;
	struct model_event *e;

	nev = 0;
	memslot(0);
	nx_split(0x200);
	nx_split(0x400);
	nx_phase(MEV_NX_BEGIN, MEV_LOCK_WRITE, 2);
	nx_recover(0x200);
	e = ev(MEV_LOCK_WAIT, VCPU);            /* from 0.5 ms after it */
	e->u.lock.wait_ns = 500000;
	nx_recover(0x400);
	nx_phase(MEV_NX_END, MEV_LOCK_WRITE, 0);        /* none left */
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 0 && b.lock_wait_ns == 500000);
	CHECK(run(&policy_nx_readlock, &r) == REPLAY_OK);
	CHECK(r.lock_wait_ns == 0 && r.lock_wait_removed_ns == 500000);
	replay_result_free(&b);
	replay_result_free(&r);
}

static void test_nx_period(void)
{
	struct policy twice = policy_baseline, same = policy_baseline;
	struct policy odd = policy_baseline;
	struct replay_result b, t, s;
	struct model_event *e;

	twice.nx_period_ms = 2000;
	same.nx_period_ms = 1000;
	odd.nx_period_ms = 1500;
	nev = 0;
	ts_shift = 0;
	memslot(0);
	nx_split(0x200);
	nx_split(0x400);
	nx_recover(0x200);                      /* wake-up 0 */
	ts_shift = 1000000000;                  /* one period later */
	nx_recover(0x400);                      /* wake-up 1 */
	e = ev(MEV_LOCK_WAIT, VCPU);            /* waited for wake-up 1 */
	e->u.lock.wait_ns = 1500000;
	fault(0x200, MEV_PFERR_USER | MEV_PFERR_FETCH);        /* re-exec */
	spte(VCPU, 1, 0x200, 0, RW_4K);
	entry();
	fault(0x400, MEV_PFERR_USER | MEV_PFERR_FETCH);
	spte(VCPU, 1, 0x400, 0, RW_4K);
	entry();
	ts_shift = 0;
	nx_period_ms = 1000;
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 0 && b.recovery_batches == 2 &&
	      b.recovery_batches_run == 2);
	CHECK(b.faults == 4 && b.refaults[ZAP_NX_RECOVERY] == 2);
	CHECK(b.lock_wait_ns == 1500000);
	CHECK(run(&same, &s) == REPLAY_OK);
	CHECK(s.faults == b.faults && s.zaps[ZAP_NX_RECOVERY] ==
	      b.zaps[ZAP_NX_RECOVERY] && s.lock_wait_ns == b.lock_wait_ns);
	replay_result_free(&s);
	CHECK(run(&twice, &t) == REPLAY_OK);
	CHECK(t.recovery_batches == 2 && t.recovery_batches_run == 1);
	CHECK(t.zaps[ZAP_NX_RECOVERY] == 1 && t.zaps_kept == 1);
	CHECK(t.faults == 3 && t.faults_avoided == 1 &&
	      t.refaults[ZAP_NX_RECOVERY] == 1);
	CHECK(t.lock_wait_ns == 0 && t.lock_wait_removed_ns == 1500000);
	CHECK(policy_period_factor(&twice, 1000) == 2 &&
	      policy_period_factor(&odd, 1000) == 0 &&
	      policy_period_factor(&twice, 0) == 0 &&
	      policy_period_factor(&policy_baseline, 0) == 1);
	CHECK(run(&odd, &s) == REPLAY_ERR_POLICY);
	CHECK(policy_find("nx-period=2000") &&
	      policy_find("nx-period=2000")->nx_period_ms == 2000 &&
	      !policy_find("nx-period=") && !policy_find("nx-period=-5"));
	nx_period_ms = 0;
	replay_result_free(&b);
	replay_result_free(&t);
}

/*
 * perm-upgrade keeps the read-only leaf; the read refault it avoids made
 * the recorded kernel map the page writable (KVM maps writable on a read
 * fault when the host page is); the guest then wrote through it, which
 * only the dirty bit of the traced leaf shows when it is zapped.  Under
 * the policy that write faulted on the kept read-only leaf.  Without the
 * write (dirty bit clear) there is no such fault.
 */
static void added_fault_scenario(uint64_t zapped)
{
	nev = 0;
	memslot(0);
	mapped(5, RO_4K);
	notifier(5, 1);                                 /* upgrade */
	spte(VMM, 1, 5, RO_4K, 0);
	syscall_exit(VMM);
	fault(5, MEV_PFERR_USER);                       /* read refault */
	spte(VCPU, 1, 5, 0, RW_4K_CLEAN);
	entry();
	notifier(5, 0);                                 /* restriction */
	spte(VMM, 1, 5, zapped, 0);
	syscall_exit(VMM);
	mapped(5, RO_4K);
}

static void test_policy_adds_faults(void)
{
	struct replay_result b, p;

	added_fault_scenario(RW_4K);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 0 && b.faults == 3 &&
	      b.faults_avoided == 0 && b.faults_added == 0);
	CHECK(run(&policy_perm_upgrade, &p) == REPLAY_OK);
	CHECK(p.faults_avoided == 1 && p.faults_added == 1 && p.faults == 3);
	CHECK(p.zaps[ZAP_NOTIFIER] == 1 && p.zaps_kept == 1);
	replay_result_free(&b);
	replay_result_free(&p);

	added_fault_scenario(RW_4K_CLEAN);
	CHECK(run(&policy_perm_upgrade, &p) == REPLAY_OK);
	CHECK(p.faults_avoided == 1 && p.faults_added == 0 && p.faults == 2);
	CHECK(p.zaps[ZAP_NOTIFIER] == 1 && p.zaps_kept == 1);
	replay_result_free(&p);
}

static void unmap_decision(uint64_t gfn, int decision);

/*
 * A single-page upgrade invalidation, under whose lock a vCPU's write
 * fault on gfn 6 waits 1.5 ms (from 0.5 ms after the fault): zap, it
 * zaps gfn 5's read-only leaf; else its walk of gfn 7 finds nothing
 * (the decision traced after it).
 */
static void kept_window_wait_scenario(int zap)
{
	struct model_event *e;

	nev = 0;
	ts_shift = 0;
	memslot(0);
	mapped(6, RO_4K);
	if (zap)
		mapped(5, RO_4K);
	notifier(zap ? 5 : 7, 1);                       /* upgrade */
	fault(6, MEV_PFERR_USER | MEV_PFERR_WRITE | MEV_PFERR_PRESENT);
	if (zap)
		spte(VMM, 1, 5, RO_4K, 0);              /* under the lock */
	else
		unmap_decision(7, MEV_UNMAP_ZAPPED);    /* after the walk */
	e = ev(MEV_LOCK_WAIT, VCPU);                    /* waited for it */
	e->u.lock.wait_ns = 1500000;
	e->u.lock.gfn = 6;
	spte(VCPU, 1, 6, RO_4K, RW_4K);
	entry();
	syscall_exit(VMM);
}

static void test_lock_wait_kept_window(void)
{
	struct replay_result b, p;
	struct model_event *e;

	kept_window_wait_scenario(1);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 0 && b.lock_wait_ns == 1500000 &&
	      b.lock_wait_removed_ns == 0);
	/* The kept invalidation still takes the lock to decide, at most
	 * until its first change under the lock (its zap): 0.5 ms of the
	 * wait, which began 1.5 ms in, are left at most, none at least. */
	CHECK(run(&policy_perm_upgrade, &p) == REPLAY_OK);
	CHECK(p.lock_wait_ns == 500000 && p.lock_wait_removed_ns == 1000000 &&
	      p.lock_wait_min_ns == 0);
	replay_result_free(&b);
	replay_result_free(&p);

	/* The read refault perm-upgrade avoids waited: no wait under it. */
	nev = 0;
	memslot(0);
	mapped(5, RO_4K);
	notifier(5, 1);
	spte(VMM, 1, 5, RO_4K, 0);
	syscall_exit(VMM);
	ts_shift = 100000000;                           /* long after */
	fault(5, MEV_PFERR_USER);
	ts_shift += 400000;
	e = ev(MEV_LOCK_WAIT, VCPU);
	e->u.lock.wait_ns = 300000;
	e->u.lock.gfn = 5;
	spte(VCPU, 1, 5, 0, RO_4K);
	entry();
	ts_shift = 0;
	CHECK(run(&policy_perm_upgrade, &p) == REPLAY_OK);
	CHECK(p.faults_avoided == 1 && p.lock_wait_ns == 0 &&
	      p.lock_wait_removed_ns == 300000);
	replay_result_free(&p);
}

/* Patched: kvm_unmap_gfn_range()'s decision for the VMM's window. */
static void unmap_decision(uint64_t gfn, int decision)
{
	struct model_event *e = ev(MEV_UNMAP_DECISION, VMM);

	e->u.unmap.gfn_start = gfn;
	e->u.unmap.gfn_end = gfn + 1;
	e->u.unmap.event = MEV_MMU_NOTIFY_PROTECTION_VMA;
	e->u.unmap.perm_upgrade = 1;
	e->u.unmap.decision = decision;
}

/*
 * Patched 6.1: an invalidation whose range meets a memslot takes mmu_lock
 * for write and walks it, zapping or not (__kvm_handle_hva_range()); a
 * walk that finds nothing holds the lock as long as it walks.  Three
 * single-page upgrades reach their first zap 10 us after they begin; a
 * fourth walks 2 ms over 4 MiB with no leaf, while a vCPU's write
 * fault, lead_ns after the walk began, waits for the lock until the
 * walk's decision (traced 1 ms after the fault) and 1 ms more.
 */
static void empty_walk_scenario(int64_t lead_ns)
{
	struct model_event *e;
	uint64_t g;

	nev = 0;
	ts_shift = 0;
	memslot(0);
	mapped(6, RO_4K);
	for (g = 1; g <= 3; g++) {
		mapped(g, RO_4K);
		notifier(g, 1);
		ts_shift -= 990000;                     /* 10 us later */
		spte(VMM, 1, g, RO_4K, 0);
		unmap_decision(g, MEV_UNMAP_ZAPPED);
		syscall_exit(VMM);
	}
	notifier(7, 1);                                 /* nothing mapped */
	evs[nev - 1].u.notifier.hva_end = HVA + (1024 << 12);
	ts_shift -= 1000000 - lead_ns;
	fault(6, MEV_PFERR_USER | MEV_PFERR_WRITE | MEV_PFERR_PRESENT);
	unmap_decision(7, MEV_UNMAP_ZAPPED);            /* after the walk */
	e = ev(MEV_LOCK_WAIT, VCPU);
	e->u.lock.wait_ns = 2000000 - 3000;     /* from 3 us after the fault */
	e->u.lock.gfn = 6;
	spte(VCPU, 1, 6, RO_4K, RW_4K);
	entry();
	syscall_exit(VMM);
	ts_shift = 0;
}

/*
 * perm-upgrade keeps the fourth range and decides at once: a wait that
 * began 1 ms into the walk goes.  Before, a wait was removed only where
 * the kept window had zapped a leaf, so this one stayed whole.  One that
 * began 5 us into the walk: the kept invalidation still holds the lock
 * to decide, taken as at most the 99th percentile of the single-page
 * spans to a first change (10 us, to a 100 ns bucket: 10.1 us), so 5.1
 * us of it are left at most, none at least.
 */
static void test_lock_wait_kept_empty_walk(void)
{
	struct replay_result b, p;

	empty_walk_scenario(1000000 - 3000);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 0 && b.lock_wait_ns == 1997000 &&
	      b.lock_waits == 1);
	CHECK(run(&policy_perm_upgrade, &p) == REPLAY_OK);
	CHECK(p.lock_wait_ns == 0 && p.lock_waits == 0 &&
	      p.lock_wait_removed_ns == 1997000);
	replay_result_free(&b);
	replay_result_free(&p);

	empty_walk_scenario(2000);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 0 && b.lock_wait_ns == 1997000);
	CHECK(run(&policy_perm_upgrade, &p) == REPLAY_OK);
	CHECK(p.lock_wait_ns == 5100 && p.lock_waits == 1 &&
	      p.lock_wait_removed_ns == 1997000 - 5100 &&
	      p.lock_wait_min_ns == 0);
	replay_result_free(&b);
	replay_result_free(&p);
}

/*
 * A single-page upgrade that zaps nothing walks one table at most: it
 * held the lock about as a kept invalidation does, and no event dates
 * its walk's end.  perm-upgrade leaves its wait whole for the most left
 * and takes it away for the least: a range (fresh write64 run sets: on a
 * loaded host B's waits stayed A's, on a quiet one they fell to a third).
 * Before, the least kept it too, and the figure read as a prediction.
 */
static void test_lock_wait_kept_single_page_walk(void)
{
	struct replay_result b, p;

	kept_window_wait_scenario(0);
	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 0 && b.lock_wait_ns == 1500000 &&
	      b.lock_wait_min_ns == 1500000);
	CHECK(run(&policy_perm_upgrade, &p) == REPLAY_OK);
	CHECK(p.lock_wait_ns == 1500000 && p.lock_waits == 1 &&
	      p.lock_wait_min_ns == 0);
	replay_result_free(&b);
	replay_result_free(&p);
}

/*
 * bgsnapshot on 6.12: the uffd unprotect zaps the read-only leaf (a
 * measured upgrade); the vCPU's read retries while the invalidation is
 * in progress, then refaults after it, and KVM maps the writable host
 * page writable and dirty (make_spte()); a write-protect later zaps it.
 * Under perm-upgrade both reads are avoided and no write fault is
 * added: the dirty bit is KVM's.
 */
static void test_upgrade_read_refault_612(void)
{
	struct replay_result b, p;

	nev = 0;
	memslot(0);
	fault(5, MEV_PFERR_USER);                       /* read */
	spte(VCPU, 1, 5, 0, RO_4K);
	entry();
	notifier(5, 1);                                 /* uffd unprotect */
	spte(VMM, 1, 5, RO_4K, NONPRESENT_612);
	fault(5, MEV_PFERR_USER);                       /* retried */
	entry();
	syscall_exit(VMM);
	fault(5, MEV_PFERR_USER);                       /* read refault */
	spte(VCPU, 1, 5, NONPRESENT_612, RW_4K);        /* writable, dirty */
	entry();
	notifier(5, 0);                                 /* write-protect */
	spte(VMM, 1, 5, RW_4K, NONPRESENT_612);
	syscall_exit(VMM);

	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.mismatches_total == 0);
	CHECK(b.faults_observed == 3 && b.faults_predicted == 3);
	CHECK(run(&policy_perm_upgrade, &p) == REPLAY_OK);
	CHECK(p.faults_avoided == 2 && p.faults_added == 0);
	CHECK(p.faults == 1);
	replay_result_free(&b);
	replay_result_free(&p);
}

const struct scenario rules_policy[] = {
	{ "perm_upgrade_avoids_read_refault", test_perm_upgrade },
	{ "latency_whatif_removes_exit", test_latency_whatif },
	{ "perm_upgrade_zaps_restriction", test_restriction_is_not_kept },
	{ "nx_skip_dirty_keeps_logged_recovery", test_nx_skip_dirty },
	{ "collapse_takes_kept_tables", test_collapse_kept },
	{ "nx_readlock_removes_lock_wait", test_nx_readlock },
	{ "nx_readlock_removes_wait_between_pages",
	  test_nx_readlock_between_pages },
	{ "combined_policies_each_decide", test_policy_combined },
	{ "nx_period_skips_batches", test_nx_period },
	{ "perm_upgrade_adds_write_fault", test_policy_adds_faults },
	{ "lock_wait_of_kept_zap_removed", test_lock_wait_kept_window },
	{ "lock_wait_of_kept_empty_walk_removed",
	  test_lock_wait_kept_empty_walk },
	{ "lock_wait_of_kept_single_page_walk_a_range",
	  test_lock_wait_kept_single_page_walk },
	{ "upgrade_read_refault_612", test_upgrade_read_refault_612 },
};
const int rules_policy_n =
	(int)(sizeof(rules_policy) / sizeof(rules_policy[0]));
