/*
 * The ingest pipeline (see ingest.h): the input's format by content, its
 * reader (ingest/reader.h) into the capture tables and the writer thread,
 * and the decision between a whole DB, a truncated one, and none.
 */
#define _GNU_SOURCE
#include "ingest/ingest.h"

#include "db/db.h"
#include "ingest/catalog.h"
#include "ingest/reader.h"
#include "ingest/tables.h"
#include "ingest/writer.h"
#include "model/fault.h"
#include "util/log.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* trace-cmd's file magic: 0x17 0x08 'D' then "tracing". */
static const char tracecmd_magic[10] = "\x17\x08\x44tracing";

/* A tracefs text line: "# tracer: nop", "cpus=N" (trace-cmd report), or
 * an event line "  COMM-PID  [CPU] ...". */
static int text_line_is_ftrace(const char *l)
{
	const char *b;

	if (strncmp(l, "# tracer:", 9) == 0 || strncmp(l, "cpus=", 5) == 0)
		return 1;
	b = strstr(l, " [");
	return b && b > l && b[2] >= '0' && b[2] <= '9' &&
		strchr(b, ']') && strchr(b, ':');
}

enum ingest_format ingest_detect(const char *path)
{
	enum ingest_format fmt = INGEST_FMT_UNKNOWN;
	char buf[512];
	struct stat sb;
	size_t n;
	FILE *f;

	if (stat(path, &sb) != 0) {
		log_error("%s: %s", path, strerror(errno));
		return fmt;
	}
	if (S_ISDIR(sb.st_mode))
		return INGEST_FMT_CTF;
	f = fopen(path, "rb");
	if (!f) {
		log_error("%s: %s", path, strerror(errno));
		return fmt;
	}
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	if (n >= sizeof(tracecmd_magic) &&
	    memcmp(buf, tracecmd_magic, sizeof(tracecmd_magic)) == 0)
		fmt = INGEST_FMT_TRACECMD;
	else if (n && !memchr(buf, '\0', n) && text_line_is_ftrace(buf))
		fmt = INGEST_FMT_FTRACE_TEXT;
	else if (n == 0)
		log_error("%s: empty file, not a trace", path);
	else
		log_error("%s: not a trace (neither a CTF trace directory, a "
			  "trace-cmd trace.dat nor ftrace text)", path);
	fclose(f);
	return fmt;
}

/*
 * The capture manifest (capture/mmureplay-capture writes manifest.json at
 * the root of what it records) goes into meta 'manifest' as it is, once
 * it parses as JSON: the replay reads the CPU vendor and the KVM
 * parameters (the recorded policy) from it.  A bad manifest is reported
 * and left out; the trace is still good.
 */
static FILE *manifest_open(const char *input, char *path, size_t len)
{
	char dir[3072], *d;
	struct stat sb;
	FILE *f;
	int up;

	snprintf(dir, sizeof(dir), "%s", input);
	/* A file's capture is its directory's. */
	if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
		d = dirname(dir);
		memmove(dir, d, strlen(d) + 1);
	}
	/* The capture directory, or the trace directory inside it
	 * (mmureplay-capture writes DIR/manifest.json and DIR/trace/). */
	for (up = 0; up < 2; up++) {
		if (snprintf(path, len, "%s/manifest.json", dir) >= (int)len)
			return NULL;
		f = fopen(path, "r");
		if (f)
			return f;
		if (strlen(dir) + 4 > sizeof(dir))
			return NULL;
		strcat(dir, "/..");
	}
	return NULL;
}

/* Stores the manifest; *isa: the exit ISA its CPU vendor implies (0:
 * no manifest, or no vendor).  Returns 0, or -1 on an SQL error. */
