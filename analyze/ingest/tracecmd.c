/*
 * trace-cmd trace.dat files (see reader.h), read with libtracecmd and
 * libtraceevent as Debian ships them.
 *
 * Fields are found by name in the event formats stored in the file (the
 * kernel's own format files at record time), never by position or from
 * printed text, so a kernel that reorders or adds fields is read right.
 * Raw event names are "system:event" (kvm:kvm_exit), the names the
 * catalogue (schemas/events.json) lists for ftrace.  Every CPU of the top
 * buffer and of each instance recorded with -B is one stream; all of them
 * are read merged in time order (tracecmd_iterate_events_multi).  A
 * record whose CPU buffer dropped events before it (record->missed_events)
 * gives a lost-events range from the previous record of that CPU to it.
 *
 * Invariant: every tep_record the library hands over is one event (seq),
 * mapped or not, so raw counts equal `trace-cmd report`'s event lines.
 *
 * A cut file: libtracecmd refuses a version 7 file cut anywhere (its
 * section index is written last), but crashes in tracecmd_open() on a
 * version 6 file whose CPU data is cut.  So a version 6 file's CPU table
 * (after the "flyrecord" marker: offset and size per CPU) is checked
 * against the file's size first; the top buffer's only (an instance's
 * table is not checked: a cut inside an instance's data of a version 6
 * file is not caught).
 */
#define _GNU_SOURCE
#include "ingest/reader.h"

#include "util/log.h"
#include "util/ptrmap.h"

#include <event-parse.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <trace-cmd.h>

#define TC_MAX_HANDLES 64

struct tc_class {
	struct tables_class map;
	struct tep_event *ev;
};

struct tc_buffer {
	struct tracecmd_input *handle;
	struct tables_trace *trace;
	struct tables_stream **cpu_streams;
	int64_t *cpu_last_ns;
	int ncpus;
};

struct tc_state {
	const char *path;
	struct ingest_tables *t;
	struct tep_handle *tep;
	struct ptrmap classes;          /* tep_event * -> tc_class */
	struct tc_buffer buf[TC_MAX_HANDLES];
	int nbuf;
	int failed;                     /* out of memory */
	uint64_t events;
};

/* tables_field_find_fn over a tep_event's own (non-common) fields. */
static enum col_src tep_find(const void *cls, const char *name,
			     uint64_t *member)
{
	struct tep_format_field *f =
		tep_find_field((struct tep_event *)cls, name);

	if (!f)
		return COL_ABSENT;
	*member = (uint64_t)(uintptr_t)f;
	if (f->flags & (TEP_FIELD_IS_STRING | TEP_FIELD_IS_DYNAMIC))
		return (f->flags & TEP_FIELD_IS_STRING) ? COL_STRING :
			COL_ABSENT;
	if (f->flags & TEP_FIELD_IS_ARRAY)
		return COL_ABSENT;
	if (f->size != 1 && f->size != 2 && f->size != 4 && f->size != 8)
		return COL_ABSENT;
	return (f->flags & TEP_FIELD_IS_SIGNED) ? COL_SIGNED : COL_UNSIGNED;
}

static struct tc_class *class_resolve(struct tc_state *s,
				      struct tep_event *ev)
{
	struct tc_class *c = calloc(1, sizeof(*c));
	char name[256];
	int64_t raw;

	if (!c)
		return NULL;
	snprintf(name, sizeof(name), "%s:%s", ev->system, ev->name);
	raw = tables_raw(s->t, name);
	if (raw < 0 || ptrmap_put(&s->classes, (uintptr_t)ev, c) < 0) {
		free(c);
		return NULL;
	}
	c->ev = ev;
	c->map.raw_id = (uint32_t)raw;
	tables_class_map(s->t, &c->map, tep_find, ev);
	return c;
}

static int64_t field_value(struct tep_format_field *f, const void *data,
			   enum col_src src)
{
	unsigned long long v = 0;

	tep_read_number_field(f, data, &v);
	if (src == COL_SIGNED && f->size < 8) {
		/* Sign-extend from the field's width. */
		int shift = 64 - 8 * f->size;

		return (int64_t)(v << shift) >> shift;
	}
	/* Same bits as the u64: see schemas/capture.sql. */
	return (int64_t)v;
}

