/*
 * Unit tests of the SPTE format tables and the EPT-violation decoding,
 * one test per bit or field, against the kernel's own masks.
 *
 * Every value below is written out as the kernel defines it (the name,
 * the file it is in, the bit), never taken from the model's table, so a
 * wrong entry in analyze/model/spte.c or fault.c fails here.  The masks
 * are those of Linux 6.1 and 6.12 (arch/x86/kvm/mmu/spte.h,
 * arch/x86/kvm/mmu.h, arch/x86/include/asm/vmx.h,
 * arch/x86/include/asm/kvm_host.h) as kvm_mmu_reset_all_pte_masks() (NPT)
 * and kvm_mmu_set_ept_masks() with A/D bits and without exec-only
 * support (EPT) set them in arch/x86/kvm/mmu/spte.c; the kernel_masks
 * test checks the same fields against the kernel trees themselves.
 * Where 6.12 differs and the model follows 6.1 (EPT shadow_present_mask,
 * the guest-final/guest-page bits of a qualification without bit 7),
 * the tests check the model's 6.1 value and say so.
 *
 * Each test takes an SPTE with one bit set or cleared and checks the
 * model's predicates on it.  unit_spte_bits() runs them all and returns
 * its failure count, which unit_tests.c adds to its own.
 */
#include "check.h"
#include "model/fault.h"
#include "model/spte.h"

#include <stdint.h>

#define B(n) (1ULL << (n))

/* SPTE_MMU_PRESENT_MASK, mmu/spte.h: BIT_ULL(11), both formats. */
#define K_MMU_PRESENT B(11)
/* SPTE_TDP_AD_SHIFT 52, mmu/spte.h: SPTE_TDP_AD_MASK (3ULL << 52);
 * SPTE_TDP_AD_ENABLED 0, SPTE_TDP_AD_DISABLED (1ULL << 52),
 * SPTE_TDP_AD_WRPROT_ONLY (2ULL << 52) (6.1: the same with _MASK). */
#define K_AD_DISABLED (1ULL << 52)
#define K_AD_WRPROT_ONLY (2ULL << 52)
/* VMX_EPT_READABLE_MASK 0x1, VMX_EPT_WRITABLE_MASK 0x2,
 * VMX_EPT_EXECUTABLE_MASK 0x4, asm/vmx.h. */
#define K_EPT_R B(0)
#define K_EPT_W B(1)
#define K_EPT_X B(2)
/* VMX_EPT_ACCESS_BIT (1ull << 8), VMX_EPT_DIRTY_BIT (1ull << 9). */
#define K_EPT_A B(8)
#define K_EPT_D B(9)
/* PT_PRESENT_MASK, PT_WRITABLE_MASK, PT_USER_MASK, PT_ACCESSED_MASK,
 * PT_DIRTY_MASK, PT_PAGE_SIZE_MASK, PT64_NX_MASK, arch/x86/kvm/mmu.h:
 * bits 0, 1, 2, 5, 6, 7, 63. */
#define K_PT_P B(0)
#define K_PT_W B(1)
#define K_PT_U B(2)
#define K_PT_A B(5)
#define K_PT_D B(6)
#define K_PT_PS B(7)
#define K_PT_NX B(63)
/* REMOVED_SPTE 0x5a0ULL (6.1 mmu/spte.h); SHADOW_NONPRESENT_VALUE
 * BIT_ULL(63) and FROZEN_SPTE (SHADOW_NONPRESENT_VALUE | 0x5a0ULL)
 * (6.12 mmu/spte.h, CONFIG_X86_64). */
#define K_REMOVED_61 0x5a0ULL
#define K_NONPRESENT_612 B(63)
#define K_FROZEN_612 (B(63) | 0x5a0ULL)

/* PFERR_PRESENT_MASK bit 0, PFERR_WRITE_MASK bit 1, PFERR_USER_MASK
 * bit 2, PFERR_FETCH_MASK bit 4, PFERR_GUEST_FINAL_MASK bit 32,
 * PFERR_GUEST_PAGE_MASK bit 33, asm/kvm_host.h. */
