/*
 * mmureplay merge's work: shards -> the fleet DB (schemas/fleet.sql).
 *
 * The fleet DB is rebuilt, never patched: the documents it holds
 * (shard_doc) and the shards given are read into one list, sorted by
 * ID, one document kept per ID (fleet.h: the best status, then the
 * smaller text), and a new file is written from that list alone under
 * a temporary name and renamed over the old.  That is what makes a
 * merge order-independent and idempotent, and a fleet DB the same bytes
 * whoever ran the analyses; the cost is a rewrite of a file that grows
 * with captures, not events.
 */
#include "fleet/fleet.h"

#include "util/cleanup.h"
#include "util/log.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern const char schema_fleet_sql[];

struct doc {
	char *id;
	char *text;
	int rank;               /* enum fleet_status */
};

struct docs {
	struct doc *d;
	size_t n, cap;
	int refused;
};

/* Reads path whole (malloc'd, NUL-terminated), or NULL with errno. */
static char *slurp(const char *path)
{
	FILE *fp = fopen(path, "rb");
	char *buf = NULL, *nb;
	size_t len = 0, cap = 0, got;

	if (!fp)
		return NULL;
	for (;;) {
		if (cap - len < 65536) {
			cap = cap ? cap * 2 : 65536;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				fclose(fp);
				errno = ENOMEM;
				return NULL;
			}
			buf = nb;
		}
		got = fread(buf + len, 1, cap - len, fp);
		len += got;
		if (got == 0)
			break;
	}
	if (ferror(fp)) {
		free(buf);
		fclose(fp);
		errno = EIO;
		return NULL;
	}
	fclose(fp);
	buf[len] = 0;
	/* The trailing newline analyze writes is not part of the text. */
	while (len && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
		buf[--len] = 0;
	return buf;
}

/* Whether every policy run has a name, each of its VMs a number and
 * every series row five numbers: what doc_put() reads without looking. */
static int doc_shape_ok(const cJSON *root)
{
	const cJSON *p, *row, *v;
	int n;

	cJSON_ArrayForEach(p, cJSON_GetObjectItemCaseSensitive(root,
							       "policies")) {
		if (!cJSON_IsString(cJSON_GetObjectItemCaseSensitive(p, "name")))
			return 0;
		cJSON_ArrayForEach(v, cJSON_GetObjectItemCaseSensitive(p, "vms"))
			if (!cJSON_IsNumber(cJSON_GetObjectItemCaseSensitive(
						    v, "vm")))
				return 0;
		cJSON_ArrayForEach(row, cJSON_GetObjectItemCaseSensitive(
					   p, "series")) {
			n = 0;
			cJSON_ArrayForEach(v, row)
				if (cJSON_IsNumber(v))
					n++;
			if (!cJSON_IsArray(row) || n != 5 ||
			    cJSON_GetArraySize(row) != 5)
				return 0;
		}
	}
	return 1;
}

/*
 * Checks one shard document; returns its status rank and sets *id, or
 * returns -1 after saying what is wrong with it (name: its file).
 */
static int doc_check(const char *name, const char *text, char **id)
{
	cJSON *root = cJSON_Parse(text);
	const cJSON *schema, *ver, *jid, *status;
	int rank = -1;

	*id = NULL;
	if (!root) {
		log_error("%s: not a whole shard (the JSON does not parse: "
			  "truncated or damaged), not merged", name);
		return -1;
	}
	schema = cJSON_GetObjectItemCaseSensitive(root, "schema");
	ver = cJSON_GetObjectItemCaseSensitive(root, "schema_version");
	jid = cJSON_GetObjectItemCaseSensitive(root, "id");
	status = cJSON_GetObjectItemCaseSensitive(root, "status");
	if (!cJSON_IsString(schema) ||
	    strcmp(schema->valuestring, FLEET_SHARD_SCHEMA) ||
	    !cJSON_IsNumber(ver)) {
		log_error("%s: not a mmureplay shard, not merged", name);
	} else if (ver->valuedouble > FLEET_SHARD_VERSION) {
		log_error("%s: shard schema version %d is newer than this "
			  "mmureplay's (%d), not merged", name,
			  ver->valueint, FLEET_SHARD_VERSION);
	} else if (!cJSON_IsString(jid) || !jid->valuestring[0] ||
		   strchr(jid->valuestring, '/') ||
		   !cJSON_IsString(status) ||
		   fleet_status_find(status->valuestring) < 0) {
		log_error("%s: a shard without a valid id or status, not "
			  "merged", name);
	} else if (!doc_shape_ok(root)) {
		log_error("%s: a shard whose policies or series are malformed, "
			  "not merged", name);
	} else {
		rank = fleet_status_find(status->valuestring);
		*id = strdup(jid->valuestring);
		if (!*id)
			rank = -1;
	}
	cJSON_Delete(root);
	return rank;
}

