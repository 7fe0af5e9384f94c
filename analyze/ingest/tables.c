/*
 * The capture tables shared by every trace reader (see tables.h).
 */
#include "ingest/tables.h"

#include "ingest/vms.h"
#include "db/db.h"
#include "model/fault.h"
#include "util/alloc.h"
#include "util/assert.h"
#include "util/log.h"
#include "util/ptrmap.h"
#include "util/strpool.h"
#include "util/u64map.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tables_raw {
	const char *name;       /* interned */
	uint64_t count;
	const char *canonical;  /* table, or NULL */
	char *note;
};

struct tables_lost {
	int64_t stream_id;
	int is_packets;
	int has_range;
	int64_t begin_ns, end_ns;
	/* The stream's beginning (tables_stream_late_start()): no begin,
	 * end_ns its first event (has_range 0 when it had none). */
	int late_start;
	int has_count;
	uint64_t count;
};

struct tables_thread {
	const char *raw;                /* the name as traced, interned */
	const char *procname;           /* ... as UTF-8 (name_clean()) */
	struct vms_thread vm;
};

struct ingest_tables {
	const struct catalog *cat;
	struct writer *w;
	struct ingest_chunk *chunk;
	struct strpool strings;

	struct ptrmap threads;          /* tid -> tables_thread */
	struct tables_thread *last_thread;      /* of last_tid */
	int64_t last_tid;
	struct vms vms;                 /* each row's VM */
	struct u64map raw_by_name;      /* interned name -> raw index */

	struct tables_raw *raws;
	size_t nraws, capraws;
	struct tables_stream **stream_list;
	size_t nstreams, capstreams;
	struct tables_trace **trace_list;
	size_t ntraces, captraces;
	struct tables_lost *lost;
	size_t nlost, caplost;
	uint64_t lost_events;

	uint64_t seq;
	int have_base;
	int64_t ts_base;
	int64_t last_ns;
	/* Rows committed per catalogue entry (kind): each canonical
	 * table's row count, stored for the readers (db_table_count()). */
	int64_t *kind_rows;
	int nomem;                      /* a row's VM lost to memory */

	/* The fault's decoded columns (fault_decode()): the kinds and
	 * value indexes involved, -1 where the catalogue has none. */
	int exit_kind, exit_isa;        /* vcpu_exit and its isa */
	int fault_kind, fault_err;      /* fault and its error_code */
	int fault_access;               /* access, then present */
	int isa;                        /* MEV_ISA_*, from the first exit */
	uint64_t late_streams;          /* tables_stream_late_start() */
	uint64_t faults_undecoded;      /* before the ISA was known */
};

/*
 * Finds the catalogue's vcpu_exit isa and fault error_code columns and
 * the fault's derived ones.  A catalogue without them decodes nothing;
 * one whose fault derives other columns than access and present is a
 * build error, caught by the tests that load it.
 */
static void fault_decode_init(struct ingest_tables *t)
{
	const struct catalog_entry *e;
	int i;

	t->exit_kind = t->exit_isa = -1;
	t->fault_kind = t->fault_err = t->fault_access = -1;
	for (i = 0; i < t->cat->nentries; i++) {
		e = &t->cat->entries[i];
		if (strcmp(e->table, "vcpu_exit") == 0 && t->exit_kind < 0) {
			t->exit_kind = i;
			t->exit_isa = catalog_entry_col(e, "isa");
		}
		if (strcmp(e->table, "fault") != 0 || e->nderived != 2)
			continue;
		MR_ASSERT(strcmp(e->derived[0], "access") == 0 &&
			  strcmp(e->derived[1], "present") == 0 &&
			  !e->store_raw_id);
		t->fault_kind = i;
		t->fault_err = catalog_entry_col(e, "error_code");
		t->fault_access = e->ncols;
	}
}

/*
 * Fills a fault row's access and present from its error code, read by
 * the capture's exit ISA (model/fault.h).  The ISA is the first traced
 * exit's: every fault follows its vCPU's exit, so only faults before the
 * first exit (a capture that begins mid-exit) wait for ingest's end
 * (tables_fault_decode_rest()).
 */
