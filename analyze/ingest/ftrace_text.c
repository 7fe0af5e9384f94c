/*
 * tracefs text (see reader.h): the `trace` and `trace_pipe` files of a
 * tracefs instance, and `trace-cmd report` output (plain, or -R for raw
 * fields, with -t for nanoseconds).
 *
 * Each event line "COMM-PID [CPU] FLAGS SEC.FRAC: EVENT: TEXT" is taken
 * back to its fields by the event's print format (ftrace_formats.h), or,
 * when the text is "field=value ...", by those names.  Timestamps keep
 * the text's resolution: six fractional digits are microseconds, stored
 * as ns * 1000 with meta ts_resolution_ns = 1000, never refined.  Lost
 * events: "CPU:N [LOST n EVENTS]" (the kernel), "CPU:N [n EVENTS
 * DROPPED]" (trace-cmd report) become a lost range on that CPU's stream
 * from its previous event to its next one; "##### CPU N buffer started
 * ####" (the ring buffer overwrote older events) is a loss of unknown
 * count.  Invariants:
 *   - every event line is one event (seq), so raw counts equal the
 *     text's event line counts;
 *   - an event whose format is unknown is counted, never mapped, and
 *     said so once; a known event whose text does not follow its format
 *     stops ingest with FILE:LINE (no guessed fields);
 *   - an unparsable last line without a newline is a cut copy: what came
 *     before is kept, marked truncated.
 */
#define _GNU_SOURCE
#include "ingest/reader.h"

#include "ingest/ftrace_formats.h"
#include "util/log.h"
#include "util/ptrmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEXT_MAX_CPUS 1024

struct text_class {
	struct tables_class map;
	const struct ftrace_format *f;
	struct ftrace_values names;     /* field order of the first line */
	int raw_form;                   /* fields from "name=value" text */
	int first_bad;                  /* known format, first line off it */
};

struct text_cpu {
	struct tables_stream *stream;
	int64_t last_ns;
	int have_last;
	int lost_pending;               /* a lost marker before the next */
	int64_t lost_count;             /* -1: unknown */
	int64_t lost_begin;
	int lost_has_begin;
};

struct text_state {
	const char *path;
	struct ingest_tables *t;
	struct tables_trace *trace;
	struct ptrmap classes;          /* interned name -> text_class */
	struct text_cpu *cpus[TEXT_MAX_CPUS];
	int64_t resolution;
	int report;                     /* trace-cmd report output */
	const struct ftrace_format *lossy[16];  /* formats seen that lose */
	size_t nlossy;
	unsigned long lineno;
	struct ftrace_values vals;
};

struct text_line {
	const char *comm;
	size_t comm_len;
	int64_t pid;
	int cpu;
	int64_t ns;
	int frac_digits;
	char name[128];
	const char *msg;
};

enum line_kind {
	LINE_SKIP,
	LINE_EVENT,
	LINE_LOST,
	LINE_BAD,
};

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* "CPU:N [LOST n EVENTS]", "CPU:N [LOST EVENTS]", "CPU:N [n EVENTS
 * DROPPED]", "CPU:N [EVENTS DROPPED]", "##### CPU N buffer started ####" */
static int parse_lost(const char *l, int *cpu, int64_t *count)
{
	char *e;

	*count = -1;
	if (strncmp(l, "##### CPU ", 10) == 0 &&
	    strstr(l, "buffer started")) {
		*cpu = (int)strtol(l + 10, NULL, 10);
		return 1;
	}
	if (strncmp(l, "CPU:", 4) != 0 || !is_digit(l[4]))
		return 0;
	*cpu = (int)strtol(l + 4, &e, 10);
	if (strncmp(e, " [", 2) != 0)
		return 0;
	e += 2;
	if (strncmp(e, "LOST ", 5) == 0)
		e += 5;
	if (is_digit(*e))
		*count = strtoll(e, &e, 10), e += *e == ' ';
	return strncmp(e, "EVENTS]", 7) == 0 ||
		strncmp(e, "EVENTS DROPPED]", 15) == 0;
}

static enum line_kind parse_line(struct text_state *s, const char *l,
				 struct text_line *out)
{
	const char *b, *p, *dash, *ts, *n;
	size_t len;

