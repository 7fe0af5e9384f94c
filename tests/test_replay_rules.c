/*
 * Replay rules on small hand-built event sequences (SYNTHETIC events in
 * the shape the Linux 6.1 TDP MMU traces them, 6.12 where said), one
 * scenario per rule of
 * docs/design.md, "The model":
 *
 *   perm-upgrade   a zap on a pure upgrade, then a read fault: avoided;
 *                  then a write fault on the kept read-only leaf: still
 *                  a fault; no TLB flush for the kept invalidation;
 *   nx-skip-dirty  recovery of a page in a dirty-logged slot: skipped,
 *                  and the exec refault that followed disappears; the
 *                  table it kept goes in the collapse when logging
 *                  stops, and the fault after it is a refault;
 *   nx-readlock    a vCPU's lock wait inside a write-locked recovery
 *                  window: removed; one outside it: kept;
 *   nx-period=MS   twice the recorded period: every other batch is not
 *                  run, its page stays split (the refault disappears)
 *                  and the lock wait inside it goes; the recorded period
 *                  is baseline; a period that is not a multiple of the
 *                  recorded one is refused;
 *   combined       two knob policies at once: each decision point takes
 *                  the change of the part that makes one;
 *   nx_snapshot    a batch one short of the model's count is settled by
 *                  the trace when a split was accounted after the
 *                  worker woke, and a mismatch when none was;
 *   nx_off         with the mitigation off the worker's table frees are
 *                  a teardown, not a recovery batch;
 *   free after link a removed table freed after a new one took its
 *                  place: its free predicts the removed table's leaves;
 *   nx_count       a write-locked batch's end count against the model's
 *                  list (not a read-locked one's); two tables at one
 *                  entry for a while (read-locked recovery) both listed;
 *   self-check     a fault that a present leaf permits, and an
 *                  invalidation that zaps fewer leaves than the model
 *                  holds, are reported as mismatches;
 *   reachability   a leaf under a zapped parent table does not map;
 *   races          an NPF traced before the recovery zap that caused it
 *                  (inside a batch: explained by that zap); one that no
 *                  later zap explains, or that comes after a stock
 *                  batch went quiet, is a mismatch; a traced batch that
 *                  pauses stays one batch;
 *   verdict        per-context mismatches of opposite sign fail it
 *                  although the totals agree;
 *   lock waits     a vCPU's wait for the write lock of an invalidation
 *                  whose zaps the policy keeps goes; so does the wait
 *                  of a fault the policy avoids;
 *   both ways      under the recorded policy no fault is avoided; a
 *                  policy that kept a read-only leaf takes the write
 *                  fault the trace shows only as the dirty bit of the
 *                  writable leaf the recorded kernel mapped instead;
 *   huge pages     a fault zaps a 2M leaf only when its goal level
 *                  (kvm_mmu_spte_requested) is below it; an unaligned
 *                  invalidation zaps the 2M leaf at its boundary, traced
 *                  at the leaf's aligned gfn; an eager split fills the
 *                  new table with 512 untraced 4K leaves that later zaps
 *                  find;
 *   stock windows  a leaf installed between a stock invalidation's start
 *                  and its walk is zapped by it: predicted when the
 *                  window holds leaves of its own, settled by the trace
 *                  (and counted) when it holds none; a huge leaf at a
 *                  window's boundary does not skew the inferred slot;
 *   teardown       a table torn down tears down the tables below it
 *                  inside its own walk, in entry order; the zap of the
 *                  whole VM that zaps leaves before tables (Linux 6.12)
 *                  is one teardown, also when the NX recovery worker
 *                  runs it (6.12: the vhost task that exits last); a
 *                  leaf another thread removes ahead of that zap's
 *                  walk is not its;
 *   fault split    a fault that splits a huge leaf in place (6.12)
 *                  zaps nothing;
 *   removed table  a table a fault links where a removed one was is
 *                  empty, and the removed table's entries traced after
 *                  that are not its, nor is its unlink traced after the
 *                  new table (6.12's read-locked collapse);
 *   frozen entry   faults in a range a thread flushed, traced before its
 *                  zap of the entry mapping it, are required;
 *   6.12 upgrade   a read fault retried inside a kept upgrade window is
 *                  avoided too, and the writable, dirty leaf a read
 *                  fault maps (6.12) is no evidence of a guest write;
 *   late capture   a sequence that begins while the VM runs: what it
 *                  only reveals is counted apart, never a mismatch;
 *   upgrade cause  on a stock kernel only mprotect or a userfaultfd
 *                  unprotect infers a permission upgrade, not a
 *                  kernel thread's invalidation refaulted identical;
 *   memslot swap   exec faults inside a dirty-logging change saw the
 *                  old memslots or the new, as the worker's count
 *                  settles (first in trace order the old ones);
 *   window leaves  a stock invalidation zaps leaves only: a table its
 *                  thread removes later (the VM's teardown) ends it;
 *   window walk    a window's walk is past the whole span of the huge
 *                  leaf it zapped: another thread's zap there later is
 *                  no removal ahead of it;
 *   aging flush    the flush after a thread cleared accessed bits is
 *                  the page aging's, not its fault's.
 */
