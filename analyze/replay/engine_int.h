/*
 * The replay engine's internal header: the state every engine_*.c file
 * shares, and the functions they call across files.  Only the engine's
 * own files include it; the rest of mmureplay sees engine.h.
 *
 * The engine is split by concern, one file each:
 *   engine.c           the core loop: replay_run*(), the event switch,
 *                      threads and their contexts, mismatches, the
 *                      per-second series, memslot and syscall events;
 *   engine_overlay.c   the policy overlay: SPTE changes, the leaves the
 *                      policy kept, its zaps, flushes and refaults;
 *   engine_window.c    mmu_notifier invalidation windows;
 *   engine_fault.c     vCPU faults (slow and fast path);
 *   engine_nx.c        NX huge page recovery: the split list, batches,
 *                      the worker's wake-ups;
 *   engine_teardown.c  shadow pages freed (teardown, or recovery), and
 *                      the zap of the whole VM;
 *   engine_lock.c      vCPU waits for mmu_lock;
 *   engine_roots.c     roots that coexist: the old root a memslot
 *                      change invalidated beside the new one;
 *   engine_latency.c   the latency what-if: NPF service times and probe
 *                      samples as the policy leaves them.
 * Adding an input: a handler engine_on_<kind>() in the file of its
 * concern, declared here, and a one-line case in handle() (engine.c).
 *
 * The files call each other in a circle, through this header alone.
 * engine.c dispatches: handle() hands each event to engine_on_<kind>()
 * in the file of its concern, engine_ctx_close() a context to
 * <concern>_ctx_close().  engine_on_spte() (engine_overlay.c) is the
 * hub: every traced SPTE change is attributed there to the context the
 * other files opened, and handed to each concern it touches.  The
 * calls across files, besides engine.c's services that all the others
 * use (engine_ctx_open/close(), engine_mismatch(), engine_second_at(),
 * engine_dirty_logged_*()):
 *   engine.c           fault_pending_thread_event(), fault_frozen_end()
 *                      around every event; fault_pending_expire() when
 *                      an exemption ends, and with nx_batch_close() at
 *                      the end of the trace;
 *   engine_overlay.c   teardown_zap_all_starts/open(), teardown_removal(),
 *                      teardown_unlinked(), teardown_replaced(),
 *                      teardown_entry_replaced(); nx_batch_touch();
 *                      fault_pending_explain(), fault_frozen_begin();
 *                      window_covers(), window_install();
 *   engine_window.c    overlay_context_range(), overlay_flush_account();
 *                      lock_holder_push();
 *   engine_fault.c     overlay_fault(), overlay_refault(),
 *                      overlay_kept_leaf(), overlay_flush_account();
 *                      window_covers(), window_any_covers();
 *                      nx_batch_close(); latency_on_fault();
 *   engine_nx.c        overlay_flush_account(); fault_pending_expire();
 *                      lock_holder_push();
 *   engine_teardown.c  overlay_context_range();
 *                      nx_recovery_ctx_open(), nx_split_drop(),
 *                      nx_span_forget();
 *   engine_lock.c      latency_npf_exit/entry(), latency_wait_removed();
 *   engine_latency.c   none;
 *   engine_roots.c     none (engine.c routes each SPTE change through
 *                      roots_route() before engine_on_spte(); engine_nx.c
 *                      calls roots_on_root_alloc(); the others read
 *                      roots_orig()).
 *
 * Each thread has one open context at a time: an invalidation window, a
 * fault being handled, a shadow page being torn down or recovered.  An
 * SPTE change is attributed to the context of the thread that made it;
 * any other event of that thread closes the context, and closing is where
 * the model's prediction for the context meets what was traced.
 *
 * Invariants:
 *   - tdp_obs holds the last traced SPTE of every entry (the recorded
 *     kernel's state), and the entries a huge page split writes without
 *     a trace (overlay_eager_split()); tdp_ovl holds, for entries where the policy
 *     diverges, the leaf the policy kept (present), else 0;
 *   - on a capture that began mid-run, tdp_obs's flag (tdp_flag()) is
 *     set on the 4K entries where the trace has shown a present leaf,
 *     from which on the policy's state of the entry is its own
 *     (engine_fault.c fault_shown());
 *   - predicted counts come only from tdp_obs before the traced change is
 *     applied, never from the traced changes themselves;
 *   - open_windows holds exactly the threads whose context is a window,
 *     open_zap_alls those whose context is the zap of a whole root;
 *   - every traced fault is counted once under the policy: as a fault
 *     or as avoided (faults_added come on top: faults the trace has
 *     not);
 *   - every traced fault is judged once by the self-check: required
 *     (faults_predicted), or a mismatch, or pending until the change
 *     that explains it or the end of its exemption, or (a capture that
 *     began mid-run) revealed: its walk met only entries the trace had
 *     not shown (faults_revealed);
 *   - every traced leaf zap is counted once in its context: observed
 *     where the model knew the entry, revealed where it did not, and
 *     only observed zaps meet the context's prediction.
 * The checks (util/assert.h) cover the last two and the bookkeeping;
 * the first two hold by how the code is arranged, not by a check.
 */
