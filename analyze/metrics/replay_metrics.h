/*
 * The figures of a replay, named the way reports and the DB name them,
 * and their storage in the capture DB (tables replay_*).
 *
 * Rates are per second of trace time, like the pf/s and tlb/s columns of
 * the perm-upgrade mail.
 */
#ifndef MMUREPLAY_METRICS_REPLAY_METRICS_H
#define MMUREPLAY_METRICS_REPLAY_METRICS_H

#include "replay/engine.h"

#include <sqlite3.h>

/*
 * Every figure of a replay, once: X(enumerator, name, value, kind).  The
 * enum, the names (as reports, the JSON and table replay_metric name
 * them) and replay_metrics_compute() are generated from this list; the
 * value is an expression of r (the struct replay_result) and d (the
 * trace's duration, s), read only there.  The order is the order of the
 * JSON and of the stored rows.  kind RM_WHATIF is a what-if figure of
 * the policy; RM_SELF_CHECK a figure of the self-check, stored with the
 * run but never shown among a policy's what-if figures.  The per-cause
 * groups list every zap cause and exemption of engine.h in its order
 * (checked when the names are first used: replay_metric_find()).
 */
#define REPLAY_METRIC_LIST(X) \
	X(RM_FAULTS, "faults", r->faults, RM_WHATIF) \
	X(RM_FAULTS_PER_S, "faults_per_s", rate(r->faults, d), RM_WHATIF) \
	X(RM_FAULTS_AVOIDED, "faults_avoided", r->faults_avoided, RM_WHATIF) \
	X(RM_FAULTS_ADDED, "faults_added", r->faults_added, RM_WHATIF) \
	X(RM_FAULTS_UNDECIDED, "faults_undecided", r->faults_undecided, \
	  RM_WHATIF) \
	X(RM_LEAF_ZAPS, "leaf_zaps", zaps_total(r), RM_WHATIF) \
	X(RM_LEAF_ZAPS_PER_S, "leaf_zaps_per_s", rate(zaps_total(r), d), \
	  RM_WHATIF) \
	X(RM_LEAF_ZAPS_NOTIFIER, "leaf_zaps.notifier", \
	  r->zaps[ZAP_NOTIFIER], RM_WHATIF) \
	X(RM_LEAF_ZAPS_NX_RECOVERY, "leaf_zaps.nx_recovery", \
	  r->zaps[ZAP_NX_RECOVERY], RM_WHATIF) \
	X(RM_LEAF_ZAPS_FAULT_PATH, "leaf_zaps.fault_path", \
	  r->zaps[ZAP_FAULT_PATH], RM_WHATIF) \
	X(RM_LEAF_ZAPS_TEARDOWN, "leaf_zaps.teardown", \
	  r->zaps[ZAP_TEARDOWN], RM_WHATIF) \
	X(RM_LEAF_ZAPS_DIRTY_LOG_COLLAPSE, "leaf_zaps.dirty_log_collapse", \
	  r->zaps[ZAP_DIRTY_LOG_COLLAPSE], RM_WHATIF) \
	X(RM_LEAF_ZAPS_OTHER, "leaf_zaps.other", r->zaps[ZAP_OTHER], \
	  RM_WHATIF) \
	X(RM_ZAPS_KEPT, "zaps_kept", r->zaps_kept, RM_WHATIF) \
	/* ... that rest on the stock upgrade inference (scan.h) */ \
	X(RM_ZAPS_KEPT_INFERRED, "zaps_kept_inferred", \
	  r->zaps_kept_inferred, \
	  RM_WHATIF) \
	/* ... of threads past the first REPLAY_KEPT_THREADS (the others: \
	 * replay_metrics.kept, table replay_kept) */ \
	X(RM_ZAPS_KEPT_OTHER, "zaps_kept_by_other_threads", \
	  r->kept_by_other, RM_WHATIF) \
	X(RM_REFAULTS_NOTIFIER, "refaults.notifier", \
	  r->refaults[ZAP_NOTIFIER], RM_WHATIF) \
	X(RM_REFAULTS_NX_RECOVERY, "refaults.nx_recovery", \
	  r->refaults[ZAP_NX_RECOVERY], RM_WHATIF) \
	X(RM_REFAULTS_FAULT_PATH, "refaults.fault_path", \
	  r->refaults[ZAP_FAULT_PATH], RM_WHATIF) \
	X(RM_REFAULTS_TEARDOWN, "refaults.teardown", \
	  r->refaults[ZAP_TEARDOWN], RM_WHATIF) \
	X(RM_REFAULTS_DIRTY_LOG_COLLAPSE, "refaults.dirty_log_collapse", \
	  r->refaults[ZAP_DIRTY_LOG_COLLAPSE], RM_WHATIF) \
	X(RM_REFAULTS_OTHER, "refaults.other", r->refaults[ZAP_OTHER], \
	  RM_WHATIF) \
	X(RM_TLB_FLUSHES, "tlb_flushes", r->flushes, RM_WHATIF) \
	X(RM_TLB_FLUSHES_PER_S, "tlb_flushes_per_s", rate(r->flushes, d), \
	  RM_WHATIF) \
	/* Contexts that zap under the policy's rules: what the self-check \
	 * compares as flush contexts under the recorded one. */ \
	X(RM_FLUSH_CONTEXTS, "flush_contexts", r->flushes_predicted, \
	  RM_WHATIF) \
	X(RM_LOCK_WAIT_MS, "lock_wait_ms", r->lock_wait_ns / 1e6, RM_WHATIF) \
	X(RM_LOCK_WAIT_MIN_MS, "lock_wait_min_ms", r->lock_wait_min_ns / 1e6, \
	  RM_WHATIF) \
	X(RM_LOCK_WAITS, "lock_waits", r->lock_waits, RM_WHATIF) \
	X(RM_LOCK_WAIT_REMOVED_MS, "lock_wait_removed_ms", \
	  r->lock_wait_removed_ns / 1e6, RM_WHATIF) \
	/* The latency what-if (engine.h struct replay_latency): NPF \
	 * exits left (the faults added included), their service times \
	 * (ns), the exits removed and the vCPU time given back (ms). */ \
	X(RM_NPF_EXITS, "npf_exits", r->lat.npf.n + r->lat.npf_added, \
	  RM_WHATIF) \
	X(RM_NPF_P50_NS, "npf_service_p50_ns", r->lat.npf_pct[0], RM_WHATIF) \
	X(RM_NPF_P99_NS, "npf_service_p99_ns", r->lat.npf_pct[1], RM_WHATIF) \
	X(RM_NPF_P999_NS, "npf_service_p99.9_ns", r->lat.npf_pct[2], \
	  RM_WHATIF) \
	X(RM_NPF_MAX_NS, "npf_service_max_ns", r->lat.npf_max, RM_WHATIF) \
	X(RM_NPF_EXITS_REMOVED, "npf_exits_removed", \
	  r->lat.npf_exits_removed, RM_WHATIF) \
	X(RM_NPF_GIVEN_BACK_MS, "npf_time_given_back_ms", \
	  (r->lat.npf_removed_ns + r->lat.npf_shortened_ns) / 1e6, \
	  RM_WHATIF) \
	/* The probe's samples, every probe together (ns). */ \
	X(RM_PROBE_SAMPLES, "probe_samples", r->lat.probe.n, RM_WHATIF) \
	X(RM_PROBE_P50_NS, "probe_p50_ns", r->lat.probe_pct[0], RM_WHATIF) \
	X(RM_PROBE_P99_NS, "probe_p99_ns", r->lat.probe_pct[1], RM_WHATIF) \
	X(RM_PROBE_P999_NS, "probe_p99.9_ns", r->lat.probe_pct[2], \
	  RM_WHATIF) \
	X(RM_PROBE_MAX_NS, "probe_max_ns", r->lat.probe_max, RM_WHATIF) \
	X(RM_PROBE_GE_1MS, "probe_ge_1ms", r->lat.probe_long[0], RM_WHATIF) \
	X(RM_PROBE_GE_3MS, "probe_ge_3ms", r->lat.probe_long[1], RM_WHATIF) \
	X(RM_UPGRADE_INVALIDATIONS, "upgrade_invalidations", \
	  r->upgrade_windows, RM_WHATIF) \
	X(RM_RECOVERY_BATCHES, "recovery_batches", r->recovery_batches, \
	  RM_WHATIF) \
	X(RM_RECOVERY_BATCHES_RUN, "recovery_batches_run", \
	  r->recovery_batches_run, RM_WHATIF) \
	X(RM_OBSERVED_FAULTS, "observed.faults", r->faults_observed, \
	  RM_SELF_CHECK) \
	X(RM_OBSERVED_LEAF_ZAPS, "observed.leaf_zaps", r->zaps_observed, \
	  RM_SELF_CHECK) \
	X(RM_OBSERVED_FLUSH_CONTEXTS, "observed.flush_contexts", \
	  r->flushes_observed, RM_SELF_CHECK) \
	X(RM_OBSERVED_TLB_FLUSHES_OTHER, "observed.tlb_flushes_other", \
	  r->flushes_other, RM_SELF_CHECK) \
	X(RM_PREDICTED_FAULTS, "predicted.faults", r->faults_predicted, \
	  RM_SELF_CHECK) \
	X(RM_PREDICTED_LEAF_ZAPS, "predicted.leaf_zaps", r->zaps_predicted, \
	  RM_SELF_CHECK) \
	X(RM_PREDICTED_FLUSH_CONTEXTS, "predicted.flush_contexts", \
	  r->flushes_predicted, RM_SELF_CHECK) \
	X(RM_OBSERVED_NX_RECOVERED, "observed.nx_recovered", \
	  r->nx_recovered_observed, RM_SELF_CHECK) \
	X(RM_PREDICTED_NX_RECOVERED, "predicted.nx_recovered", \
	  r->nx_recovered_predicted, RM_SELF_CHECK) \
	/* A capture that began mid-run: what it only revealed (engine.h \
	 * began_mid_run), and its warm-up (s from its first event). */ \
	X(RM_BEGAN_MID_RUN, "began_mid_run", r->began_mid_run, \
	  RM_SELF_CHECK) \
	X(RM_REVEALED_FAULTS, "revealed.faults", r->faults_revealed, \
	  RM_SELF_CHECK) \
	X(RM_REVEALED_LEAF_ZAPS, "revealed.leaf_zaps", r->zaps_revealed, \
	  RM_SELF_CHECK) \
	X(RM_REVEALED_FLUSH_CONTEXTS, "revealed.flush_contexts", \
	  r->flushes_revealed, RM_SELF_CHECK) \
	X(RM_REVEALED_NX_RECOVERED, "revealed.nx_recovered", \
	  r->nx_recovered_revealed, RM_SELF_CHECK) \
	X(RM_WARMUP_S, "warmup_s", replay_warmup_s(r), RM_SELF_CHECK) \
	X(RM_MEMSLOTS_STATE_DUMP, "memslots_state_dump", \
	  r->memslots_dumped, RM_SELF_CHECK) \
	X(RM_MISMATCHES, "mismatches", r->mismatches_total, RM_SELF_CHECK) \
	X(RM_EXEMPT_WINDOW, "exempt.invalidation_window", \
	  r->faults_exempt[EXEMPT_WINDOW], RM_SELF_CHECK) \
	X(RM_EXEMPT_NX_BATCH, "exempt.nx_recovery_batch", \
	  r->faults_exempt[EXEMPT_NX_BATCH], RM_SELF_CHECK) \
	X(RM_EXEMPT_SET_REGION, "exempt.set_memory_region", \
	  r->faults_exempt[EXEMPT_SET_REGION], RM_SELF_CHECK) \
	X(RM_EXEMPT_DIRTY_LOG, "exempt.dirty_log_ioctl", \
	  r->faults_exempt[EXEMPT_DIRTY_LOG], RM_SELF_CHECK) \
	X(RM_EXEMPT_RACING_VCPU, "exempt.racing_vcpu", \
	  r->faults_exempt[EXEMPT_RACING_VCPU], RM_SELF_CHECK) \
	X(RM_EXEMPT_FROZEN_ENTRY, "exempt.frozen_entry", \
	  r->faults_exempt[EXEMPT_FROZEN_ENTRY], RM_SELF_CHECK) \
	X(RM_EXEMPT_WRITE_GAP, "exempt.write_gap", \
	  r->faults_exempt[EXEMPT_WRITE_GAP], RM_SELF_CHECK) \
	X(RM_FLUSHES_MEASURED, "flushes_measured", r->flushes_measured, \
	  RM_SELF_CHECK) \
	X(RM_PEAK_TDP_ENTRIES, "peak_tdp_entries", r->peak_tdp_entries, \
	  RM_WHATIF)

