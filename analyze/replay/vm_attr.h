/*
 * Which VM the work of a thread of no VM's process belongs to.
 *
 * Ingest gives each event the VM of its thread's process (ingest/vms.h)
 * and leaves none to kernel threads: 6.1's NX recovery kthread, and the
 * host's memory management (kswapd, khugepaged, ksmd, kcompactd), whose
 * invalidation names an hva range of some mm, not a VM.  Their work
 * changes one VM's SPTEs, and that VM is the one whose state holds what
 * they zap.  One pass over the source:
 *   - each VM's leaves (as_id, level, gfn -> SPTE), as the VM's own
 *     events and the work attributed to it leave them;
 *   - a kernel thread's context (from one invalidation start to the
 *     next; a thread that starts none, as the NX kthread serving one VM,
 *     is one context throughout) belongs to the VM whose leaves hold a
 *     present leaf it zapped, pfn included, when no other VM's do and
 *     no zap of it contradicts that VM's state (on a capture that began
 *     mid-run a VM's state may not show an entry: no contradiction);
 *     of several, the one whose memslot (hva - gpa, learnt from the
 *     windows decided for it with a zap of a leaf its state alone
 *     held: the span of bases their zaps allow, and the gfns they
 *     held) maps a leaf it zapped into its invalidation's hva range (a
 *     page KSM shares between two VMs at one gfn, zapped by khugepaged
 *     in one VM's mm); a VM whose learnt memslot holds the gfn but
 *     puts it elsewhere is none of them (a VM's memslots do not
 *     overlap in gpa); none or several (a context that zaps nothing,
 *     a shared page in VMs no memslot tells apart): it stays
 *     unattributed and is counted, never guessed;
 *   - a leaf aged (its accessed bit alone cleared) is the VM's whose
 *     state holds that leaf (its value but for the accessed and dirty
 *     bits the CPU sets), when one VM's alone does, whatever thread
 *     aged it: reclaim ages every page of a memory cgroup or LRU in
 *     whichever thread needs memory (a VM process's thread ages another
 *     VM's pages under one cgroup), and the aging notifiers have no
 *     tracepoint to name the VM.  Its row's own VM, the thread's, is
 *     overridden (moved), and so is the flush that thread traces next
 *     (clear_flush_young flushes the VM it aged).  With several VMs, an
 *     aged leaf no VM's state holds anything at (a capture begun
 *     mid-run) is no VM's: moved to none, counted in aged_unknown,
 *     never its thread's guess.
 *   - without the kernel's word (no event names its struct kvm), an
 *     invalidation of a VM process's thread is its VM's only where no
 *     zap tells another: reclaim under a memory cgroup two VMs share
 *     runs in whichever thread needs memory and zaps the other VM's
 *     leaves.  Its window (its start, then its thread's SPTE changes
 *     and flushes until any other event) is its row's VM's unless none
 *     of its zaps could be that VM's (its state holds another value
 *     there, or never showed the entry and the VM was made in the
 *     capture) and one other VM's state fits them all: then it is moved
 *     there, whole, at its end; and where no state tells (a capture
 *     begun mid-run), when the one VM whose learnt memslot maps its
 *     first zap into its range is another that fits them all.  A window
 *     its own VM cannot have made (its learnt memslot puts a zapped
 *     leaf elsewhere, or its state holds another page there) that no
 *     one other VM fits is no VM's (windows_no_vm).  A window kept as
 *     its VM's though another VM's state fitted it as well and its own
 *     held none of its zaps is in doubt: its zaps are listed, and the
 *     replay does not judge the next zap of an entry they left
 *     (engine_overlay.c).  On such a capture (some VM made before it),
 *     a first pass learns the memslots, so that the second decides by
 *     them from the first event on.
 * Memory: each VM's leaves and the seq of each one's last change and,
 * per kernel thread, the events of its context until it is decided;
 * the first pass keeps only the memslots it learnt.
 */
#ifndef MMUREPLAY_REPLAY_VM_ATTR_H
#define MMUREPLAY_REPLAY_VM_ATTR_H

#include "model/event.h"
#include "model/spte.h"
#include "replay/source.h"
#include "util/u64map.h"

#include <stdint.h>

/* VMs told apart by a kernel thread's zaps, at most (a bit each). */
#define VM_ATTR_MAX_VMS 64