#define K_PFERR_PRESENT B(0)
#define K_PFERR_WRITE B(1)
#define K_PFERR_USER B(2)
#define K_PFERR_FETCH B(4)
#define K_PFERR_GUEST_FINAL B(32)
#define K_PFERR_GUEST_PAGE B(33)

/* Every predicate of spte.h on s at 4K and 2M, packed in one word, so
 * two SPTEs can be compared on all of them at once. */
static unsigned predicates(const struct spte_format *f, uint64_t s)
{
	unsigned r = 0;

	r |= spte_present(f, s) << 0;
	r |= spte_leaf(f, s, 1) << 1;
	r |= spte_leaf(f, s, 2) << 2;
	r |= spte_present_leaf(f, s, 1) << 3;
	r |= spte_present_leaf(f, s, 2) << 4;
	r |= spte_writable(f, s) << 5;
	r |= spte_executable(f, s) << 6;
	r |= spte_ad_enabled(f, s) << 7;
	r |= spte_readable(f, s) << 8;
	r |= spte_dirty(f, s) << 9;
	r |= spte_accessed(f, s) << 10;
	r |= spte_removed(f, s) << 11;
	return r;
}

/* SPTE_MMU_PRESENT_MASK (mmu/spte.h: BIT_ULL(11)): the only bit that
 * makes an SPTE present, in both formats. */
static void test_bit_mmu_present(void)
{
	const struct spte_format *f;
	int id;

	for (id = SPTE_FORMAT_NPT; id <= SPTE_FORMAT_EPT; id++) {
		f = spte_format_get(id);
		CHECK(f->mmu_present == K_MMU_PRESENT);
		CHECK(spte_present(f, K_MMU_PRESENT));
		CHECK(!spte_present(f, 0));
		CHECK(!spte_present(f, ~K_MMU_PRESENT));
		CHECK(spte_present(f, ~0ULL));
	}
}

/* shadow_present_mask (mmu/spte.c): NPT PT_PRESENT_MASK (bit 0), EPT
 * VMX_EPT_READABLE_MASK (bit 0) without exec-only support, as on 6.1;
 * 6.12 adds VMX_EPT_SUPPRESS_VE_BIT (asm/vmx.h: bit 63) for EPT, the
 * model's ve_suppress, which changes no predicate.  The hardware bit
 * alone does not make an SPTE present to KVM. */
static void test_bit_hw_present(void)
{
	const struct spte_format *npt = spte_format_get(SPTE_FORMAT_NPT);
	const struct spte_format *ept = spte_format_get(SPTE_FORMAT_EPT);
	uint64_t leaf = K_MMU_PRESENT | K_EPT_R | K_EPT_W | K_EPT_X;

	CHECK(npt->hw_present == K_PT_P);
	CHECK(ept->hw_present == K_EPT_R);
	CHECK(ept->ve_suppress == B(63) && npt->ve_suppress == 0);
	CHECK(!spte_present(npt, K_PT_P));
	CHECK(!spte_present(ept, K_EPT_R | K_EPT_W | K_EPT_X));
	/* A 6.12 EPT leaf reads as the same 6.1 leaf. */
	CHECK(spte_present_leaf(ept, leaf | B(63), 1) &&
	      spte_writable(ept, leaf | B(63)) &&
	      spte_executable(ept, leaf | B(63)) &&
	      spte_readable(ept, leaf | B(63)) &&
	      spte_pfn(ept, leaf | B(63)) == spte_pfn(ept, leaf));
}

/* VMX_EPT_READABLE_MASK (asm/vmx.h: bit 0): readable, and the
 * shadow_user_mask of EPT. */
static void test_bit_ept_readable(void)
{
	const struct spte_format *f = spte_format_get(SPTE_FORMAT_EPT);
	uint64_t base = K_MMU_PRESENT;

	CHECK(spte_readable(f, base | K_EPT_R));
	CHECK(!spte_readable(f, base));
	CHECK(!spte_readable(f, base | K_EPT_W | K_EPT_X));
	CHECK(!spte_readable(f, ~K_EPT_R));
	CHECK(!spte_writable(f, base | K_EPT_R));
	CHECK(!spte_executable(f, base | K_EPT_R));
	CHECK(f->user == K_EPT_R);
}

