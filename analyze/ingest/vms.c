/*
 * Which VM each event belongs to (see vms.h).
 *
 * Invariants: a VM's id is its index in list plus one; a process's fds
 * map to VMs of that process only; a thread's vm, when set, is a VM of
 * its process; kvm_vm maps an address to a VM that has it and is not
 * destroyed; a process's nlive counts its VMs not destroyed.
 */
#include "ingest/vms.h"

#include "db/db.h"
#include "model/kernel.h"
#include "model/spte.h"
#include "model/tdp.h"
#include "util/alloc.h"
#include "util/assert.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VMS_REASON_NAME(e, name) name,
static const char *const reason_names[VMS_REASONS] = {
	VMS_REASON_LIST(VMS_REASON_NAME)
};
#undef VMS_REASON_NAME

/* Runs of early rows a process keeps (proc_early()). */
#define VMS_EARLY_MAX 4096

/* A process that made or ran a VM: the KVM fds the trace showed it. */
struct vms_proc {
	int64_t nvms;           /* VMs it made (or ran from before) */
	int64_t only_vm;        /* the one when nvms is 1 */
	int64_t nlive;          /* of those, not destroyed */
	int64_t live_vm;        /* the one when nlive is 1 */
	struct vms_fd {
		int64_t fd, vm;
	} *fds;
	size_t nfds, capfds;
	/* Its threads' rows left without a VM while it had none: a VM
	 * from before the capture, shown later, takes them (proc_early()). */
	struct vms_early {
		int64_t tid, lo, hi;
	} *early;
	size_t nearly, capearly;
};

int vms_init(struct vms *v, const struct catalog *cat)
{
	int i;
	const struct catalog_entry *in = catalog_find(cat,
						      "syscall_entry_ioctl");
	const struct catalog_entry *out = catalog_find(cat,
						       "syscall_exit_ioctl");

	const struct catalog_entry *mk = catalog_find(cat, "kvm_vm_create");
	const struct catalog_entry *rm = catalog_find(cat, "kvm_vm_destroy");
	int col, phase;

	memset(v, 0, sizeof(*v));
	ptrmap_init(&v->procs);
	u64map_init(&v->kvm_vm);
	u64map_init(&v->leader_name);
	v->create_kind = mk ? (int)(mk - cat->entries) : -1;
	v->destroy_kind = rm ? (int)(rm - cat->entries) : -1;
	v->col_cpid = catalog_entry_col(mk, "pid");
	v->col_cfd = catalog_entry_col(mk, "fd");
	v->entry_kind = in ? (int)(in - cat->entries) : -1;
	v->exit_kind = out ? (int)(out - cat->entries) : -1;
	v->col_fd = catalog_entry_col(in, "a0");
	v->col_cmd = catalog_entry_col(in, "a1");
	v->col_ret = catalog_entry_col(out, "a0");
	if (v->col_fd < 0 || v->col_cmd < 0)
		v->entry_kind = -1;
	if (v->col_ret < 0)
		v->exit_kind = -1;
	v->nkinds = cat->nentries;
	v->vcpu_kind = calloc((size_t)cat->nentries + 1, 1);
	v->kvm_col = malloc((size_t)cat->nentries + 1);
	v->kvm_phase = malloc((size_t)cat->nentries + 1);
	v->event_col = malloc((size_t)cat->nentries + 1);
	v->lvl_col = malloc((size_t)cat->nentries + 1);
	v->old_col = malloc((size_t)cat->nentries + 1);
	v->new_col = malloc((size_t)cat->nentries + 1);
	if (!v->vcpu_kind || !v->kvm_col || !v->kvm_phase ||
	    !v->event_col || !v->lvl_col || !v->old_col || !v->new_col)
		return -1;
	for (i = 0; i < cat->nentries; i++) {
		const struct catalog_entry *e = &cat->entries[i];

		v->vcpu_kind[i] = strcmp(e->table, "vcpu_exit") == 0 ||
			strcmp(e->table, "vcpu_entry") == 0 ||
			strcmp(e->table, "fault") == 0;
		/* Columns are few (CATALOG_MAX_COLS): an index fits. */
		col = catalog_entry_col(e, "kvm");
		v->kvm_col[i] = (signed char)col;
		v->event_col[i] = (signed char)catalog_entry_col(e, "event");
		v->lvl_col[i] = v->old_col[i] = v->new_col[i] = -1;
		if (strcmp(e->table, "spte_change") == 0) {
			v->lvl_col[i] = (signed char)catalog_entry_col(e,
								      "level");
			v->old_col[i] = (signed char)catalog_entry_col(
				e, "old_spte");
			v->new_col[i] = (signed char)catalog_entry_col(
				e, "new_spte");
		}
		phase = catalog_entry_col(e, "phase");
		v->kvm_phase[i] = (signed char)(col >= 0 && phase >= 0 &&
			e->cols[phase].nfields == 0 &&
			e->cols[phase].const_val <= 1 ?
			e->cols[phase].const_val : -1);
	}
	return 0;
}

