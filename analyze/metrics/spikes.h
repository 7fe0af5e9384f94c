/*
 * Latency spikes of the probe and the MMU activity that overlapped them:
 * the post-mortem question "what was KVM doing when the guest stalled?".
 *
 * A spike is a probe sample (mmureplay:latency_sample) at or above its
 * probe phase's threshold: the phase's nearest-rank p99 unless one is
 * given.  Its window is the measured access: from the sample's time
 * minus its latency and a reporting slack (the exit that reports the
 * sample), to the sample's time.  Activity in the window, from the
 * capture's own events:
 *
 *   npf_page     an NPF on the probed page
 *   zap_page     the probed page's leaf zapped (present -> not present)
 *   invalidate   an mmu_notifier invalidation started
 *   nx_recovery  the NX recovery worker zapped or freed a shadow page
 *   lock_wait    a vCPU waited for mmu_lock (patched kernels)
 *   tlb_flush    a remote TLB flush (patched kernels)
 *
 * The same is measured over a sample of the other (non-spike) samples,
 * so a cause that is everywhere does not read as the spikes' cause.
 * Memory is bounded (the DB is queried per window, by seq ranges found by
 * bisection: seq follows time).
 */
#ifndef MMUREPLAY_METRICS_SPIKES_H
#define MMUREPLAY_METRICS_SPIKES_H

#include "model/spte.h"

#include <sqlite3.h>
#include <stdint.h>

enum spike_activity {
	SPIKE_NPF_PAGE = 0,
	SPIKE_ZAP_PAGE,
	SPIKE_INVALIDATE,
	SPIKE_NX_RECOVERY,
	SPIKE_LOCK_WAIT,
	SPIKE_TLB_FLUSH,
	SPIKE_ACTIVITIES
};

extern const char *const spike_activity_name[SPIKE_ACTIVITIES];

#define SPIKES_SLACK_NS 200000          /* the reporting exit */
#define SPIKES_BASELINE_MAX 1000        /* non-spike samples compared */
#define SPIKES_TOP_MAX 64

struct spike {
	int64_t seq, ts, ns, probe;
	uint64_t gfn;
	int vm;                         /* its row's vm, 0: no VM's */
	unsigned activity;              /* bit per enum spike_activity */
};

/* One VM's samples (vm 0: those of no VM, unattributed), at the
 * capture's thresholds. */
struct spikes_vm {
	int64_t samples, spikes;
	int64_t p99_ns, max_ns;         /* nearest-rank, of its samples */
};

struct spikes {
	/* The VM the DB was narrowed to (db_narrow_vm(), with the rows of
	 * no VM), or 0. */
	int narrowed_vm;
	int64_t samples, spikes;
	int64_t threshold_ns;           /* given, or 0: per probe p99 */
	/* Samples whose window saw each activity: spikes, and the
	 * compared non-spike samples (baseline_n of them). */
	int64_t with[SPIKE_ACTIVITIES], with_none;
	int64_t baseline_n, baseline_with[SPIKE_ACTIVITIES], baseline_none;
	struct spike top[SPIKES_TOP_MAX];       /* largest first */
	int ntop;
	/* Per VM: vms[0] the samples of no VM, vms[i] VM i's (table vm),
	 * i < nvms; the rows sum to samples and spikes. */
	struct spikes_vm *vms;
	int nvms;
};

/*
 * threshold_ns 0: each probe phase's p99.  top: how many of the largest
 * spikes to keep (<= SPIKES_TOP_MAX).  fmt decodes the SPTEs; the worker
 * tids are the NX recovery threads (capture_info).  Returns 0, or -1
 * after an SQL error or out of memory (logged); out is then still to be
 * freed with spikes_free().
 */
int spikes_compute(sqlite3 *db, const struct spte_format *fmt,
		   int64_t threshold_ns, int top,
		   const int32_t *worker_tids, int nworkers,
		   struct spikes *out);
void spikes_free(struct spikes *s);

#endif
