/*
 * Which VM each event belongs to, followed as ingest commits its rows in
 * seq order (docs/design.md, "VMs").
 *
 * A VM is one successful KVM_CREATE_VM: its process, the fd the ioctl
 * returned, the seq of its return.  A process may make several (one
 * after the other, as KVM's selftests do), and a pid reused later in one
 * capture makes a new one.  A thread's events belong to:
 *   - the VM of the fd its KVM ioctl named: a VM fd (KVM_CREATE_VCPU,
 *     KVM_SET_USER_MEMORY_REGION, ...) or a vCPU fd that KVM_CREATE_VCPU
 *     returned (KVM_RUN), from that ioctl on;
 *   - else its process's VM, when the process has exactly one;
 *   - a process whose thread runs a vCPU (KVM_RUN, or a vCPU's exit,
 *     entry or page fault: a vCPU may stay inside KVM_RUN for seconds)
 *     with no KVM_CREATE_VM traced before ran its VM from before the
 *     capture: one VM for the process, its fd and creation unknown,
 *     whose rows are also those its process's threads committed before
 *     (a vCPU thread cut mid-fault commits the fault's changes before
 *     its first exit or entry: seen on patched 6.12 cut at 90%, where
 *     they replaced a table by a huge leaf with no VM);
 *     so did a process whose thread clears an entry of a TDP root (a
 *     level above 1G, never a leaf): only the teardown of a whole root
 *     does (tdp_mmu_zap_root(), at the VM's destruction in its
 *     process's exit or last fd close, or after a memslot's deletion
 *     in the ioctl's thread), so a VM whose vCPUs ran no more in the
 *     capture is still one (seen on stock 6.1, three VMs under one
 *     memory cgroup cut at 70%: one VM's vCPUs had stopped, and its
 *     exit's 3,849 zaps went to another VM).  Kernel threads are no
 *     VM's process, and on 6.1 some may tear a root down: the workers
 *     of its "kvm" workqueue (kworker/...) zap invalidated roots, and
 *     a walk that holds a reference to a root (the NX recovery
 *     kthread, kswapd, kcompactd, khugepaged or ksmd's invalidation)
 *     tears it down when its put is the last (kvm_tdp_mmu_put_root());
 *     each is a process of its own, known by its name.  6.12's NX
 *     worker, of the 6.1 kthread's name, is a task of the VM's process
 *     and tears its roots down at the VM's exit (seen on stock 6.12
 *     cut at 80%).  What this cannot tell: a kernel thread of another
 *     name (6.1's workqueue rescuer, named "kvm"), which it takes for
 *     a VM's process.
 * A patched kernel names the VM itself (kernel-series patches 13-14):
 * kvm_vm_create makes the VM (its process, fd and struct kvm address)
 * without any syscall event, kvm_vm_destroy ends it, so a process with
 * one VM alive at a time needs no fd; and an event naming a struct kvm
 * (an invalidation's start and end, a recovery batch's begin and end) is
 * that VM's, as is every row of its thread between a start and its end.
 * An address no kvm_vm_create showed (a VM from before the capture) is
 * learnt from a row of that VM's own process that only the process's own
 * work makes: a munmap or exit (MMU_NOTIFY_UNMAP), an mprotect, NUMA
 * hinting or userfaultfd write-protect (MMU_NOTIFY_PROTECTION_VMA), its
 * recovery worker's batch (6.12's vhost task); never reclaim, KSM or
 * migration (MMU_NOTIFY_CLEAR, _MIGRATE, ...), which a VM process's
 * thread does to any mm of its memory cgroup or node.  A row naming an address
 * not known yet (a VM from before the capture, whose own process names
 * it later; a VM being made, before its kvm_vm_create), and every row of
 * its thread until its context ends, waits: never the thread's guess
 * (reclaim under a memory cgroup invalidates another VM's memory from a
 * VM process's thread).  vms_store() gives those rows the VM the address
 * turned out to be, where it did.
 * Every other row has no VM, counted by reason (enum vms_reason):
 * threads of a process with no VM (kernel threads: kswapd, ksmd,
 * khugepaged, 6.1's NX recovery kthread), of a process with several and
 * no fd to tell, or whose process the trace does not give (no pid
 * context).  Replay attributes kernel threads' work by the state it
 * changes; ingest never guesses.
 *
 * Memory: a record per thread, process and VM; nothing per event.
 */
#ifndef MMUREPLAY_INGEST_VMS_H
#define MMUREPLAY_INGEST_VMS_H

#include "ingest/catalog.h"
#include "ingest/writer.h"
#include "util/ptrmap.h"
#include "util/u64map.h"

#include <sqlite3.h>
#include <stdint.h>