#include "check.h"
#include "metrics/fidelity.h"
#include "model/event.h"
#include "model/spte.h"
#include "replay/engine.h"
#include "replay/source.h"

#include <stdio.h>
#include <string.h>


#define VCPU 100        /* vCPU thread */
#define VMM 200         /* VMM thread doing mprotect / uffd */
#define WORKER 300      /* kvm-nx-lpage-recovery */
#define VCPU2 400       /* a second vCPU thread */
#define HVA 0x7f0000000000ULL

/* NPT leaf values as the lab traces them. */
#define RO_4K  0x10200825ULL    /* present, read-only, executable */
#define RW_4K  0x10200e67ULL    /* written: dirty bit set */
#define RW_4K_CLEAN 0x10200e27ULL       /* writable, not yet written */
#define NX_2M  0x8000000010200ee7ULL
#define RO_2M  0x0000000010200aa5ULL    /* present, read-only, host-RO */
#define RW_2M  0x0000000010200ee7ULL
#define TABLE  0x529b827ULL     /* non-leaf */
#define REMOVED 0x5a0ULL
/* 6.12's SHADOW_NONPRESENT_VALUE and FROZEN_SPTE */
#define NONPRESENT_612 0x8000000000000000ULL
#define FROZEN_612 0x80000000000005a0ULL

static struct model_event evs[64];
static int nev;
static int64_t ts_shift;        /* added to the 1 ms event clock */

static struct model_event *ev(enum model_event_kind k, int tid)
{
	struct model_event *e = &evs[nev];

	memset(e, 0, sizeof(*e));
	e->kind = k;
	e->seq = (uint64_t)nev;
	e->ts = (int64_t)nev * 1000000 + ts_shift;      /* 1 ms apart */
	e->tid = tid;
	nev++;
	return e;
}

static void spte(int tid, int level, uint64_t gfn, uint64_t o, uint64_t n)
{
	struct model_event *e = ev(MEV_SPTE_CHANGE, tid);

	e->u.spte.level = level;
	e->u.spte.gfn = gfn;
	e->u.spte.old_spte = o;
	e->u.spte.new_spte = n;
}

/* A shadow page's alloc or free event: an L1 (level 1) or L2 table. */
static void sp_event(enum model_event_kind k, int tid, int level,
		     uint64_t gfn)
{
	struct model_event *e = ev(k, tid);

	e->u.sp.gfn = gfn;
	e->u.sp.role = 0x3780 | (uint64_t)level;
}

/* A patched NX recovery event (phase: begin, page, end). */
static void nx_phase(int phase, int lock_mode, int64_t pages)
{
	struct model_event *e = ev(MEV_NX_RECOVERY, WORKER);

	e->u.nx.phase = phase;
	e->u.nx.lock_mode = lock_mode;
	e->u.nx.pages = pages;
}

/* A fault of vCPU thread tid: PFERR bits err, on the guest's final
 * translation (MEV_PFERR_GUEST_FINAL). */
static void vcpu_fault(int tid, uint64_t gfn, uint64_t err)
{
	struct model_event *e = ev(MEV_FAULT, tid);

	e->u.fault.gpa = gfn << 12;
	e->u.fault.error_code = err | (1ULL << 32);
}

static void fault(uint64_t gfn, uint64_t err)
{
	vcpu_fault(VCPU, gfn, err);
}

static void entry(void)
{
	ev(MEV_VCPU_ENTRY, VCPU);
}

static void memslot(uint64_t flags)
{
	struct model_event *e = ev(MEV_MEMSLOT, VMM);

	e->u.memslot.npages = 1024;
	e->u.memslot.hva = HVA;
	e->u.memslot.new_flags = flags;
}

