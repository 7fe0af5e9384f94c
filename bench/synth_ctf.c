/*
 * synth: the CTF writer.  The event classes of the lab trace, and a
 * babeltrace2 source component that hands the model's events, one stream
 * per CPU, to sink.ctf.fs of the ctf plugin (see synth.c for the
 * layout).  Nothing here depends on the ISA: the model's events carry
 * their values encoded already.
 */
#include "synth.h"

#include <babeltrace2/babeltrace.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------------
 * Event classes: the lab trace's (patched 6.1.192, lttng-modules 2.13.9).
 */
const struct class_spec synth_classes[C_N] = {
	[C_SPTE_CHANGED] = { 83, "kvm_tdp_mmu_spte_changed", {
		{ "gfn", 64, F_U, 1 }, { "old_spte", 64, F_U, 1 },
		{ "new_spte", 64, F_U, 1 }, { "level", 8, F_U, 0 },
		{ "as_id", 8, F_U, 0 } } },
	[C_LOCK_WAIT] = { 82, "kvm_mmu_fault_lock_wait", {
		{ "gfn", 64, F_U, 1 }, { "wait_ns", 64, F_U, 0 },
		{ "error_code", 32, F_U, 1 }, { "vcpu_id", 32, F_S, 0 },
		{ "lock_mode", 8, F_U, 0 } } },
	[C_NX_PAGE] = { 81, "kvm_mmu_nx_recover_page", {
		{ "gfn", 64, F_U, 1 }, { "level", 8, F_U, 0 },
		{ "as_id", 8, F_U, 0 }, { "tdp_mmu", 8, F_U, 0 },
		{ "lock_mode", 8, F_U, 0 }, { "action", 8, F_U, 0 } } },
	[C_NX_END] = { 80, "kvm_mmu_nx_recovery_end", {
		{ "to_zap", 64, F_U, 0 }, { "zapped", 64, F_U, 0 },
		{ "skipped_dirty", 64, F_U, 0 }, { "raced", 64, F_U, 0 },
		{ "pages", 64, F_U, 0 }, { "lock_mode", 8, F_U, 0 } } },
	[C_NX_BEGIN] = { 79, "kvm_mmu_nx_recovery_begin", {
		{ "pages", 64, F_U, 0 }, { "to_zap", 64, F_U, 0 },
		{ "ratio", 32, F_U, 0 }, { "lock_mode", 8, F_U, 0 } } },
	[C_UNMAP_GFN] = { 78, "kvm_mmu_unmap_gfn_range", {
		{ "start_gfn", 64, F_U, 1 }, { "end_gfn", 64, F_U, 1 },
		{ "slot", 16, F_U, 0 }, { "as_id", 8, F_U, 0 },
		{ "event", 8, F_U, 0 }, { "perm_upgrade", 8, F_U, 0 },
		{ "decision", 8, F_U, 0 }, { "flush", 8, F_U, 0 } } },
	[C_SPLIT_HUGE] = { 77, "kvm_mmu_split_huge_page", {
		{ "gfn", 64, F_U, 1 }, { "spte", 64, F_U, 1 },
		{ "level", 32, F_S, 0 }, { "errno", 32, F_S, 0 } } },
	[C_SPTE_REQ] = { 76, "kvm_mmu_spte_requested", {
		{ "gfn", 64, F_U, 1 }, { "pfn", 64, F_U, 1 },
		{ "level", 8, F_U, 0 } } },
	[C_SET_SPTE] = { 75, "kvm_mmu_set_spte", {
		{ "gfn", 64, F_U, 1 }, { "spte", 64, F_U, 1 },
		{ "sptep", 64, F_U, 1 }, { "level", 8, F_U, 0 } } },
	[C_FAST_PF] = { 74, "kvm_mmu_fast_page_fault", {
		{ "vcpu_id", 32, F_S, 0 }, { "cr2_or_gpa", 64, F_U, 0 },
		{ "error_code", 32, F_U, 0 }, { "sptep", 64, F_U, 1 },
		{ "old_spte", 64, F_U, 0 }, { "new_spte", 64, F_U, 0 },
		{ "ret", 32, F_S, 0 } } },
	[C_PREP_ZAP] = { 71, "kvm_mmu_prepare_zap_page", {
		{ "gfn", 64, F_U, 0 }, { "role", 32, F_U, 0 },
		{ "root_count", 32, F_U, 0 }, { "unsync", 8, F_U, 0 } } },
	[C_GET_PAGE] = { 68, "kvm_mmu_get_page", {
		{ "gfn", 64, F_U, 0 }, { "role", 32, F_U, 0 },
		{ "root_count", 32, F_U, 0 }, { "unsync", 8, F_U, 0 },
		{ "created", 8, F_U, 0 } } },
	[C_PAGE_FAULT] = { 43, "kvm_x86_page_fault", {
		{ "vcpu_id", 32, F_U, 0 }, { "guest_rip", 64, F_U, 1 },
		{ "fault_address", 64, F_U, 1 },
		{ "error_code", 64, F_U, 1 } } },
	[C_EXIT] = { 40, "kvm_x86_exit", {
		{ "exit_reason", 32, F_U, 0 }, { "guest_rip", 64, F_U, 0 },
		{ "isa", 32, F_U, 0 }, { "info1", 64, F_U, 0 },
		{ "info2", 64, F_U, 0 }, { "intr_info", 32, F_U, 0 },
		{ "error_code", 32, F_U, 0 }, { "vcpu_id", 32, F_U, 0 } } },
	[C_ENTRY] = { 34, "kvm_x86_entry", {
		{ "vcpu_id", 32, F_U, 0 }, { "rip", 64, F_U, 1 },
		{ "immediate_exit", 8, F_U, 0 } } },
	[C_MEMSLOT] = { 33, "kvm_memslot_change", {
		{ "base_gfn", 64, F_U, 1 }, { "npages", 64, F_U, 0 },
		{ "hva", 64, F_U, 1 }, { "old_flags", 32, F_U, 1 },
		{ "new_flags", 32, F_U, 1 }, { "as_id", 16, F_U, 0 },
		{ "slot", 16, F_U, 0 }, { "change", 8, F_U, 0 },
		{ "dirty_logging", 8, F_U, 0 } } },
	[C_TLB_FLUSH] = { 32, "kvm_remote_tlb_flush", {
		{ "start_gfn", 64, F_U, 1 }, { "pages", 64, F_U, 0 },
		{ "ranged", 8, F_U, 0 } } },
	[C_INV_END] = { 31, "kvm_invalidate_range_end", {
		{ "hva_start", 64, F_U, 1 }, { "hva_end", 64, F_U, 1 },
		{ "event", 8, F_U, 0 }, { "flags", 32, F_U, 1 },
		{ "blockable", 8, F_U, 0 }, { "perm_upgrade", 8, F_U, 0 } } },
	[C_INV_START] = { 30, "kvm_invalidate_range_start", {
		{ "hva_start", 64, F_U, 1 }, { "hva_end", 64, F_U, 1 },
		{ "event", 8, F_U, 0 }, { "flags", 32, F_U, 1 },
		{ "blockable", 8, F_U, 0 }, { "perm_upgrade", 8, F_U, 0 } } },
	[C_UNMAP_HVA] = { 29, "kvm_unmap_hva_range", {
		{ "start", 64, F_U, 1 }, { "end", 64, F_U, 1 } } },
	[C_SYS_EXIT_IOCTL] = { 13, "syscall_exit_ioctl", {
		{ "ret", 64, F_S, 0 }, { "arg", 64, F_U, 0 } } },
	[C_SYS_ENTRY_IOCTL] = { 12, "syscall_entry_ioctl", {
		{ "fd", 32, F_U, 0 }, { "cmd", 32, F_U, 0 },
		{ "arg", 64, F_U, 0 } } },
	[C_SYS_EXIT_MPROTECT] = { 9, "syscall_exit_mprotect", {
		{ "ret", 64, F_S, 0 } } },
	[C_SYS_ENTRY_MPROTECT] = { 8, "syscall_entry_mprotect", {
		{ "start", 64, F_U, 0 }, { "len", 64, F_U, 0 },
		{ "prot", 64, F_U, 0 } } },
	[C_SYS_EXIT_MADVISE] = { 5, "syscall_exit_madvise", {
		{ "ret", 64, F_S, 0 } } },
	[C_SYS_ENTRY_MADVISE] = { 4, "syscall_entry_madvise", {
		{ "start", 64, F_U, 0 }, { "len_in", 64, F_U, 0 },
		{ "behavior", 32, F_S, 0 } } },
};

