/*
 * From babeltrace2 messages to canonical rows (see sink.h).
 *
 * Per event the work is: find the event class descriptor (a pointer-keyed
 * map, resolved once per class from the catalogue by field *name*), read
 * the mapped payload members by the index resolved then, and append a row
 * to the current chunk of the capture tables (ingest/tables.h, which
 * holds the invariants on seq and on unmapped classes).
 */
#include "ingest/sink.h"

#include "util/assert.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/watchdog.h"
#include "util/ptrmap.h"
#include "util/fnv.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct sink_class {
	struct tables_class map;
	int has_clock;
	int has_packets;
	int64_t cpu_member;     /* packet context, -1: none */
	int64_t tid_member;     /* common context, -1: none */
	int64_t tid_payload;    /* perf's CTF: perf_tid in the payload */
	int64_t procname_member;
	int64_t pid_member;             /* -1: no process in the context */
	/* perf's side-band records (perf data convert --all): counted in
	 * raw_event, no place in the time line; perf_comm names a thread. */
	int sideband;
	int64_t comm_tid, comm_name;    /* perf_comm payload members */
};

/* The side-band record classes perf data convert --to-ctf --all writes.
 * Synthesized ones carry time 0 (threads that existed at the start). */
static const char *const perf_sideband[] = {
	"perf_comm", "perf_fork", "perf_exit", "perf_mmap", "perf_mmap2",
};

#define TRACE_ENV_KEY(e, key, col) [e] = key,
static const char *const env_keys[ENV_N] = {
	TRACE_ENV_LIST(TRACE_ENV_KEY)
};

struct ingest_sink {
	struct ingest_tables *t;

	struct ptrmap classes;          /* bt_event_class * -> sink_class */
	struct ptrmap streams;          /* bt_stream * -> tables_stream */
	struct ptrmap traces;           /* bt_trace * -> tables_trace */

	const bt_stream *last_stream;
	struct tables_stream *last_sstream;
	const bt_packet *last_packet;
	int64_t last_cpu;
	int failed;                     /* out of memory: stop the graph */
	/* perf samples: the last one's digest, and how many were exact
	 * repeats of the one before (dropped: see sink_duplicates()). */
	uint64_t last_digest;
	uint64_t duplicates;
	/* Event classes the metadata declares, fired or not: ",a,b,"
	 * (what the tracer was asked to record; sink_declared()). */
	struct ptrmap stream_classes;   /* bt_stream_class * seen */
	char *declared;
	size_t declared_len, declared_cap;
};

struct ingest_sink *sink_create(struct ingest_tables *t)
{
	struct ingest_sink *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->t = t;
	ptrmap_init(&s->classes);
	ptrmap_init(&s->stream_classes);
	ptrmap_init(&s->streams);
	ptrmap_init(&s->traces);
	return s;
}

