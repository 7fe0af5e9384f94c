/*
 * DB and array event sources (see source.h).
 *
 * Invariant of the merge: cur[i] holds the next unread row of table i (or
 * is exhausted); the event returned is the one with the smallest seq, and
 * seq values are unique across tables, so the order is total.
 */
#include "replay/source.h"

#include "db/db.h"
#include "replay/stream.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct table_spec {
	enum model_event_kind kind;
	const char *sql;
	const char *tables;     /* what it reads (for the stream's guards) */
};

struct table_reader {
	enum model_event_kind kind;
	sqlite3_stmt *st;
	int has_row;
	int64_t next_seq;               /* seq of the current row */
};

static const struct table_spec tables[] = {
	{ MEV_SPTE_CHANGE, "SELECT seq, ts, cpu, tid, as_id, gfn, level, "
	  "old_spte, new_spte FROM spte_change ORDER BY seq",
	  "spte_change" },
	{ MEV_FAULT, "SELECT seq, ts, cpu, tid, vcpu, gpa, error_code FROM "
	  "fault ORDER BY seq",
	  "fault" },
	{ MEV_FAST_FAULT, "SELECT seq, ts, cpu, tid, vcpu, gpa, error_code, "
	  "old_spte, new_spte FROM fast_fault ORDER BY seq",
	  "fast_fault" },
	{ MEV_NOTIFIER, "SELECT seq, ts, cpu, tid, phase, hva_start, hva_end, "
	  "event, flags, perm_upgrade FROM notifier ORDER BY seq",
	  "notifier" },
	{ MEV_SP_ALLOC, "SELECT seq, ts, cpu, tid, gfn, role FROM sp_alloc "
	  "ORDER BY seq",
	  "sp_alloc" },
	{ MEV_SP_FREE, "SELECT seq, ts, cpu, tid, gfn, role FROM sp_free "
	  "ORDER BY seq",
	  "sp_free" },
	{ MEV_VCPU_EXIT, "SELECT seq, ts, cpu, tid, vcpu, exit_reason FROM "
	  "vcpu_exit ORDER BY seq",
	  "vcpu_exit" },
	{ MEV_VCPU_ENTRY, "SELECT seq, ts, cpu, tid, vcpu FROM vcpu_entry "
	  "ORDER BY seq",
	  "vcpu_entry" },
	{ MEV_SYSCALL, "SELECT s.seq, s.ts, s.cpu, s.tid, r.name, s.a0, s.a1, "
	  "s.a2 FROM syscall s JOIN raw_event r ON r.id = s.raw_id ORDER BY "
	  "s.seq",
	  "syscall raw_event" },
	{ MEV_UNMAP_DECISION, "SELECT seq, ts, cpu, tid, as_id, slot, "
	  "gfn_start, gfn_end, perm_upgrade, decision, flush, event FROM "
	  "unmap_decision ORDER BY seq",
	  "unmap_decision" },
	{ MEV_TLB_FLUSH, "SELECT seq, ts, cpu, tid, gfn_start, pages, ranged "
	  "FROM tlb_flush ORDER BY seq",
	  "tlb_flush" },
	{ MEV_NX_RECOVERY, "SELECT seq, ts, cpu, tid, phase, lock_mode, pages, "
	  "to_zap, zapped, skipped_dirty, gfn, level, ratio, raced, action "
	  "FROM nx_recovery ORDER BY seq",
	  "nx_recovery" },
	{ MEV_LOCK_WAIT, "SELECT seq, ts, cpu, tid, vcpu, wait_ns, gfn, "
	  "error_code, lock_mode FROM lock_wait ORDER BY seq",
	  "lock_wait" },
	{ MEV_LOCK_CONTENTION, "SELECT seq, ts, cpu, tid, phase, lock_addr "
	  "FROM lock_contention ORDER BY seq",
	  "lock_contention" },
	{ MEV_MEMSLOT, "SELECT seq, ts, cpu, tid, as_id, slot, change, "
	  "base_gfn, npages, hva, old_flags, new_flags FROM memslot ORDER BY "
	  "seq",
	  "memslot" },
	{ MEV_SPTE_REQUEST, "SELECT seq, ts, cpu, tid, gfn, level FROM "
	  "spte_request ORDER BY seq",
	  "spte_request" },
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
};

static uint64_t u(sqlite3_stmt *st, int i)
{
	return (uint64_t)sqlite3_column_int64(st, i);
}

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