/* ---------------------------------------------------------------------
 * The babeltrace2 source: one state struct for the component and its
 * one message iterator.
 */
#define PACKET_EVENTS 65536
#define CLOCK_OFFSET_S 1767225600LL     /* 2026-01-01T00:00:00Z */

struct synth_stream {
	bt_stream *stream;
	bt_packet *packet;              /* open, or NULL */
	uint64_t packet_events;
	uint64_t last_ts;
	int begun;
};

struct synth_source {
	struct model *m;
	const struct thread *threads;   /* the model's, by index */
	unsigned ncpus;
	uint64_t seed;
	bt_trace *trace;
	bt_stream_class *sc;
	bt_event_class *ec[C_N];
	struct synth_stream *streams;
	unsigned nstreams;
	int began, ending, ended;
	unsigned end_stream;            /* stream to close next */
};

static bt_field_class *int_class(bt_trace_class *tc,
				 const struct field_spec *f)
{
	bt_field_class *fc = f->sign == F_S ?
		bt_field_class_integer_signed_create(tc) :
		bt_field_class_integer_unsigned_create(tc);

	if (!fc)
		return NULL;
	bt_field_class_integer_set_field_value_range(fc, f->bits);
	if (f->hex)
		bt_field_class_integer_set_preferred_display_base(fc,
			BT_FIELD_CLASS_INTEGER_PREFERRED_DISPLAY_BASE_HEXADECIMAL);
	return fc;
}

