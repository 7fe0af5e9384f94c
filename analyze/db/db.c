/*
 * Capture DB lifecycle: temp-and-rename for writers, schema version gate
 * for readers (see db.h).  The DDL lives in schemas/capture.sql and is
 * embedded at build time; PRAGMA user_version carries its version.
 */
#include "db/db.h"

#include "util/assert.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

extern const char schema_capture_sql[];

/* "PATH.tmp-PID": the name a DB is written under until complete. */
static char *tmp_path_of(const char *path)
{
	size_t n = strlen(path) + 32;
	char *s = malloc(n);

	if (s)
		snprintf(s, n, "%s.tmp-%ld", path, (long)getpid());
	return s;
}

enum db_status db_exec(sqlite3 *db, const char *sql)
{
	char *msg = NULL;
	enum db_status st = DB_OK;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		log_error("%s: %s", sqlite3_db_filename(db, "main"),
			  msg ? msg : sqlite3_errmsg(db));
		st = DB_ERR_SQL;
	}
	sqlite3_free(msg);
	return st;
}

enum db_status db_out_create(struct db_out *out, const char *path)
{
	enum db_status st = DB_ERR_IO;
	struct stat sb;

	memset(out, 0, sizeof(*out));
	/* Renaming the finished DB over a device or a FIFO would replace
	 * it with a file (-o /dev/null as root breaks the machine). */
	if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode)) {
		log_error("%s: not a regular file: a capture DB is a file",
			  path);
		return DB_ERR_IO;
	}
	out->path = strdup(path);
	out->tmp_path = tmp_path_of(path);
	if (!out->path || !out->tmp_path) {
		log_error("%s: out of memory", path);
		goto end;
	}
	unlink(out->tmp_path);
	cleanup_stale_reap(path);
	cleanup_tmp_add(out->tmp_path);
	/* One thread at a time uses the connection (ingest hands it from
	 * the writer thread back with pthread_join): no per-call mutex. */
	if (sqlite3_open_v2(out->tmp_path, &out->db,
			    SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE |
			    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		log_error("%s: cannot create: %s", path,
			  out->db ? sqlite3_errmsg(out->db) : "out of memory");
		goto end;
	}
	/*
	 * The file is not visible under its name until it is complete, so a
	 * crash can lose only the temporary: no journal, no fsync per commit.
	 *
	 * 16 KiB pages: ingest appends to some twenty b-trees at once, and
	 * with four times fewer page splits and cells to balance its writer
	 * thread needs 12% less CPU (10 M synthetic events: 5.28 -> 4.66 s)
	 * than with 4 KiB.  The cache only has to hold each tree's
	 * rightmost path, a few hundred KiB; a larger one costs memory
	 * (32 MiB of 16 KiB pages: +100 MiB peak RSS) and buys nothing.
	 */
	if (db_exec(out->db, "PRAGMA page_size=16384;"
			     "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;"
			     "PRAGMA locking_mode=EXCLUSIVE;"
			     "PRAGMA cache_size=-8192; PRAGMA temp_store=MEMORY;")
	    != DB_OK)
		goto end;
	if (db_exec(out->db, schema_capture_sql) != DB_OK)
		goto end;
	if (db_exec(out->db, "BEGIN") != DB_OK)
		goto end;
	st = DB_OK;
end:
	if (st != DB_OK)
		db_out_discard(out);
	return st;
}

enum db_status db_out_publish(struct db_out *out)
{
	enum db_status st = DB_ERR_IO;

	MR_ASSERT(out->db);
	if (db_meta_set_int(out->db, "complete", 1) != DB_OK)
		goto end;
	if (db_exec(out->db, "COMMIT") != DB_OK)
		goto end;
	if (sqlite3_close(out->db) != SQLITE_OK) {
		log_error("%s: cannot close: %s", out->path,
			  sqlite3_errmsg(out->db));
		goto end;
	}
	out->db = NULL;
	/* After the rename the name is the result, not a temporary. */
	cleanup_signals_hold();
	if (rename(out->tmp_path, out->path) != 0) {
		cleanup_signals_release();
		log_error("%s: cannot rename into place: %s", out->path,
			  strerror(errno));
		goto end;
	}
	cleanup_tmp_remove(out->tmp_path);
	free(out->tmp_path);
	out->tmp_path = NULL;
	cleanup_signals_published();
	st = DB_OK;
end:
	db_out_discard(out);
	return st;
}

