/*
 * Computing the capture summary from the DB (see summary.h).
 * Everything is read with aggregate queries; only leaf zaps need the SPTE
 * decoder, so they are counted by scanning spte_change once.
 */
#include "metrics/summary.h"

#include "db/db.h"
#include "model/event.h"
#include "model/spte.h"
#include "replay/capture_info.h"
#include "util/alloc.h"
#include "util/assert.h"
#include "util/log.h"
#include "util/u64map.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const summary_canonical_tables[] = {
	"fault", "fast_fault", "spte_request", "spte_set", "spte_change",
	"sp_alloc", "sp_free", "huge_split", "notifier", "unmap_decision",
	"tlb_flush", "nx_recovery", "lock_wait", "lock_contention",
	"memslot", "vcpu_exit", "vcpu_entry", "syscall", "stats_sample",
	"latency_sample", "vm_change", NULL,
};

static char *col_text(sqlite3_stmt *st, int i)
{
	const unsigned char *t = sqlite3_column_text(st, i);

	return t ? strdup((const char *)t) : NULL;
}

static int64_t col_int_or(sqlite3_stmt *st, int i, int64_t dflt)
{
	return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt :
		sqlite3_column_int64(st, i);
}

/* What a row callback returns when it has said what is wrong itself. */
#define ROW_REPORTED (-2)

/* Run sql and call row() per result row; -1 on error (said here, unless
 * row() returned ROW_REPORTED).  A scan of a table shows its progress
 * under what (rows of total); NULL: none. */