/* Adds a document to the list (text is taken over).  -1: no memory. */
static int docs_add(struct docs *ds, const char *name, char *text)
{
	struct doc *nd;
	char *id;
	int rank = doc_check(name, text, &id);

	if (rank < 0) {
		free(text);
		ds->refused++;
		return 0;
	}
	if (ds->n == ds->cap) {
		size_t cap = ds->cap ? ds->cap * 2 : 64;

		nd = realloc(ds->d, cap * sizeof(*nd));
		if (!nd) {
			free(id);
			free(text);
			return -1;
		}
		ds->d = nd;
		ds->cap = cap;
	}
	ds->d[ds->n].id = id;
	ds->d[ds->n].text = text;
	ds->d[ds->n].rank = rank;
	ds->n++;
	return 0;
}

static int add_shard_file(struct docs *ds, const char *path)
{
	char *text = slurp(path);

	if (!text) {
		if (errno == ENOMEM)
			return -1;
		log_error("%s: cannot read the shard: %s, not merged", path,
			  strerror(errno));
		ds->refused++;
		return 0;
	}
	return docs_add(ds, path, text);
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A shard directory, its shard.json, or a directory of shards. */
static int add_path(struct docs *ds, const char *path)
{
	char sub[PATH_MAX], **names = NULL, **nn;
	struct dirent *de;
	struct stat sb;
	size_t n = 0, cap = 0, i;
	DIR *d;
	int rc = 0;

	if (stat(path, &sb) < 0) {
		log_error("%s: %s, not merged", path, strerror(errno));
		ds->refused++;
		return 0;
	}
	if (!S_ISDIR(sb.st_mode))
		return add_shard_file(ds, path);
	snprintf(sub, sizeof(sub), "%s/shard.json", path);
	if (access(sub, F_OK) == 0)
		return add_shard_file(ds, sub);
	d = opendir(path);
	if (!d) {
		log_error("%s: %s, not merged", path, strerror(errno));
		ds->refused++;
		return 0;
	}
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')       /* ., .., analyze's temps */
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 64;
			nn = realloc(names, cap * sizeof(*nn));
			if (!nn) {
				rc = -1;
				break;
			}
			names = nn;
		}
		names[n] = strdup(de->d_name);
		if (!names[n]) {
			rc = -1;
			break;
		}
		n++;
	}
	closedir(d);
	if (rc == 0)
		qsort(names, n, sizeof(*names), name_cmp);
	for (i = 0; i < n; i++) {
		snprintf(sub, sizeof(sub), "%s/%s/shard.json", path, names[i]);
		if (rc == 0 && access(sub, F_OK) == 0)
			rc = add_shard_file(ds, sub);
		else if (rc == 0) {
			log_error("%s/%s: no shard.json (not a shard), not "
				  "merged", path, names[i]);
			ds->refused++;
		}
		free(names[i]);
	}
	free(names);
	return rc;
}