void db_out_discard(struct db_out *out)
{
	if (out->db) {
		sqlite3_close(out->db);
		out->db = NULL;
	}
	if (out->tmp_path) {
		cleanup_tmp_remove(out->tmp_path);
		unlink(out->tmp_path);
	}
	free(out->tmp_path);
	free(out->path);
	out->tmp_path = NULL;
	out->path = NULL;
}

/* "a,b,c": the column names of table t in db, or NULL (no such table,
 * out of memory). */
static char *table_columns(sqlite3 *db, const char *t)
{
	sqlite3_stmt *st = NULL;
	char *out = NULL;

	if (sqlite3_prepare_v2(db, "SELECT group_concat(name, ',') FROM "
			       "pragma_table_info(?)", -1, &st, NULL) ==
	    SQLITE_OK &&
	    sqlite3_bind_text(st, 1, t, -1, SQLITE_STATIC) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
		out = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	return out;
}

/*
 * Every table of this build's schema is in db with the same columns: a
 * DB edited by hand (a table dropped, a column renamed) is refused here
 * in one line, not by a query failing somewhere later.
 */
static enum db_status schema_check(sqlite3 *db, const char *path)
{
	enum db_status st = DB_ERR_NOT_DB;
	sqlite3 *ref = NULL;
	sqlite3_stmt *q = NULL;
	char *want = NULL, *have = NULL;
	const char *t;

	if (sqlite3_open(":memory:", &ref) != SQLITE_OK ||
	    sqlite3_exec(ref, schema_capture_sql, NULL, NULL, NULL) !=
	    SQLITE_OK ||
	    sqlite3_prepare_v2(ref, "SELECT name FROM sqlite_master WHERE "
			       "type = 'table' ORDER BY name", -1, &q, NULL) !=
	    SQLITE_OK) {
		log_error("%s: out of memory", path);
		st = DB_ERR_SQL;
		goto end;
	}
	while (sqlite3_step(q) == SQLITE_ROW) {
		t = (const char *)sqlite3_column_text(q, 0);
		want = table_columns(ref, t);
		have = table_columns(db, t);
		if (!have) {
			log_error("%s: not a whole capture database: table %s "
				  "is missing (edited by hand?)", path, t);
			goto end;
		}
		if (!want || strcmp(want, have) != 0) {
			log_error("%s: not a whole capture database: table %s "
				  "has columns (%s), this mmureplay expects (%s)",
				  path, t, have, want ? want : "?");
			goto end;
		}
		free(want);
		free(have);
		want = have = NULL;
	}
	st = DB_OK;
end:
	free(want);
	free(have);
	sqlite3_finalize(q);
	sqlite3_close(ref);
	return st;
}

int db_writer_lock(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		log_error("%s: %s", path, strerror(errno));
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	if (errno == EWOULDBLOCK) {
		log_warn("%s: waiting for another mmureplay writing it", path);
		if (flock(fd, LOCK_EX) == 0)
			return fd;
	}
	log_error("%s: cannot lock: %s", path, strerror(errno));
	close(fd);
	return -1;
}

void db_writer_unlock(int fd)
{
	if (fd >= 0)
		close(fd);      /* drops the flock */
}

enum db_status db_open(const char *path, int read_only, sqlite3 **out)
{
	enum db_status st = DB_ERR_NOT_DB;
	sqlite3 *db = NULL;
	sqlite3_stmt *stmt = NULL;
	struct stat sb;
	int version;

	*out = NULL;
	if (stat(path, &sb) != 0) {
		log_error("%s: %s", path, strerror(errno));
		goto end;
	}
	if (!S_ISREG(sb.st_mode)) {
		log_error("%s: not a capture database (not a regular file)",
			  path);
		goto end;
	}
	/* Readers use a connection from one thread: no per-call mutex. */
	if (sqlite3_open_v2(path, &db, (read_only ? SQLITE_OPEN_READONLY :
					SQLITE_OPEN_READWRITE) |
			    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
		log_error("%s: cannot open: %s", path,
			  db ? sqlite3_errmsg(db) : "out of memory");
		goto end;
	}
	if (sqlite3_prepare_v2(db, "PRAGMA user_version", -1, &stmt, NULL) !=
	    SQLITE_OK || sqlite3_step(stmt) != SQLITE_ROW) {
		log_error("%s: not a capture database (%s)", path,
			  sqlite3_errmsg(db));
		goto end;
	}
	version = sqlite3_column_int(stmt, 0);
	if (version > DB_SCHEMA_VERSION) {
		log_error("%s: schema version %d is newer than this mmureplay "
			  "reads (%d); use a newer mmureplay", path, version,
			  DB_SCHEMA_VERSION);
		st = DB_ERR_NEWER;
		goto end;
	}
	if (version == 0) {
		log_error("%s: not a capture database (schema version 0)",
			  path);
		st = DB_ERR_NOT_DB;
		goto end;
	}
	if (version < DB_SCHEMA_VERSION) {
		log_error("%s: schema version %d is older than this mmureplay "
			  "reads (%d); ingest the trace again", path, version,
			  DB_SCHEMA_VERSION);
		st = DB_ERR_OLDER;
		goto end;
	}
	if (db_meta_get_int(db, "complete", 0) != 1) {
		log_error("%s: incomplete capture database", path);
		goto end;
	}
	st = schema_check(db, path);
	if (st != DB_OK)
		goto end;
	st = DB_ERR_IO;
	/* The replay stores its results in the DB: a file or a mount it
	 * cannot write is said at once, not at the end of the replay. */
	if (!read_only && sqlite3_db_readonly(db, "main") == 1) {
		log_error("%s: read-only: replay stores its results in the "
			  "DB (copy it somewhere writable; fidelity does not "
			  "write)", path);
		goto end;
	}
	/* Another mmureplay writing the same DB (two replays at once):
	 * wait for it rather than fail. */
	sqlite3_busy_timeout(db, 600 * 1000);
	*out = db;
	db = NULL;
	st = DB_OK;
end:
	sqlite3_finalize(stmt);
	if (db)
		sqlite3_close(db);
	return st;
}

enum db_status db_open_again(sqlite3 *db, sqlite3 **out)
{
	const char *path = sqlite3_db_filename(db, "main");
	enum db_status st = DB_ERR_IO;
	sqlite3 *db2 = NULL;
	int vm, with_none;

	*out = NULL;
	if (!path || !*path)
		goto end;
	if (sqlite3_open_v2(path, &db2, SQLITE_OPEN_READONLY |
			    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK)
		goto end;
	sqlite3_busy_timeout(db2, 600 * 1000);
	/* A file renamed over the path since db was opened is another
	 * capture: its own events and time base. */
	if (db_meta_get_int(db2, "events", INT64_MIN) !=
	    db_meta_get_int(db, "events", INT64_MIN) ||
	    db_meta_get_int(db2, "ts_base_ns", INT64_MIN) !=
	    db_meta_get_int(db, "ts_base_ns", INT64_MIN))
		goto end;
	/* The same events: narrowed to the same VM. */
	if ((vm = db_narrowed_vm(db, &with_none)) &&
	    db_narrow_vm(db2, vm, with_none) != DB_OK)
		goto end;
	*out = db2;
	db2 = NULL;
	st = DB_OK;
end:
	sqlite3_close(db2);
	return st;
}

static enum db_status meta_set(sqlite3 *db, const char *key, int is_int,
			       int64_t iv, const char *sv)
{
	sqlite3_stmt *stmt = NULL;
	enum db_status st = DB_ERR_SQL;

	if (sqlite3_prepare_v2(db, "INSERT OR REPLACE INTO meta(key, value) "
			       "VALUES (?, ?)", -1, &stmt, NULL) != SQLITE_OK)
		goto end;
	sqlite3_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
	if (is_int)
		sqlite3_bind_int64(stmt, 2, iv);
	else if (sv)
		sqlite3_bind_text(stmt, 2, sv, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(stmt) != SQLITE_DONE)
		goto end;
	st = DB_OK;
end:
	if (st != DB_OK)
		log_error("%s: cannot write meta %s: %s",
			  sqlite3_db_filename(db, "main"), key,
			  sqlite3_errmsg(db));
	sqlite3_finalize(stmt);
	return st;
}

enum db_status db_meta_set_int(sqlite3 *db, const char *key, int64_t v)
{
	return meta_set(db, key, 1, v, NULL);
}

enum db_status db_meta_set_text(sqlite3 *db, const char *key, const char *v)
{
	return meta_set(db, key, 0, 0, v);
}

int64_t db_meta_get_int(sqlite3 *db, const char *key, int64_t dflt)
{
	sqlite3_stmt *stmt = NULL;
	int64_t v = dflt;

	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?", -1,
			       &stmt, NULL) != SQLITE_OK)
		goto end;
	sqlite3_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(stmt) == SQLITE_ROW &&
	    sqlite3_column_type(stmt, 0) == SQLITE_INTEGER)
		v = sqlite3_column_int64(stmt, 0);
end:
	sqlite3_finalize(stmt);
	return v;
}