#define REPLAY_METRIC_ENUM(e, name, value, kind) e,
enum replay_metric {
	REPLAY_METRIC_LIST(REPLAY_METRIC_ENUM)
	REPLAY_METRICS
};
#undef REPLAY_METRIC_ENUM

enum replay_metric_kind {
	RM_WHATIF = 0,
	RM_SELF_CHECK,
};

/* Each figure's name and kind, indexed by enum replay_metric. */
extern const char *const replay_metric_names[REPLAY_METRICS];
extern const enum replay_metric_kind replay_metric_kinds[REPLAY_METRICS];

/* The per-cause groups, first member and length, in engine.h's order. */
#define RM_LEAF_ZAPS_BY_CAUSE RM_LEAF_ZAPS_NOTIFIER
#define RM_REFAULTS_BY_CAUSE RM_REFAULTS_NOTIFIER
#define RM_EXEMPT_BY_REASON RM_EXEMPT_WINDOW
/* The latency figures at valcount_pct[], then the maximum (4 each). */
#define RM_NPF_BY_PCT RM_NPF_P50_NS
#define RM_PROBE_BY_PCT RM_PROBE_P50_NS
_Static_assert(RM_NPF_MAX_NS == RM_NPF_BY_PCT + 3 &&
	       RM_PROBE_MAX_NS == RM_PROBE_BY_PCT + 3, "latency groups");