static void proc_free_fds(void *arg, void *val)
{
	(void)arg;
	free(((struct vms_proc *)val)->fds);
	free(((struct vms_proc *)val)->early);
}

void vms_free(struct vms *v)
{
	ptrmap_each(&v->procs, proc_free_fds, NULL);
	ptrmap_free_values(&v->procs);
	u64map_free(&v->kvm_vm);
	u64map_free(&v->leader_name);
	free(v->list);
	free(v->spans);
	free(v->fills);
	free(v->vcpu_kind);
	free(v->kvm_col);
	free(v->kvm_phase);
	free(v->event_col);
	free(v->lvl_col);
	free(v->old_col);
	free(v->new_col);
}

static struct vms_proc *proc_get(struct vms *v, int64_t pid, int create)
{
	struct vms_proc *p = ptrmap_get(&v->procs, (uint64_t)pid);

	if (p || !create)
		return p;
	p = calloc(1, sizeof(*p));
	if (p && ptrmap_put(&v->procs, (uint64_t)pid, p) < 0) {
		free(p);
		p = NULL;
	}
	return p;
}

/* The VM fd names in process p, or 0. */
static int64_t proc_fd_vm(const struct vms_proc *p, int64_t fd)
{
	size_t i;

	for (i = 0; p && i < p->nfds; i++)
		if (p->fds[i].fd == fd)
			return p->fds[i].vm;
	return 0;
}

/* fd names vm in process p from now on (an fd number is reused once
 * closed; the close is not traced, the new use replaces the old). */
static int proc_fd_set(struct vms_proc *p, int64_t fd, int64_t vm)
{
	size_t i;

	for (i = 0; i < p->nfds; i++)
		if (p->fds[i].fd == fd) {
			p->fds[i].vm = vm;
			return 0;
		}
	if (ALLOC_GROW(p->fds, p->nfds + 1, p->capfds))
		return -1;
	p->fds[p->nfds++] = (struct vms_fd){ fd, vm };
	return 0;
}

/* A new VM of process pid, made at row r (NULL: before the capture). */
static int64_t vm_add(struct vms *v, struct vms_proc *p, int64_t pid,
		      int64_t fd, const struct ingest_row *r,
		      const char *procname)
{
	struct vms_vm *vm;

	if (ALLOC_GROW(v->list, v->nvms + 1, v->capvms))
		return -1;
	vm = &v->list[v->nvms++];
	vm->id = (int64_t)v->nvms;
	vm->pid = pid;
	vm->fd = fd;
	vm->created_seq = r ? r->seq : -1;
	vm->created_ts = r ? r->ts : -1;
	vm->procname = procname;
	vm->kvm = 0;
	vm->destroyed_seq = vm->destroyed_ts = -1;
	p->nvms++;
	p->only_vm = vm->id;
	p->nlive++;
	p->live_vm = vm->id;
	if (fd >= 0 && proc_fd_set(p, fd, vm->id) < 0)
		return -1;
	return vm->id;
}

