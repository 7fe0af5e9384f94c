/*
 * The replay engine: walks a capture's events in time order, rebuilds
 * the TDP MMU state the trace implies (the "observed" state), and keeps
 * beside it what a policy would have changed (an overlay of leaves the
 * policy kept that the recorded kernel zapped).
 *
 * Two kinds of output, kept apart on purpose:
 *   - the model's own predictions under the recorded rules (which faults
 *     the state requires, which leaves each invalidation, recovery or
 *     teardown must zap), compared with what was traced: the self-check;
 *   - the counts under the policy (faults, zaps by cause, refaults,
 *     flushes, lock waits, per-second series): the what-if.
 * A prediction is never a copy of an observed count: a wrong rule, a
 * missed event or a lost-event gap shows up as a mismatch with its time
 * and gfn.
 *
 * Memory grows with the guest pages touched (the TDP map and overlay)
 * and the threads seen, not with the number of events.
 *
 * The engine's files, one per concern, share engine_int.h (which lists
 * them and where a new input or policy decision goes).
 */
#ifndef MMUREPLAY_REPLAY_ENGINE_H
#define MMUREPLAY_REPLAY_ENGINE_H

#include "model/event.h"
#include "model/spte.h"
#include "replay/policy.h"
#include "replay/scan.h"
#include "replay/source.h"
#include "util/u64map.h"
#include "util/valcount.h"

#include <stdint.h>

/*
 * Named values with their names in reports, each from one list: the
 * enum and the name table are generated from it, so neither can miss an
 * entry.  X(enumerator, "name").
 */
#define ZAP_CAUSE_LIST(X) \
	X(ZAP_NOTIFIER, "notifier")       /* mmu_notifier invalidation */ \
	X(ZAP_NX_RECOVERY, "nx_recovery") /* the NX recovery worker */ \
	X(ZAP_FAULT_PATH, "fault_path")   /* a fault replacing a leaf */ \
	X(ZAP_TEARDOWN, "teardown")       /* SP freed (memslot/VM gone) */ \
	/* 4K tables freed where dirty logging stops, for huge pages */ \
	X(ZAP_DIRTY_LOG_COLLAPSE, "dirty_log_collapse") \
	X(ZAP_OTHER, "other")             /* no cause the model knows */

#define MISMATCH_KIND_LIST(X) \
	/* a leaf permitted the access */ \
	X(MISMATCH_FAULT_NOT_REQUIRED, "fault_not_required") \
	/* context zapped != model held */ \
	X(MISMATCH_ZAP_COUNT, "zap_count") \
	/* zap outside the mapped range */ \
	X(MISMATCH_ZAP_OUTSIDE, "zap_outside_range") \
	/* zap with no cause */ \
	X(MISMATCH_ZAP_UNEXPLAINED, "zap_unexplained") \
	/* batch size != ceil(split/ratio) */ \
	X(MISMATCH_RECOVERY_BATCH, "recovery_batch") \
	/* the kernel decided as another policy does (lock mode, skip) */ \
	X(MISMATCH_POLICY_DECISION, "policy_decision") \
	/* NX-split pages at a write-locked batch's end != model's list */ \
	X(MISMATCH_NX_COUNT, "nx_count") \
	/* a context flushed without a zap the model predicts, or the \
	 * reverse (traced flushes only) */ \
	X(MISMATCH_FLUSH_CONTEXT, "flush_context") \
	/* a traced recovery batch began sooner after the previous one \
	 * than the recorded period (predicted: the period, observed: the \
	 * gap, ms) */ \
	X(MISMATCH_RECOVERY_PERIOD, "recovery_period") \
	/* a traced mmu_lock wait that began before the fault it belongs \
	 * to was traced, or at another gfn (predicted: the ns from the \
	 * fault to the wait's end, observed: the wait, ns) */ \
	X(MISMATCH_LOCK_WAIT, "lock_wait")

/*
 * Why a fault on a leaf that permitted the access was not failed at
 * once: a change that removed the permission is traced after the fault
 * (the SPTE is written before its tracepoint fires, and a vCPU's NPF is
 * traced at the exit, before it takes mmu_lock).  The fault waits for
 * that change from the thread that holds the exemption; when the
 * exemption ends without it, the fault is a mismatch.
 */
#define FAULT_EXEMPT_LIST(X) \
	/* an invalidation covering the page is open */ \
	X(EXEMPT_WINDOW, "invalidation_window") \
	/* an NX recovery batch holds mmu_lock */ \
	X(EXEMPT_NX_BATCH, "nx_recovery_batch") \
	/* KVM_SET_USER_MEMORY_REGION (huge page collapse) */ \
	X(EXEMPT_SET_REGION, "set_memory_region") \
	/* KVM_GET_DIRTY_LOG / KVM_CLEAR_DIRTY_LOG write-protecting leaves */ \
	X(EXEMPT_DIRTY_LOG, "dirty_log_ioctl") \
	/* another thread made the leaf let the access through after this \
	 * vCPU last entered the guest (engine_fault.c fault_raced()) */ \
	X(EXEMPT_RACING_VCPU, "racing_vcpu") \
	/* a read-locked zap froze the entry: the vCPU faulted on it while \
	 * the zap's flush ran, and the flusher's next event is that \
	 * entry's zap (engine_fault.c fault_frozen_begin()); not capped \
	 * (metrics/fidelity.h) */ \
	X(EXEMPT_FROZEN_ENTRY, "frozen_entry") \
	/* without flush events: the fault came after the changing \
	 * thread's previous event, and that thread's next event changed \
	 * the fault's own entry (or removed the table mapping it): the \
	 * write came in that gap, before its tracepoint (engine_fault.c \
	 * write_gap()); not capped */ \
	X(EXEMPT_WRITE_GAP, "write_gap")

