/*
 * The scenario builder's state and its shared builders (scenario.h).
 */
#include "scenario.h"

struct model_event evs[64];
int nev;
int64_t ts_shift;        /* added to the 1 ms event clock */
/* The NX recovery ratio and period the sequence "ran" with (0:
 * unknown). */
int64_t nx_ratio, nx_period_ms;
/* The manifest said the NX mitigation was off. */
int nx_off;
/* The policy the hand-built sequence was "recorded" with. */
const struct policy *recorded = &policy_baseline;
/* Model rules switched off (1 << enum replay_rule). */
replay_rules_t rules_off;
/* The sequence begins while the VM runs: run() does not trace the
 * root's allocation before it (engine.c began_decide()). */
int late_capture;

struct model_event *ev(enum model_event_kind k, int tid)
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

void spte(int tid, int level, uint64_t gfn, uint64_t o, uint64_t n)
{
	struct model_event *e = ev(MEV_SPTE_CHANGE, tid);

	e->u.spte.level = level;
	e->u.spte.gfn = gfn;
	e->u.spte.old_spte = o;
	e->u.spte.new_spte = n;
}

/* A shadow page's alloc or free event: an L1 (level 1) or L2 table. */
void sp_event(enum model_event_kind k, int tid, int level, uint64_t gfn)
{
	struct model_event *e = ev(k, tid);

	e->u.sp.gfn = gfn;
	e->u.sp.role = 0x3780 | (uint64_t)level;
}

/* A patched NX recovery event (phase: begin, page, end). */
void nx_phase(int phase, int lock_mode, int64_t pages)
{
	struct model_event *e = ev(MEV_NX_RECOVERY, WORKER);

	e->u.nx.phase = phase;
	e->u.nx.lock_mode = lock_mode;
	e->u.nx.pages = pages;
}

/* A fault of vCPU thread tid: PFERR bits err, on the guest's final
 * translation (MEV_PFERR_GUEST_FINAL). */
void vcpu_fault(int tid, uint64_t gfn, uint64_t err)
{
	struct model_event *e = ev(MEV_FAULT, tid);

	e->u.fault.gpa = gfn << 12;
	e->u.fault.error_code = err | (1ULL << 32);
}

void fault(uint64_t gfn, uint64_t err)
{
	vcpu_fault(VCPU, gfn, err);
}

void entry(void)
{
	ev(MEV_VCPU_ENTRY, VCPU);
}

void memslot(uint64_t flags)
{
	struct model_event *e = ev(MEV_MEMSLOT, VMM);

	e->u.memslot.npages = 1024;
	e->u.memslot.hva = HVA;
	e->u.memslot.new_flags = flags;
}

void notifier(uint64_t gfn, int upgrade)
{
	struct model_event *e = ev(MEV_NOTIFIER, VMM);

	e->u.notifier.hva_start = HVA + (gfn << 12);
	e->u.notifier.hva_end = HVA + ((gfn + 1) << 12);
	e->u.notifier.has_event = 1;
	e->u.notifier.event = MEV_MMU_NOTIFY_PROTECTION_VMA;
	e->u.notifier.perm_upgrade = upgrade;
}

void syscall_exit(int tid)
{
	ev(MEV_SYSCALL, tid)->u.sys.call = MSYS_IOCTL;
}

/* The VMM enters KVM_SET_USER_MEMORY_REGION. */
void setregion_entry(void)
{
	struct model_event *e = ev(MEV_SYSCALL, VMM);

	e->u.sys.entry = 1;
	e->u.sys.call = MSYS_IOCTL;
	e->u.sys.a1 = KVM_SET_USER_MEMORY_REGION;
}

/* Its patched memslot event: slot 0 (npages from gfn 0) changes its
 * flags from old to new. */
void memslot_flags(uint64_t npages, uint64_t old, uint64_t new)
{
	struct model_event *e = ev(MEV_MEMSLOT, VMM);

	e->u.memslot.change = KVM_MR_FLAGS_ONLY;
	e->u.memslot.npages = npages;
	e->u.memslot.hva = HVA;
	e->u.memslot.old_flags = old;
	e->u.memslot.new_flags = new;
}