/* VMX_EPT_WRITABLE_MASK (asm/vmx.h: bit 1), which KVM tests as
 * PT_WRITABLE_MASK (mmu.h: bit 1) in both formats. */
static void test_bit_writable(void)
{
	const struct spte_format *npt = spte_format_get(SPTE_FORMAT_NPT);
	const struct spte_format *ept = spte_format_get(SPTE_FORMAT_EPT);
	uint64_t base = K_MMU_PRESENT;

	CHECK(spte_writable(ept, base | K_EPT_W));
	CHECK(!spte_writable(ept, base | K_EPT_R | K_EPT_X));
	CHECK(!spte_writable(ept, ~K_EPT_W));
	CHECK(spte_writable(npt, base | K_PT_P | K_PT_W));
	CHECK(!spte_writable(npt, base | K_PT_P));
	CHECK(!spte_writable(npt, ~K_PT_W));
}

/* VMX_EPT_EXECUTABLE_MASK (asm/vmx.h: bit 2) is shadow_x_mask of EPT:
 * executable when set; EPT has no NX bit (shadow_nx_mask 0). */
static void test_bit_ept_exec(void)
{
	const struct spte_format *f = spte_format_get(SPTE_FORMAT_EPT);
	uint64_t base = K_MMU_PRESENT;

	CHECK(f->exec == K_EPT_X && f->nx == 0);
	CHECK(spte_executable(f, base | K_EPT_X));
	CHECK(!spte_executable(f, base | K_EPT_R | K_EPT_W));
	CHECK(!spte_executable(f, ~K_EPT_X));
	/* Bit 63 (NX in NPT) means nothing for EPT execution. */
	CHECK(spte_executable(f, base | K_EPT_X | B(63)));
}

/* PT64_NX_MASK (mmu.h: bit 63) is shadow_nx_mask of NPT: executable
 * when clear; shadow_x_mask is 0. */
static void test_bit_npt_nx(void)
{
	const struct spte_format *f = spte_format_get(SPTE_FORMAT_NPT);
	uint64_t base = K_MMU_PRESENT | K_PT_P;

	CHECK(f->nx == K_PT_NX && f->exec == 0);
	CHECK(spte_executable(f, base));
	CHECK(!spte_executable(f, base | K_PT_NX));
	CHECK(spte_executable(f, ~K_PT_NX));
}

/* PT_PRESENT_MASK (mmu.h: bit 0) is what the NPT hardware reads
 * through; PT_USER_MASK (bit 2) is shadow_user_mask of NPT. */
static void test_bit_npt_present_user(void)
{
	const struct spte_format *f = spte_format_get(SPTE_FORMAT_NPT);
	uint64_t base = K_MMU_PRESENT;

	CHECK(spte_readable(f, base | K_PT_P));
	CHECK(!spte_readable(f, base | K_PT_W | K_PT_U));
	CHECK(!spte_readable(f, ~K_PT_P));
	CHECK(f->user == K_PT_U);
	CHECK(!spte_writable(f, base | K_PT_U));
}

/* PT_PAGE_SIZE_MASK (mmu.h: bit 7): a leaf above 4K, in both formats
 * (is_large_pte()); at 4K every SPTE is a leaf. */
static void test_bit_large(void)
{
	const struct spte_format *f;
	int id;

	for (id = SPTE_FORMAT_NPT; id <= SPTE_FORMAT_EPT; id++) {
		f = spte_format_get(id);
		CHECK(spte_leaf(f, K_PT_PS, 2) && spte_leaf(f, K_PT_PS, 3));
		CHECK(!spte_leaf(f, ~K_PT_PS, 2) && !spte_leaf(f, ~K_PT_PS, 3));
		CHECK(spte_leaf(f, 0, 1));
		CHECK(spte_present_leaf(f, K_MMU_PRESENT | K_PT_PS, 2));
		CHECK(!spte_present_leaf(f, K_PT_PS, 2));
		CHECK(!spte_present_leaf(f, K_MMU_PRESENT, 2));
	}
}