/*
 * The model's rules, by layer (docs/design.md, "The rules, by layer",
 * has one line for each: what it cannot catch).  A rule is a decision
 * the engine takes on a change, where it applies (its situations: every
 * capture, a stock kernel's, a patched kernel's, one begun mid-run, one
 * of several VMs), the kernel function whose behaviour it mirrors and
 * the engine function that takes it.  A test can switch each off
 * (replay_opts.rules_off, `mmureplay fidelity --rule-off NAME`; `--rules`
 * lists them) to see the self-check notice it on a real capture
 * (tests/test_rules_off.py): a rule no capture needs is a rule nothing
 * checks.  Never off in a real replay.
 */
enum rule_layer {
	RULE_LAYER_KERNEL,
	RULE_LAYER_TIMING,
	RULE_LAYER_IDENTITY,
	RULE_LAYER_FACTS,
	RULE_LAYERS
};

/* Where a rule applies: a set of these. */
enum rule_situation {
	SIT_EVERY = 1 << 0,	/* any capture */
	SIT_STOCK = 1 << 1,	/* a stock kernel's, or one missing events */
	SIT_PATCHED = 1 << 2,	/* a patched kernel's events it reads */
	SIT_MIDRUN = 1 << 3,	/* a capture begun while the VM ran */
	SIT_MULTIVM = 1 << 4,	/* a capture of several VMs */
};

/*
 * Layer kernel: KVM's own behaviour, true of a perfect trace: the
 * model itself, not an inference.  Each mirrors the kernel function it
 * names; its switch stays so that a test can see the self-check notice
 * it.
 */
#define REPLAY_RULES_KERNEL(X) \
	/* a leaf under a zapped parent table does not map (tdp.c) */ \
	X(RULE_REACHABILITY, "reachability", RULE_LAYER_KERNEL, SIT_EVERY, \
	  "handle_removed_pt", "tdp_reachable") \
	/* the patched kernel's stock and patched start of one window */ \
	X(RULE_DOUBLE_START, "double_start", RULE_LAYER_KERNEL, SIT_PATCHED, \
	  "kvm_mmu_notifier_invalidate_range_start", "engine_on_notifier") \
	/* a huge leaf forbidding the access is replaced (NX split) */ \
	X(RULE_HUGE_SPLIT, "huge_split", RULE_LAYER_KERNEL, SIT_EVERY, \
	  "kvm_tdp_mmu_map", "fault_zaps_huge") \
	/* ... only when the fault maps below it (its goal level) */ \
	X(RULE_HUGE_GOAL, "huge_goal", RULE_LAYER_KERNEL, SIT_EVERY, \
	  "kvm_tdp_mmu_map", "engine_on_spte_request") \
	/* a table's teardown takes the tables below it in its walk */ \
	X(RULE_NESTED_TEARDOWN, "nested_teardown", \
	  RULE_LAYER_KERNEL, SIT_EVERY, \
	  "handle_removed_pt", "engine_on_sp_free") \
	/* a window zaps a huge leaf any part of which it covers */ \
	X(RULE_HUGE_SPAN, "huge_span", RULE_LAYER_KERNEL, SIT_EVERY, \
	  "tdp_mmu_zap_leafs", "engine_on_spte") \
	/* an eager split fills the new table without a trace */ \
	X(RULE_EAGER_SPLIT, "eager_split", RULE_LAYER_KERNEL, SIT_EVERY, \
	  "tdp_mmu_split_huge_page", "overlay_eager_split") \
	/* exec faults in dirty-logged slots make no NX split */ \
	X(RULE_NX_DIRTY_UNTRACKED, "nx_dirty_untracked", \
	  RULE_LAYER_KERNEL, SIT_EVERY, \
	  "kvm_mmu_hugepage_adjust", "engine_on_sp_alloc") \
	/* a traced batch ends at its end event, not at a pause */ \
	X(RULE_MEASURED_BATCH, "measured_batch", \
	  RULE_LAYER_KERNEL, SIT_PATCHED, \
	  "kvm_recover_nx_huge_pages", "nx_batch_touch") \
	/* the fast path fixes a leaf in place, without spte_changed */ \
	X(RULE_FAST_FAULT, "fast_fault", RULE_LAYER_KERNEL, SIT_EVERY, \
	  "fast_pf_fix_direct_spte", "engine_on_fast_fault") \
	/* a leaf zapped outside any table's removal begins the zap of \
	 * the whole VM, leaves first (engine_teardown.c) */ \
	X(RULE_ZAP_ALL, "zap_all", RULE_LAYER_KERNEL, SIT_EVERY, \
	  "tdp_mmu_zap_root", "teardown_zap_all_starts") \
	/* a table's removal walks its entries once in gfn order: a leaf \
	 * zap not past its last is a new zap (engine_teardown.c \
	 * teardown_zap_all_starts()) */ \
	X(RULE_REMOVAL_WALK, "removal_walk", RULE_LAYER_KERNEL, SIT_EVERY, \
	  "handle_removed_pt", "teardown_zap_all_starts") \
	/* a removed table's entries traced after a new table took its \
	 * place are not the new table's (engine_teardown.c) */ \
	X(RULE_REMOVED_TABLE, "removed_table", RULE_LAYER_KERNEL, SIT_EVERY, \
	  "handle_removed_pt", "teardown_entry_replaced") \
	/* with the NX mitigation off (manifest) exec faults split \
	 * nothing and the worker's thread recovers nothing */ \
	X(RULE_NX_OFF, "nx_off", RULE_LAYER_KERNEL, SIT_EVERY, \
	  "is_nx_huge_page_enabled", "engine_on_sp_alloc") \
	/* a flush after a thread cleared accessed bits is the page \
	 * aging's (clear_flush_young), not its context's \
	 * (engine_overlay.c) */ \
	X(RULE_AGING_FLUSH, "aging_flush", RULE_LAYER_KERNEL, SIT_EVERY, \
	  "kvm_mmu_notifier_clear_flush_young", "engine_on_tlb_flush") \
	/* a 4K table freed in the memslot ioctl that stops dirty logging \
	 * is its collapse, not a teardown (engine_teardown.c) */ \
	X(RULE_DIRTY_LOG_COLLAPSE, "dirty_log_collapse", \
	  RULE_LAYER_KERNEL, SIT_EVERY, \
	  "kvm_mmu_zap_collapsible_sptes", "collapse_of") \
	/* a fault that replaces a present table by a leaf flushes \
	 * (engine_fault.c fault_ctx_close()) */ \
	X(RULE_TABLE_LEAF_FLUSH, "table_leaf_flush", \
	  RULE_LAYER_KERNEL, SIT_PATCHED, \
	  "tdp_mmu_map_handle_target_level", "fault_ctx_close")

