/*
 * The scenario builder of test_replay_rules: hand-built event sequences
 * (SYNTHETIC events in the shape the 6.1 TDP MMU traces them, 6.12 where
 * a scenario says) fed to the replay engine, one file of scenarios per
 * layer of the model (tests/rules/LAYER.c, test_replay_rules.c lists the
 * layers).  A scenario resets nev, appends events with the builders
 * below, sets what the sequence was "recorded" with (recorded,
 * nx_ratio, nx_period_ms, nx_off, late_capture, rules_off) and calls
 * run() under a policy; CHECK counts failures for main().
 */
#ifndef MMUREPLAY_TESTS_RULES_SCENARIO_H
#define MMUREPLAY_TESTS_RULES_SCENARIO_H

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
#define KTHREAD 500     /* ksmd, a kernel thread */

extern struct model_event evs[64];
extern int nev;
extern int64_t ts_shift;        /* added to the 1 ms event clock */
/* The NX recovery ratio and period the sequence "ran" with (0:
 * unknown). */
extern int64_t nx_ratio, nx_period_ms;
/* The manifest said the NX mitigation was off. */
extern int nx_off;
/* The policy the hand-built sequence was "recorded" with. */
extern const struct policy *recorded;
/* Model rules switched off (1 << enum replay_rule). */
extern replay_rules_t rules_off;
/* The sequence begins while the VM runs: run() does not trace the
 * root's allocation before it (engine.c began_decide()). */
extern int late_capture;

struct model_event *ev(enum model_event_kind k, int tid);
void spte(int tid, int level, uint64_t gfn, uint64_t o, uint64_t n);
void sp_event(enum model_event_kind k, int tid, int level, uint64_t gfn);
void nx_phase(int phase, int lock_mode, int64_t pages);
void vcpu_fault(int tid, uint64_t gfn, uint64_t err);
void fault(uint64_t gfn, uint64_t err);
void entry(void);
void memslot(uint64_t flags);
void notifier(uint64_t gfn, int upgrade);
void syscall_exit(int tid);
void setregion_entry(void);
void memslot_flags(uint64_t npages, uint64_t old, uint64_t new);
int run(const struct policy *p, struct replay_result *r);
void sys(int entry, enum model_syscall call, uint64_t a2);
void nx_split(uint64_t gfn);
void nx_recover_table(uint64_t gfn, uint64_t table, uint64_t leaf);
void nx_recover(uint64_t gfn);
void nx_scenario(uint64_t slot_flags, int lock_wait_ns);
void mapped(uint64_t gfn, uint64_t leaf);
void stock_notifier(uint64_t gfn, uint64_t n);
void vm_split_beside_huge(void);
void zaps_judged(int off, int64_t zaps);
void ranged_flush(int tid, uint64_t gfn, uint64_t pages);
void leaf_at_1(void);

/* A layer's scenarios: name and function, in the order they run. */
struct scenario {
	const char *name;
	void (*fn)(void);
};

extern const struct scenario rules_kernel[];
extern const int rules_kernel_n;
extern const struct scenario rules_timing[];
extern const int rules_timing_n;
extern const struct scenario rules_identity[];
extern const int rules_identity_n;
extern const struct scenario rules_facts[];
extern const int rules_facts_n;
extern const struct scenario rules_verdict[];
extern const int rules_verdict_n;
extern const struct scenario rules_policy[];
extern const int rules_policy_n;

#endif
