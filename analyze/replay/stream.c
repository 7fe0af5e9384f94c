/*
 * The replay stream's format, writer and reader (see stream.h).
 *
 * A chunk (one row of replay_stream) is a run of events; the delta state
 * starts from zero in every chunk, so a chunk decodes on its own.  An
 * event is
 *
 *   byte     kind (bits 0-4) | SAME_CTX (bit 5: cpu, tid and vm as
 *            the previous event; bits 6-7 are 0)
 *   varint   seq - previous seq
 *   zvarint  ts - previous ts
 *   zvarint  cpu, zvarint tid, varint vm      (absent with SAME_CTX)
 *   fields   the kind's fields, in the order of its list
 *            (model/event_fields.h)
 *
 * varint: 7 bits a byte, low first; zvarint: zigzag then varint.  A u64
 * field is a zvarint of its difference to the same field of the kind's
 * previous event in the chunk; a signed one a zvarint of its value; an
 * SPTE a varint of its XOR with the kind's previous one, rotated left by
 * one; an XOR field the same against the SPTE before it in the event (an
 * SPTE change's new value against the old one); a syscall is one byte,
 * its enum model_syscall.
 *
 * Members a kind's list does not name are 0, as the table source leaves
 * them.
 */
#include "replay/stream.h"

#include "db/db.h"
#include "model/event_fields.h"
#include "util/assert.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STREAM_FORMAT 6        /* bump on any change of the encoding,
				 * a kind's field list included */
#define CHUNK_BYTES 65536
#define EVENT_MAX_BYTES 256     /* header + 16 fields of 10 bytes, rounded */
#define KIND_MASK 0x1f
#define SAME_CTX 0x20

/*
 * The fields of each kind, in stream order, are its list in
 * model/event_fields.h: X(column, type, member).  Encoders and decoders
 * are generated from these lists, one straight-line function per kind: a
 * generic loop over a field table spends more on its per-field type
 * dispatch than on the varints.  A syscall's ENTRY flag is packed as an
 * INT.
 */
#define FIELDS_MAX 16           /* fields of the widest kind, rounded */

/* Every kind fits the column state, every event the encode buffer's
 * slack (header: kind, seq, ts, cpu, tid, vm; a field at most 10 bytes). */
#define COUNT_FIELD(column, type, member) + 1
#define CHECK_KIND(kind, fields, table, also, join) \
	_Static_assert(0 fields(COUNT_FIELD) <= FIELDS_MAX, #kind);
MEV_EVENT_TABLES(CHECK_KIND)
_Static_assert(1 + 5 * 10 + FIELDS_MAX * 10 <= EVENT_MAX_BYTES,
	       "EVENT_MAX_BYTES");
/* A kind is bits 0-4 of the event's first byte: a 33rd kind needs a new
 * layout of that byte (and a new STREAM_FORMAT). */
_Static_assert(MEV_KINDS <= KIND_MASK + 1, "MEV_KINDS beyond the kind bits");

/*
 * Delta state: what the previous event of the chunk had, and per kind
 * and field the value the last event of that kind had (column deltas:
 * consecutive faults, installs and zaps walk neighbouring gfns and
 * pfns, so a field's change is small where the value is not).
 */
struct delta {
	uint64_t seq;
	int64_t ts;
	int32_t cpu, tid, vm;
	uint64_t last[MEV_KINDS][FIELDS_MAX];
};

/* ---- encoding ---- */

static unsigned char *put_varint(unsigned char *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (unsigned char)(v | 0x80);
		v >>= 7;
	}
	*p++ = (unsigned char)v;
	return p;
}

static uint64_t zigzag(int64_t v)
{
	/* The sign bit spread over all bits, without a signed shift. */
	return ((uint64_t)v << 1) ^ (0 - ((uint64_t)v >> 63));
}

static int64_t unzigzag(uint64_t v)
{
	return (int64_t)(v >> 1) ^ -(int64_t)(v & 1);
}

/*
 * Field encoders.  prev: the value of the field before it in this event
 * (XOR fields); last: this field in the kind's previous event.
 */
static unsigned char *enc_U64(unsigned char *p, uint64_t *prev,
			      uint64_t *last, const uint64_t *v)
{
	p = put_varint(p, zigzag((int64_t)(*v - *last)));
	*prev = *last = *v;
	return p;
}