/*
 * Layer timing: a change and its tracepoint apart in time: the SPTE is
 * written before kvm_tdp_mmu_spte_changed fires, an NPF is traced at the exit
 * before the fault takes mmu_lock, a memslot is swapped before the event
 * of its commit.
 */
#define REPLAY_RULES_TIMING(X) \
	/* a fault explained by a change traced after it (fault_exempt) */ \
	X(RULE_LATE_CHANGE, "late_change", RULE_LAYER_TIMING, SIT_EVERY, \
	  "handle_changed_spte", "fault_defer") \
	/* an install racing an open invalidation is zapped by its walk */ \
	X(RULE_WINDOW_INSTALL, "window_install", RULE_LAYER_TIMING, SIT_EVERY, \
	  "kvm_mmu_notifier_invalidate_range_start", "window_install") \
	/* a stock window's walk follows the installs before its first \
	 * zap (settled by the trace when it holds no leaf) */ \
	X(RULE_STOCK_RACE, "stock_race", RULE_LAYER_TIMING, SIT_STOCK, \
	  "kvm_tdp_mmu_unmap_gfn_range", "window_install") \
	/* a fault in a range a thread just flushed, before that thread's \
	 * zap of the entry mapping it, waited on the frozen entry */ \
	X(RULE_FROZEN_ENTRY, "frozen_entry", RULE_LAYER_TIMING, SIT_PATCHED, \
	  "tdp_mmu_zap_spte_atomic", "fault_frozen_begin") \
	/* without flush events: a fault inside a span, explained by the \
	 * change of its own entry that the span's thread traced next \
	 * after the fault, came in the gap between that write and its \
	 * tracepoint (engine_fault.c write_gap()) */ \
	X(RULE_WRITE_GAP, "write_gap", RULE_LAYER_TIMING, SIT_STOCK, \
	  "tdp_mmu_set_spte_atomic", "write_gap") \
	/* the worker's count of NX splits is read before it takes \
	 * mmu_lock: it may miss splits accounted while it waited \
	 * (engine_nx.c nx_count_late(); settled by the trace) */ \
	X(RULE_NX_SNAPSHOT, "nx_snapshot", RULE_LAYER_TIMING, SIT_EVERY, \
	  "kvm_recover_nx_huge_pages", "nx_count_late") \
	/* a vCPU sees a memslot's new flags from the swap early in \
	 * KVM_SET_USER_MEMORY_REGION, not from the event traced at its \
	 * commit (scan.h struct scan_flip) */ \
	X(RULE_SLOT_SWAP, "slot_swap", RULE_LAYER_TIMING, SIT_EVERY, \
	  "kvm_set_memslot", "nx_span_note") \
	/* a fault on a leaf another thread made let the access through \
	 * after this vCPU entered the guest was taken before that change \
	 * (engine_fault.c fault_raced()) */ \
	X(RULE_RACING_VCPU, "racing_vcpu", RULE_LAYER_TIMING, SIT_EVERY, \
	  "kvm_tdp_mmu_map", "fault_raced") \
	/* a leaf of an open window's range another thread removes \
	 * before the window's walk reached it is not the window's \
	 * (engine_window.c window_removal()) */ \
	X(RULE_WINDOW_REMOVAL, "window_removal", RULE_LAYER_TIMING, SIT_EVERY, \
	  "kvm_tdp_mmu_unmap_gfn_range", "window_removal") \
	/* a table's link may be traced after entries beneath it that \
	 * another vCPU installed through it (engine_overlay.c) */ \
	X(RULE_LATE_LINK, "late_link", RULE_LAYER_TIMING, SIT_EVERY, \
	  "tdp_mmu_link_sp", "late_link_note") \
	/* a recovery batch sooner than the period after a late one is \
	 * the worker catching up on lagging jiffies (engine_nx.c \
	 * batch_wake()) */ \
	X(RULE_BATCH_CATCH_UP, "batch_catch_up", RULE_LAYER_TIMING, SIT_EVERY, \
	  "kvm_nx_huge_page_recovery_worker", "batch_wake") \
	/* a leaf another thread removes ahead of the walk of an open \
	 * zap of a whole root is not that zap's \
	 * (engine_teardown.c teardown_removal()) */ \
	X(RULE_TEARDOWN_REMOVAL, "teardown_removal", \
	  RULE_LAYER_TIMING, SIT_EVERY, \
	  "tdp_mmu_zap_root", "teardown_removal") \
	/* on a stock capture, an exec fault sees a dirty-logging flip \
	 * from the first SPTE change of its KVM_SET_USER_MEMORY_REGION, \
	 * not from its entry (engine_nx.c engine_on_sp_alloc()) */ \
	X(RULE_SWAP_SWEEP, "swap_sweep", RULE_LAYER_TIMING, SIT_STOCK, \
	  "kvm_swap_active_memslots", "engine_on_sp_alloc")

/*
 * Layer identity: who did it, where the trace does not say: the root an
 * SPTE change belongs to, the VM a kernel thread's work was for.
 */