static int is_kvm_ioctl(uint64_t cmd)
{
	return ((cmd >> 8) & 0xff) == KVM_IOCTL_TYPE;
}

/* An ioctl's entry: the fd it names says the thread's VM, a vCPU run
 * with none known makes the process's VM from before the capture. */
static int on_call(struct vms *v, struct vms_thread *th,
		    const char *procname, const struct ingest_row *r)
{
	struct vms_proc *p;
	int64_t fd = r->v[v->col_fd].i, vm;
	uint64_t cmd = (uint64_t)r->v[v->col_cmd].i;

	th->in_ioctl = 1;
	th->ioctl_fd = fd;
	th->ioctl_cmd = cmd;
	th->made_vm = 0;
	if (th->pid < 0 || !is_kvm_ioctl(cmd) || cmd == KVM_CREATE_VM)
		return 0;
	p = proc_get(v, th->pid, cmd == KVM_RUN);
	if (!p)
		return cmd == KVM_RUN ? -1 : 0;
	vm = proc_fd_vm(p, fd);
	if (!vm && cmd == KVM_RUN && !p->nvms) {
		vm = vm_add(v, p, th->pid, -1, NULL, procname);
		if (vm < 0 || proc_fd_set(p, fd, vm) < 0)
			return -1;
	}
	if (vm)
		th->vm = vm;
	return 0;
}

/* An ioctl's return: KVM_CREATE_VM's fd is a new VM, KVM_CREATE_VCPU's
 * a vCPU of the VM whose fd it named. */
static int on_return(struct vms *v, struct vms_thread *th,
		   const char *procname, const struct ingest_row *r)
{
	struct vms_proc *p;
	int64_t ret = r->v[v->col_ret].i, vm;

	if (!th->in_ioctl)
		return 0;
	th->in_ioctl = 0;
	if (th->pid < 0 || ret < 0 || (r->nullmask & (1u << v->col_ret)))
		return 0;
	if (th->ioctl_cmd == KVM_CREATE_VM) {
		p = proc_get(v, th->pid, 1);
		/* The patched kernel's kvm_vm_create made it already. */
		if (th->made_vm)
			vm = p && proc_fd_set(p, ret, th->made_vm) == 0 ?
				th->made_vm : -1;
		else
			vm = p ? vm_add(v, p, th->pid, ret, r, procname) : -1;
		if (vm < 0)
			return -1;
		th->vm = vm;
		th->made_vm = 0;
	} else if (th->ioctl_cmd == KVM_CREATE_VCPU) {
		p = proc_get(v, th->pid, 0);
		vm = proc_fd_vm(p, th->ioctl_fd);
		if (vm && proc_fd_set(p, ret, vm) < 0)
			return -1;
	}
	return 0;
}

/*
 * Whether r clears an entry of a TDP root: a present entry above the
 * largest leaf level made non-present, which only a whole root's
 * teardown does (vms.h).  Returns 1 or 0.
 */
static int root_teardown_row(const struct vms *v, const struct ingest_row *r)
{
	int k = (int)r->kind, lvl, o, n;

	if (k >= v->nkinds || v->lvl_col[k] < 0 || v->old_col[k] < 0 ||
	    v->new_col[k] < 0)
		return 0;
	lvl = v->lvl_col[k];
	o = v->old_col[k];
	n = v->new_col[k];
	if (r->nullmask & (1u << lvl | 1u << o | 1u << n))
		return 0;
	return r->v[lvl].i > TDP_MAX_LEAF_LEVEL &&
		((uint64_t)r->v[o].i & SPTE_MMU_PRESENT) &&
		!((uint64_t)r->v[n].i & SPTE_MMU_PRESENT);
}