void sink_destroy(struct ingest_sink *s)
{
	if (!s)
		return;
	ptrmap_free_values(&s->classes);
	ptrmap_free(&s->stream_classes);
	free(s->declared);
	ptrmap_free(&s->streams);
	ptrmap_free(&s->traces);
	free(s);
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

/* tables_field_find_fn over a payload structure field class. */
static enum col_src payload_find(const void *payload, const char *name,
				 uint64_t *member)
{
	int64_t m = member_index(payload, name);

	if (m < 0)
		return COL_ABSENT;
	*member = (uint64_t)m;
	return member_src(payload, (uint64_t)m);
}

static struct sink_class *class_resolve(struct ingest_sink *s,
					const bt_event_class *ec)
{
	const bt_stream_class *sc = bt_event_class_borrow_stream_class_const(ec);
	const char *name = bt_event_class_get_name(ec);
	struct sink_class *c;
	int64_t raw;

	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	raw = tables_raw(s->t, name ? name : "(unnamed)");
	if (raw < 0 || ptrmap_put(&s->classes, (uintptr_t)ec, c) < 0) {
		free(c);
		return NULL;
	}
	c->map.raw_id = (uint32_t)raw;
	c->map.kind = -1;
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
	c->pid_member = member_index(
		bt_stream_class_borrow_event_common_context_field_class_const(
			sc), "pid");
	if (c->pid_member < 0)
		c->pid_member = member_index(
			bt_stream_class_borrow_event_common_context_field_class_const(
				sc), "vpid");
	/* perf data convert --to-ctf puts the sample's tid beside the
	 * tracepoint's fields. */
	c->tid_payload = c->tid_member >= 0 ? -1 : member_index(
		bt_event_class_borrow_payload_field_class_const(ec),
		"perf_tid");
	for (size_t k = 0; name && k < sizeof(perf_sideband) /
		     sizeof(perf_sideband[0]); k++)
		c->sideband |= strcmp(name, perf_sideband[k]) == 0;
	c->comm_tid = c->comm_name = -1;
	if (c->sideband && strcmp(name, "perf_comm") == 0) {
		c->comm_tid = member_index(
			bt_event_class_borrow_payload_field_class_const(ec),
			"tid");
		c->comm_name = member_index(
			bt_event_class_borrow_payload_field_class_const(ec),
			"comm");
	}
	if (name && !c->sideband)
		tables_class_map(s->t, &c->map, payload_find,
				 bt_event_class_borrow_payload_field_class_const(
					 ec));
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

static struct tables_trace *trace_register(struct ingest_sink *s,
					   const bt_trace *t)
{
	struct tables_trace *tr = ptrmap_get(&s->traces, (uintptr_t)t);
	const bt_value *maj, *min, *pl;
	char buf[64];
	int i;

	if (tr)
		return tr;
	tr = tables_trace_add(s->t, bt_trace_get_name(t));
	if (!tr)
		return NULL;
	for (i = 0; i < ENV_N; i++) {
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
		free(tr->env[ENV_TRACER_VERSION]);
		tr->env[ENV_TRACER_VERSION] = strdup(buf);
	}
	if (ptrmap_put(&s->traces, (uintptr_t)t, tr) < 0)
		return NULL;
	return tr;
}

static struct tables_stream *stream_register(struct ingest_sink *s,
					    const bt_stream *st)
{
	struct tables_stream *ss = ptrmap_get(&s->streams, (uintptr_t)st);
	struct tables_trace *tr;

	if (ss)
		return ss;
	tr = trace_register(s, bt_stream_borrow_trace_const(st));
	if (!tr)
		return NULL;
	ss = tables_stream_add(s->t, tr, bt_stream_get_name(st));
	if (!ss)
		return NULL;
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

/*
 * A perf sample's digest: its class, stream, time and every top-level
 * payload field.  perf.data can hold a record twice (same time, same
 * fields, back to back; `perf script` prints both); the kernel cannot
 * emit that twice (an SPTE change from old to new needs old back first).
 */
static uint64_t sample_digest(const bt_event *ev, const bt_event_class *ec,
			      const bt_stream *st, int64_t ns)
{
	const bt_field *pl = bt_event_borrow_payload_field_const(ev), *f;
	uint64_t h = FNV_BASIS, i, n, v;
	uintptr_t id[2] = { (uintptr_t)ec, (uintptr_t)st };
	const char *str;

	h = fnv_add(h, id, sizeof(id));
	h = fnv_add(h, &ns, sizeof(ns));
	n = pl ? bt_field_class_structure_get_member_count(
		bt_field_borrow_class_const(pl)) : 0;
	for (i = 0; i < n; i++) {
		f = bt_field_structure_borrow_member_field_by_index_const(pl, i);
		if (bt_field_class_type_is(bt_field_get_class_type(f),
					   BT_FIELD_CLASS_TYPE_SIGNED_INTEGER)) {
			v = (uint64_t)bt_field_integer_signed_get_value(f);
			h = fnv_add(h, &v, sizeof(v));
		} else if (bt_field_class_type_is(bt_field_get_class_type(f),
					BT_FIELD_CLASS_TYPE_UNSIGNED_INTEGER)) {
			v = bt_field_integer_unsigned_get_value(f);
			h = fnv_add(h, &v, sizeof(v));
		} else if (bt_field_get_class_type(f) ==
			   BT_FIELD_CLASS_TYPE_STRING) {
			str = bt_field_string_get_value(f);
			h = fnv_add(h, str, strlen(str) + 1);
		}
	}
	return h;
}

static int64_t payload_int(const bt_field *pl, int64_t member)
{
	const bt_field *f =
		bt_field_structure_borrow_member_field_by_index_const(
			pl, (uint64_t)member);

	return bt_field_class_type_is(bt_field_get_class_type(f),
				      BT_FIELD_CLASS_TYPE_SIGNED_INTEGER) ?
		bt_field_integer_signed_get_value(f) :
		(int64_t)bt_field_integer_unsigned_get_value(f);
}

/* A perf side-band record: perf_comm names its thread (from the next
 * event on); none takes a sequence number or moves the time base. */
static int sideband_note(struct ingest_sink *s, const struct sink_class *c,
			 const bt_event *ev)
{
	const bt_field *pl = bt_event_borrow_payload_field_const(ev);

	if (c->comm_tid < 0 || c->comm_name < 0)
		return 0;
	return tables_thread_note(s->t, payload_int(pl, c->comm_tid), -1,
		bt_field_string_get_value(
			bt_field_structure_borrow_member_field_by_index_const(
				pl, (uint64_t)c->comm_name)),
		tables_event_count(s->t));
}

static int handle_event(struct ingest_sink *s, const bt_message *msg)
{
	const bt_event *ev = bt_message_event_borrow_event_const(msg);
	const bt_event_class *ec = bt_event_borrow_class_const(ev);
	const bt_stream *st = bt_event_borrow_stream_const(ev);
	struct sink_class *c = ptrmap_get(&s->classes, (uintptr_t)ec);
	const struct tables_class *m;
	const bt_field *payload, *ctx;
	struct ingest_row *r;
	uint64_t seq;
	int64_t ns = 0, tid = 0;
	uint32_t nullmask = 0;
	const char *text;
	int i;

	if (!c && !(c = class_resolve(s, ec)))
		return -1;
	m = &c->map;
	if (st != s->last_stream) {
		s->last_sstream = stream_register(s, st);
		if (!s->last_sstream)
			return -1;
		s->last_stream = st;
	}
	s->last_sstream->events++;
	tables_raw_count(s->t, m->raw_id);
	if (c->sideband)
		return sideband_note(s, c, ev);

	if (c->has_clock) {
		bt_clock_snapshot_get_ns_from_origin(
			bt_message_event_borrow_default_clock_snapshot_const(
				msg), &ns);
		if (!s->last_sstream->has_first) {
			s->last_sstream->first_ns = ns;
			s->last_sstream->has_first = 1;
		}
	}
	if (c->tid_payload >= 0) {
		uint64_t d = sample_digest(ev, ec, st, ns);

		if (d == s->last_digest) {
			s->duplicates++;
			return 0;
		}
		s->last_digest = d;
	}
	seq = tables_seq(s->t, ns);
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
		    tables_thread_note(s->t, tid, c->pid_member < 0 ? -1 :
				bt_field_integer_signed_get_value(
					bt_field_structure_borrow_member_field_by_index_const(
						ctx, (uint64_t)c->pid_member)),
				bt_field_string_get_value(
				bt_field_structure_borrow_member_field_by_index_const(
					ctx, (uint64_t)c->procname_member)),
				seq) < 0)
			return -1;
	} else if (c->tid_payload >= 0) {
		tid = payload_int(bt_event_borrow_payload_field_const(ev),
				  c->tid_payload);
	} else {
		nullmask |= ROW_NULL_TID;
	}
	if (m->kind < 0)
		return 0;

	payload = bt_event_borrow_payload_field_const(ev);
	r = tables_row_next(s->t);
	r->kind = (uint32_t)m->kind;
	r->seq = (int64_t)seq;
	r->ts = tables_ts(s->t, ns);
	r->cpu = s->last_cpu;
	r->tid = tid;
	r->textmask = 0;
	for (i = 0; i < m->ncols; i++) {
		switch (m->col[i].src) {
		case COL_ABSENT:
			nullmask |= 1u << i;
			break;
		case COL_CONST:
		case COL_RAW_ID:
			r->v[i].i = m->col[i].cval;
			break;
		case COL_STRING:
			text = NULL;
			field_int(payload, m->col[i].member, COL_STRING, &text);
			text = tables_intern(s->t, text ? text : "");
			if (!text)
				return -1;
			r->v[i].text = text;
			r->textmask |= 1u << i;
			break;
		default:
			r->v[i].i = field_int(payload, m->col[i].member,
					      m->col[i].src, &text);
		}
	}
	r->nullmask = nullmask;
	tables_row_commit(s->t);
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
	struct tables_stream *ss = stream_register(s, st);
	bt_property_availability avail;
	int64_t begin = 0, end = 0;
	uint64_t count = 0;
	int has_range = 0;

	if (!ss)
		return -1;
	if (is_packets) {
		avail = bt_message_discarded_packets_get_count(msg, &count);
		if (bt_stream_class_discarded_packets_have_default_clock_snapshots(sc))
			has_range = clock_ns(
				bt_message_discarded_packets_borrow_beginning_default_clock_snapshot_const(msg),
				&begin) && clock_ns(
				bt_message_discarded_packets_borrow_end_default_clock_snapshot_const(msg),
				&end);
	} else {
		avail = bt_message_discarded_events_get_count(msg, &count);
		if (bt_stream_class_discarded_events_have_default_clock_snapshots(sc))
			has_range = clock_ns(
				bt_message_discarded_events_borrow_beginning_default_clock_snapshot_const(msg),
				&begin) && clock_ns(
				bt_message_discarded_events_borrow_end_default_clock_snapshot_const(msg),
				&end);
	}
	return tables_lost_add(s->t, ss, is_packets, has_range, begin, end,
			       avail == BT_PROPERTY_AVAILABILITY_AVAILABLE,
			       count);
}

/* Append name to s->declared unless it is there; 0 or -1 (memory). */
static int declared_add(struct ingest_sink *s, const char *name)
{
	size_t n = strlen(name);
	char key[512];

	if (!s->declared_len) {
		if (ALLOC_GROW(s->declared, 2, s->declared_cap) < 0)
			return -1;
		memcpy(s->declared, ",", 2);
		s->declared_len = 1;
	}
	if (n + 3 > sizeof(key))
		return 0;
	snprintf(key, sizeof(key), ",%s,", name);
	if (strstr(s->declared, key))
		return 0;
	if (ALLOC_GROW(s->declared, s->declared_len + n + 2,
		       s->declared_cap) < 0)
		return -1;
	memcpy(s->declared + s->declared_len, name, n);
	memcpy(s->declared + s->declared_len + n, ",", 2);
	s->declared_len += n + 1;
	return 0;
}

/* The event classes of a stream class, once per stream class. */
static int declared_note(struct ingest_sink *s, const bt_stream_class *sc)
{
	uint64_t i, n;
	const char *name;

	if (ptrmap_get(&s->stream_classes, (uintptr_t)sc))
		return 0;
	if (ptrmap_put(&s->stream_classes, (uintptr_t)sc, (void *)sc) < 0)
		return -1;
	n = bt_stream_class_get_event_class_count(sc);
	for (i = 0; i < n; i++) {
		name = bt_event_class_get_name(
			bt_stream_class_borrow_event_class_by_index_const(sc, i));
		if (name && declared_add(s, name) < 0)
			return -1;
	}
	return 0;
}

char *sink_declared(const struct ingest_sink *s)
{
	char *out;

	if (s->declared_len < 2)
		return NULL;
	/* Without the guard commas. */
	out = strndup(s->declared + 1, s->declared_len - 2);
	return out;
}

static int handle_message(struct ingest_sink *s, const bt_message *msg)
{
	const bt_stream *st;

	switch (bt_message_get_type(msg)) {
	case BT_MESSAGE_TYPE_EVENT:
		return handle_event(s, msg);
	case BT_MESSAGE_TYPE_STREAM_BEGINNING:
		st = bt_message_stream_beginning_borrow_stream_const(msg);
		return stream_register(s, st) &&
			declared_note(s, bt_stream_borrow_class_const(st)) == 0 ?
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

int sink_message(struct ingest_sink *s, const bt_message *msg)
{
	if (!s->failed && handle_message(s, msg) < 0)
		s->failed = 1;
	return s->failed ? -1 : 0;
}

int sink_batch_end(struct ingest_sink *s, uint64_t count)
{
	if (!s->failed && tables_writer_failed(s->t))
		s->failed = 1;
	watchdog_kick();
	if ((tables_event_count(s->t) & 0xffff) < count)
		log_progress("ingest: events", tables_event_count(s->t));
	return s->failed ? -1 : 0;
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
		if (!s->failed && sink_message(s, msgs[i]) < 0)
			st = BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_MEMORY_ERROR;
		bt_message_put_ref(msgs[i]);
	}
	if (sink_batch_end(s, count) < 0 &&
	    st == BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_OK)
		st = BT_GRAPH_SIMPLE_SINK_COMPONENT_CONSUME_FUNC_STATUS_ERROR;
	return st;
}

uint64_t sink_duplicates(const struct ingest_sink *s)
{
	return s->duplicates;
}

void sink_bt_finalize(void *user_data)
{
	(void)user_data;
}