#define REPLAY_RULES_IDENTITY(X) \
	/* a root a memslot change invalidated is zapped beside the new \
	 * root the vCPUs build: kept apart (engine_roots.c) */ \
	X(RULE_ROOTS, "roots", RULE_LAYER_IDENTITY, SIT_EVERY, \
	  "kvm_mmu_zap_all_fast", "roots_route") \
	/* a leaf zapped by a context begun before a mid-run capture may \
	 * be an older root's: the entry is in doubt, not judged, until a \
	 * known context changes it (engine_overlay.c) */ \
	X(RULE_UNKNOWN_ZAP, "unknown_zap", RULE_LAYER_IDENTITY, SIT_MIDRUN, \
	  "kvm_mmu_zap_all_fast", "engine_on_spte") \
	/* on a capture begun mid-run, the mark of a removed table's entry \
	 * where the current root holds a present leaf is an unseen root's \
	 * (engine_roots.c current_or_unseen()) */ \
	X(RULE_UNSEEN_ROOT, "unseen_root", RULE_LAYER_IDENTITY, SIT_MIDRUN, \
	  "handle_removed_pt", "current_or_unseen") \
	/* on a capture begun mid-run, a zap that begins outside any \
	 * context on a leaf no retired root stores is the zap of the \
	 * newest retired root not zapped yet (engine_roots.c \
	 * invalid_root_zap()) */ \
	X(RULE_INVALID_ROOT_ZAP, "invalid_root_zap", \
	  RULE_LAYER_IDENTITY, SIT_MIDRUN, \
	  "kvm_tdp_mmu_zap_invalidated_roots", "invalid_root_zap") \
	/* a root being zapped when the next one is allocated is retired \
	 * even with nothing the model knows present in it \
	 * (engine_roots.c roots_on_root_alloc()) */ \
	X(RULE_ZAPPED_ROOT, "zapped_root", RULE_LAYER_IDENTITY, SIT_MIDRUN, \
	  "tdp_mmu_zap_root", "roots_on_root_alloc") \
	/* on a capture begun mid-run, a top-level table removed over a \
	 * leaf the current root still holds is another root's \
	 * (engine_roots.c top_table_elsewhere()) */ \
	X(RULE_TOP_TABLE, "top_table", RULE_LAYER_IDENTITY, SIT_MIDRUN, \
	  "tdp_mmu_zap_root", "top_table_elsewhere") \
	/* on a capture begun mid-run, a thread whose first event removes \
	 * a table above 2M, or marks an entry of one, tears a root down \
	 * since before the capture \
	 * (engine_roots.c roots_route()) */ \
	X(RULE_FIRST_REMOVAL, "first_removal", \
	  RULE_LAYER_IDENTITY, SIT_MIDRUN, \
	  "tdp_mmu_zap_root", "roots_route") \
	/* the next zap of an entry a window kept as its thread's VM's on \
	 * a guess left is revealed, not judged (vm_attr.h; \
	 * engine_overlay.c) */ \
	X(RULE_VM_DOUBT, "vm_doubt", \
	  RULE_LAYER_IDENTITY, SIT_MULTIVM | SIT_MIDRUN, \
	  "kvm_mmu_notifier_invalidate_range_start", "engine_on_spte") \
	/* the VM attribution forgets the entries such a window zapped: \
	 * they fit any VM after it (vm_attr.c own_row()) */ \
	X(RULE_VM_DOUBT_STATE, "vm_doubt_state", \
	  RULE_LAYER_IDENTITY, SIT_MULTIVM | SIT_MIDRUN, \
	  "kvm_mmu_notifier_invalidate_range_start", "own_row") \
	/* a window of a VM process's thread that only its own VM's state \
	 * fits teaches that VM's memslot (vm_attr.c own_alone()) */ \
	X(RULE_VM_SLOT_ELIM, "vm_slot_elim", RULE_LAYER_IDENTITY, SIT_MULTIVM, \
	  "kvm_mmu_notifier_invalidate_range_start", "own_alone") \
	/* a VM's memslot is learnt from any window decided for it with a \
	 * zap its state alone held, as the span of bases its zaps allow \
	 * (vm_attr.c vm_bases_learn()) */ \
	X(RULE_VM_SLOT_SPAN, "vm_slot_span", RULE_LAYER_IDENTITY, SIT_MULTIVM, \
	  "kvm_handle_hva_range", "vm_bases_learn") \
	/* a VM whose learnt memslot holds a zapped gfn but puts it \
	 * outside the invalidation's range is not the one \
	 * (vm_attr.c vm_bases_excluding()) */ \
	X(RULE_VM_SLOT_EXCL, "vm_slot_excl", RULE_LAYER_IDENTITY, SIT_MULTIVM, \
	  "__kvm_set_memory_region", "vm_bases_excluding") \
	/* a VM process's window that zapped a page its own VM's state \
	 * held another page at, and that no one other VM fits, is no \
	 * VM's (vm_attr.c context_close()) */ \
	X(RULE_VM_OWN_PAGE, "vm_own_page", RULE_LAYER_IDENTITY, SIT_MULTIVM, \
	  "tdp_mmu_zap_leafs", "context_close")

/*
 * Layer facts: a fact the trace hides (a stock kernel's missing events,
 * a capture begun mid-run): inferred, or settled by a later event.
 */