static void fault_decode(struct ingest_tables *t, struct ingest_row *r)
{
	int a = t->fault_access;
	uint64_t pferr;

	if (r->kind == (uint32_t)t->exit_kind) {
		if (!t->isa && t->exit_isa >= 0 &&
		    !(r->nullmask & (1u << t->exit_isa)) &&
		    (r->v[t->exit_isa].i == MEV_ISA_VMX ||
		     r->v[t->exit_isa].i == MEV_ISA_SVM))
			t->isa = (int)r->v[t->exit_isa].i;
		return;
	}
	if (r->kind != (uint32_t)t->fault_kind)
		return;
	if (!t->isa || t->fault_err < 0 ||
	    (r->nullmask & (1u << t->fault_err))) {
		r->nullmask |= 3u << a;
		t->faults_undecoded += t->isa == 0;
		return;
	}
	pferr = mev_fault_pferr(t->isa, (uint64_t)r->v[t->fault_err].i);
	r->v[a].text = mev_access_name(mev_pferr_access(pferr));
	r->textmask |= 1u << a;
	r->v[a + 1].i = mev_pferr_present(pferr);
	r->nullmask &= ~(3u << a);
	r->textmask &= ~(1u << (a + 1));
}

struct ingest_tables *tables_create(const struct catalog *cat,
				    struct writer *w)
{
	struct ingest_tables *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	t->cat = cat;
	t->w = w;
	t->kind_rows = calloc((size_t)cat->nentries + 1,
			      sizeof(*t->kind_rows));
	if (!t->kind_rows) {
		free(t);
		return NULL;
	}
	strpool_init(&t->strings);
	ptrmap_init(&t->threads);
	u64map_init(&t->raw_by_name);
	if (vms_init(&t->vms, cat) < 0) {
		vms_free(&t->vms);
		free(t->kind_rows);
		free(t);
		return NULL;
	}
	fault_decode_init(t);
	return t;
}

void tables_destroy(struct ingest_tables *t)
{
	size_t i;
	int j;

	if (!t)
		return;
	ptrmap_free_values(&t->threads);
	vms_free(&t->vms);
	u64map_free(&t->raw_by_name);
	for (i = 0; i < t->nstreams; i++) {
		free(t->stream_list[i]->name);
		free(t->stream_list[i]);
	}
	for (i = 0; i < t->ntraces; i++) {
		free(t->trace_list[i]->path);
		for (j = 0; j < ENV_N; j++)
			free(t->trace_list[i]->env[j]);
		free(t->trace_list[i]);
	}
	for (i = 0; i < t->nraws; i++)
		free(t->raws[i].note);
	free(t->raws);
	free(t->stream_list);
	free(t->trace_list);
	free(t->lost);
	free(t->kind_rows);
	strpool_free(&t->strings);
	free(t);
}

const struct catalog *tables_catalog(const struct ingest_tables *t)
{
	return t->cat;
}

const struct tables_trace *tables_trace_first(const struct ingest_tables *t)
{
	return t->ntraces ? t->trace_list[0] : NULL;
}

char *tables_raw_names(const struct ingest_tables *t)
{
	size_t i, len = 1;
	char *out;

	for (i = 0; i < t->nraws; i++)
		len += strlen(t->raws[i].name) + 1;
	out = malloc(len);
	if (!out)
		return NULL;
	out[0] = '\0';
	for (i = 0; i < t->nraws; i++) {
		if (i)
			strcat(out, ",");
		strcat(out, t->raws[i].name);
	}
	return out;
}

uint64_t tables_event_count(const struct ingest_tables *t)
{
	return t->seq;
}

uint64_t tables_lost_count(const struct ingest_tables *t)
{
	return t->lost_events;
}

int tables_stream_late_start(struct ingest_tables *t,
			     const struct tables_stream *s,
			     uint64_t first_seq)
{
	MR_ASSERT(first_seq > 0);
	t->late_streams++;
	if (tables_lost_add(t, s, 1, s->has_first, s->first_ns, s->first_ns,
			    1, first_seq) < 0)
		return -1;
	t->lost[t->nlost - 1].late_start = 1;
	return 0;
}

uint64_t tables_late_streams(const struct ingest_tables *t)
{
	return t->late_streams;
}

const struct tables_stream *tables_stream_find(const struct ingest_tables *t,
					       const char *name)
{
	size_t i;

	for (i = 0; i < t->nstreams; i++)
		if (t->stream_list[i]->name &&
		    strcmp(t->stream_list[i]->name, name) == 0)
			return t->stream_list[i];
	return NULL;
}

