/*
 * DB and array event sources (see source.h).
 *
 * Invariant of the merge: cur[i] holds the next unread row of table i (or
 * is exhausted); the event returned is the one with the smallest seq, and
 * seq values are unique across tables, so the order is total.
 */
#include "replay/source.h"

#include "db/db.h"
#include "model/event_fields.h"
#include "replay/stream.h"
#include "replay/vm_attr.h"
#include "util/assert.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct table_spec {
	enum model_event_kind kind;
	const char *sql;
	const char *table;      /* where the rows come from */
	const char *tables;     /* what it reads (for the stream's guards) */
};

struct table_reader {
	enum model_event_kind kind;
	sqlite3_stmt *st;
	int has_row;
	int64_t next_seq;               /* seq of the current row */
};

/*
 * One statement per kind, made from its field list (model/event_fields.h):
 * seq, ts, cpu, tid, vm, then the fields' columns in the list's order,
 * which decode() reads by the same list.
 */
#define SQL_COLUMN(column, type, member) ", " column
/* main.: the capture's tables, never a view that narrows them to one VM
 * (db_narrow_vm()): the replay needs every thread's events to tell whose
 * state a kernel thread changes. */
#define TABLE_SPEC(kind, fields, table, also, join) \
	{ kind, "SELECT seq, ts, cpu, tid, " table ".vm" fields(SQL_COLUMN) \
	  " FROM main." table \
	  join " ORDER BY seq", table, table also },

static const struct table_spec tables[] = {
	MEV_EVENT_TABLES(TABLE_SPEC)
};

#define NREADERS (sizeof(tables) / sizeof(tables[0]))

enum source_kind {
	SOURCE_TABLES,
	SOURCE_STREAM,
	SOURCE_ARRAY,
};

struct source {
	enum source_kind kind;
	sqlite3 *db;
	struct table_reader r[NREADERS];
	struct stream_reader *stream;
	sqlite3 *spool;                 /* the stream's own temporary DB */
	/* Array source. */
	const struct model_event *arr;
	size_t n, pos;
	/* The capture's last timestamp (meta last_ts): an event after it,
	 * or before the time base, is corrupt.  -1: no bound (arrays). */
	int64_t ts_max;
	/* Progress of the pass (source_progress): its name ("": none),
	 * events returned since the rewind, and how many the source holds
	 * (0: not counted yet). */
	char what[64];
	uint64_t done, total;
	/* source_narrow(): the VM whose events alone pass (0: all). */
	int vm;
	const struct vm_attr *attr;
};

static int advance(struct source *s, struct table_reader *r)
{
	int rc = sqlite3_step(r->st);

	r->has_row = rc == SQLITE_ROW;
	if (r->has_row)
		r->next_seq = sqlite3_column_int64(r->st, 0);
	if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
		log_error("%s: reading events: %s",
			  sqlite3_db_filename(s->db, "main"),
			  sqlite3_errmsg(s->db));
		return -1;
	}
	return 0;
}

enum source_status source_rewind(struct source *s)
{
	size_t i;

	s->done = 0;
	if (s->kind == SOURCE_ARRAY) {
		s->pos = 0;
		return SOURCE_OK;
	}
	if (s->kind == SOURCE_STREAM)
		return stream_reader_rewind(s->stream) == STREAM_OK ?
			SOURCE_OK : SOURCE_ERR;
	for (i = 0; i < NREADERS; i++) {
		sqlite3_reset(s->r[i].st);
		if (advance(s, &s->r[i]) < 0)
			return SOURCE_ERR;
	}
	return SOURCE_OK;
}

struct source *source_open_tables(sqlite3 *db)
{
	struct source *s = calloc(1, sizeof(*s));
	size_t i;

	if (!s)
		return NULL;
	s->kind = SOURCE_TABLES;
	s->db = db;
	s->ts_max = db_meta_get_int(db, "last_ts", -1);
	for (i = 0; i < NREADERS; i++) {
		s->r[i].kind = tables[i].kind;
		if (sqlite3_prepare_v2(db, tables[i].sql, -1, &s->r[i].st,
				       NULL) != SQLITE_OK) {
			log_error("%s: %s", sqlite3_db_filename(db, "main"),
				  sqlite3_errmsg(db));
			source_close(s);
			return NULL;
		}
	}
	if (source_rewind(s) != SOURCE_OK) {
		source_close(s);
		return NULL;
	}
	return s;
}

/* A source reading r, a stream of db's events (in db, or in spool, a
 * temporary DB it then owns).  Returns it; NULL when out of memory, r
 * then closed. */