#define REPLAY_RULES_FACTS(X) \
	/* without batch events, the worker's free of an L1 table KVM's \
	 * NX list does not hold is a teardown (engine_teardown.c \
	 * worker_tears_down()) */ \
	X(RULE_UNLISTED_FREE, "unlisted_free", RULE_LAYER_FACTS, SIT_STOCK, \
	  "kvm_recover_nx_huge_pages", "worker_tears_down") \
	/* stock kernels: an invalidation is a permission upgrade only \
	 * inside a syscall that can loosen (mprotect, userfaultfd \
	 * unprotect) on its thread (scan.c window_inferred_up()) */ \
	X(RULE_UPGRADE_CAUSE, "upgrade_cause", RULE_LAYER_FACTS, SIT_STOCK, \
	  "change_protection", "window_inferred_up") \
	/* exec faults split nothing in a VM whose memory no trace shows \
	 * mapped huge: the host maps it 4K (engine_nx.c) */ \
	X(RULE_NX_HUGE_HOST, "nx_huge_host", RULE_LAYER_FACTS, SIT_EVERY, \
	  "kvm_mmu_hugepage_adjust", "engine_on_sp_alloc") \
	/* ... nor in a 2M region the host maps 4K, as the region's last \
	 * fault showed (engine_fault.c host_level_note()) */ \
	X(RULE_NX_HOST_LEVEL, "nx_host_level", RULE_LAYER_FACTS, SIT_EVERY, \
	  "kvm_mmu_max_mapping_level", "host_level_note") \
	/* khugepaged's invalidation of a whole 2M region is a THP \
	 * collapse, and so is one inside madvise(MADV_COLLAPSE): the \
	 * region is no longer known 4K (engine_fault.c \
	 * host_level_collapse()) */ \
	X(RULE_THP_COLLAPSE, "thp_collapse", RULE_LAYER_FACTS, SIT_EVERY, \
	  "collapse_huge_page", "host_level_collapse") \
	/* on a capture that began mid-run, NX splits accounted on the \
	 * VM-wide guess of the host's mapping are settled by KVM's count \
	 * (engine_nx.c nx_guess_settle()) */ \
	X(RULE_NX_GUESS_SETTLE, "nx_guess_settle", \
	  RULE_LAYER_FACTS, SIT_EVERY, \
	  "kvm_tdp_mmu_map", "nx_guess_settle") \
	/* an untraced batch ends at a pause of half the period, not of \
	 * 50 ms (engine_nx.c nx_batch_gap()) */ \
	X(RULE_BATCH_PERIOD, "batch_period", RULE_LAYER_FACTS, SIT_STOCK, \
	  "kvm_nx_huge_page_recovery_worker", "nx_batch_gap") \
	/* an invalidation zaps leaves only: a table its thread removes \
	 * after a stock start event (no end event) ends the window \
	 * (engine_overlay.c) */ \
	X(RULE_WINDOW_LEAVES, "window_leaves", RULE_LAYER_FACTS, SIT_STOCK, \
	  "tdp_mmu_zap_leafs", "engine_on_spte") \
	/* ... and so does its thread's zap of a leaf outside its range \
	 * (engine_overlay.c) */ \
	X(RULE_WINDOW_EXIT, "window_exit", RULE_LAYER_FACTS, SIT_STOCK, \
	  "kvm_tdp_mmu_unmap_gfn_range", "engine_on_spte") \
	/* on a capture that began mid-run, a window's zap of an entry \
	 * unknown when it opened is revealed (engine_window.c) */ \
	X(RULE_WINDOW_UNKNOWN, "window_unknown", RULE_LAYER_FACTS, SIT_MIDRUN, \
	  "kvm_tdp_mmu_unmap_gfn_range", "window_unknown_at_open") \
	/* a capture with no syscall: dirty logging from the memslot \
	 * ioctls' write-protect sweep and collapse (scan.c) */ \
	X(RULE_DIRTY_SWEEP, "dirty_sweep", RULE_LAYER_FACTS, SIT_STOCK, \
	  "kvm_mmu_slot_apply_flags", "dirty_sweep_note") \
	/* an NX split accounted on the guess of the host's mapping, \
	 * whose region a later fault shows mapped 4K with no \
	 * invalidation of it between, was never KVM's \
	 * (engine_nx.c nx_guess_shown()) */ \
	X(RULE_NX_GUESS_SHOWN, "nx_guess_shown", RULE_LAYER_FACTS, SIT_EVERY, \
	  "kvm_tdp_mmu_map", "nx_guess_shown")

#define REPLAY_RULE_LIST(X) \
	REPLAY_RULES_KERNEL(X) \
	REPLAY_RULES_TIMING(X) \
	REPLAY_RULES_IDENTITY(X) \
	REPLAY_RULES_FACTS(X)

/*
 * Why a policy cannot act on the recorded host or capture: its figures
 * would be the recorded run's by construction, so reports say this
 * instead.  Each applies to NX-only policies (policy_nx_only()), which
 * change recovery batches alone.
 */
#define REPLAY_NA_LIST(X) \
	X(REPLAY_NA_NONE, "") \
	/* the manifest's kvm.nx_huge_pages is N or never: 'auto' turns \
	 * the mitigation off on CPUs without X86_BUG_ITLB_MULTIHIT */ \
	X(REPLAY_NA_NX_OFF, "on this host the NX huge page mitigation is " \
	  "off (kvm.nx_huge_pages=N, as 'auto' sets it on a CPU without " \
	  "the ITLB multihit bug), so no page is NX-split and recovery " \
	  "has nothing to take") \
	/* the trace: no exec fault made an NX split */ \
	X(REPLAY_NA_NO_NX_SPLIT, "no exec fault split a huge page in this " \
	  "capture (the host's CPU may lack the ITLB multihit bug, or the " \
	  "guest ran no code from huge pages), so recovery has nothing to " \
	  "take") \
	/* the trace: splits, but no batch (the period outlasts it) */ \
	X(REPLAY_NA_NO_BATCH, "NX recovery never ran in this capture (its " \
	  "period outlasts the trace), and the policy changes recovery " \
	  "batches only")

#define REPLAY_ENUM_ENTRY(e, name) e,

enum zap_cause {
	ZAP_CAUSE_LIST(REPLAY_ENUM_ENTRY)
	ZAP_CAUSES
};