#ifndef MMUREPLAY_REPLAY_ENGINE_INT_H
#define MMUREPLAY_REPLAY_ENGINE_INT_H

#include "replay/engine.h"

#include "model/slots.h"
#include "model/tdp.h"
#include "replay/scan.h"
#include "util/ptrmap.h"
#include "util/u64map.h"

#include <stdint.h>

#define NS_PER_S 1000000000LL
/* Worker events further apart than this start a new recovery batch
 * (stock kernels; nx_batch_gap()). */
#define BATCH_GAP_NS 50000000LL
/* A thread first traced this soon after a mid-run capture began may be
 * inside a context that began before it (struct thread_ctx fresh): a
 * thread busy in a context traces events far closer together. */
#define CAPTURE_EDGE_NS BATCH_GAP_NS
/* gfn ranges one invalidation window maps to (one per memslot hit). */
#define WINDOW_MAX_RANGES 8
/* Given-back vCPU time a thread remembers until its next probe sample:
 * a sample holds one access, so one or two NPF exits. */
#define LAT_GONE 16
/* Shadow pages the model follows: 4-level TDP, the root is level 4. */
#define SP_MAX_LEVEL 4
/* The tdp's as_ids from here on hold retired roots (engine_roots.c);
 * below it, KVM's address spaces. */
#define RETIRED_FIRST 2
/* Parent entries whose link is not traced yet (engine_overlay.c
 * late_link_note()): a ring, as many as vCPUs racing down one walk. */
#define LATE_LINKS 8

enum ctx_kind {
	CTX_NONE = 0,
	CTX_WINDOW,
	CTX_FAULT,
	CTX_RECOVERY,
	CTX_TEARDOWN,
};

struct gfn_range {
	int as_id;
	uint64_t start, end;
};

