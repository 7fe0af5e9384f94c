/*
 * From babeltrace2 messages to canonical rows (see sink.h).
 *
 * Per event the work is: find the event class descriptor (a pointer-keyed
 * map, resolved once per class from the catalogue by field *name*), read
 * the mapped payload members by the index resolved then, and append a row
 * to the current chunk.  Invariants:
 *   - seq increases by one per event message, mapped or not, so raw
 *     counts and canonical rows share one numbering;
 *   - a class whose required columns are missing is counted, never mapped,
 *     and the reason is kept for the raw_event table;
 *   - nothing here touches SQLite before sink_store_tables(): the writer
 *     thread owns the connection until it has finished.
 */
#include "ingest/sink.h"

#include "db/db.h"
#include "util/alloc.h"
#include "util/assert.h"
#include "util/log.h"
#include "util/ptrmap.h"
#include "util/strpool.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum col_src {
	COL_ABSENT = 0,         /* optional field not in this class: NULL */
	COL_UNSIGNED,
	COL_SIGNED,
	COL_BOOL,
	COL_STRING,
	COL_CONST,
	COL_RAW_ID,
};

struct sink_raw {
	const char *name;       /* interned */
	uint64_t count;
	const char *canonical;  /* table, or NULL */
	char *note;
};

struct sink_class {
	uint32_t raw_id;
	int kind;               /* catalogue entry index, -1: count only */
	int ncols;
	struct {
		enum col_src src;
		uint64_t member;
		int64_t cval;
	} col[ROW_MAX_VALS];
	int has_clock;
	int has_packets;
	int64_t cpu_member;     /* packet context, -1: none */
	int64_t tid_member;     /* common context, -1: none */
	int64_t procname_member;
};

/*
 * The CTF environment entries a trace row keeps: X(index, CTF key,
 * column of table trace).  The array, the lookups and the INSERT are
 * generated from this list.
 */
#define TRACE_ENV_LIST(X) \
	X(TRACE_ENV_HOSTNAME, "hostname", "hostname") \
	X(TRACE_ENV_DOMAIN, "domain", "domain") \
	X(TRACE_ENV_SYSNAME, "sysname", "sysname") \
	X(TRACE_ENV_KERNEL_RELEASE, "kernel_release", "kernel_release") \
	X(TRACE_ENV_KERNEL_VERSION, "kernel_version", "kernel_version") \
	X(TRACE_ENV_TRACER_NAME, "tracer_name", "tracer_name") \
	/* LTTng writes it as tracer_major/minor/patchlevel */ \
	X(TRACE_ENV_TRACER_VERSION, "tracer_version", "tracer_version") \
	X(TRACE_ENV_TRACE_NAME, "trace_name", "trace_name") \
	X(TRACE_ENV_CREATION, "trace_creation_datetime", "creation_datetime")

#define TRACE_ENV_ENUM(e, key, col) e,
enum trace_env {
	TRACE_ENV_LIST(TRACE_ENV_ENUM)
	TRACE_ENVS
};

struct sink_trace {
	int64_t id;
	char *path;
	char *env[TRACE_ENVS];
};

struct sink_stream {
	int64_t id;
	struct sink_trace *trace;
	char *name;
	uint64_t events;
};

struct sink_lost {
	int64_t stream_id;
	int is_packets;
	int has_range;
	int64_t begin_ns, end_ns;
	int has_count;
	uint64_t count;
};

struct sink_thread {
	const char *procname;
};

#define TRACE_ENV_KEY(e, key, col) [e] = key,
static const char *const env_keys[TRACE_ENVS] = {
	TRACE_ENV_LIST(TRACE_ENV_KEY)
};

struct ingest_sink {
	const struct catalog *cat;
	struct writer *w;
	struct ingest_chunk *chunk;
	struct strpool strings;

	struct ptrmap classes;          /* bt_event_class * -> sink_class */
	struct ptrmap streams;          /* bt_stream * -> sink_stream */
	struct ptrmap traces;           /* bt_trace * -> sink_trace */
	struct ptrmap threads;          /* tid -> sink_thread */
	struct u64map raw_by_name;      /* interned name -> raw index */