/* A fixed char array: up to its NUL or its end, interned. */
static const char *field_text(struct tc_state *s, struct tep_format_field *f,
			      const char *data, int size)
{
	char buf[256];
	int n = f->size < (int)sizeof(buf) - 1 ? f->size :
		(int)sizeof(buf) - 1;

	if (f->offset + n > size)
		n = size > f->offset ? size - f->offset : 0;
	memcpy(buf, data + f->offset, (size_t)n);
	buf[n] = '\0';
	return tables_intern(s->t, buf);
}

static int record_handle(struct tc_state *s, struct tc_buffer *b,
			 struct tep_record *rec, int cpu)
{
	struct tep_event *ev = tep_find_event_by_record(s->tep, rec);
	struct tc_class *c;
	struct ingest_row *r;
	const char *comm, *text;
	int64_t ns = (int64_t)rec->ts, tid;
	uint64_t seq;
	uint32_t nullmask = 0;
	int i;

	if (!ev) {
		/* An id without a format: count it under its number. */
		char name[64];
		int64_t raw;

		snprintf(name, sizeof(name), "(unknown event id %d)",
			 tep_data_type(s->tep, rec));
		raw = tables_raw(s->t, name);
		if (raw < 0)
			return -1;
		tables_raw_count(s->t, (uint32_t)raw);
		tables_seq(s->t, ns);
		return 0;
	}
	c = ptrmap_get(&s->classes, (uintptr_t)ev);
	if (!c && !(c = class_resolve(s, ev)))
		return -1;
	if (cpu >= 0 && cpu < b->ncpus) {
		if (rec->missed_events &&
		    tables_lost_add(s->t, b->cpu_streams[cpu], 0,
				    b->cpu_last_ns[cpu] != 0,
				    b->cpu_last_ns[cpu], ns,
				    rec->missed_events > 0,
				    rec->missed_events > 0 ?
				    (uint64_t)rec->missed_events : 0) < 0)
			return -1;
		b->cpu_streams[cpu]->events++;
		b->cpu_last_ns[cpu] = ns;
	}
	tables_raw_count(s->t, c->map.raw_id);
	seq = tables_seq(s->t, ns);
	tid = tep_data_pid(s->tep, rec);
	comm = tep_data_comm_from_pid(s->tep, (int)tid);
	/* "<...>": the pid was not in the saved cmdlines. */
	if (comm && strcmp(comm, "<...>") != 0 &&
	    tables_thread_note(s->t, tid, -1, comm, seq) < 0)
		return -1;
	if (c->map.kind < 0)
		return 0;

	r = tables_row_next(s->t);
	r->kind = (uint32_t)c->map.kind;
	r->seq = (int64_t)seq;
	r->ts = tables_ts(s->t, ns);
	r->cpu = cpu;
	r->tid = tid;
	r->textmask = 0;
	for (i = 0; i < c->map.ncols; i++) {
		struct tep_format_field *f =
			(struct tep_format_field *)(uintptr_t)c->map.col[i].member;

		switch (c->map.col[i].src) {
		case COL_ABSENT:
			nullmask |= 1u << i;
			break;
		case COL_CONST:
		case COL_RAW_ID:
			r->v[i].i = c->map.col[i].cval;
			break;
		case COL_STRING:
			text = field_text(s, f, rec->data, rec->size);
			if (!text)
				return -1;
			r->v[i].text = text;
			r->textmask |= 1u << i;
			break;
		default:
			r->v[i].i = field_value(f, rec->data,
						 c->map.col[i].src);
		}
	}
	r->nullmask = nullmask;
	tables_row_commit(s->t);
	return 0;
}

static int record_cb(struct tracecmd_input *handle, struct tep_record *rec,
		     int cpu, void *data)
{
	struct tc_state *s = data;
	intptr_t idx = (intptr_t)tracecmd_get_private(handle);

	if (idx < 1 || idx > s->nbuf)
		return 0;
	/* cpu counts the CPUs of every handle in turn (an instance's
	 * come after the top buffer's); the record's own is its buffer's. */
	(void)cpu;
	if (record_handle(s, &s->buf[idx - 1], rec, rec->cpu) < 0 ||
	    tables_writer_failed(s->t)) {
		s->failed = 1;
		return 1;       /* stop iterating */
	}
	if ((++s->events & 0xffff) == 0)
		log_progress("ingest: events", s->events);
	return 0;
}