int64_t tables_raw(struct ingest_tables *t, const char *name)
{
	const char *iname = strpool_intern(&t->strings, name);
	const struct u64map_slot *known;

	if (!iname)
		return -1;
	known = u64map_find(&t->raw_by_name, (uintptr_t)iname);
	if (known)
		return (int64_t)known->val;
	if (ALLOC_GROW(t->raws, t->nraws + 1, t->capraws))
		return -1;
	t->raws[t->nraws].name = iname;
	if (u64map_put(&t->raw_by_name, (uintptr_t)iname, t->nraws) < 0)
		return -1;
	return (int64_t)t->nraws++;
}

void tables_raw_count(struct ingest_tables *t, uint32_t raw)
{
	t->raws[raw].count++;
}

static void raw_note(struct tables_raw *raw, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void raw_note(struct tables_raw *raw, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (raw->note)
		return;
	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	raw->note = malloc((size_t)n + 1);
	if (!raw->note)
		return;
	va_start(ap, fmt);
	vsnprintf(raw->note, (size_t)n + 1, fmt, ap);
	va_end(ap);
}

void tables_raw_note(struct ingest_tables *t, uint32_t raw, const char *note)
{
	raw_note(&t->raws[raw], "%s", note);
}

void tables_class_map(struct ingest_tables *t, struct tables_class *c,
		      tables_field_find_fn find, const void *cls)
{
	struct tables_raw *raw = &t->raws[c->raw_id];
	const struct catalog_entry *e = catalog_find(t->cat, raw->name);
	int i, k;

	c->kind = -1;
	if (!e)
		return;
	raw->canonical = e->table;
	c->ncols = e->ncols;
	for (i = 0; i < e->ncols; i++) {
		const struct catalog_column *col = &e->cols[i];
		enum col_src src = COL_ABSENT;
		uint64_t m = 0;

		if (col->nfields == 0) {
			c->col[i].src = COL_CONST;
			c->col[i].cval = col->const_val;
			continue;
		}
		for (k = 0; k < col->nfields && src == COL_ABSENT; k++)
			src = find(cls, col->fields[k], &m);
		c->col[i].src = src;
		c->col[i].member = m;
		if (src == COL_ABSENT && col->required) {
			raw_note(raw, "required field '%s' (column %s) is "
				 "missing or of an unknown type",
				 col->fields[0], col->name);
			log_warn("event %s: field '%s' missing or of an unknown "
				 "type (unknown event version?): counted, "
				 "not mapped to %s", raw->name, col->fields[0],
				 e->table);
			c->kind = -1;
			return;
		}
	}
	if (e->store_raw_id) {
		c->col[c->ncols].src = COL_RAW_ID;
		c->col[c->ncols].cval = c->raw_id;
		c->ncols++;
	}
	c->kind = (int)(e - t->cat->entries);
}

struct tables_trace *tables_trace_add(struct ingest_tables *t,
				      const char *path)
{
	struct tables_trace *tr = calloc(1, sizeof(*tr));

	if (!tr || ALLOC_GROW(t->trace_list, t->ntraces + 1, t->captraces) ||
	    !(tr->path = strdup(path ? path : ""))) {
		free(tr);
		return NULL;
	}
	tr->id = (int64_t)t->ntraces + 1;
	t->trace_list[t->ntraces++] = tr;
	return tr;
}

struct tables_stream *tables_stream_add(struct ingest_tables *t,
					struct tables_trace *tr,
					const char *name)
{
	struct tables_stream *ss = calloc(1, sizeof(*ss));

	if (!ss ||
	    ALLOC_GROW(t->stream_list, t->nstreams + 1, t->capstreams)) {
		free(ss);
		return NULL;
	}
	ss->trace = tr;
	ss->id = (int64_t)t->nstreams + 1;
	ss->name = name ? strdup(name) : NULL;
	t->stream_list[t->nstreams++] = ss;
	return ss;
}

uint64_t tables_seq(struct ingest_tables *t, int64_t ns)
{
	if (!t->have_base) {
		t->have_base = 1;
		t->ts_base = ns;
	}
	t->last_ns = ns;
	return t->seq++;
}

int64_t tables_ts(const struct ingest_tables *t, int64_t ns)
{
	return ns - t->ts_base;
}

/* The thread tid, or NULL when no event named it yet. */
static struct tables_thread *thread_find(struct ingest_tables *t,
					 int64_t tid)
{
	/* Runs of events come from one thread: ask the map once a run. */
	if (!t->last_thread || t->last_tid != tid) {
		t->last_thread = ptrmap_get(&t->threads, (uint64_t)tid);
		t->last_tid = tid;
	}
	return t->last_thread;
}

struct ingest_row *tables_row_next(struct ingest_tables *t)
{
	if (!t->chunk)
		t->chunk = writer_chunk_get(t->w);
	return &t->chunk->rows[t->chunk->n];
}

void tables_row_commit(struct ingest_tables *t)
{
	struct ingest_row *r = &t->chunk->rows[t->chunk->n];

	MR_ASSERT_DBG(r->kind <= (uint32_t)t->cat->nentries);
	if (r->kind == (uint32_t)t->fault_kind ||
	    r->kind == (uint32_t)t->exit_kind)
		fault_decode(t, r);
	if ((int)r->kind != ROW_KIND_THREAD(t->cat)) {
		/* A thread no event named with its process (a trace without
		 * procname): its process is not known. */
		struct vms_thread unknown = { .pid = -1 };
		struct tables_thread *th = r->nullmask & ROW_NULL_TID ? NULL :
			thread_find(t, r->tid);

		if (vms_row(&t->vms, r->nullmask & ROW_NULL_TID ? NULL :
			    th ? &th->vm : &unknown,
			    th ? th->procname : NULL, r) < 0)
			t->nomem = 1;
	}
	t->kind_rows[r->kind]++;
	if (++t->chunk->n == CHUNK_ROWS) {
		writer_chunk_submit(t->w, t->chunk);
		t->chunk = NULL;
	}
}

int tables_writer_failed(const struct ingest_tables *t)
{
	return writer_failed(t->w);
}

void tables_flush(struct ingest_tables *t)
{
	if (t->chunk && t->chunk->n)
		writer_chunk_submit(t->w, t->chunk);
	t->chunk = NULL;
}

const char *tables_intern(struct ingest_tables *t, const char *s)
{
	return strpool_intern(&t->strings, s);
}

/*
 * A thread's name as valid UTF-8: a damaged stream may hold any bytes
 * in a context string, and the DB, the JSON and the reports carry it.
 * Each byte of an ill-formed sequence becomes '?'.  Returns buf.
 */
static const char *name_clean(char *buf, size_t len, const char *name)
{
	const unsigned char *p = (const unsigned char *)name;
	size_t o = 0, n, i;
	unsigned char lo, hi;

	while (*p && o + 5 < len) {
		n = *p < 0x80 ? 1 : *p >= 0xc2 && *p <= 0xdf ? 2 :
			*p >= 0xe0 && *p <= 0xef ? 3 :
			*p >= 0xf0 && *p <= 0xf4 ? 4 : 0;
		/* The second byte's range (no overlong, surrogate or
		 * beyond U+10FFFF); the rest 0x80-0xbf. */
		lo = *p == 0xe0 ? 0xa0 : *p == 0xf0 ? 0x90 : 0x80;
		hi = *p == 0xed ? 0x9f : *p == 0xf4 ? 0x8f : 0xbf;
		for (i = 1; i < n; i++)
			if (p[i] < (i == 1 ? lo : 0x80) ||
			    p[i] > (i == 1 ? hi : 0xbf))
				break;
		if (!n || i < n) {
			buf[o++] = '?';
			p++;
			continue;
		}
		memcpy(buf + o, p, n);
		o += n;
		p += n;
	}
	buf[o] = '\0';
	return buf;
}

int tables_thread_note(struct ingest_tables *t, int64_t tid, int64_t pid,
		       const char *name, uint64_t seq)
{
	struct tables_thread *th = thread_find(t, tid);
	struct ingest_row *r;
	const char *iname, *iraw;
	char clean[256];

	/* A source that does not give the process (LTTng-UST's events
	 * carry vtid and procname, not the pid) naming a thread the kernel
	 * trace named with its process, by the same name, is that thread:
	 * in one PID namespace the vtid is the tid.  Its process stays
	 * known, and so its VM.  What this cannot catch: an application in
	 * another PID namespace whose vtid and name are a host thread's. */
	if (th && (th->vm.pid == pid || (pid < 0 && th->vm.pid >= 0)) &&
	    strcmp(th->raw, name) == 0)
		return 0;
	iraw = strpool_intern(&t->strings, name);
	iname = strpool_intern(&t->strings, name_clean(clean, sizeof(clean),
						       name));
	if (!iname || !iraw)
		return -1;
	if (!th) {
		th = calloc(1, sizeof(*th));
		if (!th || ptrmap_put(&t->threads, (uint64_t)tid, th) < 0) {
			free(th);
			return -1;
		}
		t->last_thread = th;
	} else if (th->vm.pid != pid) {
		/* A tid reused by another process: its VM is not the
		 * old thread's. */
		memset(&th->vm, 0, sizeof(th->vm));
	}
	th->vm.pid = pid;
	th->raw = iraw;
	th->procname = iname;
	r = tables_row_next(t);
	memset(r, 0, sizeof(*r));
	r->kind = ROW_KIND_THREAD(t->cat);
	r->tid = tid;
	r->seq = (int64_t)seq;
	r->textmask = 1;
	r->v[0].text = iname;
	r->v[1].i = pid;
	if (pid < 0)
		r->nullmask |= 2;
	tables_row_commit(t);
	return 0;
}

int tables_lost_add(struct ingest_tables *t, const struct tables_stream *s,
		    int is_packets, int has_range, int64_t begin_ns,
		    int64_t end_ns, int has_count, uint64_t count)
{
	struct tables_lost *l;

	if (ALLOC_GROW(t->lost, t->nlost + 1, t->caplost))
		return -1;
	l = &t->lost[t->nlost++];
	l->stream_id = s->id;
	l->is_packets = is_packets;
	l->has_range = has_range;
	l->begin_ns = begin_ns;
	l->end_ns = end_ns;
	l->has_count = has_count;
	l->count = count;
	if (has_count && !is_packets)
		t->lost_events += count;
	return 0;
}

static int store_bind_text(sqlite3_stmt *st, int i, const char *v)
{
	return v ? sqlite3_bind_text(st, i, v, -1, SQLITE_STATIC) :
		sqlite3_bind_null(st, i);
}

static int store_step(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* Each canonical table's row count (several raw events may fill one
 * table), stored for db_table_count(). */
static int store_row_counts(struct ingest_tables *t, sqlite3 *db)
{
	const char *table;
	int64_t n;
	int i, j;

	for (i = 0; i < t->cat->nentries; i++) {
		table = t->cat->entries[i].table;
		for (j = 0; j < i; j++)
			if (strcmp(t->cat->entries[j].table, table) == 0)
				break;
		if (j < i)
			continue;       /* stored with its first entry */
		for (n = 0, j = i; j < t->cat->nentries; j++)
			if (strcmp(t->cat->entries[j].table, table) == 0)
				n += t->kind_rows[j];
		if (db_table_count_store(db, table, n) != DB_OK)
			return -1;
	}
	return 0;
}

enum tables_status tables_store(struct ingest_tables *t, sqlite3 *db)
{
	enum tables_status status = TABLES_ERR_SQL;
	sqlite3_stmt *st = NULL;
	size_t i;
	int j;

#define TRACE_ENV_COL(e, key, col) ", " col
#define TRACE_ENV_PARAM(e, key, col) ",?"
	if (sqlite3_prepare_v2(db, "INSERT INTO trace (id, path"
			       TRACE_ENV_LIST(TRACE_ENV_COL) ") VALUES (?,?"
			       TRACE_ENV_LIST(TRACE_ENV_PARAM) ")", -1, &st,
			       NULL))
		goto end;
	for (i = 0; i < t->ntraces; i++) {
		struct tables_trace *tr = t->trace_list[i];

		sqlite3_bind_int64(st, 1, tr->id);
		store_bind_text(st, 2, tr->path);
		for (j = 0; j < ENV_N; j++)
			store_bind_text(st, 3 + j, tr->env[j]);
		if (store_step(st) < 0)
			goto end;
	}
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "INSERT INTO stream (id, trace_id, name, "
			       "events) VALUES (?,?,?,?)", -1, &st, NULL))
		goto end;
	for (i = 0; i < t->nstreams; i++) {
		sqlite3_bind_int64(st, 1, t->stream_list[i]->id);
		sqlite3_bind_int64(st, 2, t->stream_list[i]->trace->id);
		store_bind_text(st, 3, t->stream_list[i]->name);
		sqlite3_bind_int64(st, 4, (int64_t)t->stream_list[i]->events);
		if (store_step(st) < 0)
			goto end;
	}
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "INSERT INTO raw_event (id, name, count, "
			       "canonical, note) VALUES (?,?,?,?,?)", -1, &st,
			       NULL))
		goto end;
	for (i = 0; i < t->nraws; i++) {
		sqlite3_bind_int64(st, 1, (int64_t)i);
		store_bind_text(st, 2, t->raws[i].name);
		sqlite3_bind_int64(st, 3, (int64_t)t->raws[i].count);
		store_bind_text(st, 4, t->raws[i].note ? NULL :
				t->raws[i].canonical);
		store_bind_text(st, 5, t->raws[i].note);
		if (store_step(st) < 0)
			goto end;
	}
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "INSERT INTO lost (stream_id, kind, "
			       "begin_ts, end_ts, count) VALUES (?,?,?,?,?)",
			       -1, &st, NULL))
		goto end;
	for (i = 0; i < t->nlost; i++) {
		struct tables_lost *l = &t->lost[i];

		sqlite3_bind_int64(st, 1, l->stream_id);
		store_bind_text(st, 2, l->is_packets ? "packets" : "events");
		if (l->has_range && l->late_start) {
			sqlite3_bind_null(st, 3);
			sqlite3_bind_int64(st, 4, l->end_ns - t->ts_base);
		} else if (l->has_range) {
			sqlite3_bind_int64(st, 3, l->begin_ns - t->ts_base);
			sqlite3_bind_int64(st, 4, l->end_ns - t->ts_base);
		} else {
			sqlite3_bind_null(st, 3);
			sqlite3_bind_null(st, 4);
		}
		if (l->has_count)
			sqlite3_bind_int64(st, 5, (int64_t)l->count);
		else
			sqlite3_bind_null(st, 5);
		if (store_step(st) < 0)
			goto end;
	}
	sqlite3_finalize(st);
	st = NULL;
	if (db_meta_set_int(db, "ts_base_ns", t->ts_base) != DB_OK ||
	    db_meta_set_int(db, "events", (int64_t)t->seq) != DB_OK ||
	    db_meta_set_int(db, "last_ts", t->last_ns - t->ts_base) != DB_OK ||
	    db_meta_set_int(db, "lost_events",
			    (int64_t)t->lost_events) != DB_OK ||
	    store_row_counts(t, db) < 0 || vms_store(&t->vms, db) < 0)
		goto end;
	if (t->nomem) {
		status = TABLES_ERR_NOMEM;
		goto end;
	}
	status = TABLES_OK;