	struct sink_raw *raws;
	size_t nraws, capraws;
	struct sink_stream **stream_list;
	size_t nstreams, capstreams;
	struct sink_trace **trace_list;
	size_t ntraces, captraces;
	struct sink_lost *lost;
	size_t nlost, caplost;
	uint64_t lost_events;

	const bt_stream *last_stream;
	struct sink_stream *last_sstream;
	const bt_packet *last_packet;
	int64_t last_cpu;

	uint64_t seq;
	int have_base;
	int64_t ts_base;
	int64_t last_ns;
	int failed;                     /* out of memory: stop the graph */
};

struct ingest_sink *sink_create(const struct catalog *cat, struct writer *w)
{
	struct ingest_sink *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->cat = cat;
	s->w = w;
	strpool_init(&s->strings);
	ptrmap_init(&s->classes);
	ptrmap_init(&s->streams);
	ptrmap_init(&s->traces);
	ptrmap_init(&s->threads);
	u64map_init(&s->raw_by_name);
	return s;
}

void sink_destroy(struct ingest_sink *s)
{
	size_t i;
	int j;

	if (!s)
		return;
	ptrmap_free_values(&s->classes);
	ptrmap_free_values(&s->threads);
	ptrmap_free(&s->streams);
	ptrmap_free(&s->traces);
	u64map_free(&s->raw_by_name);
	for (i = 0; i < s->nstreams; i++) {
		free(s->stream_list[i]->name);
		free(s->stream_list[i]);
	}
	for (i = 0; i < s->ntraces; i++) {
		free(s->trace_list[i]->path);
		for (j = 0; j < TRACE_ENVS; j++)
			free(s->trace_list[i]->env[j]);
		free(s->trace_list[i]);
	}
	for (i = 0; i < s->nraws; i++)
		free(s->raws[i].note);
	free(s->raws);
	free(s->stream_list);
	free(s->trace_list);
	free(s->lost);
	strpool_free(&s->strings);
	free(s);
}

uint64_t sink_event_count(const struct ingest_sink *s)
{
	return s->seq;
}

uint64_t sink_lost_count(const struct ingest_sink *s)
{
	return s->lost_events;
}

/* Index of the raw name, registering it on first sight; -1: no memory. */
static int64_t raw_lookup(struct ingest_sink *s, const char *name)
{
	const char *iname = strpool_intern(&s->strings, name);
	const struct u64map_slot *known;

	if (!iname)
		return -1;
	known = u64map_find(&s->raw_by_name, (uintptr_t)iname);
	if (known)
		return (int64_t)known->val;
	if (ALLOC_GROW(s->raws, s->nraws + 1, s->capraws))
		return -1;
	s->raws[s->nraws].name = iname;
	if (u64map_put(&s->raw_by_name, (uintptr_t)iname, s->nraws) < 0)
		return -1;
	return (int64_t)s->nraws++;
}

static int64_t member_index(const bt_field_class *st, const char *name)
{
	uint64_t i, n;

	if (!st || bt_field_class_get_type(st) != BT_FIELD_CLASS_TYPE_STRUCTURE)
		return -1;
	n = bt_field_class_structure_get_member_count(st);
	for (i = 0; i < n; i++) {
		const bt_field_class_structure_member *m =
			bt_field_class_structure_borrow_member_by_index_const(
				st, i);

		if (strcmp(bt_field_class_structure_member_get_name(m),
			   name) == 0)
			return (int64_t)i;
	}
	return -1;
}

static enum col_src member_src(const bt_field_class *st, uint64_t idx)
{
	const bt_field_class *fc =
		bt_field_class_structure_member_borrow_field_class_const(
			bt_field_class_structure_borrow_member_by_index_const(
				st, idx));
	bt_field_class_type t = bt_field_class_get_type(fc);

	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER))
		return COL_UNSIGNED;
	if (bt_field_class_type_is(t, BT_FIELD_CLASS_TYPE_SIGNED_INTEGER))
		return COL_SIGNED;
	if (t == BT_FIELD_CLASS_TYPE_BOOL)
		return COL_BOOL;
	if (t == BT_FIELD_CLASS_TYPE_STRING)
		return COL_STRING;
	return COL_ABSENT;
}

