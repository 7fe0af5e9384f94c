/*
 * A shard's identity and its shard.json (schemas/shard.schema.json),
 * read from the capture DB after analyze replayed and stored it.
 *
 * Everything here is read back from the DB's tables (meta, trace, vm,
 * replay_run and the tables beside it), never from the in-memory
 * results, so a shard says what the DB it ships with says.  The text is
 * a function of the DB and the analyze arguments alone: no wall time, no
 * machine name but the capture's, so the same capture gives the same
 * bytes wherever it is analysed.
 */
#include "fleet/fleet.h"

#include "db/db.h"
#include "util/fnv.h"
#include "util/log.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define FLEET_STATUS_NAME(e, name) [e] = name,
const char *const fleet_status_names[FLEET_STATUSES] = {
	FLEET_STATUS_LIST(FLEET_STATUS_NAME)
};

const char *const fleet_figure_names[FLEET_FIGURES] = {
	"faults", "leaf_zaps", "tlb_flushes", "lock_wait_ms",
};

int fleet_status_find(const char *s)
{
	int i;

	for (i = 0; s && i < FLEET_STATUSES; i++)
		if (!strcmp(s, fleet_status_names[i]))
			return i;
	return -1;
}

/* Adds a string to the ID's digest, its end marked (IDs are names,
 * not secrets). */
static uint64_t fnv(uint64_t h, const char *s)
{
	return fnv_add(h, s, strlen(s)) ^ 0xff;
}

/* Copies s into dst keeping [A-Za-z0-9.-], '_' for the rest. */
static void id_part(char *dst, size_t len, const char *s)
{
	size_t i;

	for (i = 0; s[i] && i + 1 < len; i++) {
		char c = s[i];

		dst[i] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			 (c >= '0' && c <= '9') || c == '.' || c == '-' ?
			 c : '_';
	}
	dst[i] = 0;
}

/* Returns the first non-NULL text column 0 of sql, malloc'd, or NULL. */
static char *query_text(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	char *v = NULL;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return NULL;
	while (!v && sqlite3_step(st) == SQLITE_ROW)
		if (sqlite3_column_text(st, 0))
			v = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return v;
}

/*
 * Returns the capture's host (malloc'd): the manifest's hostname, else
 * the first trace's that names one, else "unknown-host"; NULL when out
 * of memory.
 */
static char *capture_host(sqlite3 *db)
{
	char *man = db_meta_get_text(db, "manifest"), *h = NULL;
	cJSON *root = man ? cJSON_Parse(man) : NULL;
	const cJSON *hn = cJSON_GetObjectItemCaseSensitive(root, "hostname");

	if (cJSON_IsString(hn) && hn->valuestring[0])
		h = strdup(hn->valuestring);
	cJSON_Delete(root);
	free(man);
	if (!h)
		h = query_text(db, "SELECT hostname FROM trace WHERE "
			       "hostname IS NOT NULL AND hostname != '' AND "
			       "hostname != '(none)' ORDER BY id");
	return h ? h : strdup("unknown-host");
}

char *fleet_shard_id(const struct fleet_shard_in *in)
{
	char host[64], when[32], buf[160], num[32], *h, *tr;
	uint64_t hash = FNV_BASIS;
	int64_t base;
	time_t t;
	struct tm tm;
	int i;

	if (!in->db) {
		for (i = 0; i < in->nsources; i++)
			hash = fnv(hash, in->sources[i]);
		snprintf(buf, sizeof(buf), "unreadable-%016" PRIx64, hash);
		return strdup(buf);
	}
	h = capture_host(in->db);
	if (!h)
		return NULL;
	id_part(host, sizeof(host), h);
	free(h);
	base = db_meta_get_int(in->db, "ts_base_ns", 0);
	t = (time_t)(base / 1000000000);
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y%m%dT%H%M%SZ", &tm);
	/* What tells two captures of one host and second apart. */
	snprintf(num, sizeof(num), "%" PRId64, base);
	hash = fnv(hash, num);
	snprintf(num, sizeof(num), "%" PRId64,
		 db_meta_get_int(in->db, "events", 0));
	hash = fnv(hash, num);
	snprintf(num, sizeof(num), "%" PRId64,
		 db_meta_get_int(in->db, "last_ts", 0));
	hash = fnv(hash, num);
	tr = query_text(in->db, "SELECT group_concat(coalesce(path, '') || "
			"'|' || coalesce(trace_name, '') || '|' || "
			"coalesce(creation_datetime, ''), ';') FROM "
			"(SELECT * FROM trace ORDER BY id)");
	if (tr)
		hash = fnv(hash, tr);
	free(tr);
	snprintf(buf, sizeof(buf), "%s-%s-%08" PRIx64, host, when,
		 hash & (uint64_t)0xffffffffu);
	return strdup(buf);
}