static int scan_each(sqlite3 *db, const char *sql, const char *what,
		     int64_t total, int (*row)(sqlite3_stmt *, void *),
		     void *arg)
{
	sqlite3_stmt *st = NULL;
	uint64_t n = 0;
	int rc = -1, r, quiet = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		goto end;
	while ((r = sqlite3_step(st)) == SQLITE_ROW) {
		r = row(st, arg);
		if (r == ROW_REPORTED) {
			quiet = 1;
			goto end;
		}
		if (r < 0)
			goto end;
		if (what && !(++n & 0xffff))
			log_progress_of(what, n, (uint64_t)total);
	}
	rc = r == SQLITE_DONE ? 0 : -1;
end:
	if (what)
		log_progress_end();
	if (rc < 0 && !quiet)
		log_error("%s: query failed: %s", sqlite3_db_filename(db,
			  "main"), sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return rc;
}

static int query_each(sqlite3 *db, const char *sql,
		      int (*row)(sqlite3_stmt *, void *), void *arg)
{
	return scan_each(db, sql, NULL, 0, row, arg);
}

static int64_t query_int(sqlite3 *db, const char *sql, int64_t dflt)
{
	sqlite3_stmt *st = NULL;
	int64_t v = dflt;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		v = col_int_or(st, 0, dflt);
	sqlite3_finalize(st);
	return v;
}

/* Append a zeroed element to arr (n elements, capacity cap): its
 * address, or NULL when out of memory. */
#define PUSH(arr, n, cap) \
	(ALLOC_GROW(arr, (size_t)(n) + 1, cap) ? NULL : &(arr)[(n)++])

static int raw_row(sqlite3_stmt *st, void *arg)
{
	struct summary *s = arg;
	struct summary_raw *r = PUSH(s->raw, s->nraw, s->capraw);

	if (!r)
		return -1;
	r->name = col_text(st, 0);
	r->count = sqlite3_column_int64(st, 1);
	r->canonical = col_text(st, 2);
	r->note = col_text(st, 3);
	return 0;
}

static int trace_row(sqlite3_stmt *st, void *arg)
{
	struct summary *s = arg;
	struct summary_trace *t = PUSH(s->traces, s->ntraces,
					    s->captraces);

	if (!t)
		return -1;
	t->path = col_text(st, 0);
	t->hostname = col_text(st, 1);
	t->domain = col_text(st, 2);
	t->kernel_release = col_text(st, 3);
	t->kernel_version = col_text(st, 4);
	t->tracer_name = col_text(st, 5);
	t->tracer_version = col_text(st, 6);
	t->trace_name = col_text(st, 7);
	t->creation = col_text(st, 8);
	return 0;
}

static int lost_row(sqlite3_stmt *st, void *arg)
{
	struct summary *s = arg;
	struct summary_lost *l = PUSH(s->lost, s->nlost, s->caplost);

	if (!l)
		return -1;
	l->stream_id = sqlite3_column_int64(st, 0);
	l->stream = col_text(st, 1);
	l->kind = col_text(st, 2);
	l->begin_ts = col_int_or(st, 3, -1);
	l->end_ts = col_int_or(st, 4, -1);
	l->count = col_int_or(st, 5, -1);
	if (l->count > 0) {
		if (strcmp(l->kind, "events") == 0)
			s->lost_events += l->count;
		else
			s->lost_packets += l->count;
	}
	return 0;
}

/* The count of a canonical table, as s->canon has it (0: not there). */
static int64_t summary_count(const struct summary *s, const char *table)
{
	int i;

	for (i = 0; i < s->ncanon; i++)
		if (strcmp(s->canon[i].name, table) == 0)
			return s->canon[i].count;
	return 0;
}

/* Faults per vCPU of each VM by one scan of fault (a GROUP BY sorts
 * every row): vm << 32 | vcpu -> index in s->vcpus + 1, the NULL vCPU's
 * count aside.  Two VMs' vCPU 0 are two vCPUs. */
struct vcpu_scan {
	struct summary *s;
	struct u64map idx;
	int64_t null_faults;
	struct timeline *tl;            /* column 3 ts, binned; or NULL */
	int isa;                        /* column 1 error_code's meaning */
};

/* The VM of a row's vm column (column i), or NULL: none, or an id the
 * vm table lacks. */
static struct summary_vm *row_vm(struct summary *s, sqlite3_stmt *st, int i)
{
	int64_t vm;

	if (sqlite3_column_type(st, i) == SQLITE_NULL)
		return NULL;
	vm = sqlite3_column_int64(st, i);
	return vm >= 1 && vm <= s->nvms ? &s->vms[vm - 1] : NULL;
}

static int vcpu_row(sqlite3_stmt *st, void *arg)
{
	struct vcpu_scan *vs = arg;
	struct summary *s = vs->s;
	struct summary_vcpu *v;
	uint64_t vcpu, key, i;
	uint64_t pferr;

	struct summary_vm *vm = row_vm(s, st, 2);

	if (vs->tl)
		vs->tl->count[TL_FAULTS][timeline_bin(vs->tl,
				sqlite3_column_int64(st, 3))]++;
	if (vm) {
		vm->faults++;
	} else {
		s->novm_faults++;
	}
	if (sqlite3_column_type(st, 1) != SQLITE_NULL) {
		pferr = mev_fault_pferr(vs->isa,
					(uint64_t)sqlite3_column_int64(st, 1));
		s->fault_access[mev_pferr_access(pferr)]++;
		s->faults_present += mev_pferr_present(pferr);
	}
	if (sqlite3_column_type(st, 0) == SQLITE_NULL) {
		vs->null_faults++;
		return 0;
	}
	vcpu = (uint64_t)sqlite3_column_int64(st, 0);
	key = (uint64_t)(vm ? vm->id : 0) << 32 | (uint32_t)vcpu;
	i = u64map_get(&vs->idx, key);
	if (!i) {
		if (!(v = PUSH(s->vcpus, s->nvcpus, s->capvcpus)) ||
		    u64map_put(&vs->idx, key, (uint64_t)s->nvcpus) < 0)
			return -1;
		v->vm = vm ? vm->id : 0;
		v->vcpu = (int64_t)vcpu;
		i = (uint64_t)s->nvcpus;
		/* A vCPU of the VM with a fault. */
		if (vm)
			vm->vcpus++;
	}
	s->vcpus[i - 1].faults++;
	return 0;
}

/* By VM (none first), then vCPU. */
static int vcpu_cmp(const void *a, const void *b)
{
	const struct summary_vcpu *x = a, *y = b;

	if (x->vm != y->vm)
		return (x->vm > y->vm) - (x->vm < y->vm);
	return (x->vcpu > y->vcpu) - (x->vcpu < y->vcpu);
}

/* The vCPUs in SQL's order: the NULL one (shown as -1) first. */
static int vcpu_faults(sqlite3 *db, struct summary *s, int64_t faults,
		       struct timeline *tl, int isa)
{
	struct vcpu_scan vs = { s, { 0 }, 0, tl, isa };
	struct summary_vcpu *v;
	int rc = -1;

	u64map_init(&vs.idx);
	if (scan_each(db, tl ? "SELECT vcpu, error_code, vm, ts FROM fault" :
		      "SELECT vcpu, error_code, vm FROM fault",
		      "summary: faults per vCPU", faults,
		      vcpu_row, &vs) < 0)
		goto end;
	if (tl)
		tl->filled[TL_FAULTS] = 1;
	if (s->nvcpus > 1)     /* no array without faults */
		qsort(s->vcpus, (size_t)s->nvcpus, sizeof(*s->vcpus), vcpu_cmp);
	if (vs.null_faults) {
		if (!(v = PUSH(s->vcpus, s->nvcpus, s->capvcpus)))
			goto end;
		memmove(s->vcpus + 1, s->vcpus,
			(size_t)(s->nvcpus - 1) * sizeof(*s->vcpus));
		s->vcpus[0].vm = 0;
		s->vcpus[0].vcpu = -1;
		s->vcpus[0].faults = vs.null_faults;
	}
	rc = 0;
end:
	u64map_free(&vs.idx);
	return rc;
}

/*
 * A thread's work for one VM: an agent.  A kernel thread (ksmd,
 * kswapd, ...) works for every VM of the host, and the rows of its
 * work name the VM each belongs to (the patched kernel's word, or the
 * replay's attribution), so its work is counted per (thread, VM), one
 * source row each.  agents[] in the order first seen, agent_of
 * (vm << 32 | tid) -> its index + 1; vm 0 is none.
 */
struct agent {
	uint32_t tid;
	int64_t vm;
	int64_t inv, zaps;
	int src;                        /* its source's key + 1, or 0 */
};

/* An agent's work in one second (sources per second): cells[] in the
 * order first seen, cell_of (agent << 32 | second) -> its index + 1. */
struct sec_cell {
	int agent;
	int64_t second, inv, zaps;
};

struct zap_scan {
	const struct spte_format *fmt;
	int64_t zaps;
	struct timeline *tl;            /* column 5 ts, binned; or NULL */
	struct summary *s;              /* column 3 vm */
	struct agent *agents;           /* column 4 tid with column 3 */
	int nagents;
	size_t capagents;
	struct u64map agent_of;
	struct sec_cell *cells;
	int ncells;
	size_t capcells;
	struct u64map cell_of;
};

/* The index of the agent (tid, vm), made on first use; -1 when out of
 * memory.  vm is a row's vm column, 0 when it names none. */
static int agent_get(struct zap_scan *z, uint32_t tid, int64_t vm)
{
	uint64_t key = (uint64_t)(uint32_t)vm << 32 | tid;
	uint64_t i = u64map_get(&z->agent_of, key);
	struct agent *a;

	MR_ASSERT(vm >= 0 && vm <= UINT32_MAX);
	if (i)
		return (int)(i - 1);
	a = PUSH(z->agents, z->nagents, z->capagents);
	if (!a)
		return -1;
	memset(a, 0, sizeof(*a));
	a->tid = tid;
	a->vm = vm;
	if (u64map_put(&z->agent_of, key, (uint64_t)z->nagents) < 0)
		return -1;
	return z->nagents - 1;
}

/* The cell of (agent, the second of ts); NULL when out of memory. */
static struct sec_cell *sec_cell(struct zap_scan *z, int agent, int64_t ts)
{
	int64_t second = ts > 0 ? ts / 1000000000 : 0;
	uint64_t key = (uint64_t)(uint32_t)agent << 32 | (uint32_t)second;
	uint64_t i = u64map_get(&z->cell_of, key);
	struct sec_cell *c;

	if (i)
		return &z->cells[i - 1];
	c = PUSH(z->cells, z->ncells, z->capcells);
	if (!c)
		return NULL;
	memset(c, 0, sizeof(*c));
	c->agent = agent;
	c->second = second;
	if (u64map_put(&z->cell_of, key, (uint64_t)z->ncells) < 0)
		return NULL;
	return c;
}

static int zap_row(sqlite3_stmt *st, void *arg)
{
	struct zap_scan *z = arg;
	uint64_t old = (uint64_t)sqlite3_column_int64(st, 0);
	uint64_t new = (uint64_t)sqlite3_column_int64(st, 1);
	int level = sqlite3_column_int(st, 2);

	struct summary_vm *vm;

	if (!spte_leaf_zapped(z->fmt, old, new, level))
		return 0;
	z->zaps++;
	vm = row_vm(z->s, st, 3);
	if (vm)
		vm->leaf_zaps++;
	else
		z->s->novm_leaf_zaps++;
	if (sqlite3_column_type(st, 4) != SQLITE_NULL) {
		int a = agent_get(z, (uint32_t)sqlite3_column_int64(st, 4),
				  vm ? vm->id : 0);
		struct sec_cell *c;

		if (a < 0 || !(c = sec_cell(z, a, sqlite3_column_int64(st, 5))))
			return -1;
		c->zaps++;
		z->agents[a].zaps++;
	}
	if (z->tl)
		z->tl->count[TL_LEAF_ZAPS][timeline_bin(z->tl,
				sqlite3_column_int64(st, 5))]++;
	return 0;
}

/* Invalidation starts, binned on the way (the report's timeline). */
static int notifier_row(sqlite3_stmt *st, void *arg)
{
	struct timeline *tl = arg;

	/* phase is NOT NULL in the schema. */
	if (sqlite3_column_int64(st, 1) == 0)
		tl->count[TL_INVALIDATIONS][timeline_bin(tl,
				sqlite3_column_int64(st, 0))]++;
	return 0;
}

/* Invalidation starts: a count, or a scan that bins them into tl. */
static int64_t invalidations(sqlite3 *db, const struct summary *s,
			     struct timeline *tl)
{
	int64_t n = 0;
	int i;

	if (!tl)
		return query_int(db, "SELECT count(*) FROM notifier WHERE "
				 "phase = 0", 0);
	if (scan_each(db, "SELECT ts, phase FROM notifier", "summary: "
		      "invalidations", summary_count(s, "notifier"),
		      notifier_row, tl) < 0)
		return -1;
	tl->filled[TL_INVALIDATIONS] = 1;
	for (i = 0; i < tl->nbins; i++)
		n += tl->count[TL_INVALIDATIONS][i];
	return n;
}

/* Counter increase per second of a KVM statistic, summed over VMs. */
static double stat_rate(sqlite3 *db, const char *stat)
{
	sqlite3_stmt *st = NULL;
	double rate = -1;

	if (sqlite3_prepare_v2(db, "SELECT sum(d / t) FROM (SELECT "
			       "(max(value) - min(value)) * 1.0 AS d, "
			       "(max(ts) - min(ts)) / 1e9 AS t FROM "
			       "stats_sample WHERE stat = ? GROUP BY sampler_vm, tid "
			       "HAVING count(*) > 1 AND t > 0)", -1, &st,
			       NULL) != SQLITE_OK)
		goto end;
	sqlite3_bind_text(st, 1, stat, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW &&
	    sqlite3_column_type(st, 0) != SQLITE_NULL)
		rate = sqlite3_column_double(st, 0);
end:
	sqlite3_finalize(st);
	return rate;
}

/* KVM counters and the canonical events that count the same thing. */
static const struct {
	const char *counter, *table;
} counter_pairs[SUMMARY_COUNTER_CHECKS] = {
	{ "pf_taken", "fault" },                        /* NPF handled */
	{ "pf_fast", "fast_fault" },                    /* fixed without lock */
	{ "remote_tlb_flush_requests", "tlb_flush" },   /* patched */
};

static int counter_check(sqlite3 *db, int i, struct summary_counter_check *c)
{
	sqlite3_stmt *st = NULL;
	char sql[256];
	int64_t seq0, seq1, t0, t1, v0, v1;
	int rc = -1;

	c->counter = counter_pairs[i].counter;
	c->table = counter_pairs[i].table;
	c->counter_delta = c->events = -1;
	if (query_int(db, "SELECT count(DISTINCT sampler_vm) FROM stats_sample", 0) != 1)
		return 0;
	if (sqlite3_prepare_v2(db, "SELECT min(seq), max(seq) FROM stats_sample "
			       "WHERE stat = ?1", -1, &st, NULL) != SQLITE_OK)
		goto end;
	sqlite3_bind_text(st, 1, c->counter, -1, SQLITE_STATIC);
	if (sqlite3_step(st) != SQLITE_ROW ||
	    sqlite3_column_type(st, 0) == SQLITE_NULL ||
	    sqlite3_column_int64(st, 0) == sqlite3_column_int64(st, 1)) {
		rc = 0;         /* fewer than two samples */
		goto end;
	}
	seq0 = sqlite3_column_int64(st, 0);
	seq1 = sqlite3_column_int64(st, 1);
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "SELECT a.ts, a.value, b.ts, b.value FROM "
			       "stats_sample a, stats_sample b WHERE a.seq = ?1 "
			       "AND b.seq = ?2", -1, &st, NULL) != SQLITE_OK)
		goto end;
	sqlite3_bind_int64(st, 1, seq0);
	sqlite3_bind_int64(st, 2, seq1);
	if (sqlite3_step(st) != SQLITE_ROW)
		goto end;
	t0 = sqlite3_column_int64(st, 0);
	v0 = sqlite3_column_int64(st, 1);
	t1 = sqlite3_column_int64(st, 2);
	v1 = sqlite3_column_int64(st, 3);
	sqlite3_finalize(st);
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM %s WHERE ts > ?1 AND "
		 "ts <= ?2", c->table);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		goto end;
	sqlite3_bind_int64(st, 1, t0);
	sqlite3_bind_int64(st, 2, t1);
	if (sqlite3_step(st) != SQLITE_ROW)
		goto end;
	c->events = sqlite3_column_int64(st, 0);
	c->counter_delta = v1 - v0;
	rc = 0;
