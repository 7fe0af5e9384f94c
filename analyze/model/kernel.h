/*
 * The Linux and KVM constants mmureplay reads traces by, in one place,
 * each with where the kernel defines it (the same values on 6.1 and
 * 6.12 unless said).  Values only: what they mean to the model is said
 * where they are used (model/fault.h decodes the fault bits, replay/
 * scan.c reads the ioctls).  A kernel that changes one is a new kernel
 * to add (docs/design.md, "Adding a kernel").
 */
#ifndef MMUREPLAY_MODEL_KERNEL_H
#define MMUREPLAY_MODEL_KERNEL_H

#include <stdint.h>

/* PAGE_SHIFT (x86: 4 KiB pages). */
#define MEV_PAGE_SHIFT 12

/* enum mmu_notifier_event (include/linux/mmu_notifier.h). */
#define MEV_MMU_NOTIFY_UNMAP 0
#define MEV_MMU_NOTIFY_PROTECTION_VMA 2

/* kvm_x86_exit's isa field: KVM_ISA_VMX, KVM_ISA_SVM
 * (arch/x86/kvm/trace.h); 0: not known. */
#define MEV_ISA_UNKNOWN 0
#define MEV_ISA_VMX 1
#define MEV_ISA_SVM 2

/* Each ISA's nested page fault exit (uapi asm/svm.h SVM_EXIT_NPF, asm/
 * vmx.h EXIT_REASON_EPT_VIOLATION).  EXIT_REASON_EPT_MISCONFIG (49) is
 * MMIO and traces no kvm_page_fault: not a TDP fault. */
#define MEV_SVM_EXIT_NPF 0x400
#define MEV_VMX_EXIT_EPT_VIOLATION 48

/* x86 page fault error code bits, as KVM's fault handler takes them
 * (PFERR_*_MASK, arch/x86/include/asm/kvm_host.h). */
#define MEV_PFERR_PRESENT     (1ULL << 0)
#define MEV_PFERR_WRITE       (1ULL << 1)
#define MEV_PFERR_USER        (1ULL << 2)
#define MEV_PFERR_RSVD        (1ULL << 3)
#define MEV_PFERR_FETCH       (1ULL << 4)
#define MEV_PFERR_GUEST_FINAL (1ULL << 32)
#define MEV_PFERR_GUEST_PAGE  (1ULL << 33)

/* EPT-violation exit qualification bits (EPT_VIOLATION_*, arch/x86/
 * include/asm/vmx.h). */
#define MEV_EPT_QUAL_ACC_READ       (1ULL << 0)
#define MEV_EPT_QUAL_ACC_WRITE      (1ULL << 1)
#define MEV_EPT_QUAL_ACC_INSTR      (1ULL << 2)
#define MEV_EPT_QUAL_RWX_MASK       (7ULL << 3)
#define MEV_EPT_QUAL_GVA_IS_VALID   (1ULL << 7)
#define MEV_EPT_QUAL_GVA_TRANSLATED (1ULL << 8)

/* A memslot's flag for dirty logging (uapi linux/kvm.h). */
#define KVM_MEM_LOG_DIRTY_PAGES 0x1

/* enum kvm_mr_change (include/linux/kvm_host.h): a memslot event's
 * change. */
#define KVM_MR_CREATE 0
#define KVM_MR_DELETE 1
#define KVM_MR_MOVE 2
#define KVM_MR_FLAGS_ONLY 3
/* Not a kernel value: a memslot row from LTTng's state dump
 * (lttng_statedump_kvm_memslot, kernel-series/lttng-modules), the slot
 * as it stood when the session started or regenerated its state dump. */
#define MEMSLOT_STATE_DUMP 4

/* ioctl numbers as syscall_entry_ioctl's cmd traces them (uapi
 * linux/kvm.h, linux/userfaultfd.h; x86_64). */
#define KVM_SET_USER_MEMORY_REGION 0x4020ae46ULL
/* Linux 6.8+: the same with guest_memfd fields; the kernel's selftests
 * (6.12) and QEMU 8.2+ on such kernels set every memslot with it. */
#define KVM_SET_USER_MEMORY_REGION2 0x40a0ae49ULL
#define KVM_GET_DIRTY_LOG 0x4010ae42ULL
#define KVM_CLEAR_DIRTY_LOG 0xc018aec0ULL
/* The dirty ring's (Linux 5.11+): write-protects the pages harvested. */
#define KVM_RESET_DIRTY_RINGS 0xaec7ULL
#define UFFDIO_WRITEPROTECT 0xc018aa06ULL
/* madvise(2)'s behavior that collapses a range's 4K pages into THPs
 * in the caller's own thread (uapi asm-generic/mman-common.h, Linux 6.1). */
#define MADV_COLLAPSE_BEHAVIOR 25
/* KVM's ioctl type (_IO(KVMIO, nr)), and the ioctls that make a VM, a
 * vCPU, and run one. */
#define KVM_IOCTL_TYPE 0xae
#define KVM_CREATE_VM 0xae01ULL
#define KVM_CREATE_VCPU 0xae41ULL
#define KVM_RUN 0xae80ULL

/* Returns 1 when cmd hands the VMM dirty pages and write-protects them
 * again: the dirty bitmap's ioctls or the dirty ring's reset. */
static inline int kvm_ioctl_reads_dirty_log(uint64_t cmd)
{
	return cmd == KVM_GET_DIRTY_LOG || cmd == KVM_CLEAR_DIRTY_LOG ||
		cmd == KVM_RESET_DIRTY_RINGS;
}

/* Returns 1 when cmd sets a memslot (either version of the ioctl). */
static inline int kvm_ioctl_sets_memslot(uint64_t cmd)
{
	return cmd == KVM_SET_USER_MEMORY_REGION ||
		cmd == KVM_SET_USER_MEMORY_REGION2;
}

#endif