/*
 * A/D bits enabled (SPTE_TDP_AD_ENABLED, bits 52-53 = 0, and
 * SPTE_TDP_AD_WRPROT_ONLY, 2ULL << 52, which spte_ad_enabled() also
 * counts as enabled): accessed is VMX_EPT_ACCESS_BIT (bit 8) / NPT
 * PT_ACCESSED_MASK (bit 5), dirty is VMX_EPT_DIRTY_BIT (bit 9) / NPT
 * PT_DIRTY_MASK (bit 6) (is_accessed_spte(), is_dirty_spte()).
 */
static void test_bits_ad_enabled(void)
{
	static const struct {
		int id;
		uint64_t a, d, rwx;
	} c[] = {
		{ SPTE_FORMAT_EPT, K_EPT_A, K_EPT_D, K_EPT_R | K_EPT_W | K_EPT_X },
		{ SPTE_FORMAT_NPT, K_PT_A, K_PT_D, K_PT_P | K_PT_W | K_PT_U },
	};
	static const uint64_t modes[] = { 0, K_AD_WRPROT_ONLY };
	const struct spte_format *f;
	uint64_t base;
	unsigned i, m;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		f = spte_format_get(c[i].id);
		CHECK(f->accessed == c[i].a && f->dirty == c[i].d);
		/* Only bits 52-53 tell: 01 disabled, 00, 10 (and 11) not. */
		CHECK(f->ad_mask == (3ULL << 52));
		CHECK(f->ad_disabled == K_AD_DISABLED);
		CHECK(!spte_ad_enabled(f, ~K_AD_WRPROT_ONLY));
		CHECK(spte_ad_enabled(f, ~K_AD_DISABLED));
		CHECK(spte_ad_enabled(f, ~(3ULL << 52)));
		for (m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
			base = K_MMU_PRESENT | modes[m];
			CHECK(spte_ad_enabled(f, base));
			CHECK(spte_accessed(f, base | c[i].a));
			CHECK(!spte_accessed(f, base | c[i].rwx | c[i].d));
			CHECK(spte_dirty(f, base | c[i].d));
			/* Writable is not dirty while A/D bits are on. */
			CHECK(!spte_dirty(f, base | c[i].rwx | c[i].a));
		}
	}
}

/*
 * A/D bits disabled (SPTE_TDP_AD_DISABLED, 1ULL << 52: EPT with ept_ad
 * off or a nested root): accessed means not access-tracked, i.e. some
 * bit of shadow_acc_track_mask (VMX_EPT_RWX_MASK, bits 0-2) set; dirty
 * means writable (PT_WRITABLE_MASK).  The A and D bits themselves
 * (8, 9) no longer count.
 */
static void test_bits_ad_disabled(void)
{
	const struct spte_format *f = spte_format_get(SPTE_FORMAT_EPT);
	uint64_t base = K_MMU_PRESENT | K_AD_DISABLED;

	CHECK(f->ad_mask == (3ULL << 52) && f->ad_disabled == K_AD_DISABLED);
	CHECK(f->acc_track == (K_EPT_R | K_EPT_W | K_EPT_X));
	CHECK(!spte_ad_enabled(f, base));
	CHECK(spte_ad_enabled(f, K_MMU_PRESENT | (3ULL << 52)));
	CHECK(spte_accessed(f, base | K_EPT_R));
	CHECK(spte_accessed(f, base | K_EPT_W));
	CHECK(spte_accessed(f, base | K_EPT_X));
	CHECK(!spte_accessed(f, base | K_EPT_A | K_EPT_D));
	CHECK(spte_dirty(f, base | K_EPT_W));
	CHECK(!spte_dirty(f, base | K_EPT_R | K_EPT_X | K_EPT_D));
	/* NPT has no access tracking mask: shadow_acc_track_mask 0. */
	CHECK(spte_format_get(SPTE_FORMAT_NPT)->acc_track == 0);
}

/*
 * An access-tracked EPT leaf (mark_spte_for_access_track()): RWX cleared,
 * R and X saved at SHADOW_ACC_TRACK_SAVED_BITS_SHIFT (54), MMU-present
 * kept.  Built from a writable WB leaf with A/D bits disabled.
 */