static int struct_append(bt_field_class *st, const char *name,
			 bt_field_class *fc)
{
	int rc = -1;

	if (fc && bt_field_class_structure_append_member(st, name, fc) ==
	    BT_FIELD_CLASS_STRUCTURE_APPEND_MEMBER_STATUS_OK)
		rc = 0;
	bt_field_class_put_ref(fc);
	return rc;
}

static int source_classes(struct synth_source *s, bt_self_component *self)
{
	bt_trace_class *tc = bt_trace_class_create(self);
	bt_clock_class *cc = bt_clock_class_create(self);
	bt_field_class *pc = NULL, *cx = NULL, *pl = NULL;
	static const struct field_spec cpu_id = { "cpu_id", 32, F_U, 0 };
	static const struct field_spec tid = { "tid", 32, F_S, 0 };
	uint8_t uuid[16];
	unsigned i, j;
	int rc = -1;

	if (!tc || !cc)
		goto end;
	bt_trace_class_set_assigns_automatic_stream_class_id(tc, BT_FALSE);
	if (bt_clock_class_set_name(cc, "monotonic") ||
	    bt_clock_class_set_description(cc, "Monotonic Clock"))
		goto end;
	bt_clock_class_set_frequency(cc, 1000000000ULL);
	bt_clock_class_set_offset(cc, CLOCK_OFFSET_S, 0);
	bt_clock_class_set_origin_is_unix_epoch(cc, BT_TRUE);
	for (i = 0; i < 16; i++)
		uuid[i] = (uint8_t)(0xc7 ^ (s->seed >> (8 * (i % 8))) ^ i);
	bt_clock_class_set_uuid(cc, uuid);
	s->sc = bt_stream_class_create_with_id(tc, 0);
	if (!s->sc)
		goto end;
	bt_stream_class_set_assigns_automatic_event_class_id(s->sc, BT_FALSE);
	bt_stream_class_set_assigns_automatic_stream_id(s->sc, BT_FALSE);
	if (bt_stream_class_set_default_clock_class(s->sc, cc))
		goto end;
	bt_stream_class_set_supports_packets(s->sc, BT_TRUE, BT_TRUE, BT_TRUE);
	bt_stream_class_set_supports_discarded_events(s->sc, BT_TRUE, BT_TRUE);
	bt_stream_class_set_supports_discarded_packets(s->sc, BT_TRUE,
						       BT_TRUE);
	pc = bt_field_class_structure_create(tc);
	cx = bt_field_class_structure_create(tc);
	if (!pc || !cx ||
	    struct_append(pc, cpu_id.name, int_class(tc, &cpu_id)) ||
	    bt_stream_class_set_packet_context_field_class(s->sc, pc) ||
	    struct_append(cx, tid.name, int_class(tc, &tid)) ||
	    struct_append(cx, "procname", bt_field_class_string_create(tc)) ||
	    bt_stream_class_set_event_common_context_field_class(s->sc, cx))
		goto end;
	for (i = 0; i < C_N; i++) {
		s->ec[i] = bt_event_class_create_with_id(s->sc, synth_classes[i].id);
		pl = bt_field_class_structure_create(tc);
		if (!s->ec[i] || !pl ||
		    bt_event_class_set_name(s->ec[i], synth_classes[i].name))
			goto end;
		for (j = 0; j < MAX_FIELDS && synth_classes[i].f[j].name; j++)
			if (struct_append(pl, synth_classes[i].f[j].name,
					  int_class(tc, &synth_classes[i].f[j])))
				goto end;
		if (bt_event_class_set_payload_field_class(s->ec[i], pl))
			goto end;
		BT_FIELD_CLASS_PUT_REF_AND_RESET(pl);
	}
	s->trace = bt_trace_create(tc);
	if (!s->trace)
		goto end;
	rc = 0;
end:
	bt_field_class_put_ref(pl);
	bt_field_class_put_ref(pc);
	bt_field_class_put_ref(cx);
	bt_clock_class_put_ref(cc);
	bt_trace_class_put_ref(tc);
	return rc;
}

