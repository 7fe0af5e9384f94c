/*
 * Which VM each event belongs to (see vms.h).
 *
 * Invariants: a VM's id is its index in list plus one; a process's fds
 * map to VMs of that process only; a thread's vm, when set, is a VM of
 * its process.
 */
#include "ingest/vms.h"

#include "db/db.h"
#include "model/kernel.h"
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

/* A process that made or ran a VM: the KVM fds the trace showed it. */
struct vms_proc {
	int64_t nvms;           /* VMs it made (or ran from before) */
	int64_t only_vm;        /* the one when nvms is 1 */
	struct vms_fd {
		int64_t fd, vm;
	} *fds;
	size_t nfds, capfds;
};

int vms_init(struct vms *v, const struct catalog *cat)
{
	int i;
	const struct catalog_entry *in = catalog_find(cat,
						      "syscall_entry_ioctl");
	const struct catalog_entry *out = catalog_find(cat,
						       "syscall_exit_ioctl");

	memset(v, 0, sizeof(*v));
	ptrmap_init(&v->procs);
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
	if (!v->vcpu_kind)
		return -1;
	for (i = 0; i < cat->nentries; i++)
		v->vcpu_kind[i] = strcmp(cat->entries[i].table, "vcpu_exit") == 0 ||
			strcmp(cat->entries[i].table, "vcpu_entry") == 0 ||
			strcmp(cat->entries[i].table, "fault") == 0;
	return 0;
}

static void proc_free_fds(void *arg, void *val)
{
	(void)arg;
	free(((struct vms_proc *)val)->fds);
}

void vms_free(struct vms *v)
{
	ptrmap_each(&v->procs, proc_free_fds, NULL);
	ptrmap_free_values(&v->procs);
	free(v->list);
	free(v->vcpu_kind);
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
	p->nvms++;
	p->only_vm = vm->id;
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
		vm = p ? vm_add(v, p, th->pid, ret, r, procname) : -1;
		if (vm < 0)
			return -1;
		th->vm = vm;
	} else if (th->ioctl_cmd == KVM_CREATE_VCPU) {
		p = proc_get(v, th->pid, 0);
		vm = proc_fd_vm(p, th->ioctl_fd);
		if (vm && proc_fd_set(p, ret, vm) < 0)
			return -1;
	}
	return 0;
}

int vms_row(struct vms *v, struct vms_thread *th, const char *procname,
	    struct ingest_row *r)
{
	struct vms_proc *p;
	enum vms_reason why;

	if (!th) {
		why = VMS_NO_THREAD;
		goto none;
	}
	if (th->pid >= 0) {
		v->rows_pid++;
		if ((int)r->kind == v->entry_kind &&
		    !(r->nullmask & (1u << v->col_fd | 1u << v->col_cmd)) &&
		    on_call(v, th, procname, r) < 0)
			return -1;
		else if ((int)r->kind == v->exit_kind &&
			 on_return(v, th, procname, r) < 0)
			return -1;
	}
	if (th->vm) {
		r->vm = th->vm;
		return 0;
	}
	if (th->pid < 0) {
		why = VMS_NO_PID;
		goto none;
	}
	p = proc_get(v, th->pid, 0);
	/* A vCPU's own event in a process with no VM known: it ran one
	 * from before the capture. */
	if ((!p || !p->nvms) && (int)r->kind < v->nkinds &&
	    v->vcpu_kind[r->kind]) {
		struct vms_proc *np = proc_get(v, th->pid, 1);

		if (!np || vm_add(v, np, th->pid, -1, NULL, procname) < 0)
			return -1;
		p = np;
	}
	if (p && p->nvms == 1) {
		r->vm = p->only_vm;
		return 0;
	}
	why = p && p->nvms ? VMS_SEVERAL : VMS_NO_VM;
none:
	r->nullmask |= ROW_NULL_VM;
	v->unattributed[why]++;
	return 0;
}

int vms_store(const struct vms *v, sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	char key[64];
	size_t i;
	int rc = -1;

	if (sqlite3_prepare_v2(db, "INSERT INTO vm (id, pid, fd, created_seq, "
			       "created_ts, procname) VALUES (?,?,?,?,?,?)",
			       -1, &st, NULL) != SQLITE_OK)
		goto end;
	for (i = 0; i < v->nvms; i++) {
		const struct vms_vm *vm = &v->list[i];

		MR_ASSERT_DBG(vm->id == (int64_t)i + 1);
		sqlite3_bind_int64(st, 1, vm->id);
		sqlite3_bind_int64(st, 2, vm->pid);
		if (vm->fd >= 0)
			sqlite3_bind_int64(st, 3, vm->fd);
		else
			sqlite3_bind_null(st, 3);
		if (vm->created_seq >= 0) {
			sqlite3_bind_int64(st, 4, vm->created_seq);
			sqlite3_bind_int64(st, 5, vm->created_ts);
		} else {
			sqlite3_bind_null(st, 4);
			sqlite3_bind_null(st, 5);
		}
		if (vm->procname)
			sqlite3_bind_text(st, 6, vm->procname, -1,
					  SQLITE_STATIC);
		else
			sqlite3_bind_null(st, 6);
		if (sqlite3_step(st) != SQLITE_DONE)
			goto end;
		sqlite3_reset(st);
	}
	for (i = 0; i < VMS_REASONS; i++) {
		snprintf(key, sizeof(key), "vm_unattributed:%s",
			 reason_names[i]);
		if (db_meta_set_int(db, key, v->unattributed[i]) != DB_OK)
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