static int manifest_store(sqlite3 *db, const struct ingest_opts *opts,
			  int *isa)
{
	const cJSON *vendor;
	char path[4096], *text = NULL;
	const char *found = NULL;
	cJSON *doc = NULL;
	long len;
	FILE *f;
	int i, rc = 0;

	for (i = 0; i < opts->ninputs && !found; i++) {
		f = manifest_open(opts->inputs[i], path, sizeof(path));
		if (!f)
			continue;
		found = path;
		if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
		    len < (1 << 20) && fseek(f, 0, SEEK_SET) == 0 &&
		    (text = calloc(1, (size_t)len + 1)) &&
		    fread(text, 1, (size_t)len, f) == (size_t)len)
			doc = cJSON_Parse(text);
		fclose(f);
	}
	if (!found)
		goto end;
	if (!doc || !cJSON_IsObject(doc) ||
	    !cJSON_GetObjectItemCaseSensitive(doc, "manifest_version")) {
		log_warn("%s: not a capture manifest (ignored)", found);
		goto end;
	}
	vendor = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(doc, "cpu"), "vendor");
	*isa = mev_isa_of_vendor(cJSON_GetStringValue(vendor));
	rc = db_meta_set_text(db, "manifest", text) == DB_OK ? 0 : -1;
end:
	cJSON_Delete(doc);
	free(text);
	return rc;
}

static const char *format_noun(enum ingest_format fmt)
{
	switch (fmt) {
	case INGEST_FMT_TRACECMD:
		return "trace-cmd trace.dat";
	case INGEST_FMT_FTRACE_TEXT:
		return "ftrace text trace";
	default:
		return "CTF trace";
	}
}

/*
 * The canonical tables the source's events can fill (meta source_tables):
 * what the capture can answer, fired or not (metrics/coverage.h).  names:
 * the event names, comma-separated.  Malloc'd; NULL: out of memory.
 */
static char *source_tables(const struct catalog *cat, const char *names)
{
	size_t cap = 2, len = 1;
	const struct catalog_entry *e;
	char *out, *list, *name, *save = NULL, key[128];
	int i;

	for (i = 0; i < cat->nentries; i++)
		cap += strlen(cat->entries[i].table) + 1;
	out = malloc(cap);
	list = strdup(names ? names : "");
	if (!out || !list) {
		free(out);
		free(list);
		return NULL;
	}
	memcpy(out, ",", 2);
	for (name = strtok_r(list, ",", &save); name;
	     name = strtok_r(NULL, ",", &save)) {
		e = catalog_find(cat, name);
		if (!e || snprintf(key, sizeof(key), ",%s,", e->table) >=
		    (int)sizeof(key) || strstr(out, key))
			continue;
		len += (size_t)snprintf(out + len, cap - len, "%s,", e->table);
	}
	free(list);
	/* Without the guard commas. */
	memmove(out, out + 1, len);
	if (len > 1)
		out[len - 2] = '\0';
	return out;
}

/* The source of the capture: meta keys the summary shows. */
static int source_store(sqlite3 *db, const struct reader_result *rr,
			struct ingest_tables *t, const struct catalog *cat)
{
	char *names = rr->events ? NULL : tables_raw_names(t);
	char *tables = source_tables(cat, rr->events ? rr->events : names);
	int rc;

	rc = db_meta_set_text(db, "source_format", rr->format) == DB_OK &&
		db_meta_set_text(db, "source_tracer",
				 rr->tracer ? rr->tracer : "unknown") == DB_OK &&
		db_meta_set_text(db, "source_events",
				 rr->events ? rr->events :
				 names ? names : "") == DB_OK &&
		db_meta_set_int(db, "ts_resolution_ns",
				rr->ts_resolution_ns) == DB_OK &&
		(!rr->lossy || db_meta_set_text(db, "source_lossy",
						rr->lossy) == DB_OK) &&
		(!rr->duplicates || db_meta_set_int(db, "source_duplicates",
				(int64_t)rr->duplicates) == DB_OK) &&
		tables && db_meta_set_text(db, "source_tables", tables) ==
		DB_OK ? 0 : -1;
	free(names);
	free(tables);
	return rc;
}

