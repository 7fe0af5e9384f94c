/*
 * The model's input vocabulary: one canonical event, decoded from any
 * source (the capture DB, or a hand-built sequence in a unit test).
 *
 * Values are as the kernel traced them (u64 SPTEs, gpa, hva); absent
 * optional fields are flagged, never 0.
 */
#ifndef MMUREPLAY_MODEL_EVENT_H
#define MMUREPLAY_MODEL_EVENT_H

#include "model/fault.h"
#include "model/kernel.h"

#include <stdint.h>

enum model_event_kind {
	MEV_SPTE_CHANGE = 0,    /* kvm_tdp_mmu_spte_changed */
	MEV_FAULT,              /* NPF exit (kvm_page_fault) */
	MEV_FAST_FAULT,         /* fixed by the fast path, no spte_changed */
	MEV_NOTIFIER,           /* invalidation start (and end if patched) */
	MEV_SP_ALLOC,
	MEV_SP_FREE,
	MEV_VCPU_EXIT,
	MEV_VCPU_ENTRY,
	MEV_SYSCALL,            /* entry/exit of a phase-marking syscall */
	MEV_UNMAP_DECISION,     /* patched: what kvm_unmap_gfn_range did */
	MEV_TLB_FLUSH,          /* patched: remote TLB flush */
	MEV_NX_RECOVERY,        /* patched: recovery begin/end/page */
	MEV_LOCK_WAIT,          /* patched: fault waited for mmu_lock */
	MEV_LOCK_CONTENTION,    /* lock:contention_begin/end */
	MEV_MEMSLOT,            /* patched: memslot change */
	MEV_SPTE_REQUEST,       /* kvm_mmu_spte_requested: a fault's goal */
	MEV_LATENCY_SAMPLE,     /* UST mmureplay:latency_sample (a probe) */
	MEV_KINDS
};

/* The syscalls that mark phases of a capture (the rest are "other"). */
enum model_syscall {
	MSYS_IOCTL = 0,
	MSYS_MPROTECT,
	MSYS_MADVISE,
	MSYS_OTHER,
	MSYS_KINDS
};

/*
 * Traced values with a meaning (schemas/capture.sql documents the same
 * numbers).  The event fields stay int, as their lists type them
 * (model/event_fields.h); compare them with these names, never with
 * numbers.
 */
enum mev_phase {                /* notifier, lock contention */
	MEV_PHASE_START = 0,
	MEV_PHASE_END = 1,
};

enum mev_nx_phase {             /* NX recovery (patched) */
	MEV_NX_BEGIN = 0,
	MEV_NX_END = 1,
	MEV_NX_PAGE = 2,        /* one page, see enum mev_nx_action */
};

enum mev_nx_action {            /* what recovery did with one page */
	MEV_NX_ZAPPED = 0,
	MEV_NX_SKIPPED_DIRTY = 1,       /* its slot logs dirty pages */
	MEV_NX_RACED = 2,
};

enum mev_lock_mode {            /* how mmu_lock was held */
	MEV_LOCK_WRITE = 0,
	MEV_LOCK_READ = 1,
};

enum mev_unmap_decision {       /* kvm_unmap_gfn_range() (patched) */
	MEV_UNMAP_ZAPPED = 0,
	MEV_UNMAP_SKIPPED = 1,  /* a pure permission upgrade */
};


/* The level of a shadow page: kvm_mmu_page_role.level, bits 0-3. */
static inline int mev_role_level(uint64_t role)
{
	return (int)(role & 0xf);
}

/* The address space of a shadow page: kvm_mmu_page_role.smm, bits
 * 24-31 on 6.1 and 6.12 (kvm_mmu_role_as_id(): SMM is address space 1). */
static inline int mev_role_as_id(uint64_t role)
{
	return ((role >> 24) & 0xff) ? 1 : 0;
}

static inline uint64_t mev_gpa_to_gfn(uint64_t gpa)
{
	return gpa >> MEV_PAGE_SHIFT;
}

/* The kernel's constants (ISAs, exit reasons, notifier events, error
 * code bits): model/kernel.h. */

/*
 * Which members an event of each kind carries, and the table column each
 * comes from: its list in model/event_fields.h, from which the table
 * source and the replay stream are made (a new member is listed there).
 */
struct model_event {
	uint64_t seq;
	int64_t ts;                     /* ns from the capture time base */
	int32_t cpu, tid;
	int32_t vm;                     /* the DB's vm column; 0: none */
	enum model_event_kind kind;
	union {
		struct {
			int as_id, level;
			uint64_t gfn, old_spte, new_spte;
		} spte;
		/* error_code as traced: for MEV_FAULT the exit's raw
		 * value (mev_fault_pferr() reads it), for MEV_FAST_FAULT
		 * the PFERR value KVM built (model/fault.h). */
		struct {
			int64_t vcpu;
			uint64_t gpa, error_code;
		} fault;                /* also MEV_FAST_FAULT (+ old/new) */
		struct {
			int phase;      /* enum mev_phase */
			uint64_t hva_start, hva_end;
			int has_event;  /* patched kernel: the rest is valid */
			int64_t event, flags;
			int perm_upgrade;       /* the range only loosens */
		} notifier;
		struct {
			uint64_t gfn, role;
		} sp;
		struct {
			int64_t vcpu, reason;
		} vcpu;
		struct {
			int entry;      /* 1 entry, 0 exit */
			enum model_syscall call;
			uint64_t a0, a1, a2;
		} sys;
		struct {
			int as_id, slot, event, perm_upgrade, flush;
			int decision;   /* enum mev_unmap_decision */
			uint64_t gfn_start, gfn_end;
		} unmap;
		struct {
			int ranged;
			uint64_t gfn_start, pages;      /* pages 0: all */
		} flush;
		struct {
			int phase;      /* enum mev_nx_phase */
			int lock_mode;  /* enum mev_lock_mode */
			int64_t pages, to_zap, ratio, zapped, skipped_dirty;
			int64_t raced;
			uint64_t gfn;
			int level;
			int action;     /* enum mev_nx_action */
		} nx;
		struct {
			int64_t vcpu, wait_ns;
			uint64_t gfn, error_code;
			int lock_mode;  /* enum mev_lock_mode */
		} lock;
		struct {
			int phase;      /* enum mev_phase */
			uint64_t lock_addr;
		} contention;
		struct {
			uint64_t gfn;
			int level;      /* the fault's goal level */
			/* (pfn - gfn) mod 512: not 0, the host maps the
			 * page 4K (a THP's pages sit at their offset) */
			int pfn_off;
		} req;
		struct {
			int as_id, slot, change;
			uint64_t base_gfn, npages, hva, old_flags, new_flags;
		} memslot;
		/* One sample of the paced latency probe: ns its access
		 * took, measured by the guest; traced by the vCPU's thread
		 * after the KVM_RUN that held it. */
		struct {
			int64_t probe, ns;
		} lat;
	} u;
	/* MEV_FAST_FAULT only. */
	uint64_t fast_old, fast_new;
};

/*
 * Why ev cannot come from a kernel (a level, address space or gfn out of
 * the ranges the model indexes by), or NULL when it is plausible.  Every
 * event a source hands the model passes this first (replay/source.c).
 */
const char *model_event_implausible(const struct model_event *ev);

#endif