/* Kernel threads that may tear a root down (vms.h), each a process of
 * its own (6.12's NX worker, of the same name as 6.1's kthread, is a
 * task of the VM's process). */
static int kernel_worker(const char *procname, int64_t pid, int64_t tid)
{
	static const char *const names[] = {
		"kworker/", "kvm-nx-lpage", "kswapd", "kcompactd",
		"khugepaged", "ksmd",
	};
	size_t i;

	if (!procname || pid != tid)
		return 0;
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (strncmp(procname, names[i], strlen(names[i])) == 0)
			return 1;
	return 0;
}

/*
 * Row r of thread th has no VM: its process has made none.  Should the
 * process turn out to run a VM from before the capture (a vCPU's exit
 * traced later), the row is that VM's too: a vCPU thread cut mid-fault
 * commits the fault's changes before its first exit or entry, and every
 * later row of the process is the VM's.  A run of such rows of one
 * thread is one record; a row of it between with no VM for another
 * reason (an address not known) ends the run.  Returns 0, or -1 when
 * out of memory.
 */
static int proc_early(struct vms *v, struct vms_thread *th,
		      const char *procname, const struct ingest_row *r)
{
	struct vms_proc *p;
	struct vms_early *e;
	size_t i;

	/* A kernel thread runs no VM: its rows need no record. */
	if (kernel_worker(procname, th->pid, r->tid))
		return 0;
	p = proc_get(v, th->pid, 1);
	if (!p)
		return -1;
	MR_ASSERT_DBG(!p->nvms);
	for (i = p->nearly; i-- > 0;)
		if (p->early[i].tid == r->tid) {
			if (p->early[i].hi != th->last_seq)
				break;
			p->early[i].hi = r->seq;
			return 0;
		}
	/* Memory per process, not per event: past the bound the rows stay
	 * without a VM, as a row of a process with none does. */
	if (p->nearly == VMS_EARLY_MAX)
		return 0;
	if (ALLOC_GROW(p->early, p->nearly + 1, p->capearly))
		return -1;
	e = &p->early[p->nearly++];
	e->tid = r->tid;
	e->lo = e->hi = r->seq;
	return 0;
}

/* Process p's first VM came from before the capture: its early rows are
 * that VM's (proc_early()).  Returns 0, or -1 when out of memory. */
static int proc_fill(struct vms *v, struct vms_proc *p)
{
	size_t i;

	MR_ASSERT_DBG(p->nvms == 1);
	for (i = 0; i < p->nearly; i++) {
		if (ALLOC_GROW(v->fills, v->nfills + 1, v->capfills))
			return -1;
		v->fills[v->nfills].span.tid = p->early[i].tid;
		v->fills[v->nfills].span.lo = p->early[i].lo;
		v->fills[v->nfills].span.hi = p->early[i].hi;
		v->fills[v->nfills].span.kvm = 0;
		v->fills[v->nfills++].vm = p->only_vm;
	}
	free(p->early);
	p->early = NULL;
	p->nearly = p->capearly = 0;
	return 0;
}

/*
 * The VM of row r by its thread: the context its thread is in, the fd
 * its last KVM ioctl named, its process's one VM (or one VM alive).
 * Returns VMS_REASONS with r->vm set, or why it has none.
 */
static enum vms_reason row_thread_vm(struct vms *v, struct vms_thread *th,
				     const char *procname,
				     struct ingest_row *r, int *nomem)
{
	struct vms_proc *p;