/* Adds "KEY": VALUE pairs of "KEY=VALUE,..." under name. */
static void labels_add(cJSON *root, const char *name, const char *list)
{
	cJSON *o = cJSON_AddObjectToObject(root, name);
	char *copy, *tok, *save = NULL, *eq;

	if (!list || !o)
		return;
	copy = strdup(list);
	for (tok = copy ? strtok_r(copy, ",", &save) : NULL; tok;
	     tok = strtok_r(NULL, ",", &save)) {
		eq = strchr(tok, '=');
		if (!eq || eq == tok)
			continue;
		*eq = 0;
		cJSON_DeleteItemFromObjectCaseSensitive(o, tok);
		cJSON_AddStringToObject(o, tok, eq + 1);
	}
	free(copy);
}

static void add_text_or_null(cJSON *o, const char *k, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

/* The "capture" object: what the DB says of the capture as a whole. */
static int capture_add(cJSON *root, sqlite3 *db, const char *host_label)
{
	cJSON *c = cJSON_AddObjectToObject(root, "capture");
	char *h = capture_host(db), *v;
	int64_t base = db_meta_get_int(db, "ts_base_ns", 0);

	if (!c || !h) {
		free(h);
		return -1;
	}
	cJSON_AddStringToObject(c, "host", host_label ? host_label : h);
	cJSON_AddStringToObject(c, "trace_host", h);
	free(h);
	cJSON_AddNumberToObject(c, "start_s", (double)(base / 1000000000));
	cJSON_AddNumberToObject(c, "duration_s",
				(double)db_meta_get_int(db, "last_ts", 0) /
				1e9);
	cJSON_AddNumberToObject(c, "events",
				(double)db_meta_get_int(db, "events", 0));
	cJSON_AddNumberToObject(c, "lost_events",
				(double)db_meta_get_int(db, "lost_events", 0));
	cJSON_AddBoolToObject(c, "truncated",
			      db_meta_get_int(db, "truncated", 0) != 0);
	v = db_meta_get_text(db, "source_format");
	add_text_or_null(c, "source_format", v);
	free(v);
	v = query_text(db, "SELECT kernel_release FROM trace WHERE "
		       "kernel_release IS NOT NULL ORDER BY id");
	add_text_or_null(c, "kernel_release", v);
	free(v);
	v = db_meta_get_text(db, "fault_isa");
	add_text_or_null(c, "fault_isa", v);
	free(v);
	return 0;
}

/* The "vms" array: table vm's rows, each with its label if one. */
static int vms_add(cJSON *root, sqlite3 *db, const char *vm_labels)
{
	cJSON *arr = cJSON_AddArrayToObject(root, "vms"), *labels, *o, *l;
	sqlite3_stmt *st;
	char id[24];
	int rc = 0;

	if (!arr)
		return -1;
	labels = cJSON_CreateObject();
	labels_add(labels, "l", vm_labels);
	if (sqlite3_prepare_v2(db, "SELECT id, pid, procname FROM vm ORDER "
			       "BY id", -1, &st, NULL) != SQLITE_OK) {
		cJSON_Delete(labels);
		return -1;
	}
	while (sqlite3_step(st) == SQLITE_ROW) {
		o = cJSON_CreateObject();
		if (!o || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			rc = -1;
			break;
		}
		cJSON_AddNumberToObject(o, "id", sqlite3_column_int64(st, 0));
		cJSON_AddNumberToObject(o, "pid", sqlite3_column_int64(st, 1));
		add_text_or_null(o, "procname",
				 (const char *)sqlite3_column_text(st, 2));
		snprintf(id, sizeof(id), "%lld", sqlite3_column_int64(st, 0));
		l = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(labels, "l"), id);
		add_text_or_null(o, "label", cJSON_IsString(l) ?
				 l->valuestring : NULL);
	}
	sqlite3_finalize(st);
	cJSON_Delete(labels);
	return rc;
}