/* One thread: its open context (ctx_*), and what it is inside. */
struct thread_ctx {
	enum ctx_kind ctx_kind;
	uint64_t ctx_seq;               /* of the event that opened it */
	int64_t ctx_ts;
	uint64_t ctx_gfn;               /* fault gfn / SP gfn */
	/* A table's removal (recovery, teardown): the next gfn its walk
	 * may zap, one past the last leaf it zapped (0: none yet), and
	 * that leaf's level and tdp as_id. */
	uint64_t ctx_walk_next;
	int ctx_walk_level, ctx_walk_as;
	/* CTX_TEARDOWN of a whole root: in open_zap_alls. */
	int ctx_zap_all;
	int ctx_keep;                   /* policy keeps this context's zaps */
	int64_t ctx_predicted;          /* leaves the model says it zaps */
	int64_t ctx_observed;           /* leaves it zapped (traced) that
					 * the model knew */
	int64_t ctx_revealed;           /* ... that it did not know */
	int64_t ctx_policy_zaps;        /* leaves it zaps under the policy */
	int64_t ctx_flushes;            /* measured flushes in the context */
	int64_t ctx_last_ts;            /* its last zap or flush (or open) */
	/* CTX_WINDOW */
	struct gfn_range win_ranges[WINDOW_MAX_RANGES];
	int win_nranges;
	uint64_t win_hva_start, win_hva_end;
	int win_measured;               /* patched: its end event closes it */
	int64_t win_racing;             /* stock: installs before its walk
					 * may have run (window_install()) */
	/* Its walk's last zap: the range's index and the gfn (walked 0:
	 * none yet); window_removal(). */
	int win_walked, win_walk_range;
	uint64_t win_walk_gfn;
	/* Patched: kvm_unmap_gfn_range()'s decision was traced (the range
	 * met a memslot, so the kernel took mmu_lock for write), and
	 * whether the recorded kernel kept the range's SPTEs. */
	int win_decided, win_decided_keep;
	/* Its first change under the lock: its first zap, or the decision
	 * (0: none yet); whether it zapped a leaf; engine_lock.c. */
	int64_t win_first_ts;
	int win_zapped;
	/* CTX_FAULT */
	int fault_fetch;                /* the open fault is an exec fault */
	int fault_write;                /* ... a write fault */
	int fault_flush_due;            /* it replaced a present table by a
					 * leaf: the kernel flushes, zaps or
					 * not (fault_ctx_close()) */
	/* CTX_RECOVERY, CTX_TEARDOWN */
	int sp_level;
	/* CTX_TEARDOWN: the root it tears down, a tdp as_id (a retired
	 * root's, engine_roots.c; 0: the current root); and whether it is
	 * the collapse of a 4K table where dirty logging stops. */
	int ctx_as;
	int ctx_collapse;
	/* The as_id its last SPTE change went to (roots_route()); on a
	 * capture that began mid-run, whether it is in a teardown begun
	 * before the capture (1; 2: of a root), and the unknown root its
	 * changes go to (0: none); both until its next event of another
	 * kind (engine_roots.c). */
	int route_as;
	int teardown_before;
	int unknown_root;
	/* Of a 4K table's entries, those the model knew when its removal
	 * began (a new table may take its place meanwhile): bit i for
	 * entry i; valid while sp_level is 1. */
	uint64_t sp_known[TDP_TABLE_ENTRIES / 64];
	/* The thread, across contexts. */
	int is_worker;                  /* an NX recovery thread */
	int is_collapser;               /* khugepaged */
	int in_madv_collapse;           /* inside madvise(MADV_COLLAPSE) */
	/* First traced within CAPTURE_EDGE_NS of the capture's start, and
	 * no event of it but SPTE changes and flushes yet: on a capture
	 * that began mid-run, it may be inside a context that began
	 * before the capture (engine_on_spte()). */
	int fresh;
	int seen;                       /* an event of it was handled */
	/* It cleared a leaf's accessed bit since its last flush (the
	 * host's page aging: RULE_AGING_FLUSH). */
	int aged;
	int fresh_counted;              /* in contexts_before (engine.h) */
	int64_t npf_exit_ts;            /* 0: not in an NPF exit */
	/* The open NPF exit's traced faults, how many of them the policy
	 * avoids, and the lock wait it removes inside it; the vCPU time
	 * given back since the thread's last probe sample, as (exit time,
	 * ns), the last LAT_GONE (engine_latency.c). */
	int npf_faults, npf_kept;
	int64_t exit_ts;                /* its last exit (any reason) */
	int64_t npf_wait_removed;
	struct lat_gone {
		int64_t ts, ns;
	} lat_gone[LAT_GONE];
	unsigned nlat_gone;
	/* A vCPU thread (it traced an entry or an exit), and the seq of
	 * its last entry into the guest (0: none traced yet). */
	int is_vcpu;
	uint64_t entry_seq;
	/* Inside KVM_RUN (its entry traced, not its exit yet). */
	int in_kvm_run;
	/* Its KVM_RUN returned, and it has not entered the guest nor
	 * called KVM_RUN since (engine_fault.c vcpu_run_left()). */
	int left_run;
	int64_t contention_ts;          /* 0: not waiting for a lock */
	int in_setregion;               /* KVM_SET_USER_MEMORY_REGION */
	uint64_t setregion_seq;         /* ... the seq of its entry */
	/* The seq of its event being handled, and of the one before. */
	uint64_t last_seq, prev_seq;
	int in_dirtylog;                /* KVM_{GET,CLEAR}_DIRTY_LOG */
	int npending_next;              /* its faults waiting on a batch */
	/* A ranged TLB flush it traced, until its next event: the entry
	 * mapping [frozen_start, frozen_end) may be frozen (engine_fault.c,
	 * fault_frozen_by()). */
	uint64_t frozen_start, frozen_end, frozen_seq;
	/* An L1 table this thread's exec fault accounted (engine_nx.c
	 * nx_table_*): its 2M key until its link is traced (flags 0:
	 * none); the last L1 table it unlinked, and whether KVM's list
	 * held it (flags: NX_TABLE_*). */
	uint64_t nx_alloc_key, nx_unlinked_key;
	unsigned nx_alloc_flags, nx_unlinked_flags;
	/* The last L1 table it linked (a fixture may trace the link
	 * before the allocation). */
	uint64_t nx_link_key, nx_link_addr, nx_link_ctx;
	int nx_link_valid;
};