static void notifier(uint64_t gfn, int upgrade)
{
	struct model_event *e = ev(MEV_NOTIFIER, VMM);

	e->u.notifier.hva_start = HVA + (gfn << 12);
	e->u.notifier.hva_end = HVA + ((gfn + 1) << 12);
	e->u.notifier.has_event = 1;
	e->u.notifier.event = MEV_MMU_NOTIFY_PROTECTION_VMA;
	e->u.notifier.perm_upgrade = upgrade;
}

static void syscall_exit(int tid)
{
	ev(MEV_SYSCALL, tid)->u.sys.call = MSYS_IOCTL;
}

/* The VMM enters KVM_SET_USER_MEMORY_REGION. */
static void setregion_entry(void)
{
	struct model_event *e = ev(MEV_SYSCALL, VMM);

	e->u.sys.entry = 1;
	e->u.sys.call = MSYS_IOCTL;
	e->u.sys.a1 = KVM_SET_USER_MEMORY_REGION;
}

/* Its patched memslot event: slot 0 (npages from gfn 0) changes its
 * flags from old to new. */
static void memslot_flags(uint64_t npages, uint64_t old, uint64_t new)
{
	struct model_event *e = ev(MEV_MEMSLOT, VMM);

	e->u.memslot.change = KVM_MR_FLAGS_ONLY;
	e->u.memslot.npages = npages;
	e->u.memslot.hva = HVA;
	e->u.memslot.old_flags = old;
	e->u.memslot.new_flags = new;
}

/* The NX recovery ratio and period the sequence "ran" with (0:
 * unknown). */
static int64_t nx_ratio, nx_period_ms;
/* The manifest said the NX mitigation was off. */
static int nx_off;

/* The policy the hand-built sequence was "recorded" with. */
static const struct policy *recorded = &policy_baseline;
/* Model rules switched off (1 << enum replay_rule). */
static replay_rules_t rules_off;
/* The sequence begins while the VM runs: run() does not trace the
 * root's allocation before it (engine.c began_decide()). */
static int late_capture;

static int run(const struct policy *p, struct replay_result *r)
{
	static const int32_t workers[] = { WORKER };
	struct replay_opts o = {
		.policy = p,
		.self_check = p == recorded,
		.fmt = spte_format_get(SPTE_FORMAT_NPT),
		.nx_worker_tids = workers,
		.n_nx_worker_tids = 1,
		.nx_workers_known = 1,
		.npf_exit_reason = 0x400,
		.nx_ratio = nx_ratio,
		.nx_period_ms = nx_period_ms,
		.nx_off = nx_off,
		.rules_off = rules_off,
	};
	static struct model_event all[1 + sizeof(evs) / sizeof(evs[0])];
	struct model_event *root = &all[0];
	struct source *src;
	int rc, n = 0;

	/* A sequence from the VM's creation: vCPU 0 allocated the root
	 * (level 4, gfn 0) before anything else, at the first event's
	 * seq and time (kvm_mmu_load()). */
	if (!late_capture) {
		memset(root, 0, sizeof(*root));
		root->kind = MEV_SP_ALLOC;
		root->tid = VCPU;
		root->seq = nev ? evs[0].seq : 0;
		root->ts = nev ? evs[0].ts : 0;
		root->u.sp.role = 0x3780 | 4;
		n = 1;
	}
	memcpy(&all[n], evs, sizeof(evs[0]) * (size_t)nev);
	src = source_from_array(all, (size_t)(n + nev));
	rc = replay_run(src, &o, r);
	source_close(src);
	return rc;
}

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

static void sys(int entry, enum model_syscall call, uint64_t a2)
{
	struct model_event *e = ev(MEV_SYSCALL, VMM);

	e->u.sys.entry = entry;
	e->u.sys.call = call;
	e->u.sys.a2 = a2;
}

/*
 * Stock kernel: an invalidation by a thread in no syscall that could
 * loosen a page (ksmd, kswapd, khugepaged, NUMA hinting) whose zapped
 * leaf refaults identical is no permission upgrade (rule
 * upgrade_cause); one inside UFFDIO_WRITEPROTECT whose leaf does is an
 * unprotect.  Without the rule, identical refaults alone made both
 * upgrades, and perm-upgrade kept the first zap.
 */
#define KTHREAD 500     /* ksmd */

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