static void test_ept_access_tracked(void)
{
	const struct spte_format *f = spte_format_get(SPTE_FORMAT_EPT);
	uint64_t live = K_MMU_PRESENT | K_AD_DISABLED | B(57) | B(58) |
		(6ULL << 3) | K_EPT_R | K_EPT_W | K_EPT_X | 0x1234000ULL;
	uint64_t tracked = (live & ~(K_EPT_R | K_EPT_W | K_EPT_X)) |
		((K_EPT_R | K_EPT_X) << 54);

	CHECK(spte_present_leaf(f, live, 1) && spte_accessed(f, live) &&
	      spte_dirty(f, live) && spte_readable(f, live));
	CHECK(spte_present(f, tracked) && spte_present_leaf(f, tracked, 1));
	CHECK(!spte_readable(f, tracked));
	CHECK(!spte_writable(f, tracked));
	CHECK(!spte_executable(f, tracked));
	CHECK(!spte_accessed(f, tracked));
	CHECK(!spte_dirty(f, tracked));
	CHECK(spte_pfn(f, tracked) == 0x1234);
	CHECK(!spte_leaf_zapped(f, live, tracked, 1));
}

/*
 * VMX_EPT_MT_MASK (asm/vmx.h: 7ull << VMX_EPT_MT_EPTE_SHIFT 3) and
 * VMX_EPT_IPAT_BIT (1ull << 6), shadow_memtype_mask of EPT: no
 * predicate may depend on them.  NPT has no memtype mask.  (The frozen
 * values are compared whole, memtype bits included; test_removed.)
 */
static void test_bits_ept_memtype(void)
{
	const struct spte_format *f = spte_format_get(SPTE_FORMAT_EPT);
	static const uint64_t bases[] = {
		0,
		K_MMU_PRESENT,
		K_MMU_PRESENT | K_EPT_R | K_EPT_W | K_EPT_X,
		K_MMU_PRESENT | K_EPT_A | K_EPT_D | K_PT_PS | K_EPT_X,
		K_MMU_PRESENT | K_AD_DISABLED | K_EPT_W,
		K_MMU_PRESENT | K_AD_DISABLED,
		K_NONPRESENT_612,
	};
	unsigned i, b;
	uint64_t s;

	CHECK(f->memtype == ((7ULL << 3) | B(6)));
	CHECK(spte_format_get(SPTE_FORMAT_NPT)->memtype == 0);
	for (i = 0; i < sizeof(bases) / sizeof(bases[0]); i++) {
		for (b = 3; b <= 6; b++) {
			s = bases[i] & ~B(b);
			CHECK(predicates(f, s) == predicates(f, s | B(b)));
		}
		s = bases[i] & ~f->memtype;
		CHECK(predicates(f, s) == predicates(f, s | (6ULL << 3) | B(6)));
	}
}

/*
 * Host- and MMU-writable, KVM's software bits: EPT_SPTE_HOST_WRITABLE
 * BIT_ULL(57), EPT_SPTE_MMU_WRITABLE BIT_ULL(58); NPT
 * DEFAULT_SPTE_HOST_WRITABLE BIT_ULL(9), DEFAULT_SPTE_MMU_WRITABLE
 * BIT_ULL(10) (mmu/spte.h).  Neither makes an SPTE writable: an
 * MMU-writable SPTE without the hardware W bit is write-protected.
 */
static void test_bits_host_mmu_writable(void)
{
	static const struct {
		int id;
		uint64_t host, mmu, w;
	} c[] = {
		{ SPTE_FORMAT_EPT, B(57), B(58), K_EPT_W },
		{ SPTE_FORMAT_NPT, B(9), B(10), K_PT_W },
	};
	const struct spte_format *f;
	uint64_t base = K_MMU_PRESENT;
	unsigned i;

	for (i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		f = spte_format_get(c[i].id);
		CHECK(f->host_writable == c[i].host);
		CHECK(f->mmu_writable == c[i].mmu);
		CHECK(!spte_writable(f, base | c[i].host | c[i].mmu));
		CHECK(spte_writable(f, base | c[i].host | c[i].mmu | c[i].w));
		CHECK(predicates(f, base) ==
		      predicates(f, base | c[i].host | c[i].mmu));
		CHECK(predicates(f, base | c[i].w) ==
		      predicates(f, base | c[i].w | c[i].host | c[i].mmu));
	}
}