/* A thread whose context held zaps the policy keeps (the sources it
 * touches): engine.h kept_by, with the thread's name (table thread). */
struct replay_kept_source {
	int32_t tid;
	char thread[32];                /* "?" when the table has none */
	int64_t zaps;
};

struct replay_metrics {
	const char *policy;
	/* Filled by replay_metrics_kept_sources() (replay, not stored). */
	struct replay_kept_source kept[REPLAY_KEPT_THREADS];
	int nkept;
	int64_t kept_other;             /* threads past the first ones */
	const char *limits;             /* what the replay does not model */
	/* Why the policy cannot act on this host (replay_na_texts[]);
	 * NULL when it can.  Its figures are then the recorded run's by
	 * construction: reports say this instead of showing them. */
	const char *not_applicable;
	double duration_s;
	/* Indexed by enum replay_metric; a figure a stored run lacks (an
	 * older mmureplay's) reads 0. */
	double v[REPLAY_METRICS];
};

/*
 * Returns what figure fig of m is, on a capture recorded under the policy
 * named recorded: policy_figure_kind(), and where that is predicted,
 * one-sided when the capture leaves the figure open on one side: the
 * faults of a capture that began mid-run, where faults_undecided more may
 * be avoided (an upper bound), and the lock waits where the trace does
 * not say when each invalidation let mmu_lock go (lock_wait_ms, the most
 * the policy leaves; lock_wait_min_ms the least).
 */
