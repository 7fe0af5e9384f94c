/*
 * model_dump: print the model's SPTE format tables and its EPT-violation
 * decoding as JSON on stdout, for test_kernel_masks.py to check against
 * the kernel trees.
 *
 * Output: {"formats": {"npt": {FIELD: "0x...", ...}, "ept": {...}},
 * "ept_qual_pferr": {"0": "0x...", ..., "11": "0x..."},
 * "ept_qual_samples": {"0x184": "0x...", ...}}, where each format lists
 * every field of struct spte_format (spte.h), ept_qual_pferr[b] is
 * mev_fault_pferr(MEV_ISA_VMX, 1 << b) and ept_qual_samples gives the
 * same for exit qualifications seen on real EPT hosts.  Values are
 * hex strings: JSON numbers lose bits above 2^53.  Takes no arguments;
 * exits 0.
 */
#include "model/fault.h"
#include "model/spte.h"

#include <stddef.h>
#include <stdio.h>

#define FIELD(name) { #name, offsetof(struct spte_format, name) }

static const struct {
	const char *name;
	size_t off;
} fields[] = {
	FIELD(mmu_present),
	FIELD(hw_present),
	FIELD(readable),
	FIELD(writable),
	FIELD(user),
	FIELD(exec),
	FIELD(nx),
	FIELD(large),
	FIELD(accessed),
	FIELD(dirty),
	FIELD(ad_mask),
	FIELD(ad_disabled),
	FIELD(acc_track),
	FIELD(memtype),
	FIELD(host_writable),
	FIELD(mmu_writable),
	FIELD(pfn_mask),
	FIELD(nonpresent),
	FIELD(ve_suppress),
	FIELD(removed),
};

static void dump_format(const struct spte_format *f, int last)
{
	size_t i, n = sizeof(fields) / sizeof(fields[0]);
	uint64_t v;

	printf("    \"%s\": {\n", f->name);
	for (i = 0; i < n; i++) {
		v = *(const uint64_t *)((const char *)f + fields[i].off);
		printf("      \"%s\": \"0x%llx\"%s\n", fields[i].name,
		       (unsigned long long)v, i + 1 < n ? "," : "");
	}
	printf("    }%s\n", last ? "" : ",");
}

/* Fetch, write and read of an unmapped page; write to a readable one. */
static const uint64_t samples[] = { 0x184, 0x582, 0x181, 0x18b };

int main(void)
{
	size_t n = sizeof(samples) / sizeof(samples[0]);
	unsigned b;

	printf("{\n  \"formats\": {\n");
	dump_format(spte_format_get(SPTE_FORMAT_NPT), 0);
	dump_format(spte_format_get(SPTE_FORMAT_EPT), 1);
	printf("  },\n  \"ept_qual_pferr\": {\n");
	for (b = 0; b < 12; b++)
		printf("    \"%u\": \"0x%llx\"%s\n", b, (unsigned long long)
		       mev_fault_pferr(MEV_ISA_VMX, 1ULL << b),
		       b + 1 < 12 ? "," : "");
	printf("  },\n  \"ept_qual_samples\": {\n");
	for (b = 0; b < n; b++)
		printf("    \"0x%llx\": \"0x%llx\"%s\n",
		       (unsigned long long)samples[b], (unsigned long long)
		       mev_fault_pferr(MEV_ISA_VMX, samples[b]),
		       b + 1 < n ? "," : "");
	printf("  }\n}\n");
	return 0;
}