	while (*l == ' ' || *l == '\t')
		l++;
	if (*l == '\0' || *l == '#') {
		return strncmp(l, "##### CPU ", 10) == 0 ? LINE_LOST :
			LINE_SKIP;
	}
	if (strncmp(l, "cpus=", 5) == 0) {
		s->report = 1;
		return LINE_SKIP;
	}
	if (strncmp(l, "CPU:", 4) == 0)
		return LINE_LOST;
	/* The CPU column: the first " [digits]" with a "-PID" before it. */
	for (b = strstr(l, " ["); b; b = strstr(b + 1, " [")) {
		for (p = b + 2; is_digit(*p); p++)
			;
		if (p > b + 2 && *p == ']')
			break;
	}
	if (!b)
		return LINE_BAD;
	/* COMM-PID, maybe "(TGID)" after it. */
	for (p = b; p > l && p[-1] == ' '; p--)
		;
	if (p > l && p[-1] == ')') {
		while (p > l && p[-1] != '(')
			p--;
		if (p > l)
			p--;
		while (p > l && p[-1] == ' ')
			p--;
	}
	for (dash = p; dash > l && is_digit(dash[-1]); dash--)
		;
	if (dash == p || dash == l || dash[-1] != '-')
		return LINE_BAD;
	out->comm = l;
	out->comm_len = (size_t)(dash - 1 - l);
	out->pid = strtoll(dash, NULL, 10);
	out->cpu = (int)strtol(b + 2, NULL, 10);
	/* Flags (not with trace-cmd report), then "SEC.FRAC:". */
	p = strchr(b, ']') + 1;
	while (*p == ' ')
		p++;
	ts = p;
	while (*p && *p != ' ')
		p++;
	if (p[-1] != ':' || !strchr(ts, '.') || !is_digit(*ts)) {
		while (*p == ' ')
			p++;
		ts = p;
		while (*p && *p != ' ')
			p++;
	}
	if (p - ts < 4 || p[-1] != ':' || !is_digit(*ts))
		return LINE_BAD;
	/* Seconds that overflow int64 nanoseconds (292 years) are no
	 * clock's: a bad line, not an overflow. */
	out->ns = strtoll(ts, (char **)&n, 10);
	if (*n != '.' || out->ns > INT64_MAX / 1000000000)
		return LINE_BAD;
	out->ns *= 1000000000;
	out->frac_digits = (int)(p - 1 - (n + 1));
	if (out->frac_digits < 1 || out->frac_digits > 9)
		return LINE_BAD;
	{
		int64_t frac = strtoll(n + 1, NULL, 10);
		int k;

		for (k = out->frac_digits; k < 9; k++)
			frac *= 10;
		out->ns += frac;
	}
	while (*p == ' ')
		p++;
	/* "EVENT: text", "sys_X(args)" or "sys_X -> 0xret". */
	for (n = p; (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		     is_digit(*p) || *p == '_'; p++)
		;
	len = (size_t)(p - n);
	if (len == 0 || len + 10 >= sizeof(out->name))
		return LINE_BAD;
	if (*p == ':') {
		memcpy(out->name, n, len);
		out->name[len] = '\0';
		p++;
	} else if (*p == '(' && strncmp(n, "sys_", 4) == 0) {
		snprintf(out->name, sizeof(out->name), "sys_enter_%.*s",
			 (int)len - 4, n + 4);
		p++;
	} else if (strncmp(p, " -> ", 4) == 0 && strncmp(n, "sys_", 4) == 0) {
		snprintf(out->name, sizeof(out->name), "sys_exit_%.*s",
			 (int)len - 4, n + 4);
		p += 4;
	} else {
		return LINE_BAD;
	}
	while (*p == ' ')
		p++;
	out->msg = p;
	return LINE_EVENT;
}

static enum col_src text_find(const void *cls, const char *name,
			      uint64_t *member)
{
	const struct text_class *c = cls;
	int i = ftrace_values_find(&c->names, name);

	if (i < 0)
		return COL_ABSENT;
	*member = (uint64_t)i;
	return c->names.is_signed[i] ? COL_SIGNED : COL_UNSIGNED;
}

static struct text_cpu *cpu_get(struct text_state *s, int cpu)
{
	struct text_cpu *c;
	char name[32];