end:
	sqlite3_finalize(st);
	return rc;
}

static double per_s(int64_t n, double secs)
{
	return secs > 0 ? (double)n / secs : 0.0;
}

/* The source of (procname, vm), made on first use. */
static struct summary_source *source_get(struct summary *s,
					 const char *procname, int64_t vm)
{
	struct summary_source *src;
	int i;

	for (i = 0; i < s->nsources; i++)
		if (s->sources[i].vm == vm &&
		    strcmp(s->sources[i].procname, procname) == 0)
			return &s->sources[i];
	src = PUSH(s->sources, s->nsources, s->capsources);
	if (!src)
		return NULL;
	memset(src, 0, sizeof(*src));
	src->key = s->nsources - 1;
	src->vm = vm;
	if (!(src->procname = strdup(procname))) {
		s->nsources--;
		return NULL;
	}
	return src;
}

/* An agent's place in agents[], sorted by (tid, vm). */
struct agent_ref {
	uint32_t tid;
	int64_t vm;
	int i;
};

struct source_scan {
	struct summary *s;
	struct zap_scan *z;
	struct agent_ref *by_tid;       /* the agents in (tid, vm) order */
	int next;                       /* by_tid[next]: the next to name */
	int64_t last_tid;               /* thread rows: the last name first */
};