/* One NX recovery batch: one wake-up of the worker. */
struct batch {
	int batch_active;
	int64_t batch_start_ts, batch_last_ts;
	uint64_t batch_first_seq;
	int batch_measured;             /* opened by a traced begin event */
	int batch_read_lock;            /* measured lock mode (patched) */
	int64_t batch_wake;             /* recorded wake-up index */
	/* ns from the previous traced batch's end to this one's begin, both
	 * traced (0: not both) */
	int64_t batch_gap;
	int batch_skipped;              /* the policy's worker sleeps */
	/* Untraced, its worker quiet for BATCH_GAP_NS: it exempts no
	 * fault until the worker shows again (nx_batch_live()). */
	int batch_quiet;
	/* Leaves zapped by its pages: predicted, traced (known entries,
	 * and the entries the trace revealed), under the policy. */
	int64_t zaps_predicted, zaps_observed, zaps_revealed, zaps_policy;
	/* Its first page was split before the capture began: its size is
	 * revealed, not predicted (engine_nx.c nx_batch_first_page()). */
	int batch_revealed;
	/* NX-split pages recovered: traced, predicted from the ratio, and
	 * the least the ratio gives from a count that missed the splits
	 * accounted while the worker waited for mmu_lock. */
	int64_t sps_observed, sps_predicted, sps_min;
	/* Tables the worker zapped in a traced batch (frees; not the pages
	 * it skipped as dirty-logged). */
	int64_t tables_zapped;
	/* What the size rests on, from its start: the lists' counts, the
	 * splits each may hold that the worker's count missed, and the
	 * count the patched begin event gives (-1: none). */
	int64_t n_traced, n_policy, late_traced, late_policy, count_read;
	int64_t flushes_traced;         /* traced flush events (patched) */
	/* The policy's batch: pages it may take, has taken, recovers. */
	int64_t policy_quota, policy_taken, policy_pages;
};

/*
 * A fault on a leaf that permitted the access, waiting for the change
 * that removed the permission to be traced (enum fault_exempt): from
 * the invalidation window pend_window (its thread, and the seq it opened
 * at), a recovery worker while the batch opened at pend_batch_seq runs,
 * or a thread inside KVM_SET_USER_MEMORY_REGION, or one inside a dirty-log
 * ioctl (it write-protects leaves before their tracepoint fires).
 */
struct pending_fault {
	uint64_t pend_seq, pend_gfn, pend_err;
	int64_t pend_ts;
	unsigned pend_reasons;          /* 1 << enum fault_exempt */
	const struct thread_ctx *pend_window;
	uint64_t pend_window_seq, pend_batch_seq;
	/* Stock: the batch whose first zap is not traced yet; the faulting
	 * thread, whose next event ends the wait (a write-locked zap is
	 * traced under the lock the fault path needs). */
	const struct thread_ctx *pend_next_batch;
	/* The thread whose ranged flush (frozen_seq) covers the fault: its
	 * zap of the entry, traced next, requires the fault. */
	const struct thread_ctx *pend_frozen;
	uint64_t pend_frozen_seq;
};

/*
 * Write-locked work that ended: an invalidation, or one page of a
 * recovery batch; when it held mmu_lock (its first to its last traced
 * change), and whether the policy removes that work (it keeps every
 * leaf the trace shows it zap).  The last LOCK_HOLDERS are kept, for
 * the lock waits traced when the waiter got the lock.
 */
struct lock_holder {
	/* hold_to: its last traced zap or flush; hold_to_max: the next
	 * event of its thread (the lock is released in between, after the
	 * flush's IPIs, which no event dates). */
	int64_t hold_from, hold_to, hold_to_max;
	int hold_page;                  /* a recovery page, not a window */
	int hold_removed;               /* for the most left ... */
	int hold_removed_least;         /* ... and for the least */
	/* Removed: the lock is still held until hold_keep_to (a kept
	 * invalidation takes it to decide; hold_from: not at all). */
	int64_t hold_keep_to;
};

#define LOCK_HOLDERS 256

/*
 * A table unlinked (its parent entry (as_id, level, gfn) cleared by
 * thread tid) whose free is not traced yet.  Under the read lock a
 * vCPU may link a new table there first; the removed table's present
 * leaves are then kept here (leaves), for the free's prediction: the
 * model holds the new, empty table's entries by then.  The last
 * REPLACED_TABLES unlinks are kept; a free takes its own.
 */
struct replaced_table {
	int as_id, level;
	uint64_t gfn;
	int32_t tid;
	int active;
	int64_t leaves;
	/* A new table was linked at the entry (overlay_table_linked()):
	 * the leaves the model holds below it since are the new table's,
	 * and known holds which of the removed table's entries the model
	 * knew then (tdp_table_known()). */
	int relinked;
	uint64_t known[TDP_TABLE_ENTRIES / 64];
};

#define REPLACED_TABLES 8
/* Threads between a ranged flush and their next event, at most. */
#define FROZEN_THREADS 8

/* Splits kept for nx_batch_touch()'s count of recent ones, at most. */
#define NX_RECENT 64