int run(const struct policy *p, struct replay_result *r)
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

void sys(int entry, enum model_syscall call, uint64_t a2)
{
	struct model_event *e = ev(MEV_SYSCALL, VMM);

	e->u.sys.entry = entry;
	e->u.sys.call = call;
	e->u.sys.a2 = a2;
}

/* An exec fault splits the NX huge page at gfn: an L1 table of 4K leaves. */
void nx_split(uint64_t gfn)
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
void nx_recover_table(uint64_t gfn, uint64_t table, uint64_t leaf)
{
	spte(WORKER, 2, gfn, table, 0);
	sp_event(MEV_SP_FREE, WORKER, 1, gfn);
	spte(WORKER, 1, gfn, leaf, REMOVED);
}

/* The worker recovers the page split at gfn. */
void nx_recover(uint64_t gfn)
{
	nx_recover_table(gfn, TABLE, RW_4K);
}

/* An NX split page recovered by the worker, then re-executed. */
void nx_scenario(uint64_t slot_flags, int lock_wait_ns)
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
 * The fault of racing_scenario() (inside a batch) with the recovery zap
 * never traced: nothing explains it when the batch ends.  And a stock
 * batch (no begin/end events) that went quiet 100 ms before the fault
 * exempts nothing, though no later worker event has closed it yet.
 */
/* The guest reads gfn: a fault that installs leaf, then the entry. */
void mapped(uint64_t gfn, uint64_t leaf)
{
	fault(gfn, MEV_PFERR_USER);
	spte(VCPU, 1, gfn, 0, leaf);
	entry();
}

/* A stock invalidation (kvm_unmap_hva_range only) of [gfn, gfn + n). */
void stock_notifier(uint64_t gfn, uint64_t n)
{
	struct model_event *e = ev(MEV_NOTIFIER, VMM);

	e->u.notifier.hva_start = HVA + (gfn << 12);
	e->u.notifier.hva_end = HVA + ((gfn + n) << 12);
}

/* A VM whose first 2M page is split to 4K (leaves at 0x1 and 0x100)
 * beside a 2M leaf at 0x200, as its vCPU mapped them. */
void vm_split_beside_huge(void)
{
	memslot(0);
	spte(VCPU, 3, 0, 0, TABLE);
	spte(VCPU, 2, 0, 0, TABLE);
	spte(VCPU, 1, 0x1, 0, RW_4K);
	spte(VCPU, 1, 0x100, 0, RW_4K);
	spte(VCPU, 2, 0x200, 0, RW_2M);
}

/*
 * Runs the sequence built (rules_off set by the caller): it traces
 * `zaps` leaf zaps; with the rule on (!off) the model predicts each of
 * them, with it off the self-check fails on a context's zap count.
 */
void zaps_judged(int off, int64_t zaps)
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

/* A ranged remote TLB flush (patched kvm_remote_tlb_flush). */
void ranged_flush(int tid, uint64_t gfn, uint64_t pages)
{
	struct model_event *e = ev(MEV_TLB_FLUSH, tid);

	e->u.flush.gfn_start = gfn;
	e->u.flush.pages = pages;
}

/*
 * The scenarios by name, each its own ctest case (replay_rules.NAME,
 * listed by --list at test time: cmake/ctest_scenarios.cmake).  A
 * scenario left out of this table is an unused static function: the
 * build fails on it (-Wall -Werror).
 */
/* A fresh sequence: the root's entry and an L2 table at gfn 0 mapping
 * an L1 table at 0 with a written leaf at 0x1. */
void leaf_at_1(void)
{
	nev = 0;
	memslot(0);
	spte(VCPU, 3, 0, 0, TABLE);
	spte(VCPU, 2, 0, 0, TABLE);
	spte(VCPU, 1, 0x1, 0, RW_4K);
}