/* SPTE_BASE_ADDR_MASK (mmu/spte.h, without a dynamic physical mask):
 * bits 12-51. */
static void test_bits_pfn(void)
{
	const struct spte_format *f;
	int id;

	for (id = SPTE_FORMAT_NPT; id <= SPTE_FORMAT_EPT; id++) {
		f = spte_format_get(id);
		CHECK(f->pfn_mask == (((1ULL << 52) - 1) & ~0xfffULL));
		CHECK(spte_pfn(f, B(12)) == 1);
		CHECK(spte_pfn(f, B(51)) == B(39));
		CHECK(spte_pfn(f, 0xfffULL | B(52) | B(57) | B(58) | B(63)) ==
		      0);
	}
}

/*
 * The frozen value while a page table is torn down: REMOVED_SPTE
 * 0x5a0ULL on 6.1, FROZEN_SPTE (SHADOW_NONPRESENT_VALUE | 0x5a0ULL) =
 * BIT_ULL(63) | 0x5a0 on 6.12.  Both are frozen and neither is present;
 * nothing near them is frozen.
 */
static void test_removed(void)
{
	const struct spte_format *f;
	int id;

	for (id = SPTE_FORMAT_NPT; id <= SPTE_FORMAT_EPT; id++) {
		f = spte_format_get(id);
		CHECK(spte_removed(f, K_REMOVED_61));
		CHECK(spte_removed(f, K_FROZEN_612));
		CHECK(!spte_present(f, K_REMOVED_61));
		CHECK(!spte_present(f, K_FROZEN_612));
		CHECK(!spte_removed(f, 0));
		CHECK(!spte_removed(f, K_NONPRESENT_612));
		CHECK(!spte_removed(f, K_REMOVED_61 | K_MMU_PRESENT));
		CHECK(!spte_removed(f, K_REMOVED_61 | 1));
		CHECK(!spte_removed(f, K_REMOVED_61 | B(62)));
	}
}

/*
 * SHADOW_NONPRESENT_VALUE (6.12 mmu/spte.h: BIT_ULL(63) on x86_64; 6.1
 * writes 0): not present in either format, so a present leaf set to
 * either value is a leaf zap.
 */
static void test_nonpresent(void)
{
	const struct spte_format *f;
	uint64_t leaf;
	int id;

	for (id = SPTE_FORMAT_NPT; id <= SPTE_FORMAT_EPT; id++) {
		f = spte_format_get(id);
		leaf = K_MMU_PRESENT | K_PT_W | 0x1234000ULL |
			(id == SPTE_FORMAT_EPT ? K_EPT_R | K_EPT_X : K_PT_P);
		CHECK(f->nonpresent == K_NONPRESENT_612);
		CHECK(!spte_present(f, K_NONPRESENT_612));
		CHECK(!spte_present_leaf(f, K_NONPRESENT_612, 1));
		CHECK(spte_leaf_zapped(f, leaf, K_NONPRESENT_612, 1));
		CHECK(spte_leaf_zapped(f, leaf, 0, 1));
		CHECK(spte_leaf_zapped(f, leaf | K_PT_PS, K_NONPRESENT_612, 2));
		CHECK(!spte_leaf_zapped(f, leaf, leaf | K_NONPRESENT_612, 1));
	}
}