/*
 * SPTEs are rotated left by one: the NX bit (63 on NPT) would make every
 * executable-denied SPTE a 10-byte varint, rotated it is bit 0.  An SPTE
 * is stored XOR the kind's last one (neighbouring pfns, same flags).
 */
static uint64_t rotl1(uint64_t v)
{
	return v << 1 | v >> 63;
}

static uint64_t rotr1(uint64_t v)
{
	return v >> 1 | v << 63;
}

static unsigned char *enc_SPT(unsigned char *p, uint64_t *prev,
			      uint64_t *last, const uint64_t *v)
{
	p = put_varint(p, rotl1(*v ^ *last));
	*prev = *last = *v;
	return p;
}

/* The new SPTE against the old one of the same change: an install or a
 * zap XORs with 0, a protection change leaves a few bits. */
static unsigned char *enc_XOR(unsigned char *p, uint64_t *prev,
			      uint64_t *last, const uint64_t *v)
{
	p = put_varint(p, rotl1(*v ^ *prev));
	*prev = *last = *v;
	return p;
}

static unsigned char *enc_I64(unsigned char *p, uint64_t *prev,
			      uint64_t *last, const int64_t *v)
{
	(void)prev;
	(void)last;
	return put_varint(p, zigzag(*v));
}

static unsigned char *enc_INT(unsigned char *p, uint64_t *prev,
			      uint64_t *last, const int *v)
{
	(void)prev;
	(void)last;
	return put_varint(p, zigzag(*v));
}

static unsigned char *enc_SYS(unsigned char *p, uint64_t *prev,
			      uint64_t *last, const enum model_syscall *call)
{
	(void)prev;
	(void)last;
	*p++ = (unsigned char)*call;
	return p;
}

#define enc_ENTRY enc_INT

#define ENC_FIELD(column, type, member) \
	p = enc_##type(p, &prev, &d->last[ev->kind][fi++], &ev->member);
#define ENC_KIND(kind, fields, table, also, join) \
	case kind: fields(ENC_FIELD) break;

/* Encode ev at p (room for EVENT_MAX_BYTES); returns the end. */
static unsigned char *event_encode(unsigned char *p, struct delta *d,
				   const struct model_event *ev)
{
	int same = d->seq && ev->cpu == d->cpu && ev->tid == d->tid &&
		ev->vm == d->vm;
	uint64_t prev = 0;
	unsigned fi = 0;

	/* seq increases along the stream (the first may be 0). */
	MR_ASSERT_DBG((unsigned)ev->kind < MEV_KINDS && ev->seq >= d->seq);
	*p++ = (unsigned char)(ev->kind | (same ? SAME_CTX : 0));
	p = put_varint(p, ev->seq - d->seq);
	p = put_varint(p, zigzag(ev->ts - d->ts));
	if (!same) {
		p = put_varint(p, zigzag(ev->cpu));
		p = put_varint(p, zigzag(ev->tid));
		p = put_varint(p, (uint32_t)ev->vm);
	}
	d->seq = ev->seq;
	d->ts = ev->ts;
	d->cpu = ev->cpu;
	d->tid = ev->tid;
	d->vm = ev->vm;
	switch (ev->kind) {
	MEV_EVENT_TABLES(ENC_KIND)
	default:
		break;
	}
	return p;
}

/* ---- decoding ---- */

struct cursor {
	const unsigned char *p, *end;
	int bad;
};

static __attribute__((noinline)) uint64_t get_varint_long(struct cursor *c)
{
	const unsigned char *p = c->p;
	uint64_t v = 0, b;
	unsigned shift = 0;

	if (c->end - p >= 10) {         /* room for the longest: no checks */
		for (shift = 0; shift < 70; shift += 7) {
			b = *p++;
			v |= (b & 0x7f) << shift;
			if (b < 0x80) {
				c->p = p;
				return v;
			}
		}
		c->bad = 1;
		return 0;
	}
	while (c->p < c->end && shift < 64) {
		b = *c->p++;
		v |= (b & 0x7f) << shift;
		if (!(b & 0x80))
			return v;
		shift += 7;
	}
	c->bad = 1;
	return 0;
}