int fleet_db_open(const char *path, sqlite3 **out)
{
	sqlite3_stmt *st;
	int ok = 0, ver = -1;

	*out = NULL;
	if (access(path, R_OK) < 0) {
		log_error("%s: %s", path, strerror(errno));
		return -1;
	}
	if (sqlite3_open_v2(path, out, SQLITE_OPEN_READONLY, NULL) !=
	    SQLITE_OK)
		goto bad;
	if (sqlite3_prepare_v2(*out, "SELECT value FROM meta WHERE key = "
			       "'kind'", -1, &st, NULL) == SQLITE_OK) {
		ok = sqlite3_step(st) == SQLITE_ROW &&
		     sqlite3_column_text(st, 0) &&
		     !strcmp((const char *)sqlite3_column_text(st, 0),
			     FLEET_DB_KIND);
		sqlite3_finalize(st);
	}
	if (!ok)
		goto bad;
	if (sqlite3_prepare_v2(*out, "PRAGMA user_version", -1, &st, NULL) ==
	    SQLITE_OK) {
		if (sqlite3_step(st) == SQLITE_ROW)
			ver = sqlite3_column_int(st, 0);
		sqlite3_finalize(st);
	}
	if (ver > FLEET_DB_VERSION) {
		log_error("%s: fleet DB schema version %d is newer than this "
			  "mmureplay's (%d)", path, ver, FLEET_DB_VERSION);
		sqlite3_close(*out);
		*out = NULL;
		return -1;
	}
	return 0;
bad:
	log_error("%s: not a mmureplay fleet DB", path);
	sqlite3_close(*out);
	*out = NULL;
	return -1;
}

/* Adds the documents of the fleet DB at path.  0; 1 when there is no
 * file; -1 no memory; -2 after saying why it cannot be read. */
static int add_fleet_db(struct docs *ds, const char *path)
{
	sqlite3 *db;
	sqlite3_stmt *st;
	char name[PATH_MAX + 32];
	char *text;
	int rc = 0;

	if (access(path, F_OK) < 0 && errno == ENOENT)
		return 1;
	if (fleet_db_open(path, &db) < 0)
		return -2;
	if (sqlite3_prepare_v2(db, "SELECT id, json FROM shard_doc ORDER BY "
			       "id", -1, &st, NULL) != SQLITE_OK) {
		log_error("%s: cannot read: %s", path, sqlite3_errmsg(db));
		sqlite3_close(db);
		return -2;
	}
	while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
		snprintf(name, sizeof(name), "%s: shard %s", path,
			 (const char *)sqlite3_column_text(st, 0));
		text = strdup((const char *)sqlite3_column_text(st, 1));
		rc = text ? docs_add(ds, name, text) : -1;
	}
	sqlite3_finalize(st);
	sqlite3_close(db);
	return rc;
}

static int doc_cmp(const void *a, const void *b)
{
	const struct doc *x = a, *y = b;
	int c = strcmp(x->id, y->id);

	if (c)
		return c;
	if (x->rank != y->rank)
		return x->rank - y->rank;
	return strcmp(x->text, y->text);
}

/* Sorts by ID and keeps the first (the best) document of each. */
static void docs_unique(struct docs *ds)
{
	size_t i, n = 0;

	qsort(ds->d, ds->n, sizeof(*ds->d), doc_cmp);
	for (i = 0; i < ds->n; i++) {
		if (n && !strcmp(ds->d[n - 1].id, ds->d[i].id)) {
			free(ds->d[i].id);
			free(ds->d[i].text);
			continue;
		}
		ds->d[n++] = ds->d[i];
	}
	ds->n = n;
}

static void docs_free(struct docs *ds)
{
	size_t i;

	for (i = 0; i < ds->n; i++) {
		free(ds->d[i].id);
		free(ds->d[i].text);
	}
	free(ds->d);
}

/* Binds v (a JSON string, number, bool or null) to parameter i. */
static void bind_json(sqlite3_stmt *st, int i, const cJSON *v)
{
	if (cJSON_IsString(v))
		sqlite3_bind_text(st, i, v->valuestring, -1, SQLITE_TRANSIENT);
	else if (cJSON_IsBool(v))
		sqlite3_bind_int(st, i, cJSON_IsTrue(v));
	else if (cJSON_IsNumber(v) && v->valuedouble == (double)(int64_t)
		 v->valuedouble)
		sqlite3_bind_int64(st, i, (int64_t)v->valuedouble);
	else if (cJSON_IsNumber(v))
		sqlite3_bind_double(st, i, v->valuedouble);
	else
		sqlite3_bind_null(st, i);
}

static const cJSON *get(const cJSON *o, const char *k)
{
	return cJSON_GetObjectItemCaseSensitive(o, k);
}

