/*
 * synth: what the generator's parts share (see synth.c for what the
 * generator makes and why).
 *
 *   synth.c        command line, the manifest and counts files;
 *   synth_model.c  the guest model: episodes as events, in the kernel's
 *                  order, with no hardware encoding of its own;
 *   synth_isa.c    the per-ISA encoding (struct synth_isa): exits, fault
 *                  codes and SPTE values of AMD SVM/NPT and Intel
 *                  VMX/EPT, the only place where the two differ;
 *   synth_ctf.c    the event classes and the babeltrace2 source that
 *                  hands the model's events to sink.ctf.fs.
 */
#ifndef MMUREPLAY_BENCH_SYNTH_H
#define MMUREPLAY_BENCH_SYNTH_H

#include <stdint.h>

enum synth_status {
	/* mmureplay's exit codes (README), those that apply here. */
	SYNTH_OK = 0,
	SYNTH_ERR_USAGE = 1,
	SYNTH_ERR_OUTPUT = 4,
	SYNTH_ERR_INTERNAL = 5,
};

/* ---------------------------------------------------------------------
 * Event classes: the lab trace's (patched 6.1.192, lttng-modules 2.13.9),
 * defined in synth_ctf.c.
 */
enum fkind { F_U = 0, F_S = 1 };

struct field_spec {
	const char *name;
	unsigned bits;
	enum fkind sign;
	int hex;
};

#define MAX_FIELDS 9

struct class_spec {
	uint64_t id;
	const char *name;
	struct field_spec f[MAX_FIELDS];
};

enum cls {
	C_SPTE_CHANGED, C_LOCK_WAIT, C_NX_PAGE, C_NX_END, C_NX_BEGIN,
	C_UNMAP_GFN, C_SPLIT_HUGE, C_SPTE_REQ, C_SET_SPTE, C_FAST_PF,
	C_PREP_ZAP, C_GET_PAGE, C_PAGE_FAULT, C_EXIT, C_ENTRY, C_MEMSLOT,
	C_TLB_FLUSH, C_INV_END, C_INV_START, C_UNMAP_HVA, C_SYS_EXIT_IOCTL,
	C_SYS_ENTRY_IOCTL, C_SYS_EXIT_MPROTECT, C_SYS_ENTRY_MPROTECT,
	C_SYS_EXIT_MADVISE, C_SYS_ENTRY_MADVISE, C_N
};

extern const struct class_spec synth_classes[C_N];

/* ---------------------------------------------------------------------
 * The per-ISA encoding (synth_isa.c).  The model says what happened in
 * its own terms (an access kind, a leaf's attributes, a page frame);
 * an ISA says what the kernel would have traced for it.
 */
enum synth_access { SA_READ = 0, SA_WRITE, SA_FETCH };

/* A leaf's attributes; each ISA makes its SPTE of them.  Every leaf is
 * present, readable, accessed and (unless LEAF_NX) executable. */
#define LEAF_W          (1u << 0)       /* writable */
#define LEAF_D          (1u << 1)       /* dirty */
#define LEAF_MMU_W      (1u << 2)       /* host- and MMU-writable: the
					 * fast path may restore W */
#define LEAF_LARGE      (1u << 3)       /* a 2M leaf */
#define LEAF_NX         (1u << 4)       /* not executable (NX huge page) */

struct synth_isa {
	const char *name;               /* --isa: "svm", "vmx" */
	uint32_t isa;                   /* kvm_x86_exit's isa field */
	uint32_t exit_npf;              /* the TDP fault's exit reason */
	uint32_t exit_intr;             /* an external interrupt's */
	uint32_t intr_info;             /* ... and its intr_info */
	const char *cpu_vendor;         /* the manifest's cpu.vendor */
	/* The vendor module's parameters in the manifest: name, value,
	 * ..., NULL (after kvm.*, sorted). */
	const char *const *params;

	/* A non-leaf entry linking the table at pfn. */
	uint64_t (*table_spte)(uint64_t pfn);
	/* A leaf mapping pfn with attributes leaf (LEAF_*). */
	uint64_t (*leaf_spte)(uint64_t pfn, unsigned leaf);
	/* kvm_page_fault's error_code for access a that hit the entry hit
	 * (an SPTE of this ISA; 0: none present). */
	uint64_t (*fault_code)(enum synth_access a, uint64_t hit);
	/* The fault exit's info1 and info2 for that code at gpa. */
	void (*fault_exit_info)(uint64_t code, uint64_t gpa, uint64_t *info1,
				uint64_t *info2);
	/* The PFERR value KVM's handler built of that code (what
	 * fast_page_fault traces). */
	uint64_t (*fault_pferr)(uint64_t code);
};

/* The ISA named name ("svm", "vmx"), or NULL. */
const struct synth_isa *synth_isa_by_name(const char *name);

/* REMOVED_SPTE, the frozen value of an entry being torn down: the same in
 * both formats on 6.1 (it has no MMU-present bit). */
#define REMOVED_SPTE 0x5a0ULL

/* ---------------------------------------------------------------------
 * The guest model (synth_model.c).
 */
struct thread {
	int64_t tid;
	unsigned cpu;
	char procname[24];  /* at most 15 characters used, as the kernel */
};

/* One event as the model made it; the source turns it into a message. */
struct rec {
	uint64_t ts;
	uint64_t v[MAX_FIELDS];
	uint16_t cls;
	uint16_t thread;
};

/* NX huge pages (the manifest's kvm parameters say the same). */
#define NX_RATIO 4
#define NX_PERIOD_MS 50

struct model;

enum model_status {
	MODEL_OK = 0,
	MODEL_NOMEM,
};

/* The public face of the model: what the writer and main() read. */
struct model_view {
	const struct synth_isa *isa;
	unsigned vcpus, ncpus;
	const struct thread *threads;
	uint64_t target, emitted;
	uint64_t npages;
	unsigned rounds;
	const uint64_t *counts;         /* [C_N] */
};

/* A model of about target events (at least the last episode's); *mp
 * is set even on failure, for model_free(). */
enum model_status model_new(struct model **mp, uint64_t target,
			    uint64_t seed, unsigned vcpus,
			    const struct synth_isa *isa);
void model_free(struct model *m);
void model_view(const struct model *m, struct model_view *v);
/*
 * The next made event in *r (valid until the next call): 1, or 0 once
 * the model is done, or -1 when an allocation failed.
 */
int model_next(struct model *m, const struct rec **r);

/* ---------------------------------------------------------------------
 * The writer (synth_ctf.c): the model's events as CTF in trace_dir.
 */
enum synth_status synth_ctf_write(struct model *m, uint64_t seed,
				  const char *trace_dir);

#endif