static inline uint64_t get_varint(struct cursor *c)
{
	/* Most values (deltas, levels, flags) fit one byte. */
	if (__builtin_expect(c->p < c->end && *c->p < 0x80, 1))
		return *c->p++;
	return get_varint_long(c);
}

static inline void dec_U64(struct cursor *c, uint64_t *prev,
			   uint64_t *last, uint64_t *v)
{
	*prev = *last = *v = *last + (uint64_t)unzigzag(get_varint(c));
}

static inline void dec_SPT(struct cursor *c, uint64_t *prev,
			   uint64_t *last, uint64_t *v)
{
	*prev = *last = *v = rotr1(get_varint(c)) ^ *last;
}

static inline void dec_XOR(struct cursor *c, uint64_t *prev,
			   uint64_t *last, uint64_t *v)
{
	*prev = *last = *v = rotr1(get_varint(c)) ^ *prev;
}

static inline void dec_I64(struct cursor *c, uint64_t *prev,
			   uint64_t *last, int64_t *v)
{
	(void)prev;
	(void)last;
	*v = unzigzag(get_varint(c));
}

static inline void dec_INT(struct cursor *c, uint64_t *prev,
			   uint64_t *last, int *v)
{
	(void)prev;
	(void)last;
	*v = (int)unzigzag(get_varint(c));
}

static inline void dec_SYS(struct cursor *c, uint64_t *prev,
			   uint64_t *last, enum model_syscall *call)
{
	(void)prev;
	(void)last;
	if (c->p >= c->end || *c->p >= MSYS_KINDS) {
		c->bad = 1;
		return;
	}
	*call = (enum model_syscall)*c->p++;
}

#define dec_ENTRY dec_INT

#define DEC_FIELD(column, type, member) \
	dec_##type(c, &prev, &d->last[kind][fi++], &ev->member);
#define DEC_KIND(kind, fields, table, also, join) \
	case kind: fields(DEC_FIELD) break;

/* Decode one event; returns 0, or -1 when the bytes are not an event. */
static int event_decode(struct cursor *c, struct delta *d,
			struct model_event *ev)
{
	static const struct model_event zero;
	uint64_t prev = 0;
	unsigned char h;
	unsigned fi = 0, kind;

	*ev = zero;     /* a copy, not memset: no "rep stos" per event */
	h = *c->p++;
	if ((h & KIND_MASK) >= MEV_KINDS || (h & ~(KIND_MASK | SAME_CTX)))
		return -1;
	kind = h & KIND_MASK;
	ev->kind = (enum model_event_kind)kind;
	d->seq += get_varint(c);
	/* Wrapping, not signed overflow, on a damaged delta: the source
	 * refuses the implausible time it gives (model_event_implausible()). */
	d->ts = (int64_t)((uint64_t)d->ts + (uint64_t)unzigzag(get_varint(c)));
	if (!(h & SAME_CTX)) {
		d->cpu = (int32_t)unzigzag(get_varint(c));
		d->tid = (int32_t)unzigzag(get_varint(c));
		d->vm = (int32_t)get_varint(c);
	}
	ev->seq = d->seq;
	ev->ts = d->ts;
	ev->cpu = d->cpu;
	ev->tid = d->tid;
	ev->vm = d->vm;
	switch (ev->kind) {
	MEV_EVENT_TABLES(DEC_KIND)
	default:
		break;
	}
	return c->bad ? -1 : 0;
}

/* ---- the DB side ---- */

static const char create_sql[] =
	"CREATE TABLE IF NOT EXISTS replay_stream ("
	"chunk INTEGER PRIMARY KEY, first_seq INTEGER NOT NULL, "
	"events INTEGER NOT NULL, data BLOB NOT NULL)";

int stream_current(sqlite3 *db)
{
	return db_meta_get_int(db, "replay_stream_format", 0) ==
		STREAM_FORMAT &&
		db_meta_get_int(db, "replay_stream_of", -1) ==
		db_meta_get_int(db, "events", -2);
}