static int source_trace(struct synth_source *s)
{
	bt_trace *t = s->trace;
	uint8_t uuid[16];
	char name[32];
	unsigned i;

	for (i = 0; i < 16; i++)
		uuid[i] = (uint8_t)(0x5d ^ (s->seed >> (8 * (i % 8))) ^ (i * 7));
	bt_trace_set_uuid(t, uuid);
	if (bt_trace_set_name(t, "synthetic") ||
	    bt_trace_set_environment_entry_string(t, "hostname", "synthetic") ||
	    bt_trace_set_environment_entry_string(t, "domain", "kernel") ||
	    bt_trace_set_environment_entry_string(t, "sysname", "Linux") ||
	    bt_trace_set_environment_entry_string(t, "kernel_release",
						  "6.1.192+") ||
	    bt_trace_set_environment_entry_string(t, "kernel_version",
						  "#1 SMP PREEMPT_DYNAMIC (synthetic)") ||
	    bt_trace_set_environment_entry_string(t, "tracer_name",
						  "mmureplay-synth") ||
	    bt_trace_set_environment_entry_integer(t, "tracer_major", 2) ||
	    bt_trace_set_environment_entry_integer(t, "tracer_minor", 13) ||
	    bt_trace_set_environment_entry_integer(t, "tracer_patchlevel", 9) ||
	    bt_trace_set_environment_entry_string(t, "trace_buffering_scheme",
						  "global") ||
	    bt_trace_set_environment_entry_string(t, "trace_name",
						  "synthetic") ||
	    bt_trace_set_environment_entry_string(t, "trace_creation_datetime",
						  "20260101T000000+0000") ||
	    bt_trace_set_environment_entry_integer(t, "synthetic", 1) ||
	    bt_trace_set_environment_entry_integer(t, "synthetic_seed",
						   (int64_t)s->seed))
		return -1;
	s->nstreams = s->ncpus;
	s->streams = calloc(s->nstreams, sizeof(*s->streams));
	if (!s->streams)
		return -1;
	for (i = 0; i < s->nstreams; i++) {
		s->streams[i].stream = bt_stream_create_with_id(s->sc, t, i);
		snprintf(name, sizeof(name), "synthetic_%u", i);
		if (!s->streams[i].stream ||
		    bt_stream_set_name(s->streams[i].stream, name))
			return -1;
	}
	return 0;
}