/* Adds run_id's figures (replay_metric) as "figures". */
static int figures_add(cJSON *o, sqlite3 *db, int64_t run)
{
	cJSON *f = cJSON_AddObjectToObject(o, "figures");
	sqlite3_stmt *st;

	if (!f || sqlite3_prepare_v2(db, "SELECT name, value FROM "
				     "replay_metric WHERE run_id = ? ORDER BY "
				     "name", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, run);
	while (sqlite3_step(st) == SQLITE_ROW)
		cJSON_AddNumberToObject(f, (const char *)
					sqlite3_column_text(st, 0),
					sqlite3_column_double(st, 1));
	sqlite3_finalize(st);
	return 0;
}

/* Adds policy's per-VM figures (replay_vm_metric) as "vms". */
static int vm_figures_add(cJSON *o, sqlite3 *db, const char *policy)
{
	cJSON *arr = cJSON_AddArrayToObject(o, "vms"), *vm = NULL, *f = NULL;
	sqlite3_stmt *st;
	int64_t cur = -1;

	if (!arr || sqlite3_prepare_v2(db, "SELECT vm, self_check_ok, name, "
				       "value FROM replay_vm_metric WHERE "
				       "policy = ? ORDER BY vm, name", -1, &st,
				       NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, policy, -1, SQLITE_STATIC);
	while (sqlite3_step(st) == SQLITE_ROW) {
		if (sqlite3_column_int64(st, 0) != cur) {
			cur = sqlite3_column_int64(st, 0);
			vm = cJSON_CreateObject();
			if (!vm || !cJSON_AddItemToArray(arr, vm)) {
				cJSON_Delete(vm);
				break;
			}
			cJSON_AddNumberToObject(vm, "vm", (double)cur);
			cJSON_AddBoolToObject(vm, "self_check_ok",
					      sqlite3_column_int(st, 1) != 0);
			f = cJSON_AddObjectToObject(vm, "figures");
		}
		cJSON_AddNumberToObject(f, (const char *)
					sqlite3_column_text(st, 2),
					sqlite3_column_double(st, 3));
	}
	sqlite3_finalize(st);
	return 0;
}

/* Adds run_id's per-second series as "series": [second, faults, zaps,
 * flushes, lock_wait_ns] rows. */
static int series_add(cJSON *o, sqlite3 *db, int64_t run)
{
	cJSON *arr = cJSON_AddArrayToObject(o, "series"), *row;
	sqlite3_stmt *st;
	int i;

	if (!arr || sqlite3_prepare_v2(db, "SELECT second, faults, zaps, "
				       "flushes, lock_wait_ns FROM "
				       "replay_series WHERE run_id = ? ORDER "
				       "BY second", -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_int64(st, 1, run);
	while (sqlite3_step(st) == SQLITE_ROW) {
		row = cJSON_CreateArray();
		if (!row || !cJSON_AddItemToArray(arr, row)) {
			cJSON_Delete(row);
			break;
		}
		for (i = 0; i < 5; i++)
			cJSON_AddItemToArray(row, cJSON_CreateNumber(
				(double)sqlite3_column_int64(st, i)));
	}
	sqlite3_finalize(st);
	return 0;
}

/*
 * Adds "sweep" to o when policy is a sweep of the recorded ratio or
 * period ("nx-ratio=N", "nx-period=MS"): its kind, value and factor
 * over the recorded value (null when that is unknown), so sweeps of
 * hosts recorded with other settings line up fleet-wide.
 */
static void sweep_add(cJSON *o, const char *policy,
		      const struct fleet_shard_in *in)
{
	static const struct {
		const char *prefix, *kind;
	} kinds[] = { { "nx-ratio=", "nx-ratio" },
		      { "nx-period=", "nx-period" } };
	cJSON *s;
	size_t k, len;
	int64_t rec;
	double v;

	for (k = 0; k < sizeof(kinds) / sizeof(kinds[0]); k++) {
		len = strlen(kinds[k].prefix);
		if (!strncmp(policy, kinds[k].prefix, len))
			break;
	}
	if (k == sizeof(kinds) / sizeof(kinds[0])) {
		cJSON_AddNullToObject(o, "sweep");
		return;
	}
	s = cJSON_AddObjectToObject(o, "sweep");
	v = strtod(policy + len, NULL);
	rec = k == 0 ? in->nx_ratio : in->nx_period_ms;
	cJSON_AddStringToObject(s, "kind", kinds[k].kind);
	cJSON_AddNumberToObject(s, "value", v);
	if (rec > 0)
		cJSON_AddNumberToObject(s, "factor", v / (double)rec);
	else
		cJSON_AddNullToObject(s, "factor");
}

/* Adds "kinds": what each fleet figure of policy is (null: not said). */
static void kinds_add(cJSON *o, const char *policy,
		      const struct fleet_shard_in *in)
{
	cJSON *k = cJSON_AddObjectToObject(o, "kinds");
	int i, f;

	for (i = 0; i < in->nkinds; i++)
		if (!strcmp(in->kinds[i].policy, policy))
			break;
	for (f = 0; f < FLEET_FIGURES; f++)
		add_text_or_null(k, fleet_figure_names[f], i < in->nkinds ?
				 in->kinds[i].kind[f] : NULL);
}

/* The "policies" array: every stored run, the recorded policy's first. */
static int policies_add(cJSON *root, const struct fleet_shard_in *in)
{
	cJSON *arr = cJSON_AddArrayToObject(root, "policies"), *o;
	sqlite3_stmt *st;
	const char *name;
	int64_t run;
	int rc = 0;

	if (!arr || sqlite3_prepare_v2(in->db, "SELECT id, policy, "
				       "self_check_ok, not_applicable FROM "
				       "replay_run ORDER BY policy != ?, id",
				       -1, &st, NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, in->recorded_policy ? in->recorded_policy :
			  "", -1, SQLITE_STATIC);
	while (rc == 0 && sqlite3_step(st) == SQLITE_ROW) {
		run = sqlite3_column_int64(st, 0);
		name = (const char *)sqlite3_column_text(st, 1);
		o = cJSON_CreateObject();
		if (!o || !name || !cJSON_AddItemToArray(arr, o)) {
			cJSON_Delete(o);
			rc = -1;
			break;
		}
		cJSON_AddStringToObject(o, "name", name);
		cJSON_AddBoolToObject(o, "recorded", in->recorded_policy &&
				      !strcmp(name, in->recorded_policy));
		cJSON_AddBoolToObject(o, "verified",
				      sqlite3_column_int(st, 2) != 0);
		add_text_or_null(o, "not_applicable", (const char *)
				 sqlite3_column_text(st, 3));
		sweep_add(o, name, in);
		kinds_add(o, name, in);
		rc = figures_add(o, in->db, run);
		if (rc == 0)
			rc = vm_figures_add(o, in->db, name);
		if (rc == 0)
			rc = series_add(o, in->db, run);
	}
	sqlite3_finalize(st);
	return rc;
}

char *fleet_shard_json(const struct fleet_shard_in *in, const char *id)
{
	cJSON *root = cJSON_CreateObject(), *src, *sc;
	char *text = NULL;
	int i;

	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "schema", FLEET_SHARD_SCHEMA);
	cJSON_AddNumberToObject(root, "schema_version", FLEET_SHARD_VERSION);
	cJSON_AddStringToObject(root, "id", id);
	src = cJSON_AddArrayToObject(root, "sources");
	for (i = 0; src && i < in->nsources; i++)
		cJSON_AddItemToArray(src, cJSON_CreateString(in->sources[i]));
	cJSON_AddStringToObject(root, "status",
				fleet_status_names[in->status]);
	cJSON_AddNumberToObject(root, "exit_code", in->exit_code);
	add_text_or_null(root, "stage", in->stage);
	add_text_or_null(root, "error", in->error);
	labels_add(root, "labels", in->labels);
	if (in->db) {
		if (capture_add(root, in->db, in->host) < 0)
			goto end;
	} else {
		cJSON_AddNullToObject(root, "capture");
	}
	add_text_or_null(root, "recorded_policy", in->recorded_policy);
	sc = cJSON_AddObjectToObject(root, "self_check");
	if (in->status == FLEET_OK || in->status == FLEET_PARTIAL)
		cJSON_AddBoolToObject(sc, "ok", 1);
	else if (in->status == FLEET_CHECK_FAILED)
		cJSON_AddBoolToObject(sc, "ok", 0);
	else
		cJSON_AddNullToObject(sc, "ok");
	add_text_or_null(sc, "reason", in->check_reason);
	if (in->db) {
		if (vms_add(root, in->db, in->vm_labels) < 0 ||
		    policies_add(root, in) < 0) {
			log_error("%s: cannot read the replay results: %s",
				  sqlite3_db_filename(in->db, "main"),
				  sqlite3_errmsg(in->db));
			goto end;
		}
	} else {
		cJSON_AddArrayToObject(root, "vms");
		cJSON_AddArrayToObject(root, "policies");
	}
	text = cJSON_Print(root);
end:
	cJSON_Delete(root);
	return text;
}