enum policy_figure_kind replay_metrics_figure_kind(
	const struct replay_metrics *m, const char *recorded,
	enum policy_figure fig);
/* Fills out with every figure of r (REPLAY_METRIC_LIST), rates per
 * second of duration_s. */
void replay_metrics_compute(const struct replay_result *r,
			    double duration_s, struct replay_metrics *out);
/* Fills out->kept from r->kept_by, most zaps first, with each thread's
 * name from db's table thread.  Returns 0, or -1 after a failed query
 * (logged). */
int replay_metrics_kept_sources(sqlite3 *db, const struct replay_result *r,
				struct replay_metrics *out);
/* Returns the figure named name, or REPLAY_METRICS when no figure has
 * that name. */
enum replay_metric replay_metric_find(const char *name);

/* A run as stored by replay_metrics_store(). */
struct stored_run {
	struct replay_metrics m;
	int self_check_ok;
	char policy[32];
	char knowledge[4][16];          /* memslots, perm_upgrade, dirty, lock */
	char not_applicable[200];       /* m.not_applicable's text */
	struct replay_second *series;
	int64_t nseconds;
};

/* Load every stored run, baseline first; *runs is malloc'd. 0 or -1. */
int replay_metrics_load(sqlite3 *db, struct stored_run **runs, int *n);
void replay_metrics_free_runs(struct stored_run *runs, int n);
/* A run as it would be stored, from a replay made now; r's per-second
 * series moves into out (freed with the runs). */
