/*
 * The replay's first pass over a capture: facts that a decision needs at
 * the start of an event but that the trace reveals only after it.
 *
 *   - memslots, when the kernel did not trace them: inferred from which
 *     gfns each invalidation zapped (model/slots.h);
 *   - which invalidations were pure permission upgrades: measured from
 *     the patched notifier flags / unmap decision; on stock kernels from
 *     the enclosing mprotect(2) (PROT_WRITE kept: upgrade), or inside
 *     UFFDIO_WRITEPROTECT inferred (docs/design.md, "Stock and patched
 *     kernels"): every leaf it zapped that came back came back at the
 *     same pfn with no permission less (A/D bits aside; 6.1 refaults it
 *     identical, 6.12 may map it writable again); with no such syscall
 *     on the thread (reclaim, ksmd, khugepaged, NUMA hinting) never;
 *   - when dirty logging was on, on stock kernels: a
 *     KVM_SET_USER_MEMORY_REGION ioctl that write-protects or splits
 *     leaves turns it on; the next one turns it off; in a capture with
 *     no syscall at all, the MMU events' own signs of those ioctls
 *     (scan.c dirty_sweep_note());
 *   - whether the kernel splits a huge leaf in place when a fault maps
 *     below it (a present huge leaf of a faulting thread, between its
 *     page fault and its next entry, turned into a table in one change:
 *     Linux 6.12) or zaps it first (6.1).  Measured only where
 *     a fault did split one; a capture without such a fault has none to
 *     predict.
 */
#ifndef MMUREPLAY_REPLAY_SCAN_H
#define MMUREPLAY_REPLAY_SCAN_H

#include "model/slots.h"
#include "model/kernel.h"
#include "model/spte.h"
#include "replay/policy.h"
#include "replay/source.h"

#include <stddef.h>
#include <stdint.h>

struct scan_interval {
	uint64_t from_seq, to_seq;      /* [from, to) */
	/* ... as vCPUs' faults saw it: from the first SPTE change of the
	 * KVM_SET_USER_MEMORY_REGION that turned it on, to that of the one
	 * that turned it off (scan.c on_syscall()); from_seq, to_seq where
	 * no change was traced there. */
	uint64_t seen_from, seen_to;
};

/*
 * A memslot's dirty logging flipped by KVM_SET_USER_MEMORY_REGION (a
 * traced memslot event inside that ioctl).  vCPUs see the new flags
 * from the memslot swap, early in the ioctl (kvm_swap_active_memslots());
 * the event is traced at the commit, after an SRCU grace period that a
 * reader such as the NX recovery worker, holding SRCU through a batch,
 * can stretch to seconds.  [from_seq, to_seq): the ioctl's entry, the
 * event.
 */
struct scan_flip {
	uint64_t from_seq, to_seq;
	int as_id, dirty;               /* the new setting */
	uint64_t base_gfn, npages;      /* npages 0: to the end */
};

struct scan {
	struct slots slots;             /* at the end of the trace */
	/* Measured slots at the start of the trace: those whose first
	 * traced change (a flags change or a delete) reveals they existed
	 * before it began, with the flags that change replaced, and those
	 * the state dump lists (none on a capture from the VM's creation:
	 * it traces every slot's creation). */
	struct slots slots_start;
	/* Memslots LTTng's state dump listed that no earlier traced change
	 * had: they existed from the start, with the flags it gives. */
	int slots_dumped;
	uint64_t *upgrade_seqs;         /* sorted notifier seqs */
	size_t nupgrades, capupgrades;
	enum replay_source upgrade_src;
	/* Where the upgrade flag is measured, the stock inference (the
	 * mprotect, or identical refaults) held against it, per window that
	 * zapped (where the decision changes a figure): [inferred][measured]
	 * counts. */
	int64_t upgrade_infer[2][2];
	struct scan_interval *dirty;    /* dirty logging on (stock) */
	size_t ndirty, capdirty;
	struct scan_flip *flips;        /* measured memslot flag flips */
	size_t nflips, capflips;
	enum replay_source dirty_src;
	int64_t fault_splits_in_place;  /* huge leaves faults split */
	/* A leaf above 4K shows in the trace: the VM's memory can be
	 * mapped huge (host THP or hugetlbfs). */
	int huge_leaves;
	/* The 99th percentile of the time from an invalidation's start to
	 * its first change under mmu_lock (its first zap; where it zapped
	 * nothing, the decision the patched kernel traces after the walk),
	 * over the invalidations whose range lies within one 2 MiB block:
	 * the lock, kvm_mmu_invalidate_begin() and a walk of one table at
	 * most, and the delays the host adds to them.  What a policy that
	 * keeps the range's SPTEs still holds the lock for, at most
	 * (engine_lock.c).  0: no such window showed one. */
	int64_t keep_hold_ns;
	int seen[MEV_KINDS];            /* event kinds present */
};

enum scan_status {
	SCAN_OK = 0,
	SCAN_ERR_SOURCE,
	SCAN_ERR_NOMEM,
};

/* upgrade_cause: rule upgrade_cause (engine.h); off, identical refaults
 * alone infer an upgrade.  dirty_sweep: rule dirty_sweep; off, a capture
 * without syscalls has no dirty-logging inference. */
enum scan_status scan_run(struct source *src, const struct spte_format *fmt,
			  int upgrade_cause, int dirty_sweep, struct scan *out);
void scan_free(struct scan *sc);
/* Returns whether the hva range [hs, he) lies within one 2 MiB block:
 * an invalidation's walk of it meets one table at most (keep_hold_ns
 * counts those; engine_lock.c keeps their holds). */
static inline int scan_one_block(uint64_t hs, uint64_t he)
{
	return he > hs && hs >> 21 == (he - 1) >> 21;
}
/* Was the invalidation starting at seq a pure upgrade? */
int scan_is_upgrade(const struct scan *sc, uint64_t seq);
/* Was dirty logging on at seq (stock inference)? */
int scan_dirty_at(const struct scan *sc, uint64_t seq);
/* ... as a fault that began at seq saw the memslots (rule swap_sweep)? */
int scan_dirty_seen_at(const struct scan *sc, uint64_t seq);
/* Returns the flip (its index in flips, plus one) whose span holds
 * (as_id, gfn) at seq, and sets *dirty to its new setting; returns 0
 * outside every span. */
int scan_flip_at(const struct scan *sc, int as_id, uint64_t gfn,
		 uint64_t seq, int *dirty);

#endif
