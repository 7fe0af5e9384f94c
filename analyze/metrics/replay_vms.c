/*
 * Each VM's what-if in the capture DB (table replay_vm_metric): a
 * capture of several VMs is replayed VM by VM, and replay stores each
 * VM's figures under each policy beside the capture's runs, which are
 * their sums.  Invariants kept here:
 *   - a (policy, VM) pair's rows are replaced together, inside the
 *     transaction of replay_metrics_store_runs(), so a reader never sees
 *     one VM's figures from two replays;
 *   - only RM_WHATIF figures are stored: a VM's self-check is its
 *     self_check_ok, its details are fidelity's;
 *   - a policy that cannot act on a VM stores nothing for it: the VM
 *     stays as recorded, and a reader adds the recorded figures.
 */
#include "metrics/replay_metrics.h"

#include "util/alloc.h"
#include "util/assert.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs one statement of the store; 0, or -1 with the error in db. */
static int exec_bind(sqlite3 *db, const char *sql, const char *policy,
		     int64_t vm)
{
	sqlite3_stmt *st = NULL;
	int rc = -1;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return -1;
	if (policy)
		sqlite3_bind_text(st, 1, policy, -1, SQLITE_STATIC);
	if (vm)
		sqlite3_bind_int64(st, 2, vm);
	if (sqlite3_step(st) == SQLITE_DONE)
		rc = 0;
	sqlite3_finalize(st);
	return rc;
}

int replay_vms_store(sqlite3 *db, const struct replay_vm_figures *vms,
		     int nvms, int n, int clear)
{
	sqlite3_stmt *st = NULL;
	int i, p, k, rc = -1;

	if (clear && exec_bind(db, "DELETE FROM replay_vm_metric", NULL, 0))
		goto end;
	if (sqlite3_prepare_v2(db, "INSERT INTO replay_vm_metric VALUES "
			       "(?,?,?,?,?,?)", -1, &st, NULL) != SQLITE_OK)
		goto end;
	for (i = 0; i < nvms; i++) {
		MR_ASSERT(vms[i].vm > 0);
		/* A VM whose self-check fails keeps no what-if: not even
		 * one an earlier replay stored. */
		if (!vms[i].self_check_ok &&
		    exec_bind(db, "DELETE FROM replay_vm_metric WHERE vm = ?2",
			      NULL, vms[i].vm))
			goto end;
		for (p = 0; p < n; p++) {
			const struct replay_metrics *m = &vms[i].met[p];

			if (exec_bind(db, "DELETE FROM replay_vm_metric "
				      "WHERE policy = ?1 AND vm = ?2",
				      m->policy, vms[i].vm))
				goto end;
			/* The recorded policy's row is the VM's replay
			 * whether or not its knob could act there. */
			if (p && m->not_applicable)
				continue;
			for (k = 0; k < REPLAY_METRICS; k++) {
				if (replay_metric_kinds[k] != RM_WHATIF)
					continue;
				sqlite3_bind_text(st, 1, m->policy, -1,
						  SQLITE_STATIC);
				sqlite3_bind_int64(st, 2, vms[i].vm);
				sqlite3_bind_int(st, 3, p);
				sqlite3_bind_int(st, 4, vms[i].self_check_ok);
				sqlite3_bind_text(st, 5, replay_metric_names[k],
						  -1, SQLITE_STATIC);
				sqlite3_bind_double(st, 6, m->v[k]);
				if (sqlite3_step(st) != SQLITE_DONE)
					goto end;
				sqlite3_reset(st);
			}
		}
	}
	rc = 0;
end:
	sqlite3_finalize(st);
	return rc;
}

/* Starts a new row of *out for (vm, policy); 0, or -1 out of memory. */
static int row_add(struct stored_vm_run **out, int *n, size_t *cap,
		   sqlite3_stmt *st)
{
	struct stored_vm_run *r;
	const unsigned char *t;

	if (ALLOC_GROW(*out, (size_t)*n + 1, *cap))
		return -1;
	r = &(*out)[(*n)++];
	memset(r, 0, sizeof(*r));
	r->vm = sqlite3_column_int64(st, 0);
	snprintf(r->policy, sizeof(r->policy), "%s",
		 (const char *)sqlite3_column_text(st, 1));
	r->self_check_ok = sqlite3_column_int(st, 3);
	r->pid = sqlite3_column_int64(st, 6);
	t = sqlite3_column_text(st, 7);
	snprintf(r->procname, sizeof(r->procname), "%s",
		 t ? (const char *)t : "?");
	return 0;
}

int replay_vms_load(sqlite3 *db, struct stored_vm_run **out, int *n)
{
	sqlite3_stmt *st = NULL;
	size_t cap = 0;
	int rc = -1, k;

	*out = NULL;
	*n = 0;
	if (sqlite3_prepare_v2(db, "SELECT r.vm, r.policy, r.ord, "
			       "r.self_check_ok, r.name, r.value, v.pid, "
			       "v.procname FROM replay_vm_metric r LEFT JOIN "
			       "vm v ON v.id = r.vm ORDER BY r.vm, r.ord, "
			       "r.policy", -1, &st, NULL) != SQLITE_OK)
		goto end;
	while (sqlite3_step(st) == SQLITE_ROW) {
		struct stored_vm_run *last = *n ? &(*out)[*n - 1] : NULL;

		if ((!last || last->vm != sqlite3_column_int64(st, 0) ||
		     strcmp(last->policy,
			    (const char *)sqlite3_column_text(st, 1))) &&
		    row_add(out, n, &cap, st) < 0)
			goto end;
		k = replay_metric_find((const char *)sqlite3_column_text(st,
									 4));
		/* A figure this build has no name for (a newer one's). */
		if (k < REPLAY_METRICS)
			(*out)[*n - 1].m.v[k] = sqlite3_column_double(st, 5);
	}
	for (k = 0; k < *n; k++)
		(*out)[k].m.policy = (*out)[k].policy;
	rc = 0;
end:
	if (rc < 0) {
		log_error("%s: cannot read the VMs' replay results: %s",
			  sqlite3_db_filename(db, "main"), sqlite3_errmsg(db));
		free(*out);
		*out = NULL;
		*n = 0;
	}
	sqlite3_finalize(st);
	return rc;
}