/* One trace per buffer (the top one, then each instance), one stream per
 * CPU of it. */
static int buffer_add(struct tc_state *s, struct tracecmd_input *h,
		      const char *instance)
{
	struct tc_buffer *b = &s->buf[s->nbuf];
	char name[300];
	int cpu;

	b->handle = h;
	b->ncpus = tep_get_cpus(tracecmd_get_tep(h));
	if (b->ncpus <= 0)
		b->ncpus = 1;
	snprintf(name, sizeof(name), "%s%s%s", s->path,
		 instance ? ":" : "", instance ? instance : "");
	b->trace = tables_trace_add(s->t, name);
	b->cpu_streams = calloc((size_t)b->ncpus, sizeof(*b->cpu_streams));
	b->cpu_last_ns = calloc((size_t)b->ncpus, sizeof(*b->cpu_last_ns));
	if (!b->trace || !b->cpu_streams || !b->cpu_last_ns)
		return -1;
	b->trace->env[ENV_DOMAIN] = strdup("kernel");
	b->trace->env[ENV_TRACER_NAME] = strdup("ftrace");
	b->trace->env[ENV_TRACE_NAME] = strdup(instance ? instance : "top");
	for (cpu = 0; cpu < b->ncpus; cpu++) {
		snprintf(name, sizeof(name), "%s%scpu%d",
			 instance ? instance : "", instance ? "/" : "", cpu);
		b->cpu_streams[cpu] = tables_stream_add(s->t, b->trace, name);
		if (!b->cpu_streams[cpu])
			return -1;
	}
	tracecmd_set_private(h, (void *)(intptr_t)(s->nbuf + 1));
	s->nbuf++;
	return 0;
}

/* The event formats in the file, "system:event" comma-separated, without
 * ftrace's own (function, print, ...): what the recording enabled. */
static char *events_list(struct tep_handle *tep)
{
	struct tep_event **evs = tep_list_events(tep, TEP_EVENT_SORT_SYSTEM);
	size_t len = 1, n;
	char *out;
	int i;

	if (!evs)
		return NULL;
	for (i = 0; evs[i]; i++)
		len += strlen(evs[i]->system) + strlen(evs[i]->name) + 2;
	out = malloc(len);
	if (!out)
		return NULL;
	out[0] = '\0';
	for (i = 0, n = 0; evs[i]; i++) {
		if (strcmp(evs[i]->system, "ftrace") == 0)
			continue;
		n += (size_t)snprintf(out + n, len - n, "%s%s:%s",
				      n ? "," : "", evs[i]->system,
				      evs[i]->name);
	}
	return out;
}

static int is_v6(const char *path)
{
	unsigned char head[13];
	FILE *f = fopen(path, "rb");
	int v6;

	if (!f)
		return 0;
	v6 = fread(head, 1, sizeof(head), f) == sizeof(head) &&
		head[10] == '6' && head[12] == 0;
	fclose(f);
	return v6;
}

/*
 * For a little-endian version 6 file: where its top buffer's CPU data
 * ends beyond the file's end, a reason; else NULL.  The CPU table
 * follows the "flyrecord" marker, one (offset, size) pair per CPU, the
 * CPUs' data one after the other: so pairs are read while each starts
 * at or after the end of the one before, without the CPU count (which
 * only a second parse of the headers would give).
 */
