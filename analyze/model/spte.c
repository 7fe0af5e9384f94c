/*
 * The SPTE format tables (see spte.h).
 */
#include "model/spte.h"

#include <string.h>

#define BIT(n) (1ULL << (n))
#define PFN_MASK_52 (((1ULL << 52) - 1) & ~0xfffULL)

static const struct spte_format formats[] = {
	[SPTE_FORMAT_NPT] = {
		.name = "npt",
		.mmu_present = SPTE_MMU_PRESENT,
		.hw_present = BIT(0),
		.readable = BIT(0),
		.writable = BIT(1),
		.user = BIT(2),
		.exec = 0,
		.nx = BIT(63),
		.large = BIT(7),
		.accessed = BIT(5),
		.dirty = BIT(6),
		.ad_mask = 3ULL << 52,
		.ad_disabled = 1ULL << 52,
		.acc_track = 0,
		.memtype = 0,
		.host_writable = BIT(9),
		.mmu_writable = BIT(10),
		.pfn_mask = PFN_MASK_52,
		.nonpresent = BIT(63),
		.ve_suppress = 0,
		.removed = 0x5a0,
	},
	[SPTE_FORMAT_EPT] = {
		.name = "ept",
		.mmu_present = SPTE_MMU_PRESENT,
		.hw_present = BIT(0),
		.readable = BIT(0),
		.writable = BIT(1),
		.user = BIT(0),
		.exec = BIT(2),
		.nx = 0,
		.large = BIT(7),
		.accessed = BIT(8),
		.dirty = BIT(9),
		.ad_mask = 3ULL << 52,
		.ad_disabled = 1ULL << 52,
		.acc_track = BIT(0) | BIT(1) | BIT(2),
		.memtype = (7ULL << 3) | BIT(6),
		.host_writable = BIT(57),
		.mmu_writable = BIT(58),
		.pfn_mask = PFN_MASK_52,
		.nonpresent = BIT(63),
		.ve_suppress = BIT(63),
		.removed = 0x5a0,
	},
};

const struct spte_format *spte_format_get(enum spte_format_id id)
{
	return &formats[id];
}

const struct spte_format *spte_format_by_name(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(formats) / sizeof(formats[0]); i++)
		if (strcmp(formats[i].name, name) == 0)
			return &formats[i];
	return NULL;
}
