/*
 * synth: the per-ISA encoding of the model's events.
 *
 * The model decides what happens (which access faults, which leaf it
 * hits, which leaf is installed, zapped or write-protected); this file
 * alone says how the kernel traces it on each ISA.  Both ISAs get the
 * same guest, the same decisions and the same events: only the values
 * below differ, so a capture of each is a consistency check of the
 * analyzer's decoding of the two, nothing about Intel or AMD hardware.
 *
 * svm (the default; AMD NPT, what the lab records):
 *   - the NPF exit: kvm_x86_exit isa 2, exit_reason 0x400 (SVM_EXIT_NPF),
 *     info1 = EXITINFO1 (the error code), info2 = EXITINFO2 (the GPA);
 *     an interrupt exit: 0x060 (SVM_EXIT_INTR), intr_info 0;
 *   - kvm_x86_page_fault's error_code: EXITINFO1 as npf_interception()
 *     passes it on, x86 PFERR bits: PRESENT (the entry was present),
 *     WRITE, USER (every NPT walk is a user access), FETCH, GUEST_FINAL
 *     (bit 32: the guest's final translation, not its page tables);
 *   - SPTEs in the x86 PTE format: P 0, W 1, U 2, A 5, D 6, large 7,
 *     host-writable 9, MMU-writable 10, MMU-present 11, NX 63; a table
 *     P|W|U|A|MMU-present.
 *
 * vmx (Intel EPT, SYNTHETIC: no Intel capture exists in the lab):
 *   - the EPT-violation exit: isa 1, exit_reason 48 (EPT_VIOLATION),
 *     info1 = the exit qualification, info2 = the IDT-vectoring info (0:
 *     no event was being delivered); an interrupt exit: 1
 *     (EXTERNAL_INTERRUPT), intr_info valid (bit 31) | external (type
 *     0) | vector 0xec (the host's local timer);
 *   - kvm_x86_page_fault's error_code: the exit qualification, which
 *     handle_ept_violation() traces before it builds its PFERR value
 *     (Intel SDM, EPT-violation exit qualification): bit 0 a data read,
 *     bit 1 a data write, bit 2 an instruction fetch (one of the three:
 *     the model makes no read-modify-write access); bits 3-5 the R, W, X
 *     of the entry that was hit (0 when it was not present); bit 7 the
 *     guest linear address is valid and bit 8 the access was to the
 *     translated address (the guest's data, not its page tables);
 *   - fast_page_fault's error_code: the PFERR value handle_ept_violation()
 *     built of the qualification: USER for a read, WRITE, FETCH, PRESENT
 *     for any of bits 3-5, GUEST_FINAL for bit 8 (so a write to a
 *     present leaf is WRITE|PRESENT, without the USER bit SVM has);
 *   - SPTEs in the EPT format as KVM 6.1 makes them with EPT A/D bits on
 *     (kvm_intel.eptad=Y) and without exec-only support: R 0, W 1, X 2,
 *     memory type 3-5 and IPAT 6 (a leaf of RAM in a VM without
 *     non-coherent DMA: write-back, 6, with IPAT set, as
 *     vmx_get_mt_mask() gives it; a table has none), large 7, A 8, D 9,
 *     MMU-present 11, host-writable 57, MMU-writable 58.  There is no
 *     NX bit: a leaf is executable with X, an NX huge page is a 2M leaf
 *     without X.  A table is R|W|X|A|MMU-present.
 *   Dirty logging write-protects leaves and fixes them on the fast path,
 *   as KVM does on VMX without PML: the manifest says
 *   kvm_intel.enable_pml=N.  (With PML, KVM clears D bits instead and
 *   a write takes no fault: another guest, which this is not.)
 * The frozen value (REMOVED_SPTE, 0x5a0) and a zapped entry (0) are the
 * same in both formats on 6.1.
 */
#include "synth.h"

#include <string.h>

/* ---------------------------------------------------------------------
 * svm: AMD NPT.
 */