void replay_metrics_stored_from(struct replay_result *r, double duration_s,
				int self_check_ok, struct stored_run *out);

/* One VM's figures under each policy of a replay (met[0..n), in the
 * runs' order, met[0] the recorded policy's). */
struct replay_vm_figures {
	int64_t vm;                     /* table vm's id */
	int self_check_ok;              /* this VM's own */
	const struct replay_metrics *met;
};

/*
 * Stores runs r[0..n) with their figures m[0..n) in db, replacing each
 * policy's stored run, and each VM's figures vms[0..nvms) (table
 * replay_vm_metric; nvms 0 for a capture of one state), all in one
 * transaction with the termination signals held, so that they land
 * together or not at all.  r[0] is the self-check; when it failed
 * (self_check_ok 0) every run an earlier replay stored is dropped first,
 * since a failed self-check withholds every what-if.  narrowed: the runs
 * are one VM's (--vm), stored as its VM's figures only, never as the
 * capture's runs.  Returns 0; on error -1, after saying why on stderr,
 * and the DB is as it was.
 */
int replay_metrics_store_runs(sqlite3 *db, const struct replay_result *r,
			      const struct replay_metrics *m, int n,
			      int self_check_ok,
			      const struct replay_vm_figures *vms, int nvms,
			      int narrowed);

/* replay_vms.c: each VM's figures in the DB. */

/* A VM's stored figures under one policy (table replay_vm_metric). */
struct stored_vm_run {
	int64_t vm, pid;
	char procname[32];
	char policy[32];
	int self_check_ok;
	struct replay_metrics m;        /* RM_WHATIF figures; others 0 */
};

/* Stores vms[0..nvms) under n policies, replacing each (policy, VM)
 * pair's rows, every VM's first when clear; inside the caller's
 * transaction.  Returns 0, or -1 with the error in db. */
int replay_vms_store(sqlite3 *db, const struct replay_vm_figures *vms,
		     int nvms, int n, int clear);
/* Loads every stored (VM, policy) row, by VM, the recorded policy first;
 * *out is malloc'd (NULL and *n 0 when none).  Returns 0, or -1 after
 * saying why. */
int replay_vms_load(sqlite3 *db, struct stored_vm_run **out, int *n);

#endif