static bt_component_class_initialize_method_status
source_initialize(bt_self_component_source *self,
		  bt_self_component_source_configuration *config,
		  const bt_value *params, void *data)
{
	bt_component_class_initialize_method_status st =
		BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_ERROR;
	struct synth_source *s = data;

	(void)config;
	(void)params;
	if (source_classes(s, bt_self_component_source_as_self_component(
				   self)) < 0 ||
	    source_trace(s) < 0)
		goto end;
	if (bt_self_component_source_add_output_port(self, "out", NULL, NULL)
	    != BT_SELF_COMPONENT_ADD_PORT_STATUS_OK)
		goto end;
	bt_self_component_set_data(
		bt_self_component_source_as_self_component(self), s);
	st = BT_COMPONENT_CLASS_INITIALIZE_METHOD_STATUS_OK;
end:
	return st;
}

static bt_message_iterator_class_initialize_method_status
iter_initialize(bt_self_message_iterator *it,
		bt_self_message_iterator_configuration *config,
		bt_self_component_port_output *port)
{
	(void)config;
	(void)port;
	bt_self_message_iterator_set_data(it,
		bt_self_component_get_data(
			bt_self_message_iterator_borrow_component(it)));
	return BT_MESSAGE_ITERATOR_CLASS_INITIALIZE_METHOD_STATUS_OK;
}

static bt_message *packet_open(struct synth_source *s,
			       bt_self_message_iterator *it, unsigned i,
			       uint64_t ts)
{
	struct synth_stream *ss = &s->streams[i];

	ss->packet = bt_packet_create(ss->stream);
	if (!ss->packet)
		return NULL;
	bt_field_integer_unsigned_set_value(
		bt_field_structure_borrow_member_field_by_index(
			bt_packet_borrow_context_field(ss->packet), 0), i);
	ss->packet_events = 0;
	return bt_message_packet_beginning_create_with_default_clock_snapshot(
		it, ss->packet, ts);
}

static bt_message *packet_close(struct synth_source *s,
				bt_self_message_iterator *it, unsigned i)
{
	struct synth_stream *ss = &s->streams[i];
	bt_message *msg =
		bt_message_packet_end_create_with_default_clock_snapshot(
			it, ss->packet, ss->last_ts);

	BT_PACKET_PUT_REF_AND_RESET(ss->packet);
	return msg;
}

static bt_message *event_message(struct synth_source *s,
				 bt_self_message_iterator *it,
				 const struct rec *r)
{
	const struct thread *th = &s->threads[r->thread];
	const struct class_spec *c = &synth_classes[r->cls];
	struct synth_stream *ss = &s->streams[th->cpu];
	bt_message *msg;
	bt_event *ev;
	bt_field *pl, *cx, *f;
	unsigned j;

	msg = bt_message_event_create_with_packet_and_default_clock_snapshot(
		it, s->ec[r->cls], ss->packet, r->ts);
	if (!msg)
		return NULL;
	ev = bt_message_event_borrow_event(msg);
	cx = bt_event_borrow_common_context_field(ev);
	bt_field_integer_signed_set_value(
		bt_field_structure_borrow_member_field_by_index(cx, 0),
		th->tid);
	if (bt_field_string_set_value(
		    bt_field_structure_borrow_member_field_by_index(cx, 1),
		    th->procname)) {
		bt_message_put_ref(msg);
		return NULL;
	}
	pl = bt_event_borrow_payload_field(ev);
	for (j = 0; j < MAX_FIELDS && c->f[j].name; j++) {
		f = bt_field_structure_borrow_member_field_by_index(pl, j);
		if (c->f[j].sign == F_S)
			bt_field_integer_signed_set_value(f,
							  (int64_t)r->v[j]);
		else
			bt_field_integer_unsigned_set_value(f, r->v[j]);
	}
	ss->packet_events++;
	ss->last_ts = r->ts;
	return msg;
}

