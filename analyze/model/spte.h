/*
 * Decoding TDP MMU SPTE values, one table per hardware format.
 *
 * KVM's own software bits (MMU-present, host/MMU-writable) and the
 * hardware permission bits differ between AMD NPT (x86 PTE format, what
 * the QEMU TCG lab produces) and Intel EPT.  Everything above the model
 * asks these functions, never a literal bit, so an EPT trace needs only
 * the right table.  Values follow Linux 6.1 arch/x86/kvm/mmu/spte.h.
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
	uint64_t writable;
	uint64_t user;          /* 0: the format has none */
	uint64_t exec;          /* set means executable ... */
	uint64_t nx;            /* ... or set means not executable */
	uint64_t large;         /* leaf above 4K */
	uint64_t accessed;
	uint64_t dirty;
	uint64_t host_writable;
	uint64_t mmu_writable;
	uint64_t pfn_mask;
	uint64_t removed;       /* the frozen value while a SP is torn down */
};

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

/* Set by the CPU on a write through the leaf (0 when A/D bits are off:
 * then no write is ever seen). */
static inline int spte_dirty(const struct spte_format *f, uint64_t s)
{
	return (s & f->dirty) != 0;
}

static inline uint64_t spte_pfn(const struct spte_format *f, uint64_t s)
{
	return (s & f->pfn_mask) >> 12;
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

static inline int spte_removed(const struct spte_format *f, uint64_t s)
{
	return s == f->removed;
}

#endif