end:
	if (status != TABLES_OK)
		log_error("%s: cannot store capture tables: %s",
			  sqlite3_db_filename(db, "main"), sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return status;
}

/* The SQL functions mmureplay_fault_access(isa, error_code) and, with
 * user data, mmureplay_fault_present(): fault_decode()'s columns. */
static void sql_fault_kind(sqlite3_context *ctx, int argc,
			   sqlite3_value **argv)
{
	uint64_t pferr = mev_fault_pferr(sqlite3_value_int(argv[0]),
		(uint64_t)sqlite3_value_int64(argv[1]));

	(void)argc;
	if (sqlite3_user_data(ctx))
		sqlite3_result_int(ctx, mev_pferr_present(pferr));
	else
		sqlite3_result_text(ctx, mev_access_name(
			mev_pferr_access(pferr)), -1, SQLITE_STATIC);
}

enum tables_status tables_fault_decode_rest(struct ingest_tables *t,
					    sqlite3 *db, int fallback_isa,
					    int *isa)
{
	static const char *const sql =
		"UPDATE fault SET access = mmureplay_fault_access(?1, "
		"error_code), present = mmureplay_fault_present(?1, "
		"error_code) WHERE access IS NULL AND error_code IS NOT NULL";
	static int present = 1;
	sqlite3_stmt *st = NULL;
	enum tables_status status = TABLES_OK;

	*isa = t->isa ? t->isa : fallback_isa;
	if (!t->faults_undecoded || !*isa)
		return TABLES_OK;
	if (sqlite3_create_function(db, "mmureplay_fault_access", 2,
				    SQLITE_UTF8 | SQLITE_DETERMINISTIC, NULL,
				    sql_fault_kind, NULL, NULL) != SQLITE_OK ||
	    sqlite3_create_function(db, "mmureplay_fault_present", 2,
				    SQLITE_UTF8 | SQLITE_DETERMINISTIC,
				    &present, sql_fault_kind, NULL,
				    NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK ||
	    sqlite3_bind_int(st, 1, *isa) != SQLITE_OK ||
	    sqlite3_step(st) != SQLITE_DONE) {
		log_error("%s: %s", sqlite3_db_filename(db, "main"),
			  sqlite3_errmsg(db));
		status = TABLES_ERR_SQL;
	}
	sqlite3_finalize(st);
	return status;
}