int64_t stream_bytes(sqlite3 *db)
{
	sqlite3_stmt *st = NULL;
	int64_t n = 0;

	if (!stream_current(db))
		return 0;
	if (sqlite3_prepare_v2(db, "SELECT sum(length(data)) FROM "
			       "replay_stream", -1, &st, NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return n;
}

struct stream_writer {
	sqlite3 *db;
	sqlite3_stmt *ins;
	struct delta d;
	unsigned char *buf;
	size_t len;
	int64_t chunk, chunk_events, events;
	uint64_t first_seq;
};

void stream_writer_abort(struct stream_writer *w)
{
	if (!w)
		return;
	sqlite3_finalize(w->ins);
	db_exec(w->db, "ROLLBACK");
	free(w->buf);
	free(w);
	/* The DB is as before: an interrupt that came meanwhile exits. */
	cleanup_signals_release();
}

enum stream_status stream_writer_begin(sqlite3 *db,
				       struct stream_writer **out)
{
	struct stream_writer *w = calloc(1, sizeof(*w));
	enum stream_status st = STREAM_ERR;

	*out = NULL;
	if (!w || !(w->buf = malloc(CHUNK_BYTES + EVENT_MAX_BYTES))) {
		log_error("%s: out of memory", sqlite3_db_filename(db, "main"));
		free(w);
		return STREAM_ERR;
	}
	w->db = db;
	/* Written in place: an interrupt rolls back (cleanup.h). */
	cleanup_signals_hold();
	if (db_exec(db, "BEGIN IMMEDIATE") != DB_OK) {
		free(w->buf);
		free(w);
		cleanup_signals_release();
		return STREAM_ERR;
	}
	if (db_exec(db, create_sql) != DB_OK ||
	    db_exec(db, "DELETE FROM replay_stream") != DB_OK ||
	    db_exec(db, "DELETE FROM meta WHERE key IN "
		    "('replay_stream_format', 'replay_stream_of', "
		    "'replay_stream_events')") != DB_OK)
		goto end;
	if (sqlite3_prepare_v2(db, "INSERT INTO replay_stream (chunk, "
			       "first_seq, events, data) VALUES (?, ?, ?, ?)",
			       -1, &w->ins, NULL) != SQLITE_OK) {
		log_error("%s: %s", sqlite3_db_filename(db, "main"),
			  sqlite3_errmsg(db));
		goto end;
	}
	st = STREAM_OK;
end:
	if (st == STREAM_OK)
		*out = w;
	else
		stream_writer_abort(w);
	return st;
}

enum stream_status stream_writer_guard(struct stream_writer *w,
				       const char *tables)
{
	static const char *const ops[] = { "INSERT", "UPDATE", "DELETE" };
	char name[64], sql[256];
	const char *p = tables, *q;
	size_t i, len;

	while (*p) {
		q = strchr(p, ' ');
		len = q ? (size_t)(q - p) : strlen(p);
		if (len >= sizeof(name))
			return STREAM_ERR;
		memcpy(name, p, len);
		name[len] = 0;
		for (i = 0; i < 3; i++) {
			snprintf(sql, sizeof(sql), "CREATE TRIGGER IF NOT "
				 "EXISTS replay_stream_stale_%s_%zu AFTER %s "
				 "ON %s BEGIN DELETE FROM meta WHERE key = "
				 "'replay_stream_format'; END", name, i, ops[i],
				 name);
			if (db_exec(w->db, sql) != DB_OK)
				return STREAM_ERR;
		}
		p += len;
		while (*p == ' ')
			p++;
	}
	return STREAM_OK;
}

static enum stream_status chunk_flush(struct stream_writer *w)
{
	int rc;

	if (!w->chunk_events)
		return STREAM_OK;
	/* Interrupted: stop here; the abort rolls back and exits. */
	if (cleanup_interrupted())
		return STREAM_ERR;
	sqlite3_bind_int64(w->ins, 1, w->chunk);
	sqlite3_bind_int64(w->ins, 2, (int64_t)w->first_seq);
	sqlite3_bind_int64(w->ins, 3, w->chunk_events);
	sqlite3_bind_blob(w->ins, 4, w->buf, (int)w->len, SQLITE_STATIC);
	rc = sqlite3_step(w->ins);
	sqlite3_reset(w->ins);
	if (rc != SQLITE_DONE) {
		log_error("%s: writing the replay stream: %s",
			  sqlite3_db_filename(w->db, "main"),
			  sqlite3_errmsg(w->db));
		return STREAM_ERR;
	}
	w->chunk++;
	w->chunk_events = 0;
	w->len = 0;
	memset(&w->d, 0, sizeof(w->d));
	return STREAM_OK;
}

enum stream_status stream_writer_add(struct stream_writer *w,
				     const struct model_event *ev)
{
	if (!w->chunk_events)
		w->first_seq = ev->seq;
	/* A chunk is flushed once it reaches CHUNK_BYTES: room for one. */
	MR_ASSERT_DBG(w->len < CHUNK_BYTES);
	w->len = (size_t)(event_encode(w->buf + w->len, &w->d, ev) - w->buf);
	w->chunk_events++;
	w->events++;
	return w->len >= CHUNK_BYTES ? chunk_flush(w) : STREAM_OK;
}

enum stream_status stream_writer_commit(struct stream_writer *w)
{
	sqlite3 *db = w->db;
	enum stream_status st = STREAM_ERR;

	if (chunk_flush(w) != STREAM_OK ||
	    db_meta_set_int(db, "replay_stream_format", STREAM_FORMAT) !=
	    DB_OK ||
	    db_meta_set_int(db, "replay_stream_of",
			    db_meta_get_int(db, "events", -2)) != DB_OK ||
	    db_meta_set_int(db, "replay_stream_events", w->events) != DB_OK)
		goto end;
	sqlite3_finalize(w->ins);
	w->ins = NULL;
	if (db_exec(db, "COMMIT") != DB_OK)
		goto end;
	free(w->buf);
	free(w);
	cleanup_signals_release();
	return STREAM_OK;
end:
	stream_writer_abort(w);
	return st;
}

struct stream_reader {
	sqlite3 *db;
	sqlite3_stmt *st;
	struct cursor c;
	struct delta d;
	int64_t chunk;
};

enum stream_status stream_reader_rewind(struct stream_reader *r)
{
	sqlite3_reset(r->st);
	r->c.p = r->c.end = NULL;
	r->c.bad = 0;
	r->chunk = -1;
	return STREAM_OK;
}

enum stream_status stream_reader_open(sqlite3 *db,
				      struct stream_reader **out)
{
	struct stream_reader *r;

	*out = NULL;
	if (!stream_current(db))
		return STREAM_ABSENT;
	r = calloc(1, sizeof(*r));
	if (!r) {
		log_error("%s: out of memory", sqlite3_db_filename(db, "main"));
		return STREAM_ERR;
	}
	r->db = db;
	if (sqlite3_prepare_v2(db, "SELECT chunk, data FROM replay_stream "
			       "ORDER BY chunk", -1, &r->st, NULL) !=
	    SQLITE_OK) {
		log_error("%s: %s", sqlite3_db_filename(db, "main"),
			  sqlite3_errmsg(db));
		free(r);
		return STREAM_ERR;
	}
	stream_reader_rewind(r);
	*out = r;
	return STREAM_OK;
}

enum stream_status stream_reader_next(struct stream_reader *r,
				      struct model_event *ev)
{
	int rc;

	while (r->c.p == r->c.end) {
		rc = sqlite3_step(r->st);
		if (rc == SQLITE_DONE)
			return STREAM_END;
		if (rc != SQLITE_ROW) {
			log_error("%s: reading the replay stream: %s",
				  sqlite3_db_filename(r->db, "main"),
				  sqlite3_errmsg(r->db));
			return STREAM_ERR;
		}
		/* The blob stays valid until the next step. */
		r->chunk = sqlite3_column_int64(r->st, 0);
		r->c.p = sqlite3_column_blob(r->st, 1);
		/* An empty blob reads as NULL: decode from an empty range. */
		if (!r->c.p)
			r->c.p = (const unsigned char *)"";
		r->c.end = r->c.p + sqlite3_column_bytes(r->st, 1);
		memset(&r->d, 0, sizeof(r->d));
	}
	if (event_decode(&r->c, &r->d, ev) < 0) {
		log_error("%s: replay stream chunk %lld is corrupt (a "
			  "damaged file: ingest the trace again)",
			  sqlite3_db_filename(r->db, "main"),
			  (long long)r->chunk);
		return STREAM_ERR;
	}
	return STREAM_OK;
}

void stream_reader_close(struct stream_reader *r)
{
	if (!r)
		return;
	sqlite3_finalize(r->st);
	free(r);
}