int64_t db_meta_sum_int(sqlite3 *db, const char *prefix)
{
	sqlite3_stmt *stmt = NULL;
	int64_t v = 0;

	if (sqlite3_prepare_v2(db, "SELECT coalesce(sum(value), 0) FROM meta "
			       "WHERE substr(key, 1, length(?1)) = ?1", -1,
			       &stmt, NULL) != SQLITE_OK)
		goto end;
	sqlite3_bind_text(stmt, 1, prefix, -1, SQLITE_STATIC);
	if (sqlite3_step(stmt) == SQLITE_ROW)
		v = sqlite3_column_int64(stmt, 0);
end:
	sqlite3_finalize(stmt);
	return v;
}

char *db_meta_get_text(sqlite3 *db, const char *key)
{
	sqlite3_stmt *stmt = NULL;
	const unsigned char *t;
	char *v = NULL;

	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?", -1,
			       &stmt, NULL) != SQLITE_OK)
		goto end;
	sqlite3_bind_text(stmt, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(stmt) == SQLITE_ROW &&
	    (t = sqlite3_column_text(stmt, 0)))
		v = strdup((const char *)t);
end:
	sqlite3_finalize(stmt);
	return v;
}

/*
 * The names of a table's stored count: its meta key, and the trigger
 * that drops the key on op ("INSERT" or "DELETE").  The writer and the
 * reader take both from here, so they cannot drift apart (a reader
 * looking for another name would count every table again, silently).
 * 0, or -1 when a name does not fit.
 */