/* Runs st with the parameters bound, then resets it.  0 or -1. */
static int step(sqlite3_stmt *st)
{
	int rc = sqlite3_step(st);

	sqlite3_reset(st);
	sqlite3_clear_bindings(st);
	return rc == SQLITE_DONE ? 0 : -1;
}

/* Runs st with the n JSON values given.  0 or -1. */
static int put(sqlite3_stmt *st, int n, const cJSON *const *v)
{
	int i;

	for (i = 0; i < n; i++)
		bind_json(st, i + 1, v[i]);
	return step(st);
}

enum {
	ST_DOC, ST_CAPTURE, ST_LABEL, ST_VM, ST_VM_CHECK, ST_RUN, ST_FIGURE,
	ST_SERIES, ST_N
};

static const char *const st_sql[ST_N] = {
	[ST_DOC] = "INSERT INTO shard_doc VALUES (?, ?)",
	[ST_CAPTURE] = "INSERT INTO capture VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
		       "?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
	[ST_LABEL] = "INSERT INTO capture_label VALUES (?, ?, ?)",
	[ST_VM] = "INSERT INTO capture_vm VALUES (?, ?, ?, ?, ?, NULL)",
	[ST_VM_CHECK] = "UPDATE capture_vm SET self_check_ok = ? WHERE "
			"capture = ? AND vm = ?",
	[ST_RUN] = "INSERT INTO policy_run VALUES (?, ?, ?, ?, ?, ?, ?, ?, "
		  "?, ?, ?, ?)",
	[ST_FIGURE] = "INSERT INTO figure VALUES (?, ?, ?, ?, ?)",
	[ST_SERIES] = "INSERT INTO temp.series_part VALUES (?, ?, ?, ?, ?, "
		      "?)",
};

/* Each figure of the object figs as rows (capture, vm, policy). */
static int figures_put(sqlite3_stmt *st, const cJSON *id, int64_t vm,
		       const char *policy, const cJSON *figs)
{
	const cJSON *f;

	cJSON_ArrayForEach(f, figs) {
		bind_json(st, 1, id);
		sqlite3_bind_int64(st, 2, vm);
		sqlite3_bind_text(st, 3, policy, -1, SQLITE_STATIC);
		sqlite3_bind_text(st, 4, f->string, -1, SQLITE_STATIC);
		bind_json(st, 5, f);
		if (step(st) < 0)
			return -1;
	}
	return 0;
}

/* The run's per-second series under the name policy, by UTC second
 * (start: the capture's first). */
static int series_put(sqlite3_stmt *st, const char *policy,
		      const cJSON *series, const cJSON *start)
{
	const cJSON *row;
	int64_t s0 = cJSON_IsNumber(start) ? (int64_t)start->valuedouble : 0;
	int i;

	cJSON_ArrayForEach(row, series) {
		sqlite3_bind_text(st, 1, policy, -1, SQLITE_STATIC);
		sqlite3_bind_int64(st, 2, s0 + (int64_t)
				   cJSON_GetArrayItem(row, 0)->valuedouble);
		for (i = 1; i < 5; i++)
			bind_json(st, i + 2, cJSON_GetArrayItem(row, i));
		if (step(st) < 0)
			return -1;
	}
	return 0;
}

/* The rows of one policy run of capture id (start: its UTC second);
 * doc_shape_ok() held its name and series rows. */
static int run_put(sqlite3_stmt **st, const cJSON *id, const cJSON *p,
		   const cJSON *start)
{
	const cJSON *sweep = get(p, "sweep"), *vm, *v[12];
	const char *name = get(p, "name")->valuestring;
	int recorded = cJSON_IsTrue(get(p, "recorded")), k;

	v[0] = id;
	v[1] = get(p, "name");
	v[2] = get(p, "recorded");
	v[3] = get(p, "verified");
	v[4] = get(p, "not_applicable");
	v[5] = get(sweep, "kind");
	v[6] = get(sweep, "value");
	v[7] = get(sweep, "factor");
	for (k = 0; k < FLEET_FIGURES; k++)
		v[8 + k] = get(get(p, "kinds"), fleet_figure_names[k]);
	if (put(st[ST_RUN], 12, v) < 0 ||
	    figures_put(st[ST_FIGURE], id, 0, name, get(p, "figures")) < 0)
		return -1;
	cJSON_ArrayForEach(vm, get(p, "vms")) {
		const cJSON *c[3] = { get(vm, "self_check_ok"), id,
				      get(vm, "vm") };

		if (figures_put(st[ST_FIGURE], id,
				(int64_t)cJSON_GetNumberValue(get(vm, "vm")),
				name, get(vm, "figures")) < 0 ||
		    (recorded && put(st[ST_VM_CHECK], 3, c) < 0))
			return -1;
	}
	/* The series: under the policy's name when verified, and under
	 * 'recorded' for the recorded policy (fleet.sql). */
	if (cJSON_IsTrue(get(p, "verified")) &&
	    series_put(st[ST_SERIES], name, get(p, "series"), start) < 0)
		return -1;
	if (recorded &&
	    series_put(st[ST_SERIES], "recorded", get(p, "series"), start) < 0)
		return -1;
	return 0;
}