struct source *source_open(sqlite3 *db)
{
	struct stream_reader *r;
	struct source *s;

	switch (stream_reader_open(db, &r)) {
	case STREAM_ABSENT:
		return source_open_tables(db);
	case STREAM_OK:
		break;
	default:
		return NULL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		stream_reader_close(r);
		return NULL;
	}
	s->kind = SOURCE_STREAM;
	s->db = db;
	s->ts_max = db_meta_get_int(db, "last_ts", -1);
	s->stream = r;
	return s;
}

int source_is_stream(const struct source *s)
{
	return s->kind == SOURCE_STREAM;
}

/*
 * Copy the tables' events into a stream in out (open, in a transaction
 * of the stream writer).  The caller's choice of what to guard against.
 * 0; -1 after a corrupt event or a failed write (logged), *corrupt set
 * for the first.
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

struct source *source_open_spooled(sqlite3 *db)
{
	struct stream_writer *w = NULL;
	struct stream_reader *r = NULL;
	struct source *s = NULL;
	sqlite3 *tmp = NULL;
	int corrupt = 0;

	if (stream_current(db))
		return source_open(db);
	/* "": SQLite's private temporary file, deleted at close; its pages
	 * past a small cache live in the file, not in memory. */
	if (sqlite3_open_v2("", &tmp, SQLITE_OPEN_READWRITE |
			    SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK ||
	    db_exec(tmp, "CREATE TABLE meta (key TEXT PRIMARY KEY, value) "
		    "WITHOUT ROWID") != DB_OK ||
	    db_meta_set_int(tmp, "events", db_meta_get_int(db, "events", -2)) !=
	    DB_OK ||
	    stream_writer_begin(tmp, &w) != STREAM_OK)
		goto fallback;
	if (stream_copy(db, w, "replay: reading the tables", &corrupt) < 0) {
		stream_writer_abort(w);
		if (corrupt)
			goto end;
		goto fallback;
	}
	if (stream_writer_commit(w) != STREAM_OK ||
	    stream_reader_open(tmp, &r) != STREAM_OK ||
	    !(s = calloc(1, sizeof(*s))))
		goto fallback;
	s->kind = SOURCE_STREAM;
	s->db = db;
	s->ts_max = db_meta_get_int(db, "last_ts", -1);
	s->stream = r;
	s->spool = tmp;
	return s;
fallback:
	log_warn("%s: no room for a temporary copy of the events: the replay "
		 "reads the tables in each pass", sqlite3_db_filename(db,
								      "main"));
	stream_reader_close(r);
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

static void decode(struct table_reader *r, struct model_event *ev)
{
	sqlite3_stmt *st = r->st;

	memset(ev, 0, sizeof(*ev));
	ev->kind = r->kind;
	ev->seq = u(st, 0);
	ev->ts = sqlite3_column_int64(st, 1);
	ev->cpu = sqlite3_column_int(st, 2);
	ev->tid = sqlite3_column_int(st, 3);
	switch (r->kind) {
	case MEV_SPTE_CHANGE:
		ev->u.spte.as_id = sqlite3_column_int(st, 4);
		ev->u.spte.gfn = u(st, 5);
		ev->u.spte.level = sqlite3_column_int(st, 6);
		ev->u.spte.old_spte = u(st, 7);
		ev->u.spte.new_spte = u(st, 8);
		break;
	case MEV_FAULT:
	case MEV_FAST_FAULT:
		ev->u.fault.vcpu = sqlite3_column_int64(st, 4);
		ev->u.fault.gpa = u(st, 5);
		ev->u.fault.error_code = u(st, 6);
		if (r->kind == MEV_FAST_FAULT) {
			ev->fast_old = u(st, 7);
			ev->fast_new = u(st, 8);
		}
		break;
	case MEV_NOTIFIER:
		ev->u.notifier.phase = sqlite3_column_int(st, 4);
		ev->u.notifier.hva_start = u(st, 5);
		ev->u.notifier.hva_end = u(st, 6);
		ev->u.notifier.has_event =
			sqlite3_column_type(st, 7) != SQLITE_NULL;
		ev->u.notifier.event = sqlite3_column_int64(st, 7);
		ev->u.notifier.flags = sqlite3_column_int64(st, 8);
		ev->u.notifier.perm_upgrade = sqlite3_column_int(st, 9);
		break;
	case MEV_SP_ALLOC:
	case MEV_SP_FREE:
		ev->u.sp.gfn = u(st, 4);
		ev->u.sp.role = u(st, 5);
		break;
	case MEV_VCPU_EXIT:
		ev->u.vcpu.vcpu = sqlite3_column_int64(st, 4);
		ev->u.vcpu.reason = sqlite3_column_int64(st, 5);
		break;
	case MEV_VCPU_ENTRY:
		ev->u.vcpu.vcpu = sqlite3_column_int64(st, 4);
		break;
	case MEV_SYSCALL: {
		const char *name = (const char *)sqlite3_column_text(st, 4);

		/* Names are borrowed from the raw_event row; keep only the
		 * distinction the replay needs.  LTTng names an entry
		 * syscall_entry_X, ftrace syscalls:sys_enter_X. */
		ev->u.sys.entry = name && (strncmp(name, "syscall_entry_",
						   14) == 0 ||
					   strncmp(name, "syscalls:sys_enter_",
						   19) == 0);
		ev->u.sys.call = sys_call(name);
		ev->u.sys.a0 = u(st, 5);
		ev->u.sys.a1 = u(st, 6);
		ev->u.sys.a2 = u(st, 7);
		break;
	}
	case MEV_UNMAP_DECISION:
		ev->u.unmap.as_id = sqlite3_column_int(st, 4);
		ev->u.unmap.slot = sqlite3_column_int(st, 5);
		ev->u.unmap.gfn_start = u(st, 6);
		ev->u.unmap.gfn_end = u(st, 7);
		ev->u.unmap.perm_upgrade = sqlite3_column_int(st, 8);
		ev->u.unmap.decision = sqlite3_column_int(st, 9);
		ev->u.unmap.flush = sqlite3_column_int(st, 10);
		ev->u.unmap.event = sqlite3_column_int(st, 11);
		break;
	case MEV_TLB_FLUSH:
		ev->u.flush.gfn_start = u(st, 4);
		ev->u.flush.pages = u(st, 5);
		ev->u.flush.ranged = sqlite3_column_int(st, 6);
		break;
	case MEV_NX_RECOVERY:
		ev->u.nx.phase = sqlite3_column_int(st, 4);
		ev->u.nx.lock_mode = sqlite3_column_int(st, 5);
		ev->u.nx.pages = sqlite3_column_int64(st, 6);
		ev->u.nx.to_zap = sqlite3_column_int64(st, 7);
		ev->u.nx.zapped = sqlite3_column_int64(st, 8);
		ev->u.nx.skipped_dirty = sqlite3_column_int64(st, 9);
		ev->u.nx.gfn = u(st, 10);
		ev->u.nx.level = sqlite3_column_int(st, 11);
		ev->u.nx.ratio = sqlite3_column_int64(st, 12);
		ev->u.nx.raced = sqlite3_column_int64(st, 13);
		ev->u.nx.action = sqlite3_column_int(st, 14);
		break;
	case MEV_LOCK_WAIT:
		ev->u.lock.vcpu = sqlite3_column_int64(st, 4);
		ev->u.lock.wait_ns = sqlite3_column_int64(st, 5);
		ev->u.lock.gfn = u(st, 6);
		ev->u.lock.error_code = u(st, 7);
		ev->u.lock.lock_mode = sqlite3_column_int(st, 8);
		break;
	case MEV_LOCK_CONTENTION:
		ev->u.contention.phase = sqlite3_column_int(st, 4);
		ev->u.contention.lock_addr = u(st, 5);
		break;
	case MEV_MEMSLOT:
		ev->u.memslot.as_id = sqlite3_column_int(st, 4);
		ev->u.memslot.slot = sqlite3_column_int(st, 5);
		ev->u.memslot.change = sqlite3_column_int(st, 6);
		ev->u.memslot.base_gfn = u(st, 7);
		ev->u.memslot.npages = u(st, 8);
		ev->u.memslot.hva = u(st, 9);
		ev->u.memslot.old_flags = u(st, 10);
		ev->u.memslot.new_flags = u(st, 11);
		break;
	case MEV_SPTE_REQUEST:
		ev->u.req.gfn = u(st, 4);
		ev->u.req.level = sqlite3_column_int(st, 5);
		break;
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
		char name[32];

		/* The first table named is the one the rows come from. */
		if (sscanf(tables[i].tables, "%31s", name) != 1)
			continue;
		c = db_table_rows_hint(s->db, name);
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

enum source_status source_next(struct source *s, struct model_event *ev)
{
	enum source_status st = next_event(s, ev);
	const char *why;

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