enum mismatch_kind {
	MISMATCH_KIND_LIST(REPLAY_ENUM_ENTRY)
	MISMATCH_KINDS
};

enum fault_exempt {
	FAULT_EXEMPT_LIST(REPLAY_ENUM_ENTRY)
	EXEMPT_REASONS
};

#define REPLAY_RULE_ENUM_ENTRY(e, name, layer, sit, kfn, fn) e,

enum replay_rule {
	REPLAY_RULE_LIST(REPLAY_RULE_ENUM_ENTRY)
	REPLAY_RULES
};

/* A set of rules (replay_opts.rules_off): bit REPLAY_RULE_BIT(r) for
 * rule r. */
typedef uint64_t replay_rules_t;
#define REPLAY_RULE_BIT(r) ((replay_rules_t)1 << (r))
_Static_assert(REPLAY_RULES <= 64, "replay_rules_t holds every rule");

enum replay_na {
	REPLAY_NA_LIST(REPLAY_ENUM_ENTRY)
	REPLAY_NAS
};

extern const char *const zap_cause_names[ZAP_CAUSES];
extern const char *const mismatch_kind_names[MISMATCH_KINDS];
extern const char *const fault_exempt_names[EXEMPT_REASONS];
extern const char *const replay_rule_names[REPLAY_RULES];
extern const char *const replay_na_texts[REPLAY_NAS];
/* Returns the rule whose name (replay_rule_names[]) is name, or
 * REPLAY_RULES when no rule has that name. */
enum replay_rule replay_rule_find(const char *name);
/* Returns the name reports give s ("unknown", "inferred", "measured"),
 * or "unknown" when s is out of range. */
const char *replay_source_name(enum replay_source s);

struct mismatch {
	enum mismatch_kind kind;
	uint64_t seq;
	int64_t ts;
	uint64_t gfn;
	int64_t predicted, observed;
};

/* Mismatches a report lists before it says the list is cut (all are
 * kept in the result and the DB). */
#define REPLAY_SHOWN_MISMATCHES 64

struct replay_second {
	int64_t faults, zaps, flushes, lock_wait_ns;
};

/*
 * A what-if decision on one traced event, for a caller that shows the
 * decisions one by one (mmureplay export --policy): a fault the policy
 * avoids, a leaf zap it keeps.  The counts of a run are the numbers of
 * these calls (faults_avoided, zaps_kept).
 */
enum replay_whatif_kind {
	REPLAY_WHATIF_FAULT_AVOIDED,
	REPLAY_WHATIF_ZAP_KEPT,
};

struct replay_whatif {
	enum replay_whatif_kind kind;
	uint64_t seq;                   /* the traced event's */
	int64_t ts;
	int32_t tid;
	int level;                      /* the zapped leaf's; 1 for a fault */
	uint64_t gfn;
};

struct replay_hook {
	/* A run begins (one per policy and VM: events come in time order
	 * within a run, not across runs). */
	void (*run)(void *arg);
	/* In the run's event order. */
	void (*whatif)(void *arg, const struct replay_whatif *w);
	void *arg;
};

struct replay_opts {
	const struct policy *policy;
	/* NULL: no caller wants each decision. */
	const struct replay_hook *hook;
	int self_check;                 /* policy is the recorded one */
	const struct spte_format *fmt;
	const int32_t *nx_worker_tids;  /* the recovery threads */
	int n_nx_worker_tids;
	const int32_t *collapser_tids;  /* khugepaged's */
	int n_collapser_tids;
	int nx_workers_known;   /* 0: the source cannot tell the worker */
	int64_t npf_exit_reason;        /* SVM 0x400, VMX 48 */
	/* What a fault's error_code is (model/fault.h): MEV_ISA_VMX an
	 * EPT-violation exit qualification, else a PFERR value. */
	int fault_isa;
	int64_t nx_ratio;               /* recovery ratio; 0: unknown */
	int64_t nx_period_ms;           /* recovery period; 0: unknown */
	/* The NX mitigation is known off (kvm.nx_huge_pages N): exec
	 * faults split nothing and the worker never recovers. */
	int nx_off;
	replay_rules_t rules_off;       /* REPLAY_RULE_BIT()s (tests) */
	/* Events before this time (ns) are not replayed: some stream
	 * holds none from then (capture_info.h span_start_ts); 0: all. */
	int64_t span_start_ts;
	/* Leaf zaps whose VM is a guess (vm_attr.h zaps_in_doubt: seq ->
	 * 1); NULL: none.  The entries they leave are held in doubt. */
	const struct u64map *zaps_in_doubt;
};

/*
 * The latency what-if (engine_latency.c; docs/design.md, "Latency under
 * a policy"): the vCPUs' NPF service times (an NPF exit to the thread's
 * next entry) and the latency probe's samples as the policy leaves them,
 * and their figures at the percentiles of valcount_pct[] (util/valcount.h).
 */
#define REPLAY_LAT_PCTS VALCOUNT_PCTS   /* p50, p99, p99.9 */
/* Probe samples counted at or above each of these (ns). */
#define REPLAY_LAT_LONG 2               /* >= 1 ms, >= 3 ms */
extern const int64_t replay_lat_long_ns[REPLAY_LAT_LONG];

struct replay_latency {
	struct valcount npf;            /* service times left (ns) */
	struct valcount probe;          /* probe samples (ns), every probe */
	/* NPF exits whose every traced fault the policy avoids (gone with
	 * their service time), and the faults it adds, each taken at the
	 * median of the service times it leaves. */
	int64_t npf_exits_removed, npf_added;
	/* vCPU time the policy gives back: the service time of the exits
	 * it removes and the lock waits it removes or shortens inside the
	 * exits it keeps. */
	int64_t npf_removed_ns, npf_shortened_ns;
	/* Probe time taken out of samples: the part of the given-back time
	 * that falls in each sample's window. */
	int64_t probe_removed_ns;
	/* The figures (replay_latency_settle()); 0 without samples. */
	int64_t npf_pct[REPLAY_LAT_PCTS], npf_max;
	int64_t probe_pct[REPLAY_LAT_PCTS], probe_max;
	int64_t probe_long[REPLAY_LAT_LONG];
};

