/*
 * The time-merging sink of ingest (see merge.h for the order it keeps).
 *
 * State: per input port, its message iterator, the batch it last
 * returned and the position in it, and the head message's time.  A head
 * "without time" is marked dynamic: its time is the last returned one,
 * read at each choice, as the muxer reads it.  Invariant between two
 * choices: every port that has not ended holds a head (a port whose
 * batch ran out is refilled before the next choice, as the muxer refills
 * it), so an upstream error surfaces after every message merged before
 * it has reached the ingest sink.
 */
#include "ingest/merge.h"

#include "util/log.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Messages merged per consume call: the sink's per-batch checks (writer
 * failure, watchdog, progress) run between calls. */
#define MERGE_SLICE 256

enum clock_expect {
	EXPECT_ANY = 0,         /* no stream seen yet */
	EXPECT_CLOCK,           /* streams have a clock class */
	EXPECT_NONE,            /* streams have none */
};

struct merge_port {
	bt_message_iterator *it;
	bt_message_array_const msgs;
	uint64_t n, pos;        /* msgs[pos] is the head while pos < n */
	int ended;
	int64_t ts;
	int dynamic;            /* head has no time: the last returned one */
	/* The tie key of the stream the key fields were read from. */
	const bt_stream *key_stream;
	const bt_trace *key_trace;
	const uint8_t *uuid;
	const char *trace_name;
	uint64_t sc_id, stream_id;
};

struct merge {
	bt_self_component *self;
	struct ingest_sink *sink;
	struct merge_port *ports;
	uint64_t nports;
	int64_t last_ts;
	enum clock_expect expect;
};

/* utils.muxer's arbitrary but fixed order of message types on a tie. */
static int type_weight(bt_message_type t)
{
	switch (t) {
	case BT_MESSAGE_TYPE_STREAM_BEGINNING:
		return 7;
	case BT_MESSAGE_TYPE_PACKET_BEGINNING:
		return 6;
	case BT_MESSAGE_TYPE_EVENT:
		return 5;
	case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
		return 4;
	case BT_MESSAGE_TYPE_PACKET_END:
		return 3;
	case BT_MESSAGE_TYPE_MESSAGE_ITERATOR_INACTIVITY:
		return 2;
	case BT_MESSAGE_TYPE_DISCARDED_PACKETS:
		return 1;
	default:
		return 0;
	}
}

static const bt_stream *msg_stream(const bt_message *m)
{
	switch (bt_message_get_type(m)) {
	case BT_MESSAGE_TYPE_EVENT:
		return bt_event_borrow_stream_const(
			bt_message_event_borrow_event_const(m));
	case BT_MESSAGE_TYPE_STREAM_BEGINNING:
		return bt_message_stream_beginning_borrow_stream_const(m);
	case BT_MESSAGE_TYPE_STREAM_END:
		return bt_message_stream_end_borrow_stream_const(m);
	case BT_MESSAGE_TYPE_PACKET_BEGINNING:
		return bt_packet_borrow_stream_const(
			bt_message_packet_beginning_borrow_packet_const(m));
	case BT_MESSAGE_TYPE_PACKET_END:
		return bt_packet_borrow_stream_const(
			bt_message_packet_end_borrow_packet_const(m));
	case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
		return bt_message_discarded_events_borrow_stream_const(m);
	case BT_MESSAGE_TYPE_DISCARDED_PACKETS:
		return bt_message_discarded_packets_borrow_stream_const(m);
	default:
		return NULL;
	}
}

static void port_key(struct merge_port *p, const bt_message *m)
{
	const bt_stream *st = msg_stream(m);

	if (st == p->key_stream && st)
		return;
	p->key_stream = st;
	p->key_trace = st ? bt_stream_borrow_trace_const(st) : NULL;
	p->uuid = p->key_trace ? bt_trace_get_uuid(p->key_trace) : NULL;
	p->trace_name = p->key_trace ? bt_trace_get_name(p->key_trace) : NULL;
	p->sc_id = st ? bt_stream_class_get_id(bt_stream_borrow_class_const(
							  st)) : 0;
	p->stream_id = st ? bt_stream_get_id(st) : 0;
}

/* A present value sorts before an absent one (the muxer's rule). */
static int presence_cmp(const void *a, const void *b)
{
	return a && !b ? -1 : !a && b ? 1 : 0;
}

/* The muxer's tie-break between the heads of ports a and b (equal
 * times): < 0 when a's goes first, 0 when it cannot tell. */