/* An exec fault splits the NX huge page at gfn: an L1 table of 4K leaves. */
static void nx_split(uint64_t gfn)
{
	spte(VCPU, 2, gfn, 0, NX_2M);
	fault(gfn, MEV_PFERR_USER | MEV_PFERR_FETCH);
	spte(VCPU, 2, gfn, NX_2M, REMOVED);
	spte(VCPU, 2, gfn, 0, TABLE);
	sp_event(MEV_SP_ALLOC, VCPU, 1, gfn);
	spte(VCPU, 1, gfn, 0, RW_4K);
	entry();
}

/* The worker recovers the table at gfn (its parent entry table, its
 * leaf leaf). */
static void nx_recover_table(uint64_t gfn, uint64_t table, uint64_t leaf)
{
	spte(WORKER, 2, gfn, table, 0);
	sp_event(MEV_SP_FREE, WORKER, 1, gfn);
	spte(WORKER, 1, gfn, leaf, REMOVED);
}

/* The worker recovers the page split at gfn. */
static void nx_recover(uint64_t gfn)
{
	nx_recover_table(gfn, TABLE, RW_4K);
}

/* An NX split page recovered by the worker, then re-executed. */
static void nx_scenario(uint64_t slot_flags, int lock_wait_ns)
{
	struct model_event *e;

	nev = 0;
	memslot(0);
	nx_split(0x200);
	/* Logging switched on after the split, which KVM listed (a page
	 * split while logging is on is never listed: the worker could not
	 * take it). */
	if (slot_flags)
		memslot_flags(1024, 0, slot_flags);
	/* Recovery: parent unlinked, SP freed, children removed. */
	nx_recover(0x200);
	if (lock_wait_ns) {
		e = ev(MEV_LOCK_WAIT, VCPU);
		e->u.lock.wait_ns = lock_wait_ns;
	}
	fault(0x200, MEV_PFERR_USER | MEV_PFERR_FETCH); /* re-exec */
	spte(VCPU, 1, 0x200, 0, RW_4K);
	entry();
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

/*
 * The fault of racing_scenario() (inside a batch) with the recovery zap
 * never traced: nothing explains it when the batch ends.  And a stock
 * batch (no begin/end events) that went quiet 100 ms before the fault
 * exempts nothing, though no later worker event has closed it yet.
 */
/* The guest reads gfn: a fault that installs leaf, then the entry. */
static void mapped(uint64_t gfn, uint64_t leaf)
{
	fault(gfn, MEV_PFERR_USER);
	spte(VCPU, 1, gfn, 0, leaf);
	entry();
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


/* A stock invalidation (kvm_unmap_hva_range only) of [gfn, gfn + n). */
static void stock_notifier(uint64_t gfn, uint64_t n)
{
	struct model_event *e = ev(MEV_NOTIFIER, VMM);

	e->u.notifier.hva_start = HVA + (gfn << 12);
	e->u.notifier.hva_end = HVA + ((gfn + n) << 12);
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


/* A VM whose first 2M page is split to 4K (leaves at 0x1 and 0x100)
 * beside a 2M leaf at 0x200, as its vCPU mapped them. */
static void vm_split_beside_huge(void)
{
	memslot(0);
	spte(VCPU, 3, 0, 0, TABLE);
	spte(VCPU, 2, 0, 0, TABLE);
	spte(VCPU, 1, 0x1, 0, RW_4K);
	spte(VCPU, 1, 0x100, 0, RW_4K);
	spte(VCPU, 2, 0x200, 0, RW_2M);
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
 * Runs the sequence built (rules_off set by the caller): it traces
 * `zaps` leaf zaps; with the rule on (!off) the model predicts each of
 * them, with it off the self-check fails on a context's zap count.
 */
static void zaps_judged(int off, int64_t zaps)
{
	struct replay_result b;

	CHECK(run(&policy_baseline, &b) == REPLAY_OK);
	CHECK(b.zaps_observed == zaps);
	if (!off) {
		CHECK(b.zaps_predicted == zaps);
		CHECK(b.mismatches_total == 0);
	} else {
		CHECK(b.mismatches_total > 0 &&
		      b.mismatches_by_kind[MISMATCH_ZAP_COUNT] > 0);
	}
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
 * A memslot deletion (kvm_mmu_zap_all_fast()) invalidates the root; the
 * vCPU loads a new one and refaults page 0x1 into it with the same
 * SPTE, and the old root is zapped afterwards (6.1: its L2 table's
 * removal first, then the leaves beneath).  The old root's zaps are its
 * own (2), and the later zap of the new root's leaf is predicted (1).
 * With rule roots off, the old root's zap takes the new root's leaf:
 * the last zap is a zap_count mismatch.
 */
static void test_coexisting_roots(void)
{
	int off;

	for (off = 0; off <= 1; off++) {
		nev = 0;
		rules_off = off ? REPLAY_RULE_BIT(RULE_ROOTS) : 0;
		memslot(0);
		spte(VCPU, 3, 0, NONPRESENT_612, TABLE);
		spte(VCPU, 2, 0, NONPRESENT_612, TABLE + 0x1000);
		spte(VCPU, 1, 0x1, NONPRESENT_612, RW_4K);
		spte(VCPU, 1, 0x2, NONPRESENT_612, RW_4K + 0x1000);
		entry();
		setregion_entry();
		sp_event(MEV_SP_ALLOC, VCPU, 4, 0);             /* new root */
		spte(VCPU, 3, 0, NONPRESENT_612, TABLE + 0x2000);
		spte(VCPU, 2, 0, NONPRESENT_612, TABLE + 0x3000);
		spte(VCPU, 1, 0x1, NONPRESENT_612, RW_4K);      /* same */
		entry();
		spte(VMM, 3, 0, TABLE, NONPRESENT_612);         /* old root */
		sp_event(MEV_SP_FREE, VMM, 2, 0);
		spte(VMM, 2, 0, TABLE + 0x1000, FROZEN_612);
		sp_event(MEV_SP_FREE, VMM, 1, 0);
		spte(VMM, 1, 0x1, RW_4K, FROZEN_612);
		spte(VMM, 1, 0x2, RW_4K + 0x1000, FROZEN_612);
		syscall_exit(VMM);
		stock_notifier(0x1, 1);                         /* new root */
		spte(VMM, 1, 0x1, RW_4K, NONPRESENT_612);
		syscall_exit(VMM);
		zaps_judged(off, 3);
	}
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

/* A ranged remote TLB flush (patched kvm_remote_tlb_flush). */
static void ranged_flush(int tid, uint64_t gfn, uint64_t pages)
{
	struct model_event *e = ev(MEV_TLB_FLUSH, tid);

	e->u.flush.gfn_start = gfn;
	e->u.flush.pages = pages;
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

/*
 * The scenarios by name, each its own ctest case (replay_rules.NAME,
 * listed by --list at test time: cmake/ctest_scenarios.cmake).  A
 * scenario left out of this table is an unused static function: the
 * build fails on it (-Wall -Werror).
 */
/* A fresh sequence: the root's entry and an L2 table at gfn 0 mapping
 * an L1 table at 0 with a written leaf at 0x1. */
static void leaf_at_1(void)
{
	nev = 0;
	memslot(0);
	spte(VCPU, 3, 0, 0, TABLE);
	spte(VCPU, 2, 0, 0, TABLE);
	spte(VCPU, 1, 0x1, 0, RW_4K);
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

static const struct scenario {
	const char *name;
	void (*fn)(void);
} scenarios[] = {
	{ "perm_upgrade_avoids_read_refault", test_perm_upgrade },
	{ "latency_whatif_removes_exit", test_latency_whatif },
	{ "late_capture_reveals", test_late_capture },
	{ "empty_batch_before_root", test_empty_batch_before_root },
	{ "state_dump_memslots", test_state_dump_memslots },
	{ "racing_vcpus", test_racing_vcpus },
	{ "perm_upgrade_zaps_restriction", test_restriction_is_not_kept },
	{ "perm_upgrade_inferred_restriction_zapped",
	  test_stock_mprotect_restriction },
	{ "self_check_under_recorded_knob", test_recorded_with_knob },
	{ "nx_skip_dirty_keeps_logged_recovery", test_nx_skip_dirty },
	{ "collapse_takes_kept_tables", test_collapse_kept },
	{ "window_walk_passes_huge_leaf", test_window_walk_huge },
	{ "nx_readlock_removes_lock_wait", test_nx_readlock },
	{ "nx_readlock_removes_wait_between_pages",
	  test_nx_readlock_between_pages },
	{ "combined_policies_each_decide", test_policy_combined },
	{ "nx_period_skips_batches", test_nx_period },
	{ "nx_snapshot_late_split_settled", test_nx_snapshot },
	{ "nx_off_worker_free_is_teardown", test_nx_off },
	{ "nx_count_checked_under_write_lock", test_nx_count },
	{ "memslot_swap_settled_by_count", test_memslot_swap },
	{ "stock_upgrade_needs_a_cause", test_stock_upgrade_cause },
	{ "stock_window_ends_at_table_removal", test_window_leaves },
	{ "stock_window_ends_at_leaf_outside", test_window_exit },
	{ "aging_flush_is_not_the_faults", test_aging_flush },
	{ "nx_two_tables_at_one_entry_612", test_nx_two_tables },
	{ "fault_before_recovery_zap_explained", test_fault_racing_recovery },
	{ "traced_batch_spans_pause", test_measured_batch_pause },
	{ "race_exemption_bounded", test_exemption_bounded },
	{ "verdict_per_context", test_verdict_per_context },
	{ "perm_upgrade_adds_write_fault", test_policy_adds_faults },
	{ "lock_wait_of_kept_zap_removed", test_lock_wait_kept_window },
	{ "lock_wait_of_kept_empty_walk_removed",
	  test_lock_wait_kept_empty_walk },
	{ "lock_wait_of_kept_single_page_walk_a_range",
	  test_lock_wait_kept_single_page_walk },
	{ "self_check_reports_mismatches", test_self_check_fails },
	{ "leaf_under_zapped_table_unmapped", test_unreachable_leaf },
	{ "huge_fault_zaps_below_goal_only", test_huge_fault_in_place },
	{ "huge_leaf_at_range_boundary", test_huge_leaf_at_range_boundary },
	{ "eager_split_untraced_children", test_eager_split_children },
	{ "stock_window_race_settled", test_stock_window_race },
	{ "inferred_slot_huge_leaf", test_inferred_slot_huge_leaf },
	{ "nested_teardown_one_walk", test_nested_teardown },
	{ "zap_all_leaves_first_612", test_zap_all_leaves_first },
	{ "zap_all_removal_ahead_612", test_zap_all_removal_ahead },
	{ "fault_split_in_place_612", test_fault_split_in_place },
	{ "removed_table_replaced_612", test_removed_table_replaced },
	{ "frozen_entry_faults_required_612", test_frozen_entry },
	{ "unlink_after_new_table_612", test_unlink_after_new_table },
	{ "free_after_new_table_612", test_free_after_new_table },
	{ "upgrade_read_refault_612", test_upgrade_read_refault_612 },
	{ "collapse_free_after_new_table_612",
	  test_collapse_free_after_new_table },
	{ "coexisting_roots", test_coexisting_roots },
	{ "late_link_612", test_late_link },
	{ "dirty_logging_region2", test_dirty_logging_region2 },
	{ "dirty_ring_reset_shows_logging", test_dirty_ring_reset },
	{ "dirty_log_collapse_zap_cause", test_dirty_log_collapse },
};
#define NSCENARIOS (int)(sizeof(scenarios) / sizeof(scenarios[0]))

/*
 * No argument: every scenario, in table order.  NAME...: those.
 * --list: the names, one a line.  Exit 0 when every check held, 1 when
 * one failed, 2 on a bad command line (unknown name: nothing runs).
 */
int main(int argc, char **argv)
{
	int i, j;

	for (i = 0; i < NSCENARIOS; i++)
		for (j = 0; j < i; j++)
			if (strcmp(scenarios[i].name, scenarios[j].name) == 0) {
				fprintf(stderr, "%s: scenario '%s' named twice\n",
					argv[0], scenarios[i].name);
				return 2;
			}
	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (i = 0; i < NSCENARIOS; i++)
			printf("%s\n", scenarios[i].name);
		return 0;
	}
	for (j = 1; j < argc; j++) {
		for (i = 0; i < NSCENARIOS; i++)
			if (strcmp(argv[j], scenarios[i].name) == 0)
				break;
		if (i == NSCENARIOS) {
			fprintf(stderr, "%s: no scenario named '%s' "
				"(--list names them)\n", argv[0], argv[j]);
			return 2;
		}
	}
	for (i = 0; i < NSCENARIOS; i++) {
		int before = failures;

		for (j = 1; j < argc; j++)
			if (strcmp(argv[j], scenarios[i].name) == 0)
				break;
		if (argc > 1 && j == argc)
			continue;
		scenarios[i].fn();
		if (failures != before)
			fprintf(stderr, "scenario %s: FAILED\n",
				scenarios[i].name);
	}
	return check_finish();
}