static int table_count_names(const char *table, const char *op,
			     char key[96], char trigger[128])
{
	return (size_t)snprintf(key, 96, "rows:%s", table) >= 96 ||
	       (size_t)snprintf(trigger, 128, "rows_stale_%s_%s", table,
				op) >= 128 ? -1 : 0;
}

enum db_status db_table_count_store(sqlite3 *db, const char *table,
				    int64_t n)
{
	static const char *const ops[] = { "INSERT", "DELETE" };
	enum db_status st = DB_ERR_SQL;
	char key[96], trigger[128], sql[512];
	size_t i;

	MR_ASSERT(n >= 0);
	for (i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
		if (table_count_names(table, ops[i], key, trigger) < 0)
			goto end;
		snprintf(sql, sizeof(sql), "CREATE TRIGGER IF NOT EXISTS "
			 "\"%s\" AFTER %s ON \"%s\" BEGIN DELETE FROM meta "
			 "WHERE key = '%s'; END", trigger, ops[i], table, key);
		if (db_exec(db, sql) != DB_OK)
			goto end;
	}
	if (db_meta_set_int(db, key, n) != DB_OK)
		goto end;
	st = DB_OK;
end:
	return st;
}

/* The count ingest stored for table, or -1 when there is none or it
 * cannot be trusted (see db_table_count()). */
static int64_t table_count_stored(sqlite3 *db, const char *table)
{
	sqlite3_stmt *stmt = NULL;
	char key[96], trigger[128];
	int64_t n = -1;

	if (db_narrowed_vm(db, NULL) ||
	    table_count_names(table, "DELETE", key, trigger) < 0)
		goto end;
	if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1 "
			       "AND typeof(value) = 'integer' AND EXISTS "
			       "(SELECT 1 FROM sqlite_master WHERE type = "
			       "'trigger' AND name = ?2 AND tbl_name = ?3)",
			       -1, &stmt, NULL) != SQLITE_OK ||
	    sqlite3_bind_text(stmt, 1, key, -1, SQLITE_STATIC) != SQLITE_OK ||
	    sqlite3_bind_text(stmt, 2, trigger, -1, SQLITE_STATIC) !=
	    SQLITE_OK ||
	    sqlite3_bind_text(stmt, 3, table, -1, SQLITE_STATIC) != SQLITE_OK)
		goto end;
	if (sqlite3_step(stmt) == SQLITE_ROW)
		n = sqlite3_column_int64(stmt, 0);
end:
	sqlite3_finalize(stmt);
	return n;
}

