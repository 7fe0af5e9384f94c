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
		.mmu_present = BIT(11),
		.writable = BIT(1),
		.user = BIT(2),
		.exec = 0,
		.nx = BIT(63),
		.large = BIT(7),
		.accessed = BIT(5),
		.dirty = BIT(6),
		.host_writable = BIT(9),
		.mmu_writable = BIT(10),
		.pfn_mask = PFN_MASK_52,
		.removed = 0x5a0,
	},
	[SPTE_FORMAT_EPT] = {
		.name = "ept",
		.mmu_present = BIT(11),
		.writable = BIT(1),
		.user = 0,
		.exec = BIT(2),
		.nx = 0,
		.large = BIT(7),
		.accessed = BIT(8),
		.dirty = BIT(9),
		.host_writable = BIT(57),
		.mmu_writable = BIT(58),
		.pfn_mask = PFN_MASK_52,
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