static int key_cmp(struct merge_port *a, struct merge_port *b)
{
	const bt_message *ma = a->msgs[a->pos], *mb = b->msgs[b->pos];
	int r;

	port_key(a, ma);
	port_key(b, mb);
	if ((r = presence_cmp(a->key_trace, b->key_trace)) || !a->key_trace)
		goto stream;
	if ((r = presence_cmp(a->uuid, b->uuid)))
		return r;
	if (a->uuid && (r = memcmp(a->uuid, b->uuid, 16)))
		return r;
	if ((r = presence_cmp(a->trace_name, b->trace_name)))
		return r;
	if (a->trace_name && (r = strcmp(a->trace_name, b->trace_name)))
		return r;
stream:
	if (r)
		return r;
	if ((r = presence_cmp(a->key_stream, b->key_stream)))
		return r;
	if (a->key_stream) {
		if (a->sc_id != b->sc_id)
			return a->sc_id < b->sc_id ? -1 : 1;
		if (a->stream_id != b->stream_id)
			return a->stream_id < b->stream_id ? -1 : 1;
	}
	return type_weight(bt_message_get_type(mb)) -
		type_weight(bt_message_get_type(ma));
}

static int64_t port_ts(const struct merge *m, const struct merge_port *p)
{
	return p->dynamic ? m->last_ts : p->ts;
}

/* Port a's head goes before port b's (a < b in port order on a full
 * tie, as the muxer keeps its first candidate). */
static int port_before(struct merge *m, struct merge_port *a,
		       struct merge_port *b)
{
	int64_t ta = port_ts(m, a), tb = port_ts(m, b);
	int r;

	if (ta != tb)
		return ta < tb;
	r = key_cmp(a, b);
	return r ? r < 0 : a < b;
}

static int clock_class_check(struct merge *m, const bt_stream *st)
{
	const bt_clock_class *cc = bt_stream_class_borrow_default_clock_class_const(
		bt_stream_borrow_class_const(st));
	enum clock_expect want = cc ? EXPECT_CLOCK : EXPECT_NONE;

	if (m->expect == EXPECT_ANY)
		m->expect = want;
	if (m->expect == want)
		return 0;
	BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(m->self,
		"%s", want == EXPECT_NONE ?
		"Expecting a clock class, but got none." :
		"Expecting no clock class, but got one.");
	return -1;
}

static int snapshot_ns(struct merge *m, const bt_clock_snapshot *cs,
		       int64_t *ns)
{
	if (bt_clock_snapshot_get_ns_from_origin(cs, ns) ==
	    BT_CLOCK_SNAPSHOT_GET_NS_FROM_ORIGIN_STATUS_OK)
		return 0;
	BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(m->self,
		"Cannot get nanoseconds from Epoch of clock snapshot.");
	return -1;
}

/* The head's time, as utils.muxer's get_msg_ts_ns() reads it; -1 on a
 * clock error (cause appended). */
