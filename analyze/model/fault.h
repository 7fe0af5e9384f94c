/*
 * What a TDP fault asked for: its access kind (read, write, instruction
 * fetch) and whether the entry it hit was present, decoded per exit ISA.
 *
 * The kvm_page_fault tracepoint records what the exit handed KVM, and the
 * two ISAs hand it different things:
 *   - SVM (npf_interception()): EXITINFO1 of the #NPF exit, an x86 page
 *     fault error code (PFERR bits), which KVM passes on as it is;
 *   - VMX (handle_ept_violation()): the EPT-violation exit qualification,
 *     traced before handle_ept_violation() builds the PFERR value it
 *     passes on (6.1 and 6.12 alike):
 *       qualification bit 0 (data read)          -> PFERR_USER
 *       qualification bit 1 (data write)         -> PFERR_WRITE
 *       qualification bit 2 (instruction fetch)  -> PFERR_FETCH
 *       qualification bits 3-5 (R/W/X the entry allowed), any set
 *                                                -> PFERR_PRESENT
 *     and then PFERR_GUEST_FINAL or PFERR_GUEST_PAGE from bit 8: always on
 *     6.1, only when bit 7 (a valid linear address) is set on 6.12
 *     (__vmx_handle_ept_violation()).  Nothing here reads those two, so
 *     the decoding keeps the access bits alone and needs no kernel
 *     version.
 * Every reader of a fault (ingest's decoded columns, the replay engine)
 * goes through mev_fault_pferr(), the one place that knows this.
 *
 * Which field each input gives:
 *   - kvm_page_fault's error_code (LTTng kvm_x86_page_fault, ftrace
 *     kvm:kvm_page_fault, tracefs text, trace-cmd report): the raw value
 *     above, by ISA;
 *   - fast_page_fault's error_code: fault->error_code, the PFERR value
 *     KVM already built (tracefs text prints it as flags, "F" or "W|P");
 *   - the kernel series' kvm_mmu_fault_lock_wait error_code: the same
 *     built PFERR value.
 * An EPT misconfiguration exit (MMIO) traces no kvm_page_fault: it is not
 * a TDP fault and never reaches this decoding.
 */
#ifndef MMUREPLAY_MODEL_FAULT_H
#define MMUREPLAY_MODEL_FAULT_H

#include "model/kernel.h"

#include <stdint.h>

enum mev_access {
	MEV_ACCESS_READ = 0,
	MEV_ACCESS_WRITE,
	MEV_ACCESS_FETCH,
	MEV_ACCESS_KINDS
};

/* The PFERR bits that say what the access was. */
#define MEV_PFERR_ACCESS_MASK (MEV_PFERR_PRESENT | MEV_PFERR_WRITE | \
			       MEV_PFERR_USER | MEV_PFERR_FETCH)

/*
 * Returns the PFERR value KVM's fault handler took for a kvm_page_fault
 * whose traced error_code is raw, on an exit of ISA isa: raw itself on
 * SVM; on VMX the access bits (MEV_PFERR_ACCESS_MASK) that
 * handle_ept_violation() builds from the qualification, on 6.1 and 6.12
 * alike.  An unknown ISA (MEV_ISA_UNKNOWN) is read as SVM, the only ISA
 * the lab records; callers that can tell say so (capture_info.h).
 */
uint64_t mev_fault_pferr(int isa, uint64_t raw);

/* Returns the access kind of a PFERR value: a fetch, else a write, else
 * a read (KVM reports a read with PFERR_USER on VMX, with neither bit on
 * SVM). */
static inline enum mev_access mev_pferr_access(uint64_t pferr)
{
	if (pferr & MEV_PFERR_FETCH)
		return MEV_ACCESS_FETCH;
	if (pferr & MEV_PFERR_WRITE)
		return MEV_ACCESS_WRITE;
	return MEV_ACCESS_READ;
}

/* Returns 1 when the fault hit an entry the hardware saw present (a
 * permission fault), 0 when the entry was not present. */
static inline int mev_pferr_present(uint64_t pferr)
{
	return (pferr & MEV_PFERR_PRESENT) != 0;
}

/* Returns "read", "write" or "fetch" (the fault table's access column). */
const char *mev_access_name(enum mev_access a);

/* Returns the exit ISA of a CPU vendor as a capture manifest names it
 * ("GenuineIntel": VMX, any other: SVM), or MEV_ISA_UNKNOWN for NULL. */
int mev_isa_of_vendor(const char *vendor);

/* Returns "vmx", "svm" or NULL for an unknown ISA. */
const char *mev_isa_name(int isa);

#endif