	if (cpu < 0 || cpu >= TEXT_MAX_CPUS)
		return NULL;
	if (s->cpus[cpu])
		return s->cpus[cpu];
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	snprintf(name, sizeof(name), "cpu%d", cpu);
	c->stream = tables_stream_add(s->t, s->trace, name);
	if (!c->stream) {
		free(c);
		return NULL;
	}
	s->cpus[cpu] = c;
	return c;
}

/* Whether msg is raw fields "name=value ..." rather than printed text;
 * *fields: where they start. */
static int is_raw_form(const char *msg, const char **fields)
{
	const char *eq, *sp;

	/* A line libtraceevent could not format. */
	if (strncmp(msg, "[FAILED TO PARSE] ", 18) == 0) {
		*fields = msg + 18;
		return 1;
	}
	eq = strchr(msg, '=');
	sp = strchr(msg, ' ');
	*fields = msg;
	return eq && (!sp || eq < sp);
}

/* The values of the line by the class's format; -1: not its format. */
static int line_values(struct text_state *s, struct text_class *c,
		       const char *msg)
{
	const char *fields;

	if (!c->f)
		return -1;
	if (c->raw_form || (is_raw_form(msg, &fields) &&
			    ftrace_format_match(c->f, msg, &s->vals) < 0)) {
		is_raw_form(msg, &fields);
		return ftrace_raw_match(c->f, fields, &s->vals);
	}
	return ftrace_format_match(c->f, msg, &s->vals);
}

/* The catalogue's "system:name" for an ftrace event the text names
 * without its system, or NULL: its fields matter, and not reading them
 * is worth a warning. */
static const char *catalogued(const struct catalog *cat, const char *name)
{
	const char *colon;
	int i, k;

	for (i = 0; i < cat->nentries; i++)
		for (k = 0; k < cat->entries[i].nraws; k++) {
			colon = strchr(cat->entries[i].raws[k], ':');
			if (colon && strcmp(colon + 1, name) == 0)
				return cat->entries[i].raws[k];
		}
	return NULL;
}

static struct text_class *class_resolve(struct text_state *s,
					const char *name, const char *iname,
					const char *msg)
{
	struct text_class *c = calloc(1, sizeof(*c));
	const char *cname = catalogued(tables_catalog(s->t), name);
	const struct ftrace_format *first, *v;
	char raw[300];
	int64_t id;

	if (!c)
		return NULL;
	c->f = first = ftrace_format_find(name);
	/* The format the first line follows; none: the first, for the
	 * error the line gets. */
	for (v = first; v; v = ftrace_format_next(v)) {
		c->f = v;
		if (line_values(s, c, msg) == 0)
			break;
	}
	if (!v)
		c->f = first;
	if (c->f)
		snprintf(raw, sizeof(raw), "%s:%s", c->f->system,
			 c->f->event ? c->f->event : c->f->name);
	else
		snprintf(raw, sizeof(raw), "%s", cname ? cname : name);
	id = tables_raw(s->t, raw);
	if (id < 0 || ptrmap_put(&s->classes, (uintptr_t)iname, c) < 0) {
		free(c);
		return NULL;
	}
	c->map.raw_id = (uint32_t)id;
	c->map.kind = -1;
	if (line_values(s, c, msg) == 0) {
		const char *fields;

		c->raw_form = is_raw_form(msg, &fields) &&
			ftrace_format_match(c->f, msg, &s->vals) < 0;
		line_values(s, c, msg);
		c->names = s->vals;
		if (c->f->lossy && !c->raw_form && s->nlossy < 16)
			s->lossy[s->nlossy++] = c->f;
		tables_class_map(s->t, &c->map, text_find, c);
	} else if (c->f) {
		c->first_bad = 1;
	} else {
		if (cname)
			log_warn("%s:%lu: event %s: print format unknown to "
				 "the text reader: counted, fields not read "
				 "(trace-cmd report -R gives them by name)",
				 s->path, s->lineno, name);
		tables_raw_note(s->t, c->map.raw_id, "print format unknown "
				"to the text reader: counted only");
	}
	return c;
}

static int lost_note(struct text_state *s, int cpu, int64_t count)
{
	struct text_cpu *c = cpu_get(s, cpu);

	if (!c)
		return -1;
	if (c->lost_pending) {
		/* Two markers in a row: one range, counts added. */
		c->lost_count = c->lost_count < 0 || count < 0 ? -1 :
			c->lost_count + count;
		return 0;
	}
	c->lost_pending = 1;
	c->lost_count = count;
	c->lost_has_begin = c->have_last;
	c->lost_begin = c->last_ns;
	return 0;
}

static int lost_flush(struct text_state *s, struct text_cpu *c, int has_end,
		      int64_t end)
{
	if (!c->lost_pending)
		return 0;
	c->lost_pending = 0;
	return tables_lost_add(s->t, c->stream, 0,
			       c->lost_has_begin && has_end, c->lost_begin,
			       end, c->lost_count >= 0,
			       c->lost_count >= 0 ? (uint64_t)c->lost_count :
			       0);
}

enum text_status {
	TEXT_OK = 0,
	TEXT_NOMEM,
	TEXT_BAD_LINE,          /* logged */
};

static enum text_status event_handle(struct text_state *s,
				     const struct text_line *ln)
{
	const char *iname = tables_intern(s->t, ln->name);
	struct text_class *c;
	struct text_cpu *cpu = cpu_get(s, ln->cpu);
	struct ingest_row *r;
	char comm[64];
	uint64_t seq;
	uint32_t nullmask = 0;
	int64_t res = 1;
	int i, k;

	if (!iname || !cpu)
		return TEXT_NOMEM;
	for (k = ln->frac_digits; k < 9; k++)
		res *= 10;
	if (res > s->resolution)
		s->resolution = res;
	c = ptrmap_get(&s->classes, (uintptr_t)iname);
	if (!c && !(c = class_resolve(s, ln->name, iname, ln->msg)))
		return TEXT_NOMEM;
	if (lost_flush(s, cpu, 1, ln->ns) < 0)
		return TEXT_NOMEM;
	cpu->stream->events++;
	cpu->last_ns = ln->ns;
	cpu->have_last = 1;
	tables_raw_count(s->t, c->map.raw_id);
	seq = tables_seq(s->t, ln->ns);
	snprintf(comm, sizeof(comm), "%.*s", (int)ln->comm_len, ln->comm);
	if (strcmp(comm, "<...>") != 0 &&
	    tables_thread_note(s->t, ln->pid, -1, comm, seq) < 0)
		return TEXT_NOMEM;
	if (c->map.kind < 0 && !c->first_bad)
		return TEXT_OK;
	if (c->first_bad || line_values(s, c, ln->msg) < 0 ||
	    s->vals.n != c->names.n) {
		/* trace-cmd report prints some KVM events through
		 * libtraceevent's kvm plugin, in formats of its own. */
		log_error("%s:%lu: %s: the text does not follow the event's "
			  "print format%s: \"%.60s\"", s->path, s->lineno,
			  ln->name, s->report ? " (trace-cmd report's plugin "
			  "format? report with -R for the fields by name)" :
			  "", ln->msg);
		return TEXT_BAD_LINE;
	}
	r = tables_row_next(s->t);
	r->kind = (uint32_t)c->map.kind;
	r->seq = (int64_t)seq;
	r->ts = tables_ts(s->t, ln->ns);
	r->cpu = ln->cpu;
	r->tid = ln->pid;
	r->textmask = 0;
	for (i = 0; i < c->map.ncols; i++) {
		uint64_t m = c->map.col[i].member;

		switch (c->map.col[i].src) {
		case COL_CONST:
		case COL_RAW_ID:
			r->v[i].i = c->map.col[i].cval;
			break;
		case COL_SIGNED:
		case COL_UNSIGNED:
			if (s->vals.present[m])
				r->v[i].i = s->vals.v[m];
			else
				nullmask |= 1u << i;    /* not printed */
			break;
		default:
			nullmask |= 1u << i;
		}
	}
	r->nullmask = nullmask;
	tables_row_commit(s->t);
	return TEXT_OK;
}

/* What the print formats of the events seen do not show, "event:
 * note; ..." (NULL: nothing lost). */
static char *lossy_describe(struct text_state *s)
{
	char *out = NULL, *n;
	size_t i;

	for (i = 0; i < s->nlossy; i++) {
		if (asprintf(&n, "%s%s%s: %s", out ? out : "", out ? "; " : "",
			     s->lossy[i]->name, s->lossy[i]->lossy) < 0) {
			free(out);
			return NULL;
		}
		free(out);
		out = n;
	}
	return out;
}

enum ingest_status ftrace_text_read(const char *path,
				    struct ingest_tables *t,
				    struct reader_result *rr)
{
	enum ingest_status st = INGEST_ERR_INTERNAL;
	struct text_state *s = calloc(1, sizeof(*s));
	struct text_line ln;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	FILE *f = NULL;
	int64_t count;
	int cpu, i, cut = 0;