/*
 * NX-split pages KVM tracks for recovery (nx_lpage_splits), and when
 * each was accounted: the worker reads the count before it takes
 * mmu_lock, so the splits accounted while it waited are not in it.
 */
struct nx_splits {
	struct u64map split_map;        /* 2M-aligned gfn -> tables, ts */
	int64_t nsplit;
	struct nx_recent {
		uint64_t key;
		int64_t ts;
	} recent[NX_RECENT];            /* a ring of the last splits */
	unsigned nrecent;               /* pushed so far */
	/* Keys accounted on the VM-wide guess of the host's mapping
	 * (engine_nx.c nx_guess_settle()): key -> key | 1 while listed
	 * (keys are 2M-aligned gfns), | 2 once an invalidation met the
	 * region (nx_guess_shown()), 0 once not; nguessed of them;
	 * absent, how many of those KVM's count showed its list lacks
	 * (0 <= absent <= nguessed).  KVM's count is nsplit - absent. */
	struct u64map guessed;
	int64_t nguessed, absent;
};

/*
 * Exec faults that split a 2M page inside a memslot flip's span
 * (scan.h struct scan_flip), in trace order: each saw the memslots
 * before the swap or after it, and so made an NX split or not; the
 * SPTE changes are the same.  KVM's count settles how many saw the old
 * ones (engine_nx.c nx_span_settle()).  All of one flip.
 */
#define NX_UNDECIDED 64

struct nx_undecided {
	uint64_t gfn;
	int64_t ts;
	int keep;                       /* the policy avoided the fault */
};

struct engine {
	const struct replay_opts *opts;
	const struct spte_format *fmt;
	struct replay_result *res;
	const struct scan *scan;        /* the first pass's facts */
	struct slots slots;
	struct tdp tdp_obs;             /* the traced state */
	struct tdp tdp_ovl;             /* leaves the policy kept */
	struct tdp tdp_zapmark;         /* zap cause + 1 of leaves zapped */
	struct tdp tdp_kvmdirty;        /* 1: leaf made writable and dirty
					 * by a fault that did not write */
	/* The leaf a context begun before a mid-run capture zapped
	 * (RULE_UNKNOWN_ZAP): which root lost it is in doubt until a
	 * known context changes the entry. */
	struct tdp tdp_doubt;
	struct ptrmap threads;          /* tid -> struct thread_ctx */
	struct thread_ctx *last_thread; /* thread_get()'s last answer */
	int32_t last_tid;
	const struct model_event *ev;   /* the event being handled */
	struct thread_ctx **open_windows;
	size_t nopen_windows, capopen_windows;
	struct thread_ctx **open_zap_alls;
	size_t nopen_zap_alls, capopen_zap_alls;
	size_t capseries;               /* of res->series (util/alloc.h) */
	struct batch batch, last_batch;
	int64_t period_factor;          /* recorded wake-ups per policy's */
	int64_t batches_seen;
	/* L1 SPs created by exec faults outside dirty-logged slots; as
	 * traced, and as they would be under the policy. */
	struct nx_splits nx_traced, nx_policy;
	/* L1 table address (its parent entry's) -> NX_TABLE_* flags: in
	 * which list the table is (the kernel's sp->possible_nx_huge_page_link
	 * non-empty). */
	struct u64map nx_tables, nx_tables_old;
	/* 2M region (gfn >> 9) -> HOST_4K or HOST_HUGE: how the host maps
	 * it, as the region's last fault showed (engine_fault.c
	 * host_level_note()); absent, nothing showed it. */
	struct u64map host_level;
	int host_4k_seen;               /* a region was shown 4K */
	/* On a capture that began mid-run: (as_id, level, gfn) -> the seq
	 * of the last window whose range held the entry unknown when it
	 * opened (engine_window.c window_unknown_note()). */
	struct u64map win_unknown;
	/* Every page in KVM's NX recovery list was split in the trace:
	 * from the start of a capture from the VM's creation, else from
	 * the first batch that began with such a page (engine_nx.c). */
	int nx_list_known;
	struct nx_undecided undecided[NX_UNDECIDED];
	int nundecided;
	int undecided_flip;             /* scan_flip_at()'s, of them all */
	int undecided_on;               /* that flip turned logging on */
	int flip_swapped;               /* the last flip known swapped */
	int began_decided;              /* began_mid_run is set */
	int setregion_threads;          /* inside KVM_SET_USER_MEMORY_REGION */
	int dirtylog_threads;           /* inside KVM_{GET,CLEAR}_DIRTY_LOG */
	/* Threads whose last event was a ranged TLB flush. */
	struct thread_ctx *frozen[FROZEN_THREADS];
	int nfrozen;
	struct lock_holder holders[LOCK_HOLDERS];       /* a ring */
	unsigned nholders;              /* pushed so far */
	struct replaced_table replaced[REPLACED_TABLES];        /* a ring */
	unsigned nreplaced;
	/* Entries (as_id, level, gfn) an install beneath was traced under
	 * while they read not present: their link comes later. */
	struct late_link {
		int as_id, level;
		uint64_t gfn;
	} late_links[LATE_LINKS];       /* a ring */
	unsigned nlate_links;
	struct pending_fault *pending;  /* faults not judged yet */
	size_t npending, cappending;
	/* Per leaf (level, gfn), its last change that let an access
	 * through: its seq, the accesses it let through, its thread
	 * (engine_fault.c fault_leaf_granted()); kept from when a second
	 * vCPU thread shows, before which no two vCPUs can race. */
	struct u64map leaf_grants;
	/* Retired roots (engine_roots.c): per tdp as_id, the address
	 * space whose root it holds (-1: a free slot; the as_id itself
	 * below RETIRED_FIRST), and the seq of the root allocation that
	 * retired it. */
	struct roots {
		int8_t orig[TDP_AS_IDS];
		/* a slot of a teardown begun before the capture */
		int8_t unknown[TDP_AS_IDS];
		uint64_t retired_seq[TDP_AS_IDS];
		/* a thread began its zap (a teardown context on it), or a
		 * newer root was retired before it was (engine_roots.c
		 * invalid_root_zap()) */
		int8_t zap_begun[TDP_AS_IDS];
		int nretired;
	} roots;
	int vcpu_threads;
	int vcpus_left;                 /* of them, left_run */
	int nomem;
};