/* The VM id of a row's vm column (column i), or 0: none, or an id the
 * vm table lacks. */
static int64_t row_vm_id(struct summary *s, sqlite3_stmt *st, int i)
{
	struct summary_vm *vm = row_vm(s, st, i);

	return vm ? vm->id : 0;
}

/* Invalidation starts of a thread for a VM in a second (tid, vm,
 * second, count). */
static int inv_second_row(sqlite3_stmt *st, void *arg)
{
	struct zap_scan *z = arg;
	int a = agent_get(z, (uint32_t)sqlite3_column_int64(st, 0),
			  row_vm_id(z->s, st, 1));
	struct sec_cell *c;

	if (a < 0 || !(c = sec_cell(z, a, sqlite3_column_int64(st, 2) *
				    1000000000)))
		return -1;
	c->inv += sqlite3_column_int64(st, 3);
	z->agents[a].inv += sqlite3_column_int64(st, 3);
	return 0;
}

static int agent_ref_cmp(const void *a, const void *b)
{
	const struct agent_ref *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return x->vm < y->vm ? -1 : x->vm > y->vm;
}

/* A thread (its rows by tid, the last name first): the source of each
 * of its agents, (its name, the agent's VM). */
static int source_row(sqlite3_stmt *st, void *arg)
{
	struct source_scan *ss = arg;
	struct zap_scan *z = ss->z;
	int64_t tid = sqlite3_column_int64(st, 0);
	struct summary_source *src;

	if (tid == ss->last_tid)
		return 0;
	ss->last_tid = tid;
	/* Agents of tids the thread table lacks have no source. */
	while (ss->next < z->nagents &&
	       ss->by_tid[ss->next].tid < (uint32_t)tid)
		ss->next++;
	for (; ss->next < z->nagents &&
	     ss->by_tid[ss->next].tid == (uint32_t)tid; ss->next++) {
		struct agent *a = &z->agents[ss->by_tid[ss->next].i];

		if (!a->zaps && !a->inv)
			continue;
		src = source_get(ss->s, (const char *)sqlite3_column_text(st, 1),
				 a->vm);
		if (!src)
			return -1;
		src->invalidations += a->inv;
		src->leaf_zaps += a->zaps;
		a->src = src->key + 1;
	}
	return 0;
}