	if (th->pid >= 0) {
		v->rows_pid++;
		if ((int)r->kind == v->entry_kind &&
		    !(r->nullmask & (1u << v->col_fd | 1u << v->col_cmd)) &&
		    on_call(v, th, procname, r) < 0)
			*nomem = 1;
		else if ((int)r->kind == v->exit_kind &&
			 on_return(v, th, procname, r) < 0)
			*nomem = 1;
	}
	if (th->window_vm < 0)
		return VMS_UNKNOWN_KVM;
	if (th->window_vm) {
		r->vm = th->window_vm;
		return VMS_REASONS;
	}
	if (th->vm) {
		r->vm = th->vm;
		return VMS_REASONS;
	}
	if (th->pid < 0)
		return VMS_NO_PID;
	if (th->pid == r->tid && procname &&
	    u64map_get(&v->leader_name, (uint64_t)th->pid) !=
	    (uint64_t)(uintptr_t)procname &&
	    u64map_put(&v->leader_name, (uint64_t)th->pid,
		       (uint64_t)(uintptr_t)procname) < 0) {
		*nomem = 1;
		return VMS_NO_VM;
	}
	p = proc_get(v, th->pid, 0);
	/* A vCPU's own event, or a root's teardown, in a process with no
	 * VM known: it ran one from before the capture. */
	if ((!p || !p->nvms) && (int)r->kind < v->nkinds &&
	    (v->vcpu_kind[r->kind] ||
	     (root_teardown_row(v, r) &&
	      !kernel_worker(procname, th->pid, r->tid)))) {
		struct vms_proc *np = proc_get(v, th->pid, 1);

		if (!np || vm_add(v, np, th->pid, -1, NULL, procname) < 0 ||
		    proc_fill(v, np) < 0) {
			*nomem = 1;
			return VMS_NO_VM;
		}
		p = np;
	}
	if (p && p->nvms == 1) {
		r->vm = p->only_vm;
		return VMS_REASONS;
	}
	/* Several VMs, one after the other (the patched kernel says when
	 * each is destroyed): the one alive. */
	if (p && p->nlive == 1) {
		r->vm = p->live_vm;
		return VMS_REASONS;
	}
	return p && p->nvms ? VMS_SEVERAL : VMS_NO_VM;
}

/* kvm_vm_create: a new VM of the creating process, known by kvm. */
static int on_create(struct vms *v, struct vms_thread *th,
		     const char *procname, struct ingest_row *r, uint64_t kvm)
{
	struct vms_proc *p;
	int64_t pid = th ? th->pid : -1, fd = -1, vm;

	if (pid < 0 && v->col_cpid >= 0 &&
	    !(r->nullmask & (1u << v->col_cpid)))
		pid = r->v[v->col_cpid].i;
	if (v->col_cfd >= 0 && !(r->nullmask & (1u << v->col_cfd)))
		fd = r->v[v->col_cfd].i;
	if (pid < 0)
		return 0;
	p = proc_get(v, pid, 1);
	vm = p ? vm_add(v, p, pid, fd, r, procname) : -1;
	if (vm < 0 || u64map_put(&v->kvm_vm, kvm, (uint64_t)vm) < 0)
		return -1;
	v->list[vm - 1].kvm = kvm;
	if (th) {
		th->vm = vm;
		if (th->in_ioctl && th->ioctl_cmd == KVM_CREATE_VM)
			th->made_vm = vm;
	}
	r->vm = vm;
	return 1;
}

/* kvm_vm_destroy of vm: its address is free for the next VM. */
static void on_destroy(struct vms *v, int64_t vm, const struct ingest_row *r)
{
	struct vms_vm *d = &v->list[vm - 1];
	struct vms_proc *p = proc_get(v, d->pid, 0);
	size_t i;

	MR_ASSERT_DBG(d->destroyed_seq < 0 && p);
	d->destroyed_seq = r->seq;
	d->destroyed_ts = r->ts;
	(void)u64map_put(&v->kvm_vm, d->kvm, 0);        /* replaces */
	p->nlive--;
	p->live_vm = 0;
	for (i = 0; p->nlive == 1 && i < v->nvms; i++)
		if (v->list[i].pid == d->pid && v->list[i].destroyed_seq < 0)
			p->live_vm = v->list[i].id;
}