int64_t db_table_count(sqlite3 *db, const char *table)
{
	sqlite3_stmt *stmt = NULL;
	char sql[128];
	int64_t n = table_count_stored(db, table);

	if (n >= 0)
		return n;
	snprintf(sql, sizeof(sql), "SELECT count(*) FROM \"%s\"", table);
	if (sqlite3_prepare_v2(db, sql, -1, &stmt, NULL) == SQLITE_OK &&
	    sqlite3_step(stmt) == SQLITE_ROW)
		n = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return n;
}

int64_t db_table_rows_hint(sqlite3 *db, const char *table)
{
	sqlite3_stmt *stmt = NULL;
	int64_t n = 0;

	if (sqlite3_prepare_v2(db, "SELECT coalesce(sum(count), 0) FROM "
			       "raw_event WHERE canonical = ?1", -1, &stmt,
			       NULL) == SQLITE_OK &&
	    sqlite3_bind_text(stmt, 1, table, -1, SQLITE_STATIC) == SQLITE_OK &&
	    sqlite3_step(stmt) == SQLITE_ROW)
		n = sqlite3_column_int64(stmt, 0);
	sqlite3_finalize(stmt);
	return n;
}

/* Runs sql, made by sqlite3_mprintf() and freed here (NULL: that ran
 * out of memory).  Returns SQLITE_OK or the error. */
static int exec_made(sqlite3 *db, char *sql)
{
	int r = sql ? sqlite3_exec(db, sql, NULL, NULL, NULL) : SQLITE_NOMEM;

	sqlite3_free(sql);
	return r;
}

int db_vm_tables(sqlite3 *db, sqlite3_stmt **st)
{
	return sqlite3_prepare_v2(db, "SELECT m.name FROM main.sqlite_master "
				  "m WHERE m.type = 'table' AND m.name NOT "
				  "LIKE 'replay%' AND EXISTS (SELECT 1 FROM "
				  "pragma_table_info(m.name) p WHERE p.name = "
				  "'vm')", -1, st, NULL);
}

enum db_status db_narrow_vm(sqlite3 *db, int vm, int with_none)
{
	sqlite3_stmt *tables = NULL;
	enum db_status st = DB_ERR_SQL;
	int r;

	MR_ASSERT(vm > 0 && !db_narrowed_vm(db, NULL));
	if (db_vm_tables(db, &tables) != SQLITE_OK)
		goto sql_error;
	while ((r = sqlite3_step(tables)) == SQLITE_ROW)
		if (exec_made(db, sqlite3_mprintf(
			"CREATE TEMP VIEW \"%w\" AS SELECT * FROM main.\"%w\" "
			"WHERE vm = %d%s", sqlite3_column_text(tables, 0),
			sqlite3_column_text(tables, 0), vm,
			with_none ? " OR vm IS NULL" : "")) != SQLITE_OK)
			goto sql_error;
	if (r != SQLITE_DONE ||
	    exec_made(db, sqlite3_mprintf("CREATE TEMP TABLE narrowed_vm AS "
					  "SELECT %d AS vm, %d AS with_none",
					  vm, with_none != 0)) != SQLITE_OK)
		goto sql_error;
	st = DB_OK;
	goto end;
sql_error:
	log_error("%s: narrowing to VM %d: %s", sqlite3_db_filename(db, "main"),
		  vm, sqlite3_errmsg(db));
end:
	sqlite3_finalize(tables);
	return st;
}

int db_narrowed_vm(sqlite3 *db, int *with_none)
{
	sqlite3_stmt *stmt = NULL;
	int vm = 0;

	/* The table is there only once narrowed: asked for first, so that
	 * no statement names a table that is not. */
	if (sqlite3_prepare_v2(db, "SELECT 1 FROM temp.sqlite_master WHERE "
			       "type = 'table' AND name = 'narrowed_vm'", -1,
			       &stmt, NULL) != SQLITE_OK ||
	    sqlite3_step(stmt) != SQLITE_ROW)
		goto end;
	sqlite3_finalize(stmt);
	if (sqlite3_prepare_v2(db, "SELECT vm, with_none FROM "
			       "temp.narrowed_vm", -1, &stmt, NULL) ==
	    SQLITE_OK && sqlite3_step(stmt) == SQLITE_ROW) {
		vm = sqlite3_column_int(stmt, 0);
		if (with_none)
			*with_none = sqlite3_column_int(stmt, 1);
	}
end:
	sqlite3_finalize(stmt);
	return vm;
}