static int source_second_cmp(const void *a, const void *b)
{
	const struct summary_source_second *x = a, *y = b;

	if (x->second != y->second)
		return x->second < y->second ? -1 : 1;
	return x->source - y->source;
}

/* The threads' cells summed per (source, second), once the sources are
 * in their final order.  Returns 0, or -1 out of memory. */
static int source_seconds(struct source_scan *ss)
{
	struct summary *s = ss->s;
	struct u64map at;               /* (source << 32 | second) -> i + 1 */
	int *index_of, i, rc = -1;

	u64map_init(&at);
	index_of = calloc((size_t)s->nsources + 1, sizeof(*index_of));
	if (!index_of)
		goto end;
	for (i = 0; i < s->nsources; i++)
		index_of[s->sources[i].key] = i;
	for (i = 0; i < ss->z->ncells; i++) {
		const struct sec_cell *c = &ss->z->cells[i];
		int k = ss->z->agents[c->agent].src;
		uint64_t key, j;
		struct summary_source_second *o;

		if (!k)
			continue;       /* an agent of no source */
		MR_ASSERT(k - 1 < s->nsources);
		key = (uint64_t)index_of[k - 1] << 32 | (uint32_t)c->second;
		j = u64map_get(&at, key);
		if (!j) {
			o = PUSH(s->source_seconds, s->nsource_seconds,
				 s->capsource_seconds);
			if (!o || u64map_put(&at, key,
					     (uint64_t)s->nsource_seconds) < 0)
				goto end;
			memset(o, 0, sizeof(*o));
			o->source = index_of[k - 1];
			o->second = c->second;
		} else {
			o = &s->source_seconds[j - 1];
		}
		o->invalidations += c->inv;
		o->leaf_zaps += c->zaps;
	}
	if (s->nsource_seconds > 1)
		qsort(s->source_seconds, (size_t)s->nsource_seconds,
		      sizeof(*s->source_seconds), source_second_cmp);
	rc = 0;
end:
	free(index_of);
	u64map_free(&at);
	return rc;
}

static int source_cmp(const void *a, const void *b)
{
	const struct summary_source *x = a, *y = b;

	if (x->leaf_zaps != y->leaf_zaps)
		return x->leaf_zaps < y->leaf_zaps ? 1 : -1;
	if (x->invalidations != y->invalidations)
		return x->invalidations < y->invalidations ? 1 : -1;
	return strcmp(x->procname, y->procname);
}

const char *const summary_notify_names[SUMMARY_NOTIFY_KINDS] = {
	"unmap", "clear", "protection_vma", "protection_page", "soft_dirty",
	"release", "migrate", "exclusive",
};