static struct source *stream_source(sqlite3 *db, struct stream_reader *r,
				    sqlite3 *spool)
{
	struct source *s = calloc(1, sizeof(*s));

	if (!s) {
		stream_reader_close(r);
		return NULL;
	}
	s->kind = SOURCE_STREAM;
	s->db = db;
	s->ts_max = db_meta_get_int(db, "last_ts", -1);
	s->stream = r;
	s->spool = spool;
	return s;
}

struct source *source_open(sqlite3 *db)
{
	struct stream_reader *r;

	switch (stream_reader_open(db, &r)) {
	case STREAM_ABSENT:
		return source_open_tables(db);
	case STREAM_OK:
		break;
	default:
		return NULL;
	}
	return stream_source(db, r, NULL);
}

int source_is_stream(const struct source *s)
{
	return s->kind == SOURCE_STREAM;
}

/*
 * Copy the events of db's tables into w (begun; the caller chooses which
 * tables to guard).  Returns 0; -1 after a corrupt event or a failed
 * write (logged), with *corrupt set for a corrupt event.
 */
static int stream_copy(sqlite3 *db, struct stream_writer *w, const char *what,
		       int *corrupt)
{
	struct source *src = source_open_tables(db);
	struct model_event ev;
	enum source_status ss;
	int rc = -1;

	*corrupt = 0;
	if (!src) {
		*corrupt = 1;
		return -1;
	}
	source_progress(src, what);
	while ((ss = source_next(src, &ev)) == SOURCE_OK)
		if (stream_writer_add(w, &ev) != STREAM_OK)
			goto end;
	*corrupt = ss != SOURCE_END;
	rc = *corrupt ? -1 : 0;
end:
	source_close(src);
	return rc;
}

/*
 * A temporary stream for a source of db's events: its DB and a writer
 * begun on it (the caller adds the events).  Returns 0; -1 when it
 * cannot be made (no room, out of memory), *tmp and *w then NULL.
 */
static int spool_begin(sqlite3 *db, int64_t events, sqlite3 **tmp,
		       struct stream_writer **w)
{
	*w = NULL;
	/* "": SQLite's private temporary file, deleted at close; its pages
	 * past a small cache live in the file, not in memory. */
	if (sqlite3_open_v2("", tmp, SQLITE_OPEN_READWRITE |
			    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) ==
	    SQLITE_OK &&
	    db_exec(*tmp, "CREATE TABLE meta (key TEXT PRIMARY KEY, value) "
		    "WITHOUT ROWID") == DB_OK &&
	    db_meta_set_int(*tmp, "events", events) == DB_OK &&
	    stream_writer_begin(*tmp, w) == STREAM_OK)
		return 0;
	sqlite3_close(*tmp);
	*tmp = NULL;
	(void)db;
	return -1;
}

/*
 * Commits w and returns a source reading tmp's stream, which it owns
 * from then on; NULL when that fails (tmp is then closed).
 */
static struct source *spool_source(sqlite3 *db, sqlite3 *tmp,
				   struct stream_writer *w)
{
	struct stream_reader *r = NULL;
	struct source *s = NULL;

	if (stream_writer_commit(w) != STREAM_OK ||
	    stream_reader_open(tmp, &r) != STREAM_OK ||
	    !(s = stream_source(db, r, tmp))) {
		sqlite3_close(tmp);
		return NULL;
	}
	return s;
}

int source_split_vms(struct source *src, sqlite3 *db, int nvms,
		     const struct vm_attr *attr, struct source **out)
{
	struct stream_writer **w;
	sqlite3 **tmp;
	struct model_event ev;
	enum source_status ss;
	int v, rc = -2;

	MR_ASSERT(nvms > 0 && src->vm == 0);
	memset(out, 0, (size_t)nvms * sizeof(*out));
	w = calloc((size_t)nvms, sizeof(*w));
	tmp = calloc((size_t)nvms, sizeof(*tmp));
	if (!w || !tmp)
		goto end;
	for (v = 0; v < nvms; v++)
		/* A VM's count is known after the pass (the stream's
		 * replay_stream_events); "events" only ties it to tmp. */
		if (spool_begin(db, 0, &tmp[v], &w[v]) < 0)
			goto end;
	rc = -1;
	if (source_rewind(src) != SOURCE_OK)
		goto end;
	source_progress(src, "replay: the events by VM");
	while ((ss = source_next(src, &ev)) == SOURCE_OK) {
		int vm = vm_attr_of(attr, &ev);

		/* Events of no VM (a context that zapped nothing, a
		 * syscall of a process with none) are no VM's replay. */
		if (vm < 1 || vm > nvms)
			continue;
		if (stream_writer_add(w[vm - 1], &ev) != STREAM_OK) {
			rc = -2;
			goto end;
		}
	}
	if (ss != SOURCE_END)
		goto end;
	rc = -2;
	for (v = 0; v < nvms; v++) {
		out[v] = spool_source(db, tmp[v], w[v]);
		w[v] = NULL;            /* committed or rolled back */
		tmp[v] = NULL;          /* the source's, or closed */
		if (!out[v])
			goto end;
	}
	rc = 0;
end:
	for (v = 0; w && tmp && v < nvms; v++) {
		stream_writer_abort(w[v]);
		sqlite3_close(tmp[v]);
		if (rc < 0) {
			source_close(out[v]);
			out[v] = NULL;
		}
	}
	free(w);
	free(tmp);
	return rc;
}