static int head_time(struct merge *m, struct merge_port *p)
{
	const bt_message *msg = p->msgs[p->pos];
	const bt_clock_snapshot *cs = NULL;
	const bt_stream_class *sc;
	bt_message_type t = bt_message_get_type(msg);

	p->dynamic = 1;
	if (t == BT_MESSAGE_TYPE_STREAM_BEGINNING &&
	    clock_class_check(m, bt_message_stream_beginning_borrow_stream_const(
				      msg)) < 0)
		return -1;
	if (m->expect == EXPECT_NONE)
		return 0;
	switch (t) {
	case BT_MESSAGE_TYPE_EVENT:
		if (bt_message_event_borrow_stream_class_default_clock_class_const(
			    msg))
			cs = bt_message_event_borrow_default_clock_snapshot_const(
				msg);
		break;
	case BT_MESSAGE_TYPE_PACKET_BEGINNING:
		sc = bt_stream_borrow_class_const(bt_packet_borrow_stream_const(
			bt_message_packet_beginning_borrow_packet_const(msg)));
		if (bt_stream_class_packets_have_beginning_default_clock_snapshot(
			    sc))
			cs = bt_message_packet_beginning_borrow_default_clock_snapshot_const(
				msg);
		break;
	case BT_MESSAGE_TYPE_PACKET_END:
		sc = bt_stream_borrow_class_const(bt_packet_borrow_stream_const(
			bt_message_packet_end_borrow_packet_const(msg)));
		if (bt_stream_class_packets_have_end_default_clock_snapshot(sc))
			cs = bt_message_packet_end_borrow_default_clock_snapshot_const(
				msg);
		break;
	case BT_MESSAGE_TYPE_STREAM_BEGINNING:
		if (bt_message_stream_beginning_borrow_default_clock_snapshot_const(
			    msg, &cs) ==
		    BT_MESSAGE_STREAM_CLOCK_SNAPSHOT_STATE_UNKNOWN)
			cs = NULL;
		break;
	case BT_MESSAGE_TYPE_STREAM_END:
		if (bt_message_stream_end_borrow_default_clock_snapshot_const(
			    msg, &cs) ==
		    BT_MESSAGE_STREAM_CLOCK_SNAPSHOT_STATE_UNKNOWN)
			cs = NULL;
		break;
	case BT_MESSAGE_TYPE_DISCARDED_EVENTS:
		sc = bt_stream_borrow_class_const(
			bt_message_discarded_events_borrow_stream_const(msg));
		if (bt_stream_class_discarded_events_have_default_clock_snapshots(
			    sc))
			cs = bt_message_discarded_events_borrow_beginning_default_clock_snapshot_const(
				msg);
		break;
	case BT_MESSAGE_TYPE_DISCARDED_PACKETS:
		sc = bt_stream_borrow_class_const(
			bt_message_discarded_packets_borrow_stream_const(msg));
		if (bt_stream_class_discarded_packets_have_default_clock_snapshots(
			    sc))
			cs = bt_message_discarded_packets_borrow_beginning_default_clock_snapshot_const(
				msg);
		break;
	case BT_MESSAGE_TYPE_MESSAGE_ITERATOR_INACTIVITY:
		cs = bt_message_message_iterator_inactivity_borrow_clock_snapshot_const(
			msg);
		break;
	default:
		break;
	}
	if (!cs)
		return 0;
	p->dynamic = 0;
	return snapshot_ns(m, cs, &p->ts);
}

/* Give port p a head if its batch ran out: 1 = head (time read), 0 =
 * ended, -1 = error, -2 = again. */
static int port_fill(struct merge *m, struct merge_port *p)
{
	if (p->ended)
		return 0;
	if (p->pos >= p->n) {
		p->n = p->pos = 0;
		switch (bt_message_iterator_next(p->it, &p->msgs, &p->n)) {
		case BT_MESSAGE_ITERATOR_NEXT_STATUS_OK:
			break;
		case BT_MESSAGE_ITERATOR_NEXT_STATUS_END:
			p->ended = 1;
			BT_MESSAGE_ITERATOR_PUT_REF_AND_RESET(p->it);
			return 0;
		case BT_MESSAGE_ITERATOR_NEXT_STATUS_AGAIN:
			return -2;
		default:
			return -1;
		}
	}
	return head_time(m, p) < 0 ? -1 : 1;
}

static bt_component_class_sink_consume_method_status
status_of(int fill)
{
	return fill == -2 ? BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_AGAIN :
		BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
}

/* Hand port p's head to the sink; -1 when the sink failed. */
static int port_pop(struct merge *m, struct merge_port *p, int64_t ts)
{
	const bt_message *msg = p->msgs[p->pos];
	int rc;

	m->last_ts = ts;
	p->msgs[p->pos++] = NULL;
	rc = sink_message(m->sink, msg);
	bt_message_put_ref(msg);
	return rc;
}

static int time_check(struct merge *m, int64_t ts)
{
	if (ts >= m->last_ts)
		return 0;
	BT_CURRENT_THREAD_ERROR_APPEND_CAUSE_FROM_COMPONENT(m->self,
		"Youngest upstream message's timestamp is less than the "
		"last returned timestamp: ts=%" PRId64 ", last-returned-ts=%"
		PRId64, ts, m->last_ts);
	return -1;
}