/*
 * Whether row r, naming a struct kvm, can only be the work of that VM's
 * own process: a notifier event only a process's own syscalls or task
 * work make on its mm (munmap, exit, mprotect, NUMA hinting), or an
 * event that is no notifier's (a recovery batch).
 */
static int own_work(const struct vms *v, const struct ingest_row *r)
{
	int col = v->event_col[r->kind];
	int64_t ev;

	if (col < 0)
		return 1;
	if (r->nullmask & (1u << col))
		return 0;
	ev = r->v[col].i;
	return ev == MEV_MMU_NOTIFY_UNMAP || ev == MEV_MMU_NOTIFY_PROTECTION_VMA;
}

/*
 * Row r names struct kvm address kvm, the VM named (0: not known yet);
 * phase is its event's (0 opens a context, 1 closes one, -1 neither).
 * A context opened naming an address not known is a span until its
 * thread's next opening or closing row; any other row naming one is a
 * span of its own.  Returns 0, or -1 when out of memory.
 */
static int span_note(struct vms *v, struct vms_thread *th,
		     const struct ingest_row *r, uint64_t kvm, int64_t named,
		     int phase)
{
	struct vms_span *s;

	if (th && th->window_span && phase >= 0) {
		s = &v->spans[th->window_span - 1];
		th->window_span = 0;
		if (phase == 1 && s->kvm == kvm) {
			s->hi = r->seq;
			return 0;
		}
		s->hi = r->seq - 1;
	}
	if (named)
		return 0;
	if (ALLOC_GROW(v->spans, v->nspans + 1, v->capspans))
		return -1;
	s = &v->spans[v->nspans++];
	s->tid = r->tid;
	s->kvm = kvm;
	s->lo = r->seq;
	s->hi = r->seq;
	if (th && phase == 0) {
		s->hi = INT64_MAX;      /* until the context's end */
		th->window_span = v->nspans;
	}
	return 0;
}

/* vms_row() but for its thread's last_seq. */
static int row_vm(struct vms *v, struct vms_thread *th, const char *procname,
		  struct ingest_row *r)
{
	enum vms_reason why = VMS_NO_THREAD;
	int k = (int)r->kind, col = k < v->nkinds ? v->kvm_col[k] : -1;
	int nomem = 0, rc;
	uint64_t kvm = 0;
	int64_t named = 0;

	if (col >= 0 && !(r->nullmask & (1u << col)))
		kvm = (uint64_t)r->v[col].i;
	if (kvm && k == v->create_kind) {
		rc = on_create(v, th, procname, r, kvm);
		if (rc < 0)
			return -1;
		if (rc > 0) {
			v->rows_pid += th && th->pid >= 0;
			return 0;
		}
	}
	if (kvm)
		named = (int64_t)u64map_get(&v->kvm_vm, kvm);
	if (th)
		why = row_thread_vm(v, th, procname, r, &nomem);
	if (nomem)
		return -1;
	if (named) {
		r->vm = named;
		why = VMS_REASONS;
	} else if (kvm && why == VMS_REASONS && !th->window_vm &&
		   own_work(v, r) && !v->list[r->vm - 1].kvm &&
		   v->list[r->vm - 1].destroyed_seq < 0) {
		/* A VM from before the capture, named by its own process. */
		if (u64map_put(&v->kvm_vm, kvm, (uint64_t)r->vm) < 0)
			return -1;
		v->list[r->vm - 1].kvm = kvm;
		named = r->vm;
	} else if (kvm) {
		/* Never the thread's guess: the event says whose it is. */
		why = VMS_UNKNOWN_KVM;
	}
	if (kvm && span_note(v, th, r, kvm, named, v->kvm_phase[k]) < 0)
		return -1;
	if (th && kvm && v->kvm_phase[k] >= 0)
		th->window_vm = v->kvm_phase[k] != 0 ? 0 : named ? named : -1;
	if (named && k == v->destroy_kind)
		on_destroy(v, named, r);
	if (why == VMS_REASONS)
		return 0;
	/* Only a row with no VM for its process's lack of one (not one
	 * naming an address not known) may turn out its VM's. */
	if (why == VMS_NO_VM && proc_early(v, th, procname, r) < 0)
		return -1;
	r->nullmask |= ROW_NULL_VM;
	v->unattributed[why]++;
	return 0;
}