/* Is the model rule r in force (not switched off by a test)? */
static inline int engine_rule(const struct engine *e, enum replay_rule r)
{
	return !(e->opts->rules_off & REPLAY_RULE_BIT(r));
}

/* engine.c: contexts, mismatches, the series. */
void engine_ctx_open(struct engine *e, struct thread_ctx *t,
		     enum ctx_kind kind, const struct model_event *ev,
		     uint64_t gfn);
void engine_ctx_close(struct engine *e, struct thread_ctx *t);
/* n items only revealed at ts (engine.h began_mid_run): counted in
 * *count, and the warm-up lasts at least to ts. */
void engine_revealed(struct engine *e, int64_t *count, int64_t n,
		     int64_t ts);
/* Tells the caller's hook (replay_opts.hook), if any, the policy's
 * decision on ev: a fault it avoids, or the leaf at (level, gfn) it
 * keeps. */
void engine_whatif(struct engine *e, enum replay_whatif_kind kind,
		   const struct model_event *ev, int level, uint64_t gfn);
void engine_mismatch(struct engine *e, enum mismatch_kind kind,
		     uint64_t seq, int64_t ts, uint64_t gfn,
		     int64_t predicted, int64_t observed);
/* The series' entry for the second of ts; NULL (and nomem) on failure. */
struct replay_second *engine_second_at(struct engine *e, int64_t ts);
int engine_dirty_logged_at(struct engine *e, uint64_t gfn, uint64_t seq);
/* ... as a fault that began at seq saw the memslots: on a stock capture,
 * a flip from the first SPTE change of its ioctl on (rule swap_sweep,
 * engine_nx.c engine_on_sp_alloc()). */
int engine_dirty_seen_at(struct engine *e, uint64_t gfn, uint64_t seq);

/* How the host maps a guest 2M region (engine.host_level). */
enum { HOST_4K = 1, HOST_HUGE = 2 };
/* An invalidation of [gs, ge): regions it covers in part are mapped 4K
 * by the host from now on (engine_fault.c). */
void host_level_part(struct engine *e, uint64_t gs, uint64_t ge);
void host_level_collapse(struct engine *e, uint64_t gs, uint64_t ge);

/* engine_overlay.c */
void engine_on_spte(struct engine *e, struct thread_ctx *t,
		    const struct model_event *ev);
void engine_on_tlb_flush(struct engine *e, struct thread_ctx *t,
			 const struct model_event *ev);
/* The leaf the policy kept where the recorded kernel zapped it: its
 * level, or 0 where the policy's state is the traced one. */
int overlay_kept_leaf(struct engine *e, int as_id, uint64_t gfn,
		      uint64_t *spte);
void overlay_zap(struct engine *e, int64_t ts, enum zap_cause cause,
		 int as_id, int level, uint64_t gfn);