static bt_component_class_sink_consume_method_status
merge_consume(bt_self_component_sink *self)
{
	struct merge *m = bt_self_component_get_data(
		bt_self_component_sink_as_self_component(self));
	struct merge_port *best, *next, *p;
	uint64_t i, done = 0;
	int64_t ts;
	int fill, others_dynamic;

	/* Every port holds a head before a choice: on the first call, each
	 * port's first batch in port order (the muxer's first pass); later,
	 * a port left empty by an "again". */
	for (i = 0; i < m->nports; i++) {
		p = &m->ports[i];
		if (!p->ended && p->pos >= p->n &&
		    (fill = port_fill(m, p)) < 0)
			return status_of(fill);
	}
	while (done < MERGE_SLICE) {
		best = next = NULL;
		others_dynamic = 0;
		for (i = 0; i < m->nports; i++) {
			p = &m->ports[i];
			if (p->ended)
				continue;
			if (!best || port_before(m, p, best)) {
				others_dynamic |= best && best->dynamic;
				next = best;
				best = p;
			} else {
				others_dynamic |= p->dynamic;
				if (!next || port_before(m, p, next))
					next = p;
			}
		}
		if (!best)
			return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_END;
		/* best's heads while they stay strictly ahead of every other
		 * port's head: no other choice can change in between. */
		for (;;) {
			ts = port_ts(m, best);
			if (time_check(m, ts) < 0)
				return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
			if (port_pop(m, best, ts) < 0)
				return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_MEMORY_ERROR;
			done++;
			fill = port_fill(m, best);
			if (fill < 0)
				return status_of(fill);
			if (fill == 0 || done >= MERGE_SLICE || others_dynamic ||
			    (next && port_ts(m, best) >= port_ts(m, next)))
				break;
		}
	}
	if (sink_batch_end(m->sink, done) < 0)
		return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_ERROR;
	return BT_COMPONENT_CLASS_SINK_CONSUME_METHOD_STATUS_OK;
}

static bt_component_class_initialize_method_status
merge_init(bt_self_component_sink *self,
	   bt_self_component_sink_configuration *conf,
	   const bt_value *params, void *data)
{
	struct merge *m = data;
	char name[32];
	uint64_t i;

	(void)conf;
	(void)params;
	m->self = bt_self_component_sink_as_self_component(self);
	bt_self_component_set_data(m->self, m);
	for (i = 0; i < m->nports; i++) {
		snprintf(name, sizeof(name), "in%" PRIu64, i);
		if (bt_self_component_sink_add_input_port(self, name, NULL,
							  NULL) !=
		    BT_SELF_COMPONENT_ADD_PORT_STATUS_OK)
			return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_MEMORY_ERROR;
	}
	return BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;
}

static bt_component_class_sink_graph_is_configured_method_status
merge_configured(bt_self_component_sink *self)
{
	struct merge *m = bt_self_component_get_data(
		bt_self_component_sink_as_self_component(self));
	uint64_t i;

	for (i = 0; i < m->nports; i++)
		if (bt_message_iterator_create_from_sink_component(self,
			bt_self_component_sink_borrow_input_port_by_index(self,
									  i),
			&m->ports[i].it) !=
		    BT_MESSAGE_ITERATOR_CREATE_FROM_SINK_COMPONENT_STATUS_OK)
			return BT_COMPONENT_CLASS_SINK_GRAPH_IS_CONFIGURED_METHOD_STATUS_ERROR;
	return BT_COMPONENT_CLASS_SINK_GRAPH_IS_CONFIGURED_METHOD_STATUS_OK;
}

static void merge_finalize(bt_self_component_sink *self)
{
	struct merge *m = bt_self_component_get_data(
		bt_self_component_sink_as_self_component(self));
	struct merge_port *p;
	uint64_t i;

	if (!m)
		return;
	for (i = 0; i < m->nports; i++) {
		p = &m->ports[i];
		for (; p->pos < p->n; p->pos++)
			bt_message_put_ref(p->msgs[p->pos]);
		bt_message_iterator_put_ref(p->it);
	}
	free(m->ports);
	free(m);
}

enum merge_status merge_sink_add(bt_graph *graph, const char *name,
				 struct ingest_sink *s, uint64_t nports,
				 const bt_component_sink **out)
{
	enum merge_status st = MERGE_ERR;
	bt_component_class_sink *cls;
	struct merge *m;

	cls = bt_component_class_sink_create("mmureplay-merge", merge_consume);
	m = calloc(1, sizeof(*m));
	if (m)
		m->ports = calloc(nports ? nports : 1, sizeof(*m->ports));
	if (!cls || !m || !m->ports ||
	    bt_component_class_sink_set_initialize_method(cls, merge_init) ||
	    bt_component_class_sink_set_graph_is_configured_method(
		    cls, merge_configured) ||
	    bt_component_class_sink_set_finalize_method(cls, merge_finalize))
		goto end;
	m->sink = s;
	m->nports = nports;
	m->last_ts = INT64_MIN;
	/* From here the component owns m (merge_finalize frees it). */
	if (bt_graph_add_sink_component_with_initialize_method_data(graph,
		cls, name, NULL, m, BT_LOGGING_LEVEL_NONE, out) ==
	    BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
		m = NULL;
		st = MERGE_OK;
	}
end:
	if (m) {
		free(m->ports);
		free(m);
	}
	bt_component_class_sink_put_ref(cls);
	return st;
}
