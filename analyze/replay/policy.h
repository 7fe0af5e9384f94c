/*
 * A replay policy: the rule a kernel proposal changes, at the decision
 * points the TDP MMU has.  One small file per policy (policy_*.c); a new
 * kernel proposal is a new file and a line in policy_registry.
 *
 * Decision points:
 *   keep_invalidation   at an mmu_notifier invalidation: keep the leaves
 *                       instead of zapping them (perm-upgrade);
 *   skip_recovery       at the recovery of one NX huge page: leave it
 *                       split (nx-skip-dirty);
 *   recovery_read_lock  recovery holds mmu_lock for read, so vCPU faults
 *                       do not wait for it (nx-readlock);
 *   nx_ratio            kvm.nx_huge_pages_recovery_ratio (capacity
 *                       planning sweeps: "nx-ratio=N");
 *   nx_period_ms        kvm.nx_huge_pages_recovery_period_ms ("nx-period=
 *                       MS", a multiple of the recorded period: the
 *                       worker wakes every k-th recorded wake-up).
 *
 * Knob policies combine ("perm-upgrade+nx-skip-dirty"): each decision
 * point takes the change of whichever part changes it (the knobs touch
 * disjoint points, except the two recovery ones, which compose).  A
 * capture recorded with several knobs on is replayed under their
 * combination (6.12 turns nx_huge_pages_recovery_skip_dirty on by
 * default, so any other knob there makes one).  The engine asks
 * through policy_keeps_invalidation() and policy_skips_recovery().
 */
#ifndef MMUREPLAY_REPLAY_POLICY_H
#define MMUREPLAY_REPLAY_POLICY_H

#include <stdint.h>

/*
 * How a fact about the trace is known; X(enumerator, name in reports),
 * the enum and replay_source_name() generated from the one list.
 */
#define REPLAY_SOURCE_LIST(X) \
	/* not known: the decision never applies */ \
	X(REPLAY_SRC_NONE, "unknown") \
	/* derived from stock events (docs/design.md, "Stock and \
	 * patched kernels") */ \
	X(REPLAY_SRC_INFERRED, "inferred") \
	/* traced by the patched kernel */ \
	X(REPLAY_SRC_MEASURED, "measured")

#define REPLAY_SOURCE_ENTRY(e, name) e,
enum replay_source {
	REPLAY_SOURCE_LIST(REPLAY_SOURCE_ENTRY)
	REPLAY_SOURCES
};
#undef REPLAY_SOURCE_ENTRY

struct replay_invalidation {
	uint64_t seq;
	uint64_t hva_start, hva_end;
	int is_upgrade;                 /* a pure permission upgrade */
	enum replay_source upgrade_src;
};

struct replay_recovery {
	uint64_t gfn;
	int dirty_logged;               /* the page's slot logs dirty pages */
	enum replay_source dirty_src;
};

/* The figures of a what-if, as bits of struct policy's not_modelled. */
enum policy_figure {
	POLICY_FIG_FAULTS = 1 << 0,
	POLICY_FIG_LEAF_ZAPS = 1 << 1,
	POLICY_FIG_TLB_FLUSHES = 1 << 2,
	POLICY_FIG_LOCK_WAITS = 1 << 3,
	/* The latency what-if (engine.h struct replay_latency): the NPF
	 * service times, and the probe's samples. */
	POLICY_FIG_NPF_LATENCY = 1 << 4,
	POLICY_FIG_PROBE_LATENCY = 1 << 5,
	/* How many vCPU waits for mmu_lock (their time: LOCK_WAITS). */
	POLICY_FIG_LOCK_WAIT_COUNT = 1 << 6,
};

/* What a what-if figure is, X(enumerator, name in reports). */
#define POLICY_FIGURE_KIND_LIST(X) \
	X(POLICY_FIGURE_PREDICTED, "predicted") \
	/* the recorded policy's: the trace's figure by construction */ \
	X(POLICY_FIGURE_RESTATED, "restated") \
	/* the policy's replay misses part of what it does there */ \
	X(POLICY_FIGURE_NOT_MODELLED, "not_modelled") \
	/* predicted, as a bound: the capture leaves it open on one side \
	 * (replay_metrics_figure_kind()) */ \
	X(POLICY_FIGURE_ONE_SIDED, "one_sided")