void overlay_flush(struct engine *e, int64_t ts);
/* A fault under the policy at ts (the per-second series too). */
void overlay_fault(struct engine *e, int64_t ts);
void overlay_flush_account(struct engine *e, uint64_t seq, int64_t ts,
			   uint64_t gfn, int64_t predicted, int64_t observed,
			   int64_t revealed, int64_t policy_zaps,
			   int64_t flushes, int64_t per_page);
int64_t overlay_context_range(struct engine *e, struct thread_ctx *t,
			      int as_id, uint64_t start, uint64_t end,
			      int min_level, int max_level,
			      enum zap_cause cause);
void overlay_refault(struct engine *e, uint64_t gfn);

/* engine_window.c */
void engine_on_notifier(struct engine *e, struct thread_ctx *t,
			const struct model_event *ev);
void window_ctx_close(struct engine *e, struct thread_ctx *t);
/* Does window t cover any page of the level-sized leaf at gfn? */
int window_covers(const struct thread_ctx *t, int as_id, uint64_t gfn,
		  int level);
/* Does an open window cover gfn (zapping: one whose zaps the policy
 * does not keep)? */
int window_any_covers(struct engine *e, int as_id, uint64_t gfn,
		      int zapping);
void window_install(struct engine *e, struct thread_ctx *self, int as_id,
		    int level, uint64_t gfn);
void window_walked(struct thread_ctx *t, int as_id, int level,
		   uint64_t gfn);
void window_removal(struct engine *e, struct thread_ctx *self, int as_id,
		    int level, uint64_t gfn);

/* engine_fault.c */
void engine_on_fault(struct engine *e, struct thread_ctx *t,
		     const struct model_event *ev);
void engine_on_fast_fault(struct engine *e, const struct model_event *ev);
void engine_on_spte_request(struct engine *e, struct thread_ctx *t,
			    const struct model_event *ev);
void engine_on_vcpu_exit(struct engine *e, struct thread_ctx *t,
			 const struct model_event *ev);
void fault_ctx_close(struct engine *e, struct thread_ctx *t);
/* A change by t at (as, level, gfn) from old to new: the pending faults
 * it explains are judged required. */
void fault_pending_explain(struct engine *e, const struct thread_ctx *t,
			   int as, int level, uint64_t gfn, uint64_t old,
			   uint64_t new);
/* Judge the pending faults whose exemption ended (all: the trace did)
 * without the change that would explain them: mismatches. */
void fault_pending_expire(struct engine *e, int all);
/* Thread t's next event: its faults waiting on a stock batch's first
 * zap wait no longer. */
void fault_pending_thread_event(struct engine *e, struct thread_ctx *t);
/* A ranged flush by t may freeze an entry until t's next event: begin
 * at the flush, end at that event. */
void fault_frozen_begin(struct engine *e, struct thread_ctx *t,
			const struct model_event *ev);
void fault_frozen_end(struct engine *e, struct thread_ctx *t);
/* Thread tid changed the leaf (level, gfn) of address space 0 from old
 * to new at seq (was_leaf: old was a present leaf): remember which
 * accesses it newly let through, for fault_raced(). */
void fault_leaf_granted(struct engine *e, int32_t tid, uint64_t seq,
			int level, uint64_t gfn, int was_leaf, uint64_t old,
			uint64_t new);
/* A thread traced a vCPU entry or exit: count it as a vCPU. */
void fault_vcpu_seen(struct engine *e, struct thread_ctx *t);
void vcpu_run_left(struct engine *e, struct thread_ctx *t, int left);
/* engine_window.c: the zap at (as_id, level, gfn) is of an entry the
 * model did not know when t's window opened. */
int window_unknown_at_open(const struct engine *e, const struct thread_ctx *t,
			   int as_id, int level, uint64_t gfn);

/* engine_nx.c */
void engine_on_sp_alloc(struct engine *e, struct thread_ctx *t,
			const struct model_event *ev);
void engine_on_nx_recovery(struct engine *e, struct thread_ctx *t,
			   const struct model_event *ev);
void nx_split_drop(struct engine *e, struct nx_splits *l, uint64_t gfn);
/* An invalidation met [gs, ge): a guessed split there may have met a
 * change of the host's mapping since. */
void nx_guess_touch(struct engine *e, uint64_t gs, uint64_t ge);
/* A fault showed the host mapping gfn's 2M region 4K: a guessed split
 * there that no invalidation met since was never KVM's. */
void nx_guess_shown(struct engine *e, uint64_t gfn);
/* Does KVM's NX list, as the trace shows it, hold a table at gfn's 2M
 * entry? */
int nx_listed(const struct engine *e, uint64_t gfn);
#define NX_TABLE_TRACED 1u
#define NX_TABLE_POLICY 2u
#define NX_TABLE_KNOWN 4u       /* the unlink was traced */
void nx_table_spte(struct engine *e, struct thread_ctx *t, int level,
		   uint64_t gfn, uint64_t old, uint64_t new);