	if (!s)
		return st;
	s->path = path;
	s->t = t;
	s->resolution = 1;
	ptrmap_init(&s->classes);
	rr->format = "ftrace-text";
	st = INGEST_ERR_INPUT;
	f = fopen(path, "r");
	if (!f) {
		log_error("%s: cannot open", path);
		goto end;
	}
	st = INGEST_ERR_INTERNAL;
	s->trace = tables_trace_add(t, path);
	if (!s->trace)
		goto end;
	s->trace->env[ENV_DOMAIN] = strdup("kernel");
	s->trace->env[ENV_TRACER_NAME] = strdup("ftrace");
	while ((len = getline(&line, &cap, f)) > 0) {
		int has_nl = line[len - 1] == '\n';

		s->lineno++;
		while (len > 0 && (line[len - 1] == '\n' ||
				   line[len - 1] == '\r'))
			line[--len] = '\0';
		switch (parse_line(s, line, &ln)) {
		case LINE_SKIP:
			break;
		case LINE_LOST:
			if (!parse_lost(line + strspn(line, " "), &cpu,
					&count))
				break;
			if (lost_note(s, cpu, count) < 0)
				goto end;
			break;
		case LINE_EVENT:
			if (!has_nl && ln.msg[0] == '\0') {
				cut = 1;
				break;
			}
			switch (event_handle(s, &ln)) {
			case TEXT_OK:
				break;
			case TEXT_BAD_LINE:
				if (!has_nl) {
					cut = 1;
					break;
				}
				st = INGEST_ERR_INPUT;
				goto end;
			default:
				goto end;
			}
			break;
		default:
			if (!has_nl) {
				cut = 1;
				break;
			}
			log_error("%s:%lu: not an ftrace text line: \"%.60s\"",
				  path, s->lineno, line);
			st = INGEST_ERR_INPUT;
			goto end;
		}
		if (tables_writer_failed(t))
			goto end;
		if ((tables_event_count(t) & 0xffff) == 0 &&
		    tables_event_count(t))
			log_progress("ingest: events", tables_event_count(t));
	}
	if (ferror(f)) {
		log_error("%s: read error", path);
		st = INGEST_ERR_INPUT;
		goto end;
	}
	for (i = 0; i < TEXT_MAX_CPUS; i++)
		if (s->cpus[i] && lost_flush(s, s->cpus[i], 0, 0) < 0)
			goto end;
	if (tables_event_count(t) == 0 && !cut) {
		log_error("%s: no ftrace event lines (an empty buffer?)", path);
		st = INGEST_ERR_INPUT;
		goto end;
	}
	if (cut) {
		rr->truncated = 1;
		if (asprintf(&rr->why, "line %lu is cut short (a partial copy)",
			     s->lineno) < 0)
			rr->why = NULL;
		rr->bad = strdup(path);
	}
	rr->ntraces = 1;
	rr->ts_resolution_ns = s->resolution;
	rr->tracer = strdup(s->report ? "ftrace (trace-cmd report text)" :
			    "ftrace (tracefs text)");
	rr->lossy = lossy_describe(s);
	st = INGEST_OK;
end:
	if (f)
		fclose(f);
	free(line);
	for (i = 0; i < TEXT_MAX_CPUS; i++)
		free(s->cpus[i]);
	ptrmap_free_values(&s->classes);
	free(s);
	return st;
}