/* Threads whose kept zaps a result counts apart (replay_result). */
#define REPLAY_KEPT_THREADS 16

struct replay_result {
	const char *policy;
	const char *limits;             /* the policy's (policy.h) */
	int64_t events;

	/* Observed (the trace). */
	int64_t faults_observed;
	int64_t zaps_observed;
	/* Contexts (invalidation, fault, teardown, recovery batch) that
	 * flushed: traced flush events when flushes_measured, else those
	 * that zapped.  flushes_other: traced flushes outside them. */
	int64_t flushes_observed;
	int flushes_measured;
	int64_t flushes_other, flushes_teardown;

	/* Model predictions under the recorded rules (self-check).
	 * faults_predicted: traced faults the state required, including
	 * those faults_exempt[] explained by a change traced after them.
	 * The fault check is one-sided: a fault the state requires that
	 * was never traced cannot be seen. */
	int64_t faults_predicted;
	int64_t faults_exempt[EXEMPT_REASONS];
	int64_t zaps_predicted;
	int64_t flushes_predicted;
	/* A capture that began while the VM ran (its root's allocation is
	 * not traced before the first change): what its first changes and
	 * faults met the model could not know (tdp.h, known entries).
	 * Counted apart, inside the observed counts, never predicted and
	 * never a mismatch: faults on a walk the trace never showed,
	 * leaf zaps of entries it never showed (or by a thread whose
	 * context began before the capture), contexts that flushed with
	 * only such zaps, NX pages of batches that began with a page split
	 * before the capture.  warmup_ts: the last such event (the model
	 * knew every entry it needed after it); first_ts, last_ts: the
	 * capture's span. */
	int began_mid_run;
	/* Events before opts->span_start_ts, not replayed: the capture
	 * is replayed as one that began there. */
	int64_t events_before_span, span_start_ts;
	int64_t faults_revealed, zaps_revealed, flushes_revealed;
	int64_t nx_recovered_revealed, nx_batches_revealed;
	/* Threads whose first events (SPTE changes, flushes) belong to a
	 * context that began before the capture: its start, and so how it
	 * counts under a policy, is not in the trace. */
	int64_t contexts_before;
	/* Memslots the capture's LTTng state dump listed before any
	 * traced change of theirs (scan.h slots_dumped). */
	int64_t memslots_dumped;
	int64_t warmup_ts, first_ts, last_ts;
	/* Stock windows whose walk's time the trace does not fix, and the
	 * zaps they were settled by (engine_window.c window_settle()). */
	int64_t race_windows, zaps_race_settled;
	/* Recovery batches whose size the trace settled: the worker's
	 * count may lack splits accounted while it waited for mmu_lock. */
	int64_t nx_batches_settled;
	/* Exec faults inside a memslot flip's span whose view of the
	 * memslots (before the swap or after it) KVM's count settled, and
	 * how many of them saw the old memslots (engine_nx.c). */
	int64_t span_faults_settled, span_faults_old;
	/* NX splits a capture that began mid-run accounted on the
	 * VM-wide guess of the host's mapping, and of them those KVM's
	 * count (a write-locked batch's end event) showed it lacks or
	 * holds after all (engine_nx.c nx_guess_settle()). */
	int64_t nx_guessed_splits, nx_guessed_settled;
	/* A VM replayed alone (replay/session.h): the kernel threads'
	 * events of the capture the replay gave a VM, and those it could
	 * not (vm_attr.h); the same for every VM of the capture. */
	int64_t kthread_events_decided, kthread_events_left;
	/* Aged leaves the replay gave the VM whose state held them, over
	 * the VM of the thread that aged them (replay/vm_attr.h). */
	int64_t aged_leaves_moved;
	/* Aged leaves no VM's state held a leaf of that page at, with
	 * several VMs: given none, not their thread's VM. */
	int64_t aged_leaves_unknown;
	/* Without the kernel's word: windows of a VM process's thread the
	 * replay gave the VM whose leaves they zapped (replay/vm_attr.h). */
	int64_t windows_moved;
	/* Kernel threads' contexts told by a learnt memslot (vm_attr.h). */
	int64_t contexts_by_memslot;
	/* Windows kept as their thread's VM's on a guess (vm_attr.h). */
	int64_t windows_in_doubt;
	/* Windows no VM's: their VM's memslot rules them out (vm_attr.h). */
	int64_t windows_no_vm;
	/* A host's total of VMs replayed alone: how many VMs failed their
	 * own self-check (set by the caller that judged them). */
	int64_t vms_failed;
	/* Every mismatch, in trace order (malloc'd), and how many of each
	 * kind; mismatches_total == nmismatches unless memory ran out. */
	struct mismatch *mismatches;
	int64_t nmismatches;
	size_t capmismatches;
	int64_t mismatches_total;
	int64_t mismatches_by_kind[MISMATCH_KINDS];

