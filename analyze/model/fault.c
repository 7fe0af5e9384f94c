/*
 * The fault access decoding table (see fault.h).
 */
#include "model/fault.h"

#include "util/assert.h"

#include <stddef.h>
#include <string.h>

/*
 * handle_ept_violation() (Linux 6.1 arch/x86/kvm/vmx/vmx.c; 6.12 in
 * __vmx_handle_ept_violation(), vmx/common.h): each row a test of the
 * exit qualification and the access bit it sets.  The guest-final /
 * guest-page bits differ between the two kernels and are left out
 * (fault.h).
 */
static const struct {
	uint64_t qual_mask;
	uint64_t pferr;
} ept_to_pferr[] = {
	{ MEV_EPT_QUAL_ACC_READ, MEV_PFERR_USER },
	{ MEV_EPT_QUAL_ACC_WRITE, MEV_PFERR_WRITE },
	{ MEV_EPT_QUAL_ACC_INSTR, MEV_PFERR_FETCH },
	{ MEV_EPT_QUAL_RWX_MASK, MEV_PFERR_PRESENT },
};

uint64_t mev_fault_pferr(int isa, uint64_t raw)
{
	uint64_t pferr = 0;
	size_t i;

	if (isa != MEV_ISA_VMX)
		return raw;
	for (i = 0; i < sizeof(ept_to_pferr) / sizeof(ept_to_pferr[0]); i++)
		if (raw & ept_to_pferr[i].qual_mask)
			pferr |= ept_to_pferr[i].pferr;
	MR_ASSERT_DBG(!(pferr & ~MEV_PFERR_ACCESS_MASK));
	return pferr;
}

const char *mev_access_name(enum mev_access a)
{
	static const char *const names[MEV_ACCESS_KINDS] = {
		[MEV_ACCESS_READ] = "read",
		[MEV_ACCESS_WRITE] = "write",
		[MEV_ACCESS_FETCH] = "fetch",
	};

	return (unsigned)a < MEV_ACCESS_KINDS ? names[a] : NULL;
}

int mev_isa_of_vendor(const char *vendor)
{
	if (!vendor)
		return MEV_ISA_UNKNOWN;
	return strcmp(vendor, "GenuineIntel") == 0 ? MEV_ISA_VMX : MEV_ISA_SVM;
}

const char *mev_isa_name(int isa)
{
	return isa == MEV_ISA_VMX ? "vmx" : isa == MEV_ISA_SVM ? "svm" : NULL;
}