static void raw_note(struct sink_raw *raw, const char *fmt, const char *a,
		     const char *b)
{
	size_t n = strlen(fmt) + strlen(a) + strlen(b) + 1;

	if (raw->note)
		return;
	raw->note = malloc(n);
	if (raw->note)
		snprintf(raw->note, n, fmt, a, b);
}

/* Map the catalogue entry's columns onto this class's payload members. */
static void class_map(struct ingest_sink *s, struct sink_class *c,
		      const bt_event_class *ec, const struct catalog_entry *e)
{
	const bt_field_class *payload =
		bt_event_class_borrow_payload_field_class_const(ec);
	struct sink_raw *raw = &s->raws[c->raw_id];
	int i, k;

	raw->canonical = e->table;
	c->ncols = e->ncols;
	for (i = 0; i < e->ncols; i++) {
		const struct catalog_column *col = &e->cols[i];
		int64_t m = -1;

		if (col->nfields == 0) {
			c->col[i].src = COL_CONST;
			c->col[i].cval = col->const_val;
			continue;
		}
		for (k = 0; k < col->nfields && m < 0; k++)
			m = member_index(payload, col->fields[k]);
		c->col[i].src = m < 0 ? COL_ABSENT :
			member_src(payload, (uint64_t)m);
		c->col[i].member = m < 0 ? 0 : (uint64_t)m;
		if (c->col[i].src == COL_ABSENT && col->required) {
			raw_note(raw, "required field '%s' (column %s) is "
				 "missing or of an unknown type",
				 col->fields[0], col->name);
			log_warn("event %s: field '%s' missing or of an unknown "
				 "type (unknown event version?): counted, "
				 "not mapped to %s", e->raw, col->fields[0],
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
	c->kind = (int)(e - s->cat->entries);
}

static struct sink_class *class_resolve(struct ingest_sink *s,
					const bt_event_class *ec)
{
	const bt_stream_class *sc = bt_event_class_borrow_stream_class_const(ec);
	const char *name = bt_event_class_get_name(ec);
	const struct catalog_entry *e;
	struct sink_class *c;
	int64_t raw;

	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	raw = raw_lookup(s, name ? name : "(unnamed)");
	if (raw < 0 || ptrmap_put(&s->classes, (uintptr_t)ec, c) < 0) {
		free(c);
		return NULL;
	}
	c->raw_id = (uint32_t)raw;
	c->kind = -1;
	c->has_clock = bt_stream_class_borrow_default_clock_class_const(sc) !=
		NULL;
	c->has_packets = bt_stream_class_supports_packets(sc);
	c->cpu_member = c->has_packets ? member_index(
		bt_stream_class_borrow_packet_context_field_class_const(sc),
		"cpu_id") : -1;
	c->tid_member = member_index(
		bt_stream_class_borrow_event_common_context_field_class_const(
			sc), "tid");
	if (c->tid_member < 0)
		c->tid_member = member_index(
			bt_stream_class_borrow_event_common_context_field_class_const(
				sc), "vtid");
	c->procname_member = member_index(
		bt_stream_class_borrow_event_common_context_field_class_const(
			sc), "procname");
	e = name ? catalog_find(s->cat, name) : NULL;
	if (e)
		class_map(s, c, ec, e);
	return c;
}

static char *value_to_str(const bt_value *v)
{
	char buf[32];

	switch (bt_value_get_type(v)) {
	case BT_VALUE_TYPE_STRING:
		return strdup(bt_value_string_get(v));
	case BT_VALUE_TYPE_SIGNED_INTEGER:
		snprintf(buf, sizeof(buf), "%" PRId64,
			 bt_value_integer_signed_get(v));
		return strdup(buf);
	case BT_VALUE_TYPE_UNSIGNED_INTEGER:
		snprintf(buf, sizeof(buf), "%" PRIu64,
			 bt_value_integer_unsigned_get(v));
		return strdup(buf);
	default:
		return NULL;
	}
}

static const bt_value *env_get(const bt_trace *t, const char *key)
{
	return bt_trace_borrow_environment_entry_value_by_name_const(t, key);
}

static struct sink_trace *trace_register(struct ingest_sink *s,
					 const bt_trace *t)
{
	struct sink_trace *tr = ptrmap_get(&s->traces, (uintptr_t)t);
	const bt_value *maj, *min, *pl;
	char buf[64];
	int i;

	if (tr)
		return tr;
	tr = calloc(1, sizeof(*tr));
	if (!tr || ALLOC_GROW(s->trace_list, s->ntraces + 1, s->captraces)) {
		free(tr);
		return NULL;
	}
	tr->id = (int64_t)s->ntraces + 1;
	tr->path = strdup(bt_trace_get_name(t) ? bt_trace_get_name(t) : "");
	for (i = 0; i < TRACE_ENVS; i++) {
		const bt_value *v = env_get(t, env_keys[i]);

		if (v)
			tr->env[i] = value_to_str(v);
	}
	/* tracer_version is three entries in the CTF environment. */
	maj = env_get(t, "tracer_major");
	min = env_get(t, "tracer_minor");
	pl = env_get(t, "tracer_patchlevel");
	if (maj && min && bt_value_is_signed_integer(maj) &&
	    bt_value_is_signed_integer(min)) {
		if (pl && bt_value_is_signed_integer(pl))
			snprintf(buf, sizeof(buf), "%" PRId64 ".%" PRId64 ".%"
				 PRId64, bt_value_integer_signed_get(maj),
				 bt_value_integer_signed_get(min),
				 bt_value_integer_signed_get(pl));
		else
			snprintf(buf, sizeof(buf), "%" PRId64 ".%" PRId64,
				 bt_value_integer_signed_get(maj),
				 bt_value_integer_signed_get(min));
		free(tr->env[TRACE_ENV_TRACER_VERSION]);
		tr->env[TRACE_ENV_TRACER_VERSION] = strdup(buf);
	}
	s->trace_list[s->ntraces++] = tr;
	if (ptrmap_put(&s->traces, (uintptr_t)t, tr) < 0)
		return NULL;
	return tr;
}

static struct sink_stream *stream_register(struct ingest_sink *s,
					   const bt_stream *st)
{
	struct sink_stream *ss = ptrmap_get(&s->streams, (uintptr_t)st);

	if (ss)
		return ss;
	ss = calloc(1, sizeof(*ss));
	if (!ss ||
	    ALLOC_GROW(s->stream_list, s->nstreams + 1, s->capstreams)) {
		free(ss);
		return NULL;
	}
	ss->trace = trace_register(s, bt_stream_borrow_trace_const(st));
	if (!ss->trace) {
		free(ss);
		return NULL;
	}
	ss->id = (int64_t)s->nstreams + 1;
	ss->name = bt_stream_get_name(st) ? strdup(bt_stream_get_name(st)) :
		NULL;
	s->stream_list[s->nstreams++] = ss;
	if (ptrmap_put(&s->streams, (uintptr_t)st, ss) < 0)
		return NULL;
	return ss;
}

static int64_t field_int(const bt_field *st, uint64_t member,
			 enum col_src src, const char **text)
{
	const bt_field *f =
		bt_field_structure_borrow_member_field_by_index_const(st,
								      member);

	switch (src) {
	case COL_UNSIGNED:
		/* Same bits as the u64: see schemas/capture.sql. */
		return (int64_t)bt_field_integer_unsigned_get_value(f);
	case COL_SIGNED:
		return bt_field_integer_signed_get_value(f);
	case COL_BOOL:
		return bt_field_bool_get_value(f);
	case COL_STRING:
		*text = bt_field_string_get_value(f);
		return 0;
	default:
		/* Only the sources above read a payload field. */
		MR_UNREACHABLE();
	}
}

static struct ingest_row *row_next(struct ingest_sink *s)
{
	if (!s->chunk)
		s->chunk = writer_chunk_get(s->w);
	return &s->chunk->rows[s->chunk->n];
}

static void row_commit(struct ingest_sink *s)
{
	if (++s->chunk->n == CHUNK_ROWS) {
		writer_chunk_submit(s->w, s->chunk);
		s->chunk = NULL;
	}
}

void sink_flush(struct ingest_sink *s)
{
	if (s->chunk && s->chunk->n)
		writer_chunk_submit(s->w, s->chunk);
	s->chunk = NULL;
}

/* Emit a thread row the first time (tid, procname) is seen. */
static int thread_note(struct ingest_sink *s, int64_t tid, const char *name,
		       uint64_t seq)
{
	struct sink_thread *t = ptrmap_get(&s->threads, (uint64_t)tid);
	struct ingest_row *r;
	const char *iname;

	if (t && strcmp(t->procname, name) == 0)
		return 0;
	iname = strpool_intern(&s->strings, name);
	if (!iname)
		return -1;
	if (!t) {
		t = calloc(1, sizeof(*t));
		if (!t || ptrmap_put(&s->threads, (uint64_t)tid, t) < 0) {
			free(t);
			return -1;
		}
	}
	t->procname = iname;
	r = row_next(s);
	memset(r, 0, sizeof(*r));
	r->kind = ROW_KIND_THREAD(s->cat);
	r->tid = tid;
	r->seq = (int64_t)seq;
	r->textmask = 1;
	r->v[0].text = iname;
	row_commit(s);
	return 0;
}

static int handle_event(struct ingest_sink *s, const bt_message *msg)
{
	const bt_event *ev = bt_message_event_borrow_event_const(msg);
	const bt_event_class *ec = bt_event_borrow_class_const(ev);
	const bt_stream *st = bt_event_borrow_stream_const(ev);
	struct sink_class *c = ptrmap_get(&s->classes, (uintptr_t)ec);
	const bt_field *payload, *ctx;
	struct ingest_row *r;
	uint64_t seq = s->seq++;
	int64_t ns = 0, tid = 0;
	uint32_t nullmask = 0;
	const char *text;
	int i;

	if (!c && !(c = class_resolve(s, ec)))
		return -1;
	if (st != s->last_stream) {
		s->last_sstream = stream_register(s, st);
		if (!s->last_sstream)
			return -1;
		s->last_stream = st;
	}
	s->last_sstream->events++;
	s->raws[c->raw_id].count++;

	if (c->has_clock)
		bt_clock_snapshot_get_ns_from_origin(
			bt_message_event_borrow_default_clock_snapshot_const(
				msg), &ns);
	if (!s->have_base) {
		s->have_base = 1;
		s->ts_base = ns;
	}
	s->last_ns = ns;
	if (c->cpu_member >= 0) {
		const bt_packet *p = bt_event_borrow_packet_const(ev);

		if (p != s->last_packet) {
			s->last_packet = p;
			s->last_cpu = (int64_t)bt_field_integer_unsigned_get_value(
				bt_field_structure_borrow_member_field_by_index_const(
					bt_packet_borrow_context_field_const(p),
					(uint64_t)c->cpu_member));
		}
	} else {
		nullmask |= ROW_NULL_CPU;
	}
	ctx = bt_event_borrow_common_context_field_const(ev);
	if (c->tid_member >= 0) {
		tid = bt_field_integer_signed_get_value(
			bt_field_structure_borrow_member_field_by_index_const(
				ctx, (uint64_t)c->tid_member));
		if (c->procname_member >= 0 &&
		    thread_note(s, tid, bt_field_string_get_value(
				bt_field_structure_borrow_member_field_by_index_const(
					ctx, (uint64_t)c->procname_member)),
				seq) < 0)
			return -1;
	} else {
		nullmask |= ROW_NULL_TID;
	}
	if (c->kind < 0)
		return 0;

	payload = bt_event_borrow_payload_field_const(ev);
	r = row_next(s);
	r->kind = (uint32_t)c->kind;
	r->seq = (int64_t)seq;
	r->ts = ns - s->ts_base;
	r->cpu = s->last_cpu;
	r->tid = tid;
	r->textmask = 0;
	for (i = 0; i < c->ncols; i++) {
		switch (c->col[i].src) {
		case COL_ABSENT:
			nullmask |= 1u << i;
			break;
		case COL_CONST:
		case COL_RAW_ID:
			r->v[i].i = c->col[i].cval;
			break;
		case COL_STRING:
			text = NULL;
			field_int(payload, c->col[i].member, COL_STRING, &text);
			text = strpool_intern(&s->strings, text ? text : "");
			if (!text)
				return -1;
			r->v[i].text = text;
			r->textmask |= 1u << i;
			break;
		default:
			r->v[i].i = field_int(payload, c->col[i].member,
					      c->col[i].src, &text);
		}
	}
	r->nullmask = nullmask;
	row_commit(s);
	return 0;
}

static int clock_ns(const bt_clock_snapshot *cs, int64_t *ns)
{
	return bt_clock_snapshot_get_ns_from_origin(cs, ns) ==
		BT_CLOCK_SNAPSHOT_GET_NS_FROM_ORIGIN_STATUS_OK;
}

static int handle_discarded(struct ingest_sink *s, const bt_message *msg,
			    int is_packets)
{
	const bt_stream *st = is_packets ?
		bt_message_discarded_packets_borrow_stream_const(msg) :
		bt_message_discarded_events_borrow_stream_const(msg);
	const bt_stream_class *sc = bt_stream_borrow_class_const(st);
	struct sink_stream *ss = stream_register(s, st);
	struct sink_lost *l;
	bt_property_availability avail;

	if (!ss || ALLOC_GROW(s->lost, s->nlost + 1, s->caplost))
		return -1;
	l = &s->lost[s->nlost++];
	l->stream_id = ss->id;
	l->is_packets = is_packets;
	if (is_packets) {
		avail = bt_message_discarded_packets_get_count(msg, &l->count);
		if (bt_stream_class_discarded_packets_have_default_clock_snapshots(sc))
			l->has_range = clock_ns(
				bt_message_discarded_packets_borrow_beginning_default_clock_snapshot_const(msg),
				&l->begin_ns) && clock_ns(
				bt_message_discarded_packets_borrow_end_default_clock_snapshot_const(msg),
				&l->end_ns);
	} else {
		avail = bt_message_discarded_events_get_count(msg, &l->count);
		if (bt_stream_class_discarded_events_have_default_clock_snapshots(sc))
			l->has_range = clock_ns(
				bt_message_discarded_events_borrow_beginning_default_clock_snapshot_const(msg),
				&l->begin_ns) && clock_ns(
				bt_message_discarded_events_borrow_end_default_clock_snapshot_const(msg),
				&l->end_ns);
	}
	l->has_count = avail == BT_PROPERTY_AVAILABILITY_AVAILABLE;
	if (l->has_count && !is_packets)
		s->lost_events += l->count;
	return 0;
}

static int handle_message(struct ingest_sink *s, const bt_message *msg)
{
	switch (bt_message_get_type(msg)) {
	case BT_MESSAGE_TYPE_EVENT:
		return handle_event(s, msg);
	case BT_MESSAGE_TYPE_STREAM_BEGINNING:
		return stream_register(s,
			bt_message_stream_beginning_borrow_stream_const(msg)) ?
			0 : -1;
	case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
		return handle_discarded(s, msg, 0);
	case BT_MESSAGE_TYPE_DISCARDED_PACKETS:
		return handle_discarded(s, msg, 1);
	default:
		return 0;
	}
}

bt_graph_simple_sink_component_initialize_func_status
sink_bt_initialize(bt_message_iterator *it, void *user_data)
{
	(void)it;
	(void)user_data;
	return BT_GRAPH_SIMPLE_SINK_COMPONENT_INITIALIZE_FUNC_STATUS_OK;
}

bt_graph_simple_sink_component_consume_func_status
sink_bt_consume(bt_message_iterator *it, void *user_data)
{
	struct ingest_sink *s = user_data;
	bt_graph_simple_sink_component_consume_func_status st =
		BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK;
	bt_message_array_const msgs;
	uint64_t count = 0, i;

	switch (bt_message_iterator_next(it, &msgs, &count)) {
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
		break;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_END;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_AGAIN;
	case BT_MESSAGE_ITERATOR_NEXT_STATUS_MEMORY_ERROR:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
	default:
		return BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	}
	for (i = 0; i < count; i++) {
		if (!s->failed && handle_message(s, msgs[i]) < 0) {
			s->failed = 1;
			st = BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
		}
		bt_message_put_ref(msgs[i]);
	}
	if (!s->failed && writer_failed(s->w)) {
		s->failed = 1;
		st = BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	}
	if ((s->seq & 0xffff) < count)
		log_progress("ingest: events", s->seq);
	return st;
}

void sink_bt_finalize(void *user_data)
{
	(void)user_data;
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

enum sink_status sink_store_tables(struct ingest_sink *s, sqlite3 *db)
{
	enum sink_status status = SINK_ERR_SQL;
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
	for (i = 0; i < s->ntraces; i++) {
		struct sink_trace *t = s->trace_list[i];

		sqlite3_bind_int64(st, 1, t->id);
		store_bind_text(st, 2, t->path);
		for (j = 0; j < TRACE_ENVS; j++)
			store_bind_text(st, 3 + j, t->env[j]);
		if (store_step(st) < 0)
			goto end;
	}
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "INSERT INTO stream (id, trace_id, name, "
			       "events) VALUES (?,?,?,?)", -1, &st, NULL))
		goto end;
	for (i = 0; i < s->nstreams; i++) {
		sqlite3_bind_int64(st, 1, s->stream_list[i]->id);
		sqlite3_bind_int64(st, 2, s->stream_list[i]->trace->id);
		store_bind_text(st, 3, s->stream_list[i]->name);
		sqlite3_bind_int64(st, 4, (int64_t)s->stream_list[i]->events);
		if (store_step(st) < 0)
			goto end;
	}
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "INSERT INTO raw_event (id, name, count, "
			       "canonical, note) VALUES (?,?,?,?,?)", -1, &st,
			       NULL))
		goto end;
	for (i = 0; i < s->nraws; i++) {
		sqlite3_bind_int64(st, 1, (int64_t)i);
		store_bind_text(st, 2, s->raws[i].name);
		sqlite3_bind_int64(st, 3, (int64_t)s->raws[i].count);
		store_bind_text(st, 4, s->raws[i].note ? NULL :
				s->raws[i].canonical);
		store_bind_text(st, 5, s->raws[i].note);
		if (store_step(st) < 0)
			goto end;
	}
	sqlite3_finalize(st);
	if (sqlite3_prepare_v2(db, "INSERT INTO lost (stream_id, kind, "
			       "begin_ts, end_ts, count) VALUES (?,?,?,?,?)",
			       -1, &st, NULL))
		goto end;
	for (i = 0; i < s->nlost; i++) {
		struct sink_lost *l = &s->lost[i];

		sqlite3_bind_int64(st, 1, l->stream_id);
		store_bind_text(st, 2, l->is_packets ? "packets" : "events");
		if (l->has_range) {
			sqlite3_bind_int64(st, 3, l->begin_ns - s->ts_base);
			sqlite3_bind_int64(st, 4, l->end_ns - s->ts_base);
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
	if (db_meta_set_int(db, "ts_base_ns", s->ts_base) != DB_OK ||
	    db_meta_set_int(db, "events", (int64_t)s->seq) != DB_OK ||
	    db_meta_set_int(db, "last_ts", s->last_ns - s->ts_base) != DB_OK ||
	    db_meta_set_int(db, "lost_events",
			    (int64_t)s->lost_events) != DB_OK)
		goto end;
	status = SINK_OK;
end:
	if (status != SINK_OK)
		log_error("%s: cannot store capture tables: %s",
			  sqlite3_db_filename(db, "main"), sqlite3_errmsg(db));
	sqlite3_finalize(st);
	return status;
}