#define POLICY_FIGURE_KIND_ENTRY(e, name) e,
enum policy_figure_kind {
	POLICY_FIGURE_KIND_LIST(POLICY_FIGURE_KIND_ENTRY)
};
#undef POLICY_FIGURE_KIND_ENTRY

/* Knob policies a combination holds, at most (there are three). */
#define POLICY_MAX_PARTS 3

struct policy {
	const char *name;
	const char *summary;
	int (*keep_invalidation)(const struct replay_invalidation *inv);
	int (*skip_recovery)(const struct replay_recovery *rec);
	int recovery_read_lock;
	/* NX recovery ratio the policy runs with; 0: the recorded one. */
	int64_t nx_ratio;
	/* NX recovery period (ms) the policy runs with; 0: the recorded. */
	int64_t nx_period_ms;
	/* What its replay does not model ("Not modelled: ..."), said with
	 * every result; NULL when nothing is known to be missing. */
	const char *limits;
	/* The figures (enum policy_figure) on which its replay misses part
	 * of what the policy does (limits says what): reported as not
	 * modelled, never as a prediction. */
	unsigned not_modelled;
	/* A combination: its knob policies, in registry order; else 0. */
	const struct policy *parts[POLICY_MAX_PARTS];
	int nparts;
};

extern const struct policy policy_baseline;
extern const struct policy policy_perm_upgrade;
extern const struct policy policy_nx_skip_dirty;
extern const struct policy policy_nx_readlock;

/* The policy's decisions (a combination's: any part's change). */
int policy_keeps_invalidation(const struct policy *p,
			      const struct replay_invalidation *inv);
int policy_skips_recovery(const struct policy *p,
			  const struct replay_recovery *rec);

/* Returns 1 when every change of p is to NX huge page recovery (the
 * decision points skip_recovery, recovery_read_lock, nx_ratio and
 * nx_period_ms), so it cannot act on a host where no NX huge page is
 * split; 0 otherwise (baseline included). */
int policy_nx_only(const struct policy *p);

/* The baseline decisions, for policies that leave a point alone. */
int policy_keep_none(const struct replay_invalidation *inv);
int policy_skip_none(const struct replay_recovery *rec);

/*
 * Returns what figure fig of the replay under the policy named name is,
 * on a capture recorded under the policy named recorded: restated when
 * they are one policy, not modelled when the policy's not_modelled
 * holds fig, else predicted.
 */
enum policy_figure_kind policy_figure_kind(const char *name,
					   const char *recorded,
					   enum policy_figure fig);
/* Returns the kind's name in reports and JSON ("not_modelled", ...). */
const char *policy_figure_kind_name(enum policy_figure_kind kind);

/* NULL-terminated list of every policy, for the CLI. */
extern const struct policy *const policy_registry[];
/* A registered policy, "nx-ratio=N" / "nx-period=MS" (baseline rules,
 * another recovery ratio or period), or knob policies joined by '+' in
 * any order (named in registry order); NULL when unknown. */
const struct policy *policy_find(const char *name);
/* The combination of knob policies parts[0..n-1] (n >= 2, each a knob
 * policy of the registry, none twice); NULL when that is not so. */
const struct policy *policy_combine(const struct policy *const *parts,
				    int n);

/*
 * How many recorded recovery wake-ups make one of the policy's: 1 when
 * the policy keeps the recorded period, k when its period is k times the
 * recorded one, 0 when it cannot be replayed (recorded period unknown,
 * or the policy's is not a multiple of it: the trace has no batches for
 * the wake-ups such a worker would add).
 */
int64_t policy_period_factor(const struct policy *p, int64_t recorded_ms);

#endif