/* The sources as one text, a path a line. */
static cJSON *sources_text(const cJSON *arr)
{
	const cJSON *s;
	size_t len = 1;
	char *buf, *p;
	cJSON *out;

	cJSON_ArrayForEach(s, arr)
		if (cJSON_IsString(s))
			len += strlen(s->valuestring) + 1;
	buf = p = calloc(1, len);
	if (!buf)
		return NULL;
	cJSON_ArrayForEach(s, arr)
		if (cJSON_IsString(s))
			p += sprintf(p, "%s%s", p == buf ? "" : "\n",
				     s->valuestring);
	out = cJSON_CreateString(buf);
	free(buf);
	return out;
}

/* Every row one document gives. */
static int doc_put(sqlite3_stmt **st, const struct doc *d)
{
	cJSON *root = cJSON_Parse(d->text), *src = NULL, *txt = NULL;
	const cJSON *cap, *sc, *x, *v[18];
	int rc = -1;

	if (!root)
		return -1;
	cap = get(root, "capture");
	sc = get(root, "self_check");
	src = sources_text(get(root, "sources"));
	txt = cJSON_CreateString(d->text);
	if (!src || !txt)
		goto end;
	v[0] = get(root, "id");
	v[1] = txt;
	if (put(st[ST_DOC], 2, v) < 0)
		goto end;
	v[1] = get(root, "status");
	v[2] = get(root, "exit_code");
	v[3] = get(root, "stage");
	v[4] = get(root, "error");
	v[5] = get(cap, "host");
	v[6] = get(cap, "trace_host");
	v[7] = src;
	v[8] = get(cap, "start_s");
	v[9] = get(cap, "duration_s");
	v[10] = get(cap, "events");
	v[11] = get(cap, "lost_events");
	v[12] = get(cap, "truncated");
	v[13] = get(cap, "kernel_release");
	v[14] = get(cap, "fault_isa");
	v[15] = get(root, "recorded_policy");
	v[16] = get(sc, "ok");
	v[17] = get(sc, "reason");
	if (put(st[ST_CAPTURE], 18, v) < 0)
		goto end;
	cJSON_ArrayForEach(x, get(root, "labels")) {
		cJSON *k = cJSON_CreateString(x->string);
		const cJSON *l[3] = { v[0], k, x };

		if (!k || put(st[ST_LABEL], 3, l) < 0) {
			cJSON_Delete(k);
			goto end;
		}
		cJSON_Delete(k);
	}
	cJSON_ArrayForEach(x, get(root, "vms")) {
		const cJSON *m[5] = { v[0], get(x, "id"), get(x, "pid"),
				      get(x, "procname"), get(x, "label") };

		if (put(st[ST_VM], 5, m) < 0)
			goto end;
	}
	cJSON_ArrayForEach(x, get(root, "policies"))
		if (run_put(st, v[0], x, get(cap, "start_s")) < 0)
			goto end;
	rc = 0;
end:
	cJSON_Delete(src);
	cJSON_Delete(txt);
	cJSON_Delete(root);
	return rc;
}