static int notify_row(sqlite3_stmt *st, void *arg)
{
	struct summary *s = arg;
	int64_t ev = sqlite3_column_int64(st, 0);

	if (ev >= 0 && ev < SUMMARY_NOTIFY_KINDS)
		s->notifier_events[ev] = sqlite3_column_int64(st, 1);
	return 0;
}

/*
 * Who invalidated and zapped (docs/design.md, VMs): per thread name and
 * VM, the invalidation starts (table notifier) and the leaf zaps the
 * scan counted per (thread, VM); the patched notifier's event kinds.
 */
static int sources(sqlite3 *db, struct summary *s, struct zap_scan *z)
{
	struct source_scan ss = { s, z, NULL, 0, -1 };
	int i, rc = -1;

	for (i = 0; i < SUMMARY_NOTIFY_KINDS; i++)
		s->notifier_events[i] = -1;
	/* One pass over the invalidations, one over the (small) thread
	 * table: no query per thread.  A patched kernel traces each
	 * invalidation twice, the stock event and its own (with the
	 * notifier event): counted once, by its own. */
	if (query_each(db, "SELECT event, count(*) FROM notifier WHERE "
		       "phase = 0 AND event IS NOT NULL GROUP BY event",
		       notify_row, s) < 0)
		goto end;
	for (i = 0; i < SUMMARY_NOTIFY_KINDS; i++)
		if (s->notifier_events[i] >= 0)
			break;
	if (query_each(db, i < SUMMARY_NOTIFY_KINDS ?
		       "SELECT tid, vm, ts / 1000000000, count(*) FROM "
		       "notifier WHERE phase = 0 AND event IS NOT NULL AND "
		       "tid IS NOT NULL GROUP BY 1, 2, 3" :
		       "SELECT tid, vm, ts / 1000000000, count(*) FROM "
		       "notifier WHERE phase = 0 AND tid IS NOT NULL "
		       "GROUP BY 1, 2, 3", inv_second_row, z) < 0)
		goto end;
	if (z->nagents) {
		if (!(ss.by_tid = malloc((size_t)z->nagents *
					 sizeof(*ss.by_tid))))
			goto end;
		for (i = 0; i < z->nagents; i++) {
			ss.by_tid[i].tid = z->agents[i].tid;
			ss.by_tid[i].vm = z->agents[i].vm;
			ss.by_tid[i].i = i;
		}
		qsort(ss.by_tid, (size_t)z->nagents, sizeof(*ss.by_tid),
		      agent_ref_cmp);
	}
	if (query_each(db, "SELECT tid, procname FROM thread ORDER BY tid, "
		       "first_seq DESC", source_row, &ss) < 0)
		goto end;
	if (s->nsources > 1)
		qsort(s->sources, (size_t)s->nsources, sizeof(*s->sources),
		      source_cmp);
	if (source_seconds(&ss) < 0)
		goto end;
	rc = 0;
end:
	free(ss.by_tid);
	return rc;
}

static int vm_row(sqlite3_stmt *st, void *arg)
{
	struct summary *s = arg;
	struct summary_vm *v = PUSH(s->vms, s->nvms, s->capvms);

	if (!v)
		return -1;
	memset(v, 0, sizeof(*v));
	v->id = sqlite3_column_int64(st, 0);
	v->pid = sqlite3_column_int64(st, 1);
	v->created_ts = sqlite3_column_type(st, 2) == SQLITE_NULL ? -1 :
		sqlite3_column_int64(st, 2);
	if (sqlite3_column_type(st, 3) != SQLITE_NULL &&
	    !(v->procname = strdup((const char *)sqlite3_column_text(st, 3))))
		return -1;
	v->kernel_named = sqlite3_column_type(st, 4) != SQLITE_NULL;
	v->destroyed_ts = sqlite3_column_type(st, 5) == SQLITE_NULL ? -1 :
		sqlite3_column_int64(st, 5);
	/* Ids are 1, 2, ... in order (ingest/vms.c), and the summary's
	 * rows of a VM are found by id: a DB edited otherwise is refused. */
	if (v->id != s->nvms) {
		log_error("%s: table vm: VM ids are not 1, 2, ... in order "
			  "(row %d holds id %lld), as ingest writes them",
			  sqlite3_db_filename(sqlite3_db_handle(st), "main"),
			  s->nvms, (long long)v->id);
		return ROW_REPORTED;
	}
	return 0;
}

/* Table vm and ingest's meta on the rows of no VM. */
static int vms_read(sqlite3 *db, struct summary *s)
{
	s->vm_attribution = db_meta_get_text(db, "vm_attribution");
	s->rows_unattributed = db_meta_sum_int(db, "vm_unattributed:");
	return query_each(db, "SELECT id, pid, created_ts, procname, kvm, "
			  "destroyed_ts FROM vm ORDER BY id", vm_row, s);
}

enum summary_status summary_compute(sqlite3 *db, struct summary *s)
{
	return summary_compute_binned(db, s, NULL);
}