int vms_row(struct vms *v, struct vms_thread *th, const char *procname,
	    struct ingest_row *r)
{
	int rc = row_vm(v, th, procname, r);

	if (th)
		th->last_seq = r->seq;
	return rc;
}

/* Column i is x where the trace told it, else NULL. */
static void bind_known(sqlite3_stmt *st, int i, int64_t x, int known)
{
	if (known)
		sqlite3_bind_int64(st, i, x);
	else
		sqlite3_bind_null(st, i);
}

/*
 * The VM address kvm turned out to be at seq: a VM from before the
 * capture learnt to have it, alive then; else the VM created next at
 * that address, if no VM at that address was destroyed between the two.
 * The second is kvm_vm_create's order: the event is traced in
 * KVM_CREATE_VM once the VM's fd is known, after kvm_create_vm()
 * registered the MMU notifier on the process's mm, so an invalidation of
 * that mm in between (ksmd scanning it) names the VM being made.
 * Returns its id, or 0: none.
 */
static int64_t span_vm(const struct vms *v, uint64_t kvm, int64_t seq)
{
	const struct vms_vm *next = NULL;
	size_t i;

	for (i = 0; i < v->nvms; i++) {
		const struct vms_vm *m = &v->list[i];

		if (m->kvm != kvm)
			continue;
		if (m->created_seq < 0 &&
		    (m->destroyed_seq < 0 || m->destroyed_seq > seq))
			return m->id;
		if (m->created_seq > seq &&
		    (!next || m->created_seq < next->created_seq))
			next = m;
	}
	for (i = 0; next && i < v->nvms; i++)
		if (v->list[i].kvm == kvm && v->list[i].destroyed_seq > seq &&
		    v->list[i].destroyed_seq < next->created_seq)
			return 0;
	return next ? next->id : 0;
}

/* Gives the rows of span s the VM vm.  Returns the rows given it, or -1
 * on an SQL error. */
static int64_t span_store(sqlite3 *db, sqlite3_stmt *up,
			  const struct vms_span *s, int64_t vm)
{
	int64_t n;

	sqlite3_bind_int64(up, 1, vm);
	sqlite3_bind_int64(up, 2, s->lo);
	sqlite3_bind_int64(up, 3, s->hi);
	sqlite3_bind_int64(up, 4, s->tid);
	n = sqlite3_step(up) == SQLITE_DONE ? sqlite3_changes(db) : -1;
	sqlite3_reset(up);
	return n;
}

/*
 * Gives the rows of v->spans the VM their address turned out to be, and
 * those of v->fills their VM, in every table with a vm column but the
 * replay's.  Sets given[0] to the rows of spans given one (counted under
 * unknown_kvm when written), given[1] to those of fills (under
 * no_vm_process).  Returns 0, or -1 on an SQL error.
 */