/* Writes the documents into a new fleet DB at tmp.  0 or -1 (said). */
static int write_db(const char *tmp, const char *out, const struct docs *ds)
{
	sqlite3_stmt *st[ST_N] = { 0 };
	sqlite3 *db = NULL;
	char *err = NULL, num[32];
	size_t i;
	int k, rc = -1;

	if (sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READWRITE |
			    SQLITE_OPEN_CREATE, NULL) != SQLITE_OK)
		goto sqlerr;
	if (sqlite3_exec(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous "
			 "= OFF; BEGIN", NULL, NULL, &err) != SQLITE_OK ||
	    sqlite3_exec(db, schema_fleet_sql, NULL, NULL, &err) !=
	    SQLITE_OK ||
	    sqlite3_exec(db, "CREATE TEMP TABLE series_part (policy, second, "
			 "faults, zaps, flushes, lock_wait_ns)", NULL, NULL,
			 &err) != SQLITE_OK)
		goto sqlerr;
	for (k = 0; k < ST_N; k++)
		if (sqlite3_prepare_v2(db, st_sql[k], -1, &st[k], NULL) !=
		    SQLITE_OK)
			goto sqlerr;
	for (i = 0; i < ds->n; i++) {
		if (doc_put(st, &ds->d[i]) < 0) {
			log_error("%s: cannot merge shard %s: %s", out,
				  ds->d[i].id, sqlite3_errmsg(db));
			goto end;
		}
	}
	snprintf(num, sizeof(num), "%zu", ds->n);
	sqlite3_free(err);
	err = sqlite3_mprintf("INSERT INTO meta VALUES ('kind', '%q'), "
			      "('captures', %s); INSERT INTO series SELECT "
			      "policy, second, count(*), sum(faults), "
			      "sum(zaps), sum(flushes), sum(lock_wait_ns) "
			      "FROM temp.series_part GROUP BY policy, second "
			      "ORDER BY policy, second; DROP TABLE "
			      "temp.series_part; COMMIT", FLEET_DB_KIND, num);
	if (!err)
		goto end;
	{
		char *sql = err;

		err = NULL;
		k = sqlite3_exec(db, sql, NULL, NULL, &err);
		sqlite3_free(sql);
		if (k != SQLITE_OK)
			goto sqlerr;
	}
	rc = 0;
	goto end;
sqlerr:
	log_error("%s: cannot write the fleet DB: %s", out,
		  err ? err : db ? sqlite3_errmsg(db) : "out of memory");
end:
	for (k = 0; k < ST_N; k++)
		sqlite3_finalize(st[k]);
	sqlite3_free(err);
	if (sqlite3_close(db) != SQLITE_OK)
		rc = -1;
	return rc;
}

enum fleet_merge_status fleet_merge(const char *const *paths, int n,
				    const char *out, int *merged)
{
	struct docs ds = { 0 };
	enum fleet_merge_status rc = FLEET_MERGE_ERR_NOMEM;
	struct stat sb;
	char tmp[PATH_MAX];
	int i, r;

	*merged = 0;
	if (stat(out, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		log_error("%s: not a regular file: a fleet DB is a file", out);
		return FLEET_MERGE_ERR_OUTPUT;
	}
	r = add_fleet_db(&ds, out);
	if (r == -2) {
		rc = FLEET_MERGE_ERR_INPUT;
		goto end;
	}
	if (r == -1)
		goto end;
	for (i = 0; i < n; i++)
		if (add_path(&ds, paths[i]) < 0)
			goto end;
	docs_unique(&ds);
	snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", out, (long)getpid());
	unlink(tmp);
	cleanup_stale_reap(out);
	cleanup_tmp_add(tmp);
	rc = FLEET_MERGE_ERR_OUTPUT;
	if (write_db(tmp, out, &ds) < 0) {
		unlink(tmp);
		cleanup_tmp_remove(tmp);
		goto end;
	}
	cleanup_signals_hold();
	if (rename(tmp, out) < 0) {
		log_error("%s: cannot write: %s", out, strerror(errno));
		unlink(tmp);
		cleanup_tmp_remove(tmp);
		cleanup_signals_release();
		goto end;
	}
	cleanup_tmp_remove(tmp);
	cleanup_signals_published();
	*merged = (int)ds.n;
	rc = ds.refused ? FLEET_MERGE_REFUSED : FLEET_MERGE_OK;
end:
	docs_free(&ds);
	return rc;
}