unsigned nx_table_freed(struct thread_ctx *t, uint64_t gfn);
void nx_table_listed(struct engine *e, uint64_t gfn, unsigned flags, int on);
/* A table freed: a memslot flip's span fault that made it is settled
 * by nothing now (engine_nx.c, struct nx_undecided). */
void nx_span_forget(struct engine *e, uint64_t gfn);
void nx_batch_touch(struct engine *e, const struct model_event *ev);
/* How long the worker may pause inside an untraced batch (ns). */
int64_t nx_batch_gap(const struct engine *e);
/* A batch runs, and its worker is not quiet: faults may race it. */
static inline int nx_batch_live(const struct engine *e)
{
	return e->batch.batch_active && !e->batch.batch_quiet;
}
void nx_batch_close(struct engine *e);
void nx_recovery_ctx_open(struct engine *e, struct thread_ctx *t,
			  const struct model_event *ev, int level);
void nx_recovery_ctx_close(struct engine *e, struct thread_ctx *t);

/* engine_teardown.c */
void engine_on_sp_free(struct engine *e, struct thread_ctx *t,
		       const struct model_event *ev);
void teardown_ctx_close(struct engine *e, struct thread_ctx *t);
/* Thread t's memslot ioctl returns: the policy's kept leaves the
 * collapse of dirty logging's tables zapped. */
void teardown_collapse_kept(struct engine *e, const struct thread_ctx *t,
			    int64_t ts);
/* A table's unlink by thread tid, and the leaves a new table linked
 * at the entry before its free hides. */
void teardown_unlinked(struct engine *e, int32_t tid, int as_id, int level,
		       uint64_t gfn);
void teardown_replaced(struct engine *e, int as_id, int level, uint64_t gfn,
		       int64_t leaves,
		       const uint64_t known[TDP_TABLE_ENTRIES / 64]);
int teardown_entry_replaced(struct engine *e, const struct thread_ctx *t,
			    int as, int level, uint64_t gfn, uint64_t old);
int teardown_zap_all_starts(struct engine *e, const struct thread_ctx *t,
			    const struct model_event *ev);
void teardown_zap_all_open(struct engine *e, struct thread_ctx *t,
			   const struct model_event *ev);
void teardown_removal(struct engine *e, const struct thread_ctx *self,
		      int as_id, int level, uint64_t gfn);

/* engine_roots.c */
void roots_init(struct engine *e);
/* The address space of tdp as_id `as` (as itself below RETIRED_FIRST). */
int roots_orig(const struct engine *e, int as);
/* A root of address space `as` was allocated at seq: the current root,
 * if it still holds a present entry, is retired (engine_roots.c). */
void roots_on_root_alloc(struct engine *e, int as, uint64_t seq);
/* A thread began the zap of tdp as_id `as` (a retired root: no longer
 * pending for RULE_INVALID_ROOT_ZAP). */
void roots_on_zap_begun(struct engine *e, int as);
/* Returns the tdp as_id the SPTE change ev of thread t goes to. */
int roots_route(struct engine *e, struct thread_ctx *t,
		const struct model_event *ev);

/* engine_latency.c */
/* Thread t takes an NPF exit; enters the guest again at ts (before its
 * npf_exit_ts is cleared). */
void latency_npf_exit(struct thread_ctx *t);
void latency_npf_entry(struct engine *e, struct thread_ctx *t, int64_t ts);
/* A traced fault of thread t, avoided by the policy or not. */
void latency_on_fault(struct thread_ctx *t, int avoided);
/* The policy removes ns of a lock wait of thread t (NULL: none known). */
void latency_wait_removed(struct thread_ctx *t, int64_t ns);
void engine_on_latency_sample(struct engine *e, struct thread_ctx *t,
			      const struct model_event *ev);

/* engine_lock.c */
/* An invalidation window or a recovered page t ends: remember when it
 * held mmu_lock. */
void lock_holder_push(struct engine *e, const struct thread_ctx *t);
void engine_on_lock_wait(struct engine *e, struct thread_ctx *t,
			 const struct model_event *ev);
void engine_on_lock_contention(struct engine *e, struct thread_ctx *t,
			       const struct model_event *ev);
/* Patched: kvm_unmap_gfn_range()'s decision in t's window. */
void engine_on_unmap_decision(struct thread_ctx *t,
			      const struct model_event *ev);
void engine_on_vcpu_entry(struct engine *e, struct thread_ctx *t,
			  const struct model_event *ev);

#endif