struct vm_attr {
	struct u64map seq_vm;           /* seq -> VM, of events decided here */
	int64_t contexts;               /* kernel threads' contexts */
	int64_t contexts_decided;
	int64_t contexts_empty;         /* zapped no leaf: nothing to tell */
	int64_t contexts_several;       /* fit several VMs, or none */
	int64_t events_decided, events_left;
	/* Events of a VM's process ingest gave none (thread_vm). */
	int64_t events_of_process;
	/* Aged leaves given the VM whose state holds them, over their
	 * row's (seq -> VM); aged_decided: all those given one here. */
	struct u64map moved;
	int64_t aged_decided, aged_moved;
	/* With several VMs, aged leaves no VM's state held a leaf of that
	 * page at: given none (moved, where their row had one). */
	int64_t aged_unknown;
	/* Without the kernel's word: windows of a VM process's thread
	 * whose zaps were another VM's, and their events (moved). */
	int64_t windows_moved, window_events_moved;
	/* ... and those that could not be their VM's (its learnt memslot
	 * puts a leaf they zapped elsewhere) nor told one other's: their
	 * events are moved to none. */
	int64_t windows_no_vm;
	/* Kernel threads' contexts that several VMs' states fitted, told
	 * by the one memslot that maps a zapped leaf into the range. */
	int64_t contexts_by_memslot;
	/* Windows of a VM process's thread kept as its VM's though another
	 * VM's state fitted their zaps as well and its own held none of
	 * them (a capture begun mid-run), and their leaf zaps (seq -> 1):
	 * the replay holds the entries those leave in doubt. */
	int64_t windows_in_doubt;
	struct u64map zaps_in_doubt;
};

/* vm_attr_run()'s rules (flags), on unless a test switches them off
 * (engine.h RULE_VM_SLOT_SPAN, RULE_VM_SLOT_EXCL, RULE_VM_OWN_PAGE,
 * RULE_EAGER_SPLIT, RULE_VM_DOUBT_STATE, RULE_VM_SLOT_ELIM). */
#define VM_ATTR_SLOT_SPAN 1u
#define VM_ATTR_SLOT_EXCL 2u
#define VM_ATTR_OWN_PAGE 4u
#define VM_ATTR_EAGER_SPLIT 8u
#define VM_ATTR_DOUBT_STATE 16u
#define VM_ATTR_SLOT_ELIM 32u

/* moved's value for an aged leaf of no known VM. */
#define VM_ATTR_NO_VM ((uint64_t)UINT32_MAX)

enum vm_attr_status {
	VM_ATTR_OK = 0,
	VM_ATTR_ERR_SOURCE,
	VM_ATTR_ERR_NOMEM,
};

/*
 * One pass over src (rewound first; two on a capture some VM of which
 * was made before it, see above) for a capture of nvms VMs (table
 * vm's ids 1..nvms).  thread_vm (may be NULL) maps a thread to the one
 * VM its process ever had, from before the capture: its events that
 * ingest gave none (before the VM showed: on a capture that began
 * mid-run, ingest learns of a VM at its first vCPU event) are that
 * VM's.  kernel_named: the kernel names each invalidation's VM (the
 * series' struct kvm in its events): a window's row VM is its own.
 * complete: the VMs made in the capture (bit id - 1), whose state
 * showed every leaf they had.  rules: VM_ATTR_* flags.
 */
enum vm_attr_status vm_attr_run(struct source *src,
				const struct spte_format *fmt, int nvms,
				const struct u64map *thread_vm,
				int kernel_named, uint64_t complete,
				unsigned rules, struct vm_attr *out);
void vm_attr_free(struct vm_attr *a);
/* Whether ev is a leaf zap of a window in doubt (see above). */
static inline int vm_attr_in_doubt(const struct vm_attr *a,
				   const struct model_event *ev)
{
	return a && a->windows_in_doubt && ev->kind == MEV_SPTE_CHANGE &&
		u64map_get(&a->zaps_in_doubt, ev->seq) != 0;
}
/* Returns the VM ev belongs to: the one decided here over its own (an
 * aged leaf), its own, else the one decided here; 0 when none. */
static inline int vm_attr_of(const struct vm_attr *a,
			     const struct model_event *ev)
{
	uint64_t moved;

	if ((a->aged_moved || a->aged_unknown || a->windows_moved ||
	     a->windows_no_vm) &&
	    ev->vm && (ev->kind == MEV_SPTE_CHANGE ||
		       ev->kind == MEV_TLB_FLUSH ||
		       ev->kind == MEV_NOTIFIER) &&
	    (moved = u64map_get(&a->moved, ev->seq)))
		return moved == VM_ATTR_NO_VM ? 0 : (int)moved;
	return ev->vm ? ev->vm : (int)u64map_get(&a->seq_vm, ev->seq);
}

#endif