#define NPT_P           (1ULL << 0)
#define NPT_W           (1ULL << 1)
#define NPT_U           (1ULL << 2)
#define NPT_A           (1ULL << 5)
#define NPT_D           (1ULL << 6)
#define NPT_LARGE       (1ULL << 7)
#define NPT_HOST_W      (1ULL << 9)
#define NPT_MMU_W       (1ULL << 10)
#define NPT_MMU_PRESENT (1ULL << 11)
#define NPT_NX          (1ULL << 63)

#define PFERR_PRESENT   (1ULL << 0)
#define PFERR_WRITE     (1ULL << 1)
#define PFERR_USER      (1ULL << 2)
#define PFERR_FETCH     (1ULL << 4)
#define PFERR_GUEST_FINAL (1ULL << 32)
#define PFERR_GUEST_PAGE  (1ULL << 33)

#define SVM_EXIT_INTR   0x060
#define SVM_EXIT_NPF    0x400
#define KVM_ISA_VMX     1
#define KVM_ISA_SVM     2

/* A non-leaf entry as the TDP MMU links it (make_nonleaf_spte()). */
static uint64_t npt_table(uint64_t pfn)
{
	return (pfn << 12) | NPT_P | NPT_W | NPT_U | NPT_A | NPT_MMU_PRESENT;
}

static uint64_t npt_leaf(uint64_t pfn, unsigned leaf)
{
	uint64_t s = (pfn << 12) | NPT_P | NPT_U | NPT_A | NPT_MMU_PRESENT;

	if (leaf & LEAF_W)
		s |= NPT_W;
	if (leaf & LEAF_D)
		s |= NPT_D;
	if (leaf & LEAF_MMU_W)
		s |= NPT_HOST_W | NPT_MMU_W;
	if (leaf & LEAF_LARGE)
		s |= NPT_LARGE;
	if (leaf & LEAF_NX)
		s |= NPT_NX;
	return s;
}

static uint64_t svm_fault_code(enum synth_access a, uint64_t hit)
{
	uint64_t err = PFERR_GUEST_FINAL | PFERR_USER;

	if (a == SA_WRITE)
		err |= PFERR_WRITE;
	else if (a == SA_FETCH)
		err |= PFERR_FETCH;
	if (hit & NPT_MMU_PRESENT)
		err |= PFERR_PRESENT;
	return err;
}

static void svm_fault_exit_info(uint64_t code, uint64_t gpa,
				uint64_t *info1, uint64_t *info2)
{
	*info1 = code;
	*info2 = gpa;
}

/* npf_interception() passes EXITINFO1 on as it is. */
static uint64_t svm_fault_pferr(uint64_t code)
{
	return code;
}

static const char *const svm_params[] = {
	"kvm_amd.npt", "Y",
	NULL,
};

/* ---------------------------------------------------------------------
 * vmx: Intel EPT.
 */
#define EPT_R           (1ULL << 0)
#define EPT_W           (1ULL << 1)
#define EPT_X           (1ULL << 2)
#define EPT_MT_WB       (6ULL << 3)
#define EPT_IPAT        (1ULL << 6)
#define EPT_LARGE       (1ULL << 7)
#define EPT_A           (1ULL << 8)
#define EPT_D           (1ULL << 9)
#define EPT_MMU_PRESENT (1ULL << 11)
#define EPT_HOST_W      (1ULL << 57)
#define EPT_MMU_W       (1ULL << 58)
#define EPT_RWX         (EPT_R | EPT_W | EPT_X)

/* Exit qualification of an EPT violation (Intel SDM). */
#define QUAL_READ       (1ULL << 0)
#define QUAL_WRITE      (1ULL << 1)
#define QUAL_FETCH      (1ULL << 2)
#define QUAL_RWX_SHIFT  3
#define QUAL_RWX        (7ULL << QUAL_RWX_SHIFT)
#define QUAL_GVA_VALID  (1ULL << 7)
#define QUAL_GVA_FINAL  (1ULL << 8)

#define VMX_EXIT_EXTERNAL_INTERRUPT 1
#define VMX_EXIT_EPT_VIOLATION      48
#define VMX_INTR_INFO_VALID         (1u << 31)
#define HOST_TIMER_VECTOR           0xec