static int spans_store(const struct vms *v, sqlite3 *db, int64_t given[2])
{
	sqlite3_stmt *tables = NULL, *up = NULL;
	int64_t n, vm;
	size_t i;
	int r, rc = -1;

	given[0] = given[1] = 0;
	if (db_vm_tables(db, &tables) != SQLITE_OK)
		goto end;
	while ((r = sqlite3_step(tables)) == SQLITE_ROW) {
		char *sql = sqlite3_mprintf(
			"UPDATE \"%w\" SET vm = ?1 WHERE seq BETWEEN ?2 AND ?3 "
			"AND vm IS NULL AND (?2 = ?3 OR tid = ?4)",
			sqlite3_column_text(tables, 0));

		if (!sql || sqlite3_prepare_v2(db, sql, -1, &up, NULL) !=
		    SQLITE_OK) {
			sqlite3_free(sql);
			goto end;
		}
		sqlite3_free(sql);
		for (i = 0; i < v->nspans; i++) {
			if (!(vm = span_vm(v, v->spans[i].kvm, v->spans[i].lo)))
				continue;
			if ((n = span_store(db, up, &v->spans[i], vm)) < 0)
				goto end;
			given[0] += n;
		}
		for (i = 0; i < v->nfills; i++) {
			n = span_store(db, up, &v->fills[i].span,
				       v->fills[i].vm);
			if (n < 0)
				goto end;
			given[1] += n;
		}
		sqlite3_finalize(up);
		up = NULL;
	}
	if (r == SQLITE_DONE)
		rc = 0;
end:
	sqlite3_finalize(up);
	sqlite3_finalize(tables);
	return rc;
}

int vms_store(const struct vms *v, sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	char key[64];
	size_t i;
	int rc = -1;
	int64_t given[2] = { 0, 0 };

	if (sqlite3_prepare_v2(db, "INSERT INTO vm (id, pid, fd, created_seq, "
			       "created_ts, procname, kvm, destroyed_seq, "
			       "destroyed_ts) VALUES (?,?,?,?,?,?,?,?,?)",
			       -1, &st, NULL) != SQLITE_OK)
		goto end;
	for (i = 0; i < v->nvms; i++) {
		const struct vms_vm *vm = &v->list[i];
		const char *name = vm->procname;

		MR_ASSERT_DBG(vm->id == (int64_t)i + 1);
		/* A VM from before the capture: its process's name, not
		 * that of the thread that showed it (a vCPU thread, the
		 * NX worker). */
		if (vm->fd < 0 && u64map_get(&v->leader_name,
					     (uint64_t)vm->pid))
			name = (const char *)(uintptr_t)u64map_get(
				&v->leader_name, (uint64_t)vm->pid);
		sqlite3_bind_int64(st, 1, vm->id);
		sqlite3_bind_int64(st, 2, vm->pid);
		bind_known(st, 3, vm->fd, vm->fd >= 0);
		bind_known(st, 4, vm->created_seq, vm->created_seq >= 0);
		bind_known(st, 5, vm->created_ts, vm->created_seq >= 0);
		if (name)
			sqlite3_bind_text(st, 6, name, -1, SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 6);
		bind_known(st, 7, (int64_t)vm->kvm, vm->kvm != 0);
		bind_known(st, 8, vm->destroyed_seq, vm->destroyed_seq >= 0);
		bind_known(st, 9, vm->destroyed_ts, vm->destroyed_seq >= 0);
		if (sqlite3_step(st) != SQLITE_DONE)
			goto end;
		sqlite3_reset(st);
	}
	if ((v->nspans || v->nfills) && spans_store(v, db, given) < 0)
		goto end;
	MR_ASSERT(given[0] <= v->unattributed[VMS_UNKNOWN_KVM]);
	MR_ASSERT(given[1] <= v->unattributed[VMS_NO_VM]);
	for (i = 0; i < VMS_REASONS; i++) {
		snprintf(key, sizeof(key), "vm_unattributed:%s",
			 reason_names[i]);
		if (db_meta_set_int(db, key, v->unattributed[i] -
				    (i == VMS_UNKNOWN_KVM ? given[0] :
				     i == VMS_NO_VM ? given[1] : 0)) !=
		    DB_OK)
			goto end;
	}
	/* Whether VMs could be told apart at all: without the pid context
	 * every row is one host-wide state. */
	if (db_meta_set_text(db, "vm_attribution",
			     v->rows_pid ? "pid" : "none") != DB_OK)
		goto end;
	rc = 0;
end:
	sqlite3_finalize(st);
	return rc;
}