struct source *source_open_spooled(sqlite3 *db)
{
	struct stream_writer *w = NULL;
	struct source *s = NULL;
	sqlite3 *tmp = NULL;
	int corrupt = 0;

	if (stream_current(db))
		return source_open(db);
	if (spool_begin(db, db_meta_get_int(db, "events", -2), &tmp, &w) < 0)
		goto fallback;
	if (stream_copy(db, w, "replay: reading the tables", &corrupt) < 0) {
		stream_writer_abort(w);
		if (corrupt)
			goto end;
		goto fallback;
	}
	s = spool_source(db, tmp, w);
	tmp = NULL;
	if (s)
		return s;
fallback:
	log_warn("%s: no room for a temporary copy of the events: the replay "
		 "reads the tables in each pass", sqlite3_db_filename(db,
								      "main"));
	sqlite3_close(tmp);
	return source_open_tables(db);
end:
	sqlite3_close(tmp);
	return NULL;
}

int source_stream_ensure(sqlite3 *db)
{
	struct stream_writer *w = NULL;
	size_t i;
	int rc = -1, corrupt;

	if (stream_current(db))
		return 0;
	if (stream_writer_begin(db, &w) != STREAM_OK)
		goto end;
	for (i = 0; i < NREADERS; i++)
		if (stream_writer_guard(w, tables[i].tables) != STREAM_OK)
			goto end;
	if (stream_copy(db, w, "replay stream: writing", &corrupt) < 0)
		goto end;
	rc = stream_writer_commit(w) == STREAM_OK ? 0 : -1;
	w = NULL;       /* committed or rolled back */
end:
	stream_writer_abort(w);
	return rc;
}

struct source *source_from_array(const struct model_event *evs, size_t n)
{
	struct source *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->kind = SOURCE_ARRAY;
	s->arr = evs;
	s->n = n;
	s->ts_max = -1;
	return s;
}

void source_close(struct source *s)
{
	size_t i;

	if (!s)
		return;
	stream_reader_close(s->stream);
	for (i = 0; i < NREADERS; i++)
		sqlite3_finalize(s->r[i].st);
	if (s->spool)
		sqlite3_close(s->spool);
	free(s);
}

/* Which phase-marking syscall a raw event name ("syscall_entry_ioctl")
 * is. */
static enum model_syscall sys_call(const char *raw)
{
	static const char *const known[MSYS_OTHER] = {
		[MSYS_IOCTL] = "ioctl",
		[MSYS_MPROTECT] = "mprotect",
		[MSYS_MADVISE] = "madvise",
	};
	const char *p = raw ? strrchr(raw, '_') : NULL;
	int i;

	for (i = 0; p && i < MSYS_OTHER; i++)
		if (strcmp(p + 1, known[i]) == 0)
			return (enum model_syscall)i;
	return MSYS_OTHER;
}

/*
 * Column readers, one per field type of model/event_fields.h: column i
 * of the current row into *v.
 */
static void col_INT(sqlite3_stmt *st, int i, int *v)
{
	*v = sqlite3_column_int(st, i);
}

static void col_I64(sqlite3_stmt *st, int i, int64_t *v)
{
	*v = sqlite3_column_int64(st, i);
}

static void col_U64(sqlite3_stmt *st, int i, uint64_t *v)
{
	*v = (uint64_t)sqlite3_column_int64(st, i);
}

#define col_SPT col_U64
#define col_XOR col_U64

/* Names are borrowed from the raw_event row; keep only the distinction
 * the replay needs. */
static void col_SYS(sqlite3_stmt *st, int i, enum model_syscall *v)
{
	*v = sys_call((const char *)sqlite3_column_text(st, i));
}