static uint64_t ept_table(uint64_t pfn)
{
	return (pfn << 12) | EPT_RWX | EPT_A | EPT_MMU_PRESENT;
}

static uint64_t ept_leaf(uint64_t pfn, unsigned leaf)
{
	uint64_t s = (pfn << 12) | EPT_R | EPT_MT_WB | EPT_IPAT | EPT_A |
		EPT_MMU_PRESENT;

	if (leaf & LEAF_W)
		s |= EPT_W;
	if (leaf & LEAF_D)
		s |= EPT_D;
	if (leaf & LEAF_MMU_W)
		s |= EPT_HOST_W | EPT_MMU_W;
	if (leaf & LEAF_LARGE)
		s |= EPT_LARGE;
	if (!(leaf & LEAF_NX))
		s |= EPT_X;
	return s;
}

static uint64_t vmx_fault_code(enum synth_access a, uint64_t hit)
{
	static const uint64_t acc[] = {
		[SA_READ] = QUAL_READ,
		[SA_WRITE] = QUAL_WRITE,
		[SA_FETCH] = QUAL_FETCH,
	};
	uint64_t q = acc[a] | QUAL_GVA_VALID | QUAL_GVA_FINAL;

	if (hit & EPT_MMU_PRESENT)
		q |= (hit & EPT_RWX) << QUAL_RWX_SHIFT;
	return q;
}

static void vmx_fault_exit_info(uint64_t code, uint64_t gpa,
				uint64_t *info1, uint64_t *info2)
{
	(void)gpa;      /* in the VMCS's GUEST_PHYSICAL_ADDRESS, not traced */
	*info1 = code;
	*info2 = 0;
}

/* The PFERR value handle_ept_violation() builds of the qualification. */
static uint64_t vmx_fault_pferr(uint64_t q)
{
	uint64_t err = 0;

	if (q & QUAL_READ)
		err |= PFERR_USER;
	if (q & QUAL_WRITE)
		err |= PFERR_WRITE;
	if (q & QUAL_FETCH)
		err |= PFERR_FETCH;
	if (q & QUAL_RWX)
		err |= PFERR_PRESENT;
	err |= (q & QUAL_GVA_FINAL) ? PFERR_GUEST_FINAL : PFERR_GUEST_PAGE;
	return err;
}

static const char *const vmx_params[] = {
	"kvm_intel.enable_pml", "N",
	"kvm_intel.ept", "Y",
	"kvm_intel.eptad", "Y",
	NULL,
};

/* ---------------------------------------------------------------------
 * The table.
 */
static const struct synth_isa isas[] = {
	{
		.name = "svm",
		.isa = KVM_ISA_SVM,
		.exit_npf = SVM_EXIT_NPF,
		.exit_intr = SVM_EXIT_INTR,
		.intr_info = 0,
		.cpu_vendor = "AuthenticAMD",
		.params = svm_params,
		.table_spte = npt_table,
		.leaf_spte = npt_leaf,
		.fault_code = svm_fault_code,
		.fault_exit_info = svm_fault_exit_info,
		.fault_pferr = svm_fault_pferr,
	},
	{
		.name = "vmx",
		.isa = KVM_ISA_VMX,
		.exit_npf = VMX_EXIT_EPT_VIOLATION,
		.exit_intr = VMX_EXIT_EXTERNAL_INTERRUPT,
		.intr_info = VMX_INTR_INFO_VALID | HOST_TIMER_VECTOR,
		.cpu_vendor = "GenuineIntel",
		.params = vmx_params,
		.table_spte = ept_table,
		.leaf_spte = ept_leaf,
		.fault_code = vmx_fault_code,
		.fault_exit_info = vmx_fault_exit_info,
		.fault_pferr = vmx_fault_pferr,
	},
};

const struct synth_isa *synth_isa_by_name(const char *name)
{
	size_t i;

	for (i = 0; i < sizeof(isas) / sizeof(isas[0]); i++)
		if (strcmp(isas[i].name, name) == 0)
			return &isas[i];
	return NULL;
}