/*
 * Up to capacity messages: the streams' beginnings, then the model's
 * events with their packets (a packet per PACKET_EVENTS events of a
 * stream), then each stream's last packet end and its end.
 */
static bt_message_iterator_class_next_method_status
iter_next(bt_self_message_iterator *it, bt_message_array_const msgs,
	  uint64_t capacity, uint64_t *count)
{
	struct synth_source *s = bt_self_message_iterator_get_data(it);
	bt_message_iterator_class_next_method_status st =
		BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_ERROR;
	const struct rec *r;
	struct synth_stream *ss;
	bt_message *msg;
	uint64_t n = 0;
	unsigned cpu;
	int rc;

	if (s->ended)
		return BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_END;
	while (!s->began && n < capacity) {
		msg = bt_message_stream_beginning_create(
			it, s->streams[s->end_stream].stream);
		if (!msg)
			goto end;
		msgs[n++] = msg;
		if (++s->end_stream == s->nstreams) {
			s->began = 1;
			s->end_stream = 0;
		}
	}
	while (!s->ending && n + 3 <= capacity) {
		rc = model_next(s->m, &r);
		if (rc < 0)
			goto end;
		if (rc == 0) {
			s->ending = 1;
			break;
		}
		cpu = s->threads[r->thread].cpu;
		ss = &s->streams[cpu];
		if (ss->packet && ss->packet_events >= PACKET_EVENTS) {
			msg = packet_close(s, it, cpu);
			if (!msg)
				goto end;
			msgs[n++] = msg;
		}
		if (!ss->packet) {
			msg = packet_open(s, it, cpu, r->ts);
			if (!msg)
				goto end;
			msgs[n++] = msg;
		}
		msg = event_message(s, it, r);
		if (!msg)
			goto end;
		msgs[n++] = msg;
	}
	while (s->ending && n + 2 <= capacity && s->end_stream < s->nstreams) {
		ss = &s->streams[s->end_stream];
		if (ss->packet) {
			msg = packet_close(s, it, s->end_stream);
			if (!msg)
				goto end;
			msgs[n++] = msg;
		}
		msg = bt_message_stream_end_create(it, ss->stream);
		if (!msg)
			goto end;
		msgs[n++] = msg;
		s->end_stream++;
	}
	if (s->ending && s->end_stream == s->nstreams)
		s->ended = 1;
	st = BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_OK;
end:
	*count = n;
	if (st != BT_MESSAGE_ITERATOR_CLASS_NEXT_METHOD_STATUS_OK) {
		while (n)
			bt_message_put_ref(msgs[--n]);
		*count = 0;
	}
	return st;
}

static void source_release(struct synth_source *s)
{
	unsigned i;

	for (i = 0; s->streams && i < s->nstreams; i++) {
		bt_packet_put_ref(s->streams[i].packet);
		bt_stream_put_ref(s->streams[i].stream);
	}
	free(s->streams);
	for (i = 0; i < C_N; i++)
		bt_event_class_put_ref(s->ec[i]);
	bt_stream_class_put_ref(s->sc);
	bt_trace_put_ref(s->trace);
	memset(s, 0, sizeof(*s));
}

static void source_finalize(bt_self_component_source *self)
{
	struct synth_source *s = bt_self_component_get_data(
		bt_self_component_source_as_self_component(self));

	if (s)
		source_release(s);
}

/* ---------------------------------------------------------------------
 * The graph: this source -> sink.ctf.fs.
 */
