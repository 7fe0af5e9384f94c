/*
 * Decoding TDP MMU SPTE values, one table per hardware format.
 *
 * KVM's own software bits (MMU-present, host/MMU-writable) and the
 * hardware permission bits differ between AMD NPT (x86 PTE format, what
 * the QEMU TCG lab produces) and Intel EPT.  Everything above the model
 * asks these functions, never a literal bit, so an EPT trace needs only
 * the right table.  Values follow arch/x86/kvm/mmu/spte.h and
 * arch/x86/include/asm/vmx.h of Linux 6.1 and 6.12, where the masks are
 * set (kvm_mmu_reset_all_pte_masks() for NPT, kvm_mmu_set_ept_masks()
 * for EPT with A/D bits and without exec-only support); the test
 * kernel_masks reads both kernels' headers and checks every field.
 *
 * What differs between the kernels: the value of an entry that maps
 * nothing (SHADOW_NONPRESENT_VALUE: 0 on 6.1, bit 63 on 6.12 for both
 * formats) and so the frozen value (REMOVED_SPTE 0x5a0, FROZEN_SPTE
 * bit 63 | 0x5a0); on EPT, 6.12 also sets bit 63 (suppress #VE) in every
 * present SPTE.  None of these is the MMU-present bit or a permission
 * bit, so every predicate below reads the same on both kernels.
 */
#ifndef MMUREPLAY_MODEL_SPTE_H
#define MMUREPLAY_MODEL_SPTE_H

#include <stdint.h>

enum spte_format_id {
	SPTE_FORMAT_NPT = 0,    /* AMD: x86 PTE bits, NX in bit 63 */
	SPTE_FORMAT_EPT = 1,    /* Intel: R/W/X in bits 0-2 */
};

struct spte_format {
	const char *name;
	uint64_t mmu_present;   /* KVM software "shadow present" bit */
	uint64_t hw_present;    /* shadow_present_mask: NPT P, EPT R */
	uint64_t readable;      /* the hardware reads through it (NPT P,
				 * EPT R; EPT clears it to track access) */
	uint64_t writable;
	uint64_t user;          /* shadow_user_mask (EPT: the R bit) */
	uint64_t exec;          /* set means executable ... */
	uint64_t nx;            /* ... or set means not executable */
	uint64_t large;         /* leaf above 4K */
	uint64_t accessed;      /* with A/D bits enabled */
	uint64_t dirty;         /* with A/D bits enabled */
	uint64_t ad_mask;       /* SPTE_TDP_AD_MASK: A/D state of the SPTE */
	uint64_t ad_disabled;   /* ... SPTE_TDP_AD_DISABLED */
	uint64_t acc_track;     /* shadow_acc_track_mask: cleared to track */
	uint64_t memtype;       /* shadow_memtype_mask: EPT MT and IPAT */
	uint64_t host_writable;
	uint64_t mmu_writable;
	uint64_t pfn_mask;
	uint64_t nonpresent;    /* SHADOW_NONPRESENT_VALUE, 6.12 */
	/* EPT's suppress-#VE bit: 6.12 sets it in every EPT SPTE, present
	 * (shadow_present_mask) or not (it is SHADOW_NONPRESENT_VALUE). */
	uint64_t ve_suppress;
	uint64_t removed;       /* the frozen value while a SP is torn down
				 * (6.1; 6.12: nonpresent | removed) */
};

/* KVM's MMU-present bit (SPTE_MMU_PRESENT_MASK), a software bit the
 * same in every format: what a reader that knows no format tests. */
#define SPTE_MMU_PRESENT (1ULL << 11)

const struct spte_format *spte_format_get(enum spte_format_id id);
/* "npt" / "ept" (as in the capture manifest); NULL when unknown. */
const struct spte_format *spte_format_by_name(const char *name);

static inline int spte_present(const struct spte_format *f, uint64_t s)
{
	return (s & f->mmu_present) != 0;
}

/* A leaf maps memory: 4K level, or a large page bit at 2M/1G. */
static inline int spte_leaf(const struct spte_format *f, uint64_t s,
			    int level)
{
	return level == 1 || (s & f->large) != 0;
}

static inline int spte_present_leaf(const struct spte_format *f, uint64_t s,
				    int level)
{
	return spte_present(f, s) && spte_leaf(f, s, level);
}

/* A leaf zap: a present leaf at level made non-present (what every
 * figure named "leaf zaps" counts). */
static inline int spte_leaf_zapped(const struct spte_format *f, uint64_t old,
				   uint64_t new, int level)
{
	return spte_present_leaf(f, old, level) && !spte_present(f, new);
}

static inline int spte_writable(const struct spte_format *f, uint64_t s)
{
	return (s & f->writable) != 0;
}

static inline int spte_executable(const struct spte_format *f, uint64_t s)
{
	return f->nx ? (s & f->nx) == 0 : (s & f->exec) != 0;
}

/* The SPTE has hardware A/D bits (spte_ad_enabled()): NPT always, EPT
 * unless ept_ad is off or the root is nested. */
static inline int spte_ad_enabled(const struct spte_format *f, uint64_t s)
{
	return (s & f->ad_mask) != f->ad_disabled;
}

/* The hardware may read through the leaf: not cleared for access
 * tracking (EPT with A/D bits off clears R/W/X and keeps MMU-present). */
static inline int spte_readable(const struct spte_format *f, uint64_t s)
{
	return (s & f->readable) != 0;
}

/* Written since it was made writable (is_dirty_spte()): the dirty bit
 * with A/D bits, else the writable bit, which KVM clears to see the
 * next write. */
static inline int spte_dirty(const struct spte_format *f, uint64_t s)
{
	return spte_ad_enabled(f, s) ? (s & f->dirty) != 0 :
		spte_writable(f, s);
}

/* Accessed since its bit was last cleared (is_accessed_spte()): the
 * accessed bit with A/D bits, else not access-tracked. */
static inline int spte_accessed(const struct spte_format *f, uint64_t s)
{
	return spte_ad_enabled(f, s) ? (s & f->accessed) != 0 :
		(s & f->acc_track) != 0;
}

static inline uint64_t spte_pfn(const struct spte_format *f, uint64_t s)
{
	return (s & f->pfn_mask) >> 12;
}

/*
 * A leaf whose accessed bit alone was cleared: the host aged the page
 * (kvm_age_gfn(), kvm_test_age_gfn() from the MMU notifier's
 * clear_young and clear_flush_young).  old and new are both leaves at
 * their level.
 */
static inline int spte_aged(const struct spte_format *f, uint64_t old,
			    uint64_t new)
{
	return spte_accessed(f, old) && !spte_accessed(f, new) &&
		(old | f->accessed) == (new | f->accessed);
}

/*
 * The SPTE a huge page split gives entry index of the new table
 * (make_huge_page_split_spte(), Linux 6.1): the huge SPTE with the
 * sub-page's pfn; at 4K without the large bit and executable (TDP pages
 * allow exec, so an NX huge leaf is NX only by the NX huge page
 * mitigation, which no longer applies at 4K).
 */
static inline uint64_t spte_split_child(const struct spte_format *f,
					uint64_t huge, int child_level,
					unsigned index)
{
	uint64_t s = huge | ((uint64_t)index << (9 * (child_level - 1) + 12));

	if (child_level == 1)
		s = (s & ~(f->large | f->nx)) | f->exec;
	return s;
}

/* The frozen value, as 6.1 or 6.12 writes it. */
static inline int spte_removed(const struct spte_format *f, uint64_t s)
{
	return s == f->removed || s == (f->nonpresent | f->removed);
}

#endif