/*
 * handle_ept_violation() (6.1 arch/x86/kvm/vmx/vmx.c), one exit
 * qualification bit at a time (EPT_VIOLATION_*, asm/vmx.h): ACC_READ
 * bit 0 -> PFERR_USER_MASK, ACC_WRITE bit 1 -> PFERR_WRITE_MASK,
 * ACC_INSTR bit 2 -> PFERR_FETCH_MASK, EPT_VIOLATION_RWX_MASK bits 3-5
 * -> PFERR_PRESENT_MASK; bits 6-8 to no access bit.  The guest-final /
 * guest-page bits (GVA_TRANSLATED bit 8 -> PFERR_GUEST_FINAL_MASK, else
 * PFERR_GUEST_PAGE_MASK; 6.12's __vmx_handle_ept_violation() only with
 * GVA_IS_VALID, bit 7) differ between the kernels and are not decoded:
 * the model returns the access bits alone.
 */
static void test_ept_qual_bits(void)
{
	static const uint64_t want[9] = {
		K_PFERR_USER, K_PFERR_WRITE, K_PFERR_FETCH,
		K_PFERR_PRESENT, K_PFERR_PRESENT, K_PFERR_PRESENT,
		0, 0, 0,
	};
	unsigned b;

	for (b = 0; b < 9; b++)
		if (mev_fault_pferr(MEV_ISA_VMX, B(b)) != want[b]) {
			fprintf(stderr, "%s:%d: FAIL: EPT qualification bit "
				"%u: PFERR 0x%llx, want 0x%llx\n", __FILE__,
				__LINE__, b, (unsigned long long)
				mev_fault_pferr(MEV_ISA_VMX, B(b)),
				(unsigned long long)want[b]);
			failures++;
		}
	CHECK(mev_fault_pferr(MEV_ISA_VMX, 0) == 0);
	CHECK(!(mev_fault_pferr(MEV_ISA_VMX, ~0ULL) &
		(K_PFERR_GUEST_FINAL | K_PFERR_GUEST_PAGE)));
}

/*
 * Exit qualifications seen on real EPT hosts: 0x184 an instruction fetch
 * from a page not mapped (bits 2, 7, 8), 0x582 a write to one (bits 1,
 * 7, 8 and bit 10, which KVM ignores), 0x181 a read of one, 0x18b a
 * write to a page mapped readable (bits 0, 1, 3, 7, 8).  On SVM (and an
 * unknown ISA) the error code is the PFERR value already.
 */
static void test_ept_qual_samples(void)
{
	uint64_t p;

	p = mev_fault_pferr(MEV_ISA_VMX, 0x184);
	CHECK(p == K_PFERR_FETCH);
	CHECK(mev_pferr_access(p) == MEV_ACCESS_FETCH && !mev_pferr_present(p));
	p = mev_fault_pferr(MEV_ISA_VMX, 0x582);
	CHECK(p == K_PFERR_WRITE);
	CHECK(mev_pferr_access(p) == MEV_ACCESS_WRITE && !mev_pferr_present(p));
	p = mev_fault_pferr(MEV_ISA_VMX, 0x181);
	CHECK(p == K_PFERR_USER);
	CHECK(mev_pferr_access(p) == MEV_ACCESS_READ && !mev_pferr_present(p));
	p = mev_fault_pferr(MEV_ISA_VMX, 0x18b);
	CHECK(p == (K_PFERR_USER | K_PFERR_WRITE | K_PFERR_PRESENT));
	CHECK(mev_pferr_access(p) == MEV_ACCESS_WRITE && mev_pferr_present(p));
	CHECK(mev_fault_pferr(MEV_ISA_SVM, 0x100000004ULL) == 0x100000004ULL);
	CHECK(mev_fault_pferr(MEV_ISA_UNKNOWN, 0x184) == 0x184);
}

int unit_spte_bits(void);

/* Returns the number of failed checks of this file's tests. */
int unit_spte_bits(void)
{
	test_bit_mmu_present();
	test_bit_hw_present();
	test_bit_ept_readable();
	test_bit_writable();
	test_bit_ept_exec();
	test_bit_npt_nx();
	test_bit_npt_present_user();
	test_bit_large();
	test_bits_ad_enabled();
	test_bits_ad_disabled();
	test_ept_access_tracked();
	test_bits_ept_memtype();
	test_bits_host_mmu_writable();
	test_bits_pfn();
	test_removed();
	test_nonpresent();
	test_ept_qual_bits();
	test_ept_qual_samples();
	return failures;
}