static double timespec_diff_s(const struct timespec *a,
			      const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) +
	       (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

enum ingest_status ingest_run(const struct ingest_opts *opts,
			      struct ingest_result *res)
{
	enum ingest_status st = INGEST_ERR_INPUT;
	enum ingest_format fmt = INGEST_FMT_UNKNOWN, f;
	struct reader_result rr = { 0 };
	struct catalog cat = { 0 };
	struct db_out out = { 0 };
	struct writer *w = NULL;
	struct ingest_tables *t = NULL;
	struct writer_stats ws;
	struct timespec t0, c0, t1, c1;
	int i, werr, manifest_isa = 0, isa = 0;

	memset(res, 0, sizeof(*res));
	clock_gettime(CLOCK_MONOTONIC, &t0);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
	for (i = 0; i < opts->ninputs; i++) {
		f = ingest_detect(opts->inputs[i]);
		if (f == INGEST_FMT_UNKNOWN)
			goto end;
		if (fmt != INGEST_FMT_UNKNOWN &&
		    (f != fmt || fmt != INGEST_FMT_CTF)) {
			log_error("%s: one capture per DB: several CTF trace "
				  "directories, or one trace.dat, or one ftrace "
				  "text file", opts->inputs[i]);
			goto end;
		}
		fmt = f;
	}
	st = INGEST_ERR_INTERNAL;
	if (catalog_load(&cat) != CATALOG_OK)
		goto end;
	st = INGEST_ERR_OUTPUT;
	if (db_out_create(&out, opts->output) != DB_OK)
		goto end;
	if (writer_start(&w, out.db, &cat) != WRITER_OK)
		goto end;
	st = INGEST_ERR_INTERNAL;
	t = tables_create(&cat, w);
	if (!t)
		goto end;
	switch (fmt) {
	case INGEST_FMT_TRACECMD:
		st = tracecmd_read(opts->inputs[0], t, &rr);
		break;
	case INGEST_FMT_FTRACE_TEXT:
		st = ftrace_text_read(opts->inputs[0], t, &rr);
		break;
	default:
		st = ctf_read(opts, t, &rr);
	}
	log_progress_end();
	res->ntraces = rr.ntraces;
	if (st != INGEST_OK)
		goto end;
	tables_flush(t);
	werr = writer_finish(w, &ws) != WRITER_OK;
	w = NULL;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
	res->wall_s = timespec_diff_s(&t0, &t1);
	res->read_cpu_s = timespec_diff_s(&c0, &c1);
	res->read_wait_s = ws.wait_chunk_s;
	res->write_cpu_s = ws.cpu_s;
	res->write_wait_s = ws.wait_rows_s;
	res->events = tables_event_count(t);
	res->lost_events = tables_lost_count(t);
	if (werr) {
		st = INGEST_ERR_OUTPUT;
		goto end;
	}
	if (rr.truncated && res->events == 0) {
		log_error("%s: not a readable %s: %s", rr.bad,
			  format_noun(fmt), rr.why);
		st = INGEST_ERR_INPUT;
		goto end;
	}
	if (tables_late_streams(t))
		log_warn("%s: %llu stream(s) begin mid-way: their first packets "
			 "are not in the trace (an LTTng snapshot, or a trace "
			 "cut at its start); counted as lost packets",
			 opts->inputs[0],
			 (unsigned long long)tables_late_streams(t));
	if (rr.truncated)
		log_error("%s: trace broken after %llu events (kept, marked "
			  "truncated): %s", rr.bad,
			  (unsigned long long)res->events, rr.why);
	st = INGEST_ERR_OUTPUT;
	if (tables_store(t, out.db) != TABLES_OK ||
	    db_meta_set_int(out.db, "truncated", rr.truncated) != DB_OK ||
	    (rr.truncated && db_meta_set_text(out.db, "truncated_reason",
					      rr.why) != DB_OK) ||
	    db_meta_set_int(out.db, "catalogue_version", cat.version) !=
	    DB_OK || source_store(out.db, &rr, t, &cat) < 0 ||
	    manifest_store(out.db, opts, &manifest_isa) < 0 ||
	    tables_fault_decode_rest(t, out.db, manifest_isa, &isa) !=
	    TABLES_OK || (isa && db_meta_set_text(out.db, "fault_isa",
						  mev_isa_name(isa)) != DB_OK) ||
	    db_out_publish(&out) != DB_OK)
		goto end;
	st = rr.truncated ? INGEST_PARTIAL : INGEST_OK;
end:
	if (w) {
		tables_flush(t);
		writer_finish(w, NULL);
	}
	tables_destroy(t);
	db_out_discard(&out);
	catalog_free(&cat);
	free(rr.tracer);
	free(rr.events);
	free(rr.lossy);
	free(rr.why);
	free(rr.bad);
	return st;
}