	/* Under the policy (what-if). */
	int64_t faults;
	/* Traced faults the policy does not take (a leaf it kept permits
	 * the access: 0 under the recorded policy by construction), and
	 * faults it takes that the trace has not (a write through a leaf
	 * the policy kept read-only, seen in the dirty bit of the traced
	 * leaf that replaced it). */
	int64_t faults_avoided;
	int64_t faults_added;
	/* A capture that began mid-run: faults the policy takes on a page
	 * where the trace has not yet shown a present leaf.  Its state
	 * there may be a leaf it kept before the capture began, which
	 * would have spared the fault: up to this many more could be
	 * avoided (0 on a capture from the VM's creation, and under the
	 * recorded policy, whose state is the traced one). */
	int64_t faults_undecided;
	int64_t zaps[ZAP_CAUSES];
	int64_t zaps_kept;              /* traced zaps the policy skips */
	/* ... in invalidations the stock inference took as upgrades */
	int64_t zaps_kept_inferred;
	/* ... by the thread whose context they were in (the invalidating
	 * one: the VMM's uffd thread, an mprotect, ksmd, ...), the first
	 * REPLAY_KEPT_THREADS threads, the rest in kept_by_other: which
	 * sources the policy touches. */
	struct replay_kept_by {
		int32_t tid;
		int64_t zaps;
	} kept_by[REPLAY_KEPT_THREADS];
	int nkept_by;
	int64_t kept_by_other;
	int64_t refaults[ZAP_CAUSES];   /* faults on a gfn zapped by cause */
	int64_t flushes;                /* TLB flushes under the policy */
	/* Lock waits left: held to each invalidation's last traced zap or
	 * flush (lock_wait_ns), to its thread's next event (_min_ns). */
	int64_t lock_wait_ns, lock_waits, lock_wait_min_ns;
	int64_t lock_wait_removed_ns;
	struct replay_latency lat;

	/* How the facts were known. */
	enum replay_source slots_src, upgrade_src, dirty_src, lock_src;
	int64_t upgrade_windows;        /* invalidations judged upgrades */
	int64_t upgrade_infer[2][2];    /* scan.h: [inferred][measured] */
	int64_t recovery_batches;
	int64_t recovery_batches_run;   /* of those, run under the policy */
	int64_t recovery_batches_measured;      /* traced begin and end */
	/* The self-check's policy holds recovery under the read lock, and
	 * no traced batch says which lock it took (a stock kernel's
	 * capture): the claim cannot be checked on this capture. */
	int read_lock_unverifiable;
	/* NX huge pages recovered by the worker: traced, and as the ratio
	 * and the model's count of NX-split pages say (ratio known only). */
	int64_t nx_recovered_observed, nx_recovered_predicted;
	int64_t nx_splits_observed;     /* pages exec faults split */
	/* The policy cannot act on this host (an NX-only policy where no
	 * page is NX-split); REPLAY_NA_NONE when it can. */
	enum replay_na not_applicable;
	int nx_ratio_known;
	int nx_workers_known;   /* 0: "observed" cannot be told (unknown) */

	struct replay_second *series;   /* index: second of trace time */
	int64_t nseconds;
	int64_t peak_tdp_entries;
};

enum replay_status {
	REPLAY_OK = 0,
	REPLAY_ERR_SOURCE,
	REPLAY_ERR_NOMEM,
	REPLAY_ERR_POLICY,      /* policy_period_factor() is 0 */
	REPLAY_ERR_SPOOL,       /* a temporary stream cannot be made
				 * (session.h replay_vms_open()) */
};

/*
 * Replays opts->policy over src, both passes (each rewinds src first),
 * into *res.  Returns REPLAY_OK, and the caller frees *res with
 * replay_result_free().  On error returns REPLAY_ERR_SOURCE (src could
 * not be rewound or read), REPLAY_ERR_NOMEM, or REPLAY_ERR_POLICY (the
 * policy cannot run at the recorded recovery period); *res then holds
 * no memory.
 */
enum replay_status replay_run(struct source *src,
			      const struct replay_opts *opts,
			      struct replay_result *res);

/*
 * The same in two steps, for several policies over one capture: the
 * first pass's facts (scan.h) do not depend on the policy, so
 * replay_prepare() once, then replay_run_scanned() per policy, one pass
 * each.
 *
 * replay_prepare() makes the first pass over src (rewound first) into
 * *scan.  Returns REPLAY_OK, and the caller frees *scan with
 * scan_free().  On error returns REPLAY_ERR_SOURCE or REPLAY_ERR_NOMEM;
 * *scan then holds no memory.
 */
enum replay_status replay_prepare(struct source *src,
				  const struct replay_opts *opts,
				  struct scan *scan);
/*
 * Replays opts->policy over src (rewound first) with the facts of
 * replay_prepare()'s *scan, into *res.  Returns and fails as
 * replay_run() does: on REPLAY_OK the caller frees *res with
 * replay_result_free(); on error *res holds no memory.
 */
enum replay_status replay_run_scanned(struct source *src,
				      const struct replay_opts *opts,
				      const struct scan *scan,
				      struct replay_result *res);
/* The warm-up of a capture that began mid-run: seconds from its first
 * event to the last item only revealed (warmup_ts); 0 when nothing was
 * revealed, as on every capture from the VM's creation. */
static inline double replay_warmup_s(const struct replay_result *r)
{
	return r->warmup_ts > r->first_ts ?
		(double)(r->warmup_ts - r->first_ts) / 1e9 : 0;
}

/*
 * Adds the per-VM result src into the host's total dst (first: dst is
 * made from src; replay/result_merge.c).  Returns 0, or -1 when out of
 * memory (dst then holds what was added before; free it as usual).
 */
int replay_result_merge(struct replay_result *dst,
			const struct replay_result *src, int first);
/* Counts n kept zaps of thread tid in r->kept_by (result_merge.c). */
void replay_kept_by_add(struct replay_result *r, int32_t tid, int64_t n);
/* Computes r->lat's figures from its distributions, the faults the
 * policy adds taken at the median of the rest (engine_latency.c); after
 * the replay and after a merge.  Returns 0, or -1 when out of memory. */
int replay_latency_settle(struct replay_result *r);
/* Frees the per-second series and the distributions *res holds (its
 * counts stay).  Harmless on a result that holds none: a failed run's,
 * or one freed already. */
void replay_result_free(struct replay_result *res);

#endif