static char *v6_cut_reason(const char *path)
{
	static const char marker[] = "flyrecord";
	unsigned char pair[16];
	char *why = NULL, buf[65536];
	long long size, base = 0, off, len, at = -1, prev_end = -1;
	size_t n, i, k = 0;
	struct stat sb;
	FILE *f = fopen(path, "rb");
	int cpu;

	if (!f)
		return NULL;
	if (fstat(fileno(f), &sb) != 0)
		goto end;
	size = (long long)sb.st_size;
	/* The marker with its NUL, found across buffer boundaries. */
	while (at < 0 && (n = fread(buf, 1, sizeof(buf), f)) > 0) {
		for (i = 0; i < n && at < 0; i++) {
			k = buf[i] == marker[k] ? k + 1 : buf[i] == marker[0];
			if (k == sizeof(marker))
				at = base + (long long)i + 1;
		}
		base += (long long)n;
	}
	if (at < 0 || fseek(f, at, SEEK_SET) != 0)
		goto end;
	for (cpu = 0; !why; cpu++) {
		if (prev_end >= 0 && at + 16LL * (cpu + 1) > prev_end)
			break;
		if (fread(pair, 1, sizeof(pair), f) != sizeof(pair)) {
			if (asprintf(&why, "cut short in its CPU table") < 0)
				why = NULL;
			break;
		}
		for (off = 0, len = 0, i = 8; i-- > 0;) {
			off = off << 8 | pair[i];
			len = len << 8 | pair[8 + i];
		}
		if (off < at + 16 || off < prev_end || len < 0)
			break;
		prev_end = off + len;
		if (off + len > size &&
		    asprintf(&why, "cut short: CPU %d's events end at byte %lld, "
			     "the file at %lld", cpu, off + len, size) < 0)
			why = NULL;
	}
end:
	fclose(f);
	return why;
}

/* libtracecmd reports what it cannot read through its own log on
 * stderr; the one-line error is ours. */
static void tc_quiet(void)
{
	tracecmd_set_loglevel(TEP_LOG_NONE);
	tep_set_loglevel(TEP_LOG_NONE);
}

enum ingest_status tracecmd_read(const char *path, struct ingest_tables *t,
				 struct reader_result *rr)
{
	enum ingest_status st = INGEST_ERR_INPUT;
	struct tracecmd_input *handles[TC_MAX_HANDLES];
	struct tc_state s;
	struct tracecmd_input *top = NULL;
	char *why = NULL;
	int i, ninst;

	memset(&s, 0, sizeof(s));
	s.path = path;
	s.t = t;
	ptrmap_init(&s.classes);
	rr->format = "trace-cmd";
	rr->ts_resolution_ns = 1;
	tc_quiet();
	/* Before libtracecmd maps the data (version 7 files are refused
	 * whole when cut). */
	if (is_v6(path))
		why = v6_cut_reason(path);
	if (why) {
		log_error("%s: not a readable trace-cmd trace.dat: %s", path,
			  why);
		goto end;
	}
	top = tracecmd_open(path, TRACECMD_FL_LOAD_NO_PLUGINS);
	if (!top) {
		log_error("%s: not a readable trace-cmd trace.dat (its headers "
			  "or event formats are cut short or corrupt)", path);
		goto end;
	}
	s.tep = tracecmd_get_tep(top);
	st = INGEST_ERR_INTERNAL;
	if (buffer_add(&s, top, NULL) < 0)
		goto end;
	ninst = tracecmd_buffer_instances(top);
	for (i = 0; i < ninst && s.nbuf < TC_MAX_HANDLES; i++) {
		struct tracecmd_input *h = tracecmd_buffer_instance_handle(top,
									   i);

		if (!h) {
			log_warn("%s: instance %s unreadable (skipped)", path,
				 tracecmd_buffer_instance_name(top, i));
			continue;
		}
		if (buffer_add(&s, h, tracecmd_buffer_instance_name(top, i)) <
		    0) {
			tracecmd_close(h);
			goto end;
		}
	}
	for (i = 0; i < s.nbuf; i++)
		handles[i] = s.buf[i].handle;
	tracecmd_iterate_events_multi(handles, s.nbuf, record_cb, &s);
	if (s.failed)
		goto end;
	rr->ntraces = s.nbuf;
	rr->tracer = strdup("ftrace (trace-cmd record)");
	rr->events = events_list(s.tep);
	st = INGEST_OK;
end:
	for (i = 0; i < s.nbuf; i++) {
		if (s.buf[i].handle != top)
			tracecmd_close(s.buf[i].handle);
		free(s.buf[i].cpu_streams);
		free(s.buf[i].cpu_last_ns);
	}
	if (top)
		tracecmd_close(top);
	ptrmap_free_values(&s.classes);
	free(why);
	return st;
}