/*
 * Two of the summary's scans share nothing with the others: the NPF
 * service times (vcpu_exit and vcpu_entry, a third of its time) and the
 * invalidation starts (notifier, a fifth).  Each runs in a thread of its
 * own, on its own read-only connection to the same file, while this one
 * scans faults and leaf zaps (the rest): three parts of about a third,
 * which keep two cores busy to the end.  All report progress
 * (util/log.h: the line shows the step drawn last).  The helpers write
 * s->latency, s->invalidations and the timeline's invalidation series;
 * this thread writes none of those.
 */
enum side_scan { SIDE_NPF, SIDE_INVALIDATIONS, SIDE_N };

struct side_job {
	enum side_scan which;
	sqlite3 *db;            /* the helper's own connection, or NULL */
	pthread_t thread;
	int running;
	int64_t npf_exit_reason;
	struct summary *s;
	struct timeline *tl;
	int rc;                 /* 0, or -1 after an SQL error (logged) */
};

static int side_scan_run(sqlite3 *db, struct side_job *j)
{
	switch (j->which) {
	case SIDE_NPF:
		return latency_compute(db, j->npf_exit_reason,
				       &j->s->latency);
	case SIDE_INVALIDATIONS:
		j->s->invalidations = invalidations(db, j->s, j->tl);
		return j->s->invalidations < 0 ? -1 : 0;
	default:
		MR_ASSERT(!"unknown side scan");
		return -1;
	}
}

static void *side_job_run(void *arg)
{
	struct side_job *j = arg;

	j->rc = side_scan_run(j->db, j);
	return NULL;
}

/* Start j on a thread of its own; else (no second connection, no
 * thread) it runs later on the command's connection. */
static void side_job_start(sqlite3 *db, struct side_job *j)
{
	if (db_open_again(db, &j->db) != DB_OK)
		return;
	if (pthread_create(&j->thread, NULL, side_job_run, j) == 0)
		j->running = 1;
}

/* j's result: joined, or run here when it never started. */
static int side_job_finish(sqlite3 *db, struct side_job *j)
{
	if (!j->running)
		return side_scan_run(db, j);
	pthread_join(j->thread, NULL);
	j->running = 0;
	return j->rc;
}

enum summary_status summary_compute_binned(sqlite3 *db, struct summary *s,
					   struct timeline *tl)
{
	enum summary_status st = SUMMARY_ERR_SQL;
	struct zap_scan zs = { 0 };
	struct side_job jobs[SIDE_N] = { { 0 } };
	struct capture_info ci;
	int i;

	memset(s, 0, sizeof(*s));
	s->narrowed_vm = db_narrowed_vm(db, NULL);
	s->events = db_meta_get_int(db, "events", 0);
	s->ts_base_ns = db_meta_get_int(db, "ts_base_ns", 0);
	s->truncated = db_meta_get_int(db, "truncated", 0) != 0;
	s->truncated_reason = db_meta_get_text(db, "truncated_reason");
	s->source_format = db_meta_get_text(db, "source_format");
	s->source_tracer = db_meta_get_text(db, "source_tracer");
	s->source_events = db_meta_get_text(db, "source_events");
	s->source_lossy = db_meta_get_text(db, "source_lossy");
	s->ts_resolution_ns = db_meta_get_int(db, "ts_resolution_ns", 1);
	s->source_duplicates = db_meta_get_int(db, "source_duplicates", 0);
	switch (coverage_load(db, &s->cov)) {
	case COVERAGE_OK:
		break;
	case COVERAGE_ERR_NOMEM:
		st = SUMMARY_ERR_NOMEM;
		goto end;
	default:
		goto end;
	}
	for (i = 0; summary_canonical_tables[i]; i++) {
		struct summary_count *c = PUSH(s->canon, s->ncanon,
					    s->capcanon);

		if (!c) {
			st = SUMMARY_ERR_NOMEM;
			goto end;
		}
		c->name = summary_canonical_tables[i];
		c->count = db_table_count(db, c->name);
		if (c->count < 0)
			goto end;
	}
	/* The time base is the first event; meta holds the last one. */
	s->first_ts = 0;
	s->last_ts = db_meta_get_int(db, "last_ts", 0);
	s->duration_s = (double)(s->last_ts - s->first_ts) / 1e9;

	/* The exit ISA says which hardware (SPTE format, fault decoding,
	 * NPF exit) recorded, as the replay reads it. */
	if (capture_info_read(db, &ci) < 0)
		goto end;
	s->spte_format_detected = ci.isa_source != CAPTURE_ISA_ASSUMED;
	if (vms_read(db, s) < 0)
		goto end;
	s->isa_source = ci.isa_source == CAPTURE_ISA_EXITS ? "exits" :
		ci.isa_source == CAPTURE_ISA_MANIFEST ? "manifest" : "assumed";
	for (i = 0; i < SIDE_N; i++) {
		jobs[i].which = (enum side_scan)i;
		jobs[i].npf_exit_reason = ci.npf_exit_reason;
		jobs[i].s = s;
		jobs[i].tl = tl;
		side_job_start(db, &jobs[i]);
	}