static char *bt_error_text(void)
{
	const bt_error *err = bt_current_thread_take_error();
	const char *msg = "unknown babeltrace2 error";
	char *out, *nl;

	if (err && bt_error_get_cause_count(err))
		msg = bt_error_cause_get_message(
			bt_error_borrow_cause_by_index(err, 0));
	out = strdup(msg);
	for (nl = out; nl && *nl; nl++)
		if (*nl == '\n')
			*nl = ' ';
	if (err)
		bt_error_release(err);
	return out;
}

enum synth_status synth_ctf_write(struct model *m, uint64_t seed,
				  const char *trace_dir)
{
	enum synth_status st = SYNTH_ERR_INTERNAL;
	struct synth_source src = { .m = m, .seed = seed };
	struct model_view mv;
	bt_message_iterator_class *ic = NULL;
	bt_component_class_source *cls = NULL;
	const bt_plugin *ctf = NULL;
	const bt_component_class_sink *sink_cls;
	const bt_component_source *so;
	const bt_component_sink *si;
	bt_value *params = NULL;
	bt_graph *g = NULL;
	bt_graph_run_status rs;
	char *why;

	model_view(m, &mv);
	src.threads = mv.threads;
	src.ncpus = mv.ncpus;
	if (bt_plugin_find("ctf", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE,
			   &ctf) != BT_PLUGIN_FIND_STATUS_OK) {
		fprintf(stderr, "synth: babeltrace2 plugin 'ctf' not found "
			"(install babeltrace2)\n");
		goto end;
	}
	sink_cls = bt_plugin_borrow_sink_component_class_by_name_const(ctf,
								       "fs");
	ic = bt_message_iterator_class_create(iter_next);
	if (!sink_cls || !ic ||
	    bt_message_iterator_class_set_initialize_method(ic,
			iter_initialize) !=
	    BT_MESSAGE_ITERATOR_CLASS_SET_METHOD_STATUS_OK)
		goto end;
	cls = bt_component_class_source_create("synthetic", ic);
	if (!cls ||
	    bt_component_class_source_set_initialize_method(cls,
			source_initialize) !=
	    BT_COMPONENT_CLASS_SET_METHOD_STATUS_OK ||
	    bt_component_class_source_set_finalize_method(cls,
			source_finalize) !=
	    BT_COMPONENT_CLASS_SET_METHOD_STATUS_OK)
		goto end;
	params = bt_value_map_create();
	if (!params ||
	    bt_value_map_insert_string_entry(params, "path", trace_dir) ||
	    bt_value_map_insert_bool_entry(params, "assume-single-trace",
					   BT_TRUE) ||
	    bt_value_map_insert_bool_entry(params, "quiet", BT_TRUE))
		goto end;
	g = bt_graph_create(0);
	if (!g ||
	    bt_graph_add_source_component_with_initialize_method_data(g, cls,
			"synthetic", NULL, &src, BT_LOGGING_LEVEL_WARNING, &so)
	    != BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
	    bt_graph_add_sink_component(g, sink_cls, "ctf-fs", params,
					BT_LOGGING_LEVEL_WARNING, &si) !=
	    BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
	    bt_graph_connect_ports(g,
		bt_component_source_borrow_output_port_by_index_const(so, 0),
		bt_component_sink_borrow_input_port_by_index_const(si, 0),
		NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK)
		goto fail;
	do {
		rs = bt_graph_run(g);
		if (rs == BT_GRAPH_RUN_STATUS_AGAIN)
			usleep(1000);
	} while (rs == BT_GRAPH_RUN_STATUS_AGAIN);
	if (rs != BT_GRAPH_RUN_STATUS_OK) {
		st = SYNTH_ERR_OUTPUT;
		goto fail;
	}
	st = SYNTH_OK;
	goto end;
fail:
	why = bt_error_text();
	fprintf(stderr, "synth: %s: cannot write the trace: %s\n", trace_dir,
		why);
	free(why);
end:
	bt_graph_put_ref(g);
	bt_value_put_ref(params);
	bt_component_class_source_put_ref(cls);
	bt_message_iterator_class_put_ref(ic);
	bt_plugin_put_ref(ctf);
	return st;
}