/* Why a row has no VM, as meta 'vm_unattributed:NAME' counts it. */
#define VMS_REASON_LIST(X) \
	X(VMS_NO_THREAD, "no_thread") /* the event names no thread */ \
	X(VMS_NO_PID, "no_pid")       /* the trace gives no process */ \
	X(VMS_NO_VM, "no_vm_process") /* its process made no VM */ \
	X(VMS_SEVERAL, "several_vms") /* its process has several */ \
	X(VMS_UNKNOWN_KVM, "unknown_kvm") /* names a struct kvm never seen */

#define VMS_REASON_ENUM(e, name) e,
enum vms_reason {
	VMS_REASON_LIST(VMS_REASON_ENUM)
	VMS_REASONS
};
#undef VMS_REASON_ENUM

/* What ingest follows of one thread. */
struct vms_thread {
	int64_t pid;            /* -1: the trace does not say */
	int64_t vm;             /* named by its last KVM ioctl; 0: none */
	int64_t window_vm;      /* named by its open invalidation or
				 * recovery batch (patched); 0: none;
				 * -1: an address not known yet */
	size_t window_span;     /* that one's span in vms.spans, plus 1 */
	int64_t made_vm;        /* kvm_vm_create inside its KVM_CREATE_VM */
	int64_t last_seq;       /* its last row's (proc_early() in vms.c) */
	int in_ioctl;
	int64_t ioctl_fd;
	uint64_t ioctl_cmd;
};

struct vms_vm {
	int64_t id;             /* 1, 2, ... in creation order */
	int64_t pid;
	int64_t fd;             /* -1: made before the capture */
	int64_t created_seq, created_ts;        /* -1: before the capture */
	const char *procname;   /* its creator's, interned; may be NULL */
	uint64_t kvm;           /* its struct kvm address; 0: not known */
	int64_t destroyed_seq, destroyed_ts;    /* -1: not destroyed */
};

/* Rows of thread tid from seq lo to hi (inclusive) naming, or inside
 * a context naming, struct kvm address kvm before it was known. */
struct vms_span {
	int64_t tid, lo, hi;
	uint64_t kvm;
};

/* Rows of a span that are VM vm's: a process's rows from before the sign
 * that showed its VM from before the capture (kvm 0). */
struct vms_fill {
	struct vms_span span;
	int64_t vm;
};

struct vms {
	struct ptrmap procs;            /* pid -> struct vms_proc */
	/* pid -> its leader thread's (tid == pid) procname, interned: the
	 * name of a VM from before the capture, which a vCPU or the NX
	 * worker showed first. */
	struct u64map leader_name;
	struct u64map kvm_vm;           /* live struct kvm address -> id */
	struct vms_vm *list;
	size_t nvms, capvms;
	int64_t unattributed[VMS_REASONS];
	struct vms_span *spans;         /* in seq order of lo */
	size_t nspans, capspans;
	struct vms_fill *fills;
	size_t nfills, capfills;
	int64_t rows_pid;               /* rows whose thread had a pid */
	/* The ioctl entry and exit catalogue entries and their columns
	 * (fd, cmd; ret); -1 where the catalogue has none. */
	int entry_kind, exit_kind, col_fd, col_cmd, col_ret;
	/* Per catalogue entry: 1 when its rows are a vCPU's own (table
	 * vcpu_exit, vcpu_entry, fault). */
	unsigned char *vcpu_kind;
	/* Per catalogue entry of table spte_change: its level, old_spte
	 * and new_spte columns (-1 elsewhere). */
	signed char *lvl_col, *old_col, *new_col;
	/* Per catalogue entry: its column "kvm", or -1; and its constant
	 * phase (0 opens a context of that VM in the thread, 1 closes it,
	 * -1 neither). */
	signed char *kvm_col, *kvm_phase;
	/* Per catalogue entry: its column "event" (the notifier's enum
	 * mmu_notifier_event), or -1. */
	signed char *event_col;
	/* kvm_vm_create and kvm_vm_destroy's entries (-1: none) and the
	 * creation's pid and fd columns. */
	int create_kind, destroy_kind, col_cpid, col_cfd;
	int nkinds;
};

/* Returns 0, or -1 when out of memory. */
int vms_init(struct vms *v, const struct catalog *cat);
void vms_free(struct vms *v);
/*
 * Row r of thread th (NULL: the row names none) is about to be
 * committed: follows the KVM ioctls that make VMs and vCPUs and sets
 * r->vm, or ROW_NULL_VM and counts why.  procname is the thread's
 * (interned), kept for a VM it creates.  Returns 0, or -1 when out of
 * memory.
 */
int vms_row(struct vms *v, struct vms_thread *th, const char *procname,
	    struct ingest_row *r);
/* Stores table vm, gives the rows of vms.spans the VM each address
 * turned out to be (where one did), and stores the meta counts of the
 * rows left unattributed. */
int vms_store(const struct vms *v, sqlite3 *db);

#endif
