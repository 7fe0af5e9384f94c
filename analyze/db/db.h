/*
 * The capture database file: creation under a temporary name, atomic
 * publication, and opening an existing file with a schema check.
 *
 * A database that a reader sees under its final name is always whole:
 * writers work on "NAME.tmp-PID" in the same directory and rename(2) it
 * over NAME only after the last commit.  A file whose schema version is
 * newer than this build knows is refused before anything is read from it.
 */
#ifndef MMUREPLAY_DB_DB_H
#define MMUREPLAY_DB_DB_H

#include <sqlite3.h>
#include <stdint.h>

#define DB_SCHEMA_VERSION 5

enum db_status {
	DB_OK = 0,
	DB_ERR_IO,          /* cannot create, write or rename the file */
	DB_ERR_NOT_DB,      /* missing, or not an SQLite capture DB */
	DB_ERR_NEWER,       /* written by a newer mmureplay */
	DB_ERR_OLDER,       /* a schema this build no longer reads */
	DB_ERR_SQL,         /* a statement failed */
};

struct db_out {
	sqlite3 *db;
	char *path;         /* final name */
	char *tmp_path;     /* where it is written until db_out_publish() */
};

/* Create a new, empty capture DB at a temporary name beside path. */
enum db_status db_out_create(struct db_out *out, const char *path);
/* Commit, close and rename onto the final name. */
enum db_status db_out_publish(struct db_out *out);
/* Close and delete the temporary file; safe on a zeroed struct. */
void db_out_discard(struct db_out *out);

/*
 * One writer at a time: an exclusive flock(2) on the DB file, held by a
 * command that writes the DB in place (replay) for its whole run.  Two
 * writers each inside a read would otherwise deadlock in SQLite's lock
 * upgrade (one of them failing with "database is locked"); the second
 * now waits, and says so.  The fd to pass to db_writer_unlock(), or -1
 * after the error line.
 */
int db_writer_lock(const char *path);
void db_writer_unlock(int fd);

/* Open an existing capture DB; read_only selects the SQLite open mode. */
enum db_status db_open(const char *path, int read_only, sqlite3 **out);
/*
 * A second, read-only connection to the DB open as db, for a helper
 * thread (SQLite connections are one thread's at a time).  Nothing is
 * logged: DB_ERR_IO when the file cannot be opened again or is no
 * longer the same capture (its meta 'events' and 'ts_base_ns' differ),
 * and the caller does the work on db instead.  A db narrowed to a VM
 * (db_narrow_vm()) gives a connection narrowed to it too.
 */
enum db_status db_open_again(sqlite3 *db, sqlite3 **out);

/* Execute SQL, reporting errors against the file name. */
enum db_status db_exec(sqlite3 *db, const char *sql);

/* meta table accessors. */
enum db_status db_meta_set_int(sqlite3 *db, const char *key, int64_t v);
enum db_status db_meta_set_text(sqlite3 *db, const char *key, const char *v);
/* Returns dflt when the key is absent. */
int64_t db_meta_get_int(sqlite3 *db, const char *key, int64_t dflt);
/* A malloc'd copy of a text value, or NULL when absent. */
char *db_meta_get_text(sqlite3 *db, const char *key);
/* The sum of the integer values whose key begins with prefix (0: none,
 * or a failed query). */
int64_t db_meta_sum_int(sqlite3 *db, const char *prefix);

/*
 * Rows in table (or -1 on error).  Counting a table reads every page of
 * it (a third of `summary`'s time), so ingest stores each canonical
 * table's count (db_table_count_store()): meta 'rows:TABLE', with
 * triggers that delete the key on any INSERT or DELETE on the table.
 * The stored count is used only while the table's delete trigger is
 * there (a table dropped and made again has none); else the table is
 * counted.  So an edited table is never miscounted.
 */
int64_t db_table_count(sqlite3 *db, const char *table);
/* Store table's row count n and its invalidating triggers (ingest, in
 * the DB's writing transaction). */
enum db_status db_table_count_store(sqlite3 *db, const char *table,
				    int64_t n);
/*
 * About how many rows a canonical table holds, for a progress line's
 * total: the raw events ingest mapped to it (table raw_event), read
 * without touching the table.  0 when unknown.  Not a count to report.
 */
int64_t db_table_rows_hint(sqlite3 *db, const char *table);
/* Prepares *st, whose rows are the names of the canonical event tables:
 * every table with a vm column but the replay's own.  Returns SQLite's
 * status. */
int db_vm_tables(sqlite3 *db, sqlite3_stmt **st);
/*
 * Narrows db, for this connection, to the events of VM vm (table vm's
 * id): every table with a vm column but the replay's own (the canonical
 * event tables) is shadowed by a TEMP view of its rows of that VM.  An
 * unqualified name finds the temp schema first, so every query of the
 * metrics reads that VM's events alone.  Rows of no VM (kernel threads'
 * work, vm NULL: ksmd, kswapd, 6.1's NX worker) are kept with
 * with_none, else left out.  A narrowed table is counted, never taken
 * from meta (db_table_count()).  Returns DB_OK, or DB_ERR_SQL (logged).
 */
enum db_status db_narrow_vm(sqlite3 *db, int vm, int with_none);
/* Returns the VM db_narrow_vm() narrowed db to, or 0; *with_none (when
 * not NULL) its with_none. */
int db_narrowed_vm(sqlite3 *db, int *with_none);

#endif