/* LTTng names an entry syscall_entry_X, ftrace syscalls:sys_enter_X. */
static void col_ENTRY(sqlite3_stmt *st, int i, int *v)
{
	const char *name = (const char *)sqlite3_column_text(st, i);

	*v = name && (strncmp(name, "syscall_entry_", 14) == 0 ||
		      strncmp(name, "syscalls:sys_enter_", 19) == 0);
}

/* Straight-line per kind: the column of a field is its place in the
 * kind's list after seq, ts, cpu, tid, vm (TABLE_SPEC's SELECT). */
#define DECODE_FIELD(column, type, member) col_##type(st, i++, &ev->member);
#define DECODE_KIND(kind, fields, table, also, join) \
	case kind: fields(DECODE_FIELD) break;

static void decode(struct table_reader *r, struct model_event *ev)
{
	sqlite3_stmt *st = r->st;
	int i = 5;

	memset(ev, 0, sizeof(*ev));
	ev->kind = r->kind;
	col_U64(st, 0, &ev->seq);
	ev->ts = sqlite3_column_int64(st, 1);
	ev->cpu = sqlite3_column_int(st, 2);
	ev->tid = sqlite3_column_int(st, 3);
	ev->vm = sqlite3_column_int(st, 4);     /* NULL: 0 */
	switch (r->kind) {
	MEV_EVENT_TABLES(DECODE_KIND)
	default:
		break;
	}
}

static enum source_status next_event(struct source *s, struct model_event *ev)
{
	struct table_reader *best = NULL;
	size_t i;

	if (s->kind == SOURCE_ARRAY) {
		if (s->pos == s->n)
			return SOURCE_END;
		*ev = s->arr[s->pos++];
		return SOURCE_OK;
	}
	if (s->kind == SOURCE_STREAM) {
		switch (stream_reader_next(s->stream, ev)) {
		case STREAM_OK:
			return SOURCE_OK;
		case STREAM_END:
			return SOURCE_END;
		default:
			return SOURCE_ERR;
		}
	}
	for (i = 0; i < NREADERS; i++)
		if (s->r[i].has_row && (!best ||
					s->r[i].next_seq < best->next_seq))
			best = &s->r[i];
	if (!best)
		return SOURCE_END;
	decode(best, ev);
	return advance(s, best) < 0 ? SOURCE_ERR : SOURCE_OK;
}

/* The table an event kind comes from, for messages. */
static const char *kind_table(enum model_event_kind kind)
{
	size_t i;

	for (i = 0; i < NREADERS; i++)
		if (tables[i].kind == kind)
			return tables[i].tables;
	return "event";
}

/* Events in the source: the stream's count, or about the tables' rows
 * (a progress line's total). */
static uint64_t source_total(struct source *s)
{
	int64_t n = 0, c;
	size_t i;

	if (s->kind == SOURCE_ARRAY)
		return s->n;
	if (s->kind == SOURCE_STREAM)
		return (uint64_t)db_meta_get_int(s->spool ? s->spool : s->db,
						 "replay_stream_events", 0);
	for (i = 0; i < NREADERS; i++) {
		c = db_table_rows_hint(s->db, tables[i].table);
		n += c > 0 ? c : 0;
	}
	return (uint64_t)n;
}

void source_progress(struct source *s, const char *what)
{
	snprintf(s->what, sizeof(s->what), "%s", what);
	if (!s->total)
		s->total = source_total(s);
}

void source_narrow(struct source *s, int vm, const struct vm_attr *attr)
{
	s->vm = vm;
	s->attr = attr;
}

enum source_status source_next(struct source *s, struct model_event *ev)
{
	enum source_status st;
	const char *why;

	do
		st = next_event(s, ev);
	while (st == SOURCE_OK && s->vm && (s->attr ? vm_attr_of(s->attr, ev) :
					    ev->vm) != s->vm);

	if (st != SOURCE_OK) {
		if (s->what[0]) {
			log_progress_end();
			s->what[0] = '\0';
		}
		return st;
	}
	if (s->what[0] && !(++s->done & 0xffff))
		log_progress_of(s->what, s->done, s->total);
	/* Values the model indexes by are checked before it sees them:
	 * a damaged trace or an edited DB stops here, in one line. */
	why = model_event_implausible(ev);
	if (!why && s->ts_max >= 0 && (ev->ts < 0 || ev->ts > s->ts_max))
		why = "time outside the capture";
	if (why) {
		log_error("%s: %s event seq %llu: %s (the trace or the DB is "
			  "corrupt there)", s->db ? sqlite3_db_filename(s->db,
			  "main") : "events", kind_table(ev->kind),
			  (unsigned long long)ev->seq, why);
		return SOURCE_ERR;
	}
	return SOURCE_OK;
}