	if (query_each(db, "SELECT name, count, canonical, note FROM raw_event "
		       "ORDER BY count DESC, name", raw_row, s) < 0 ||
	    query_each(db, "SELECT path, hostname, domain, kernel_release, "
		       "kernel_version, tracer_name, tracer_version, "
		       "trace_name, creation_datetime FROM trace ORDER BY id",
		       trace_row, s) < 0 ||
	    query_each(db, "SELECT l.stream_id, s.name, l.kind, l.begin_ts, "
		       "l.end_ts, l.count FROM lost l JOIN stream s ON "
		       "s.id = l.stream_id ORDER BY l.begin_ts, l.id",
		       lost_row, s) < 0 ||
	    vcpu_faults(db, s, summary_count(s, "fault"), tl, ci.isa) < 0)
		goto end;

	zs.fmt = ci.fmt;
	s->spte_format = zs.fmt->name;
	zs.tl = tl;
	zs.s = s;
	u64map_init(&zs.agent_of);
	u64map_init(&zs.cell_of);
	if (scan_each(db, "SELECT old_spte, new_spte, level, vm, tid, ts "
		      "FROM spte_change", "summary: leaf zaps",
		      summary_count(s, "spte_change"), zap_row, &zs) < 0 ||
	    sources(db, s, &zs) < 0)
		goto end;
	if (tl) {
		tl->filled[TL_LEAF_ZAPS] = 1;
		tl->zaps_fmt = zs.fmt;
	}
	s->leaf_zaps = zs.zaps;
	/* The first event the replay decides on (engine.c began_decide()):
	 * none, and there is nothing it began in the middle of. */
	s->began_mid_run = query_int(db,
		"WITH first(seq) AS (SELECT min(m) FROM ("
		"SELECT min(seq) AS m FROM spte_change UNION ALL "
		"SELECT min(seq) FROM fault UNION ALL "
		"SELECT min(seq) FROM fast_fault UNION ALL "
		"SELECT min(seq) FROM sp_free UNION ALL "
		"SELECT min(seq) FROM nx_recovery)) "
		"SELECT (SELECT seq FROM first) IS NOT NULL AND NOT EXISTS ("
		"SELECT 1 FROM sp_alloc WHERE (role & 15) = 4 AND "
		"((role >> 24) & 255) = 0 AND gfn = 0 AND "
		"seq < (SELECT seq FROM first))", 0);
	s->faults = summary_count(s, "fault");
	s->faults_per_s = per_s(s->faults, s->duration_s);
	s->leaf_zaps_per_s = per_s(s->leaf_zaps, s->duration_s);
	s->stats_pf_per_s = stat_rate(db, "pf_taken");
	s->stats_tlb_per_s = stat_rate(db, "remote_tlb_flush");
	for (i = 0; i < SUMMARY_COUNTER_CHECKS; i++)
		if (counter_check(db, i, &s->counters[i]) < 0)
			goto end;
	for (i = 0; i < SIDE_N; i++)
		if (side_job_finish(db, &jobs[i]) < 0)
			goto end;
	s->invalidations_per_s = per_s(s->invalidations, s->duration_s);
	st = SUMMARY_OK;
end:
	for (i = 0; i < SIDE_N; i++) {
		if (jobs[i].running)
			pthread_join(jobs[i].thread, NULL);
		sqlite3_close(jobs[i].db);
	}
	u64map_free(&zs.agent_of);
	free(zs.agents);
	u64map_free(&zs.cell_of);
	free(zs.cells);
	return st;
}

void summary_free(struct summary *s)
{
	int i;

	coverage_free(&s->cov);
	for (i = 0; i < s->nvms; i++)
		free(s->vms[i].procname);
	free(s->vms);
	for (i = 0; i < s->nsources; i++)
		free(s->sources[i].procname);
	free(s->sources);
	free(s->source_seconds);
	free(s->vm_attribution);
	for (i = 0; i < s->nraw; i++) {
		free(s->raw[i].name);
		free(s->raw[i].canonical);
		free(s->raw[i].note);
	}
	for (i = 0; i < s->ntraces; i++) {
		struct summary_trace *t = &s->traces[i];

		free(t->path);
		free(t->hostname);
		free(t->domain);
		free(t->kernel_release);
		free(t->kernel_version);
		free(t->tracer_name);
		free(t->tracer_version);
		free(t->trace_name);
		free(t->creation);
	}
	for (i = 0; i < s->nlost; i++) {
		free(s->lost[i].stream);
		free(s->lost[i].kind);
	}
	free(s->raw);
	free(s->canon);
	free(s->traces);
	free(s->lost);
	free(s->vcpus);
	free(s->truncated_reason);
	free(s->source_format);
	free(s->source_tracer);
	free(s->source_events);
	free(s->source_lossy);
	memset(s, 0, sizeof(*s));
}
