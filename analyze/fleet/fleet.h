/*
 * The fleet: what one capture's analysis leaves for many (a shard), the
 * fleet DB that merges shards, and the fleet report read from it
 * (docs/fleet.md).
 *
 * The contract does not depend on what runs the analyses: a shard is a
 * directory SHARDS/ID holding capture.db (absent when the capture could
 * not be read) and shard.json (schemas/shard.schema.json), published
 * whole by one rename; ID names the capture (its host, its first
 * event's UTC time and a hash of what identifies it), so the same
 * capture analysed twice, anywhere, gives the same shard.  merge is
 * order-independent and idempotent: the fleet DB is rebuilt from the
 * union of the shards it holds and those given, sorted by ID, so a shard
 * merged twice counts once and the same shards give the same bytes.
 *
 * Invariants: a shard.json is whole or refused (a truncated file does
 * not parse); the fleet DB keeps every merged shard's JSON verbatim
 * (table shard_doc) and every other table is derived from those alone.
 */
#ifndef MMUREPLAY_FLEET_FLEET_H
#define MMUREPLAY_FLEET_FLEET_H

#include <sqlite3.h>
#include <stdint.h>
#include <stdio.h>

#define FLEET_SHARD_SCHEMA "mmureplay-shard"
#define FLEET_SHARD_VERSION 1
#define FLEET_DB_KIND "mmureplay-fleet"
#define FLEET_DB_VERSION 1
#define FLEET_REPORT_SCHEMA "mmureplay-fleet-report"
#define FLEET_REPORT_VERSION 1

/* A capture's outcome, best first: merge keeps the best of two shards
 * of one ID.  X(enumerator, name) */
#define FLEET_STATUS_LIST(X) \
	X(FLEET_OK, "ok") \
	X(FLEET_PARTIAL, "partial") \
	X(FLEET_CHECK_FAILED, "check_failed") \
	X(FLEET_CANNOT, "cannot") \
	X(FLEET_FAILED, "failed")
#define FLEET_STATUS_ENUM(e, name) e,
enum fleet_status {
	FLEET_STATUS_LIST(FLEET_STATUS_ENUM)
	FLEET_STATUSES
};
#undef FLEET_STATUS_ENUM
extern const char *const fleet_status_names[FLEET_STATUSES];
/* The status named s, or -1. */
int fleet_status_find(const char *s);

/* shard.c */

/* The figures a fleet compares, as replay_metric names them. */
#define FLEET_FIGURES 4
extern const char *const fleet_figure_names[FLEET_FIGURES];

/* What each of a policy's fleet figures is (enum policy_figure_kind's
 * names: predicted, restated, not_modelled, one_sided). */
struct fleet_kinds {
	const char *policy;
	const char *kind[FLEET_FIGURES];
};

/* What analyze knows of a capture besides its DB. */
struct fleet_shard_in {
	const char *const *sources;     /* absolute paths of the inputs */
	int nsources;
	const char *host;               /* --host, or NULL: the trace's */
	const char *labels;             /* "KEY=VALUE,...", or NULL */
	const char *vm_labels;          /* "ID=NAME,...", or NULL */
	enum fleet_status status;
	int exit_code;                  /* analyze's (cli.h) */
	const char *stage;              /* where it stopped, or NULL */
	const char *error;              /* the first error line, or NULL */
	const char *check_reason;       /* why the self-check failed */
	const char *recorded_policy;    /* NULL: not known */
	int64_t nx_ratio, nx_period_ms; /* recorded; 0: unknown */
	sqlite3 *db;                    /* the capture DB, or NULL */
	const struct fleet_kinds *kinds;        /* each policy replayed */
	int nkinds;
};

/*
 * Returns the shard's ID (malloc'd), from the DB when there is one (its
 * host, its first event's UTC time, a hash of its time base, event
 * count, span and traces), else "unreadable-" and a hash of the
 * sources; NULL when out of memory.
 */
char *fleet_shard_id(const struct fleet_shard_in *in);
/*
 * Returns shard.json's text for the capture (malloc'd; NULL when out of
 * memory or the DB cannot be read, said on stderr): the capture, its
 * VMs, the self-check, and every replay run the DB stores with its
 * figures, its VMs' figures and its per-second series.
 */
char *fleet_shard_json(const struct fleet_shard_in *in, const char *id);

/* merge.c */

enum fleet_merge_status {
	FLEET_MERGE_OK = 0,
	FLEET_MERGE_REFUSED,    /* written; some shard refused (named) */
	FLEET_MERGE_ERR_INPUT,  /* the fleet DB given cannot be read */
	FLEET_MERGE_ERR_OUTPUT, /* cannot write the fleet DB */
	FLEET_MERGE_ERR_NOMEM,
};

/*
 * Merges the shards at paths[0..n) (a shard directory, its shard.json,
 * or a directory of shard directories) with those the fleet DB at out
 * already holds into a new fleet DB written whole over out.  A shard
 * that cannot be read, does not parse or follows a newer schema is
 * refused with one line naming it and the rest are merged.  *merged
 * receives the number of shards in the result.  Returns a status.
 */
enum fleet_merge_status fleet_merge(const char *const *paths, int n,
				    const char *out, int *merged);

/*
 * Opens a fleet DB read-only.  Returns 0, or -1 after one line naming
 * path (missing, not a fleet DB, a newer one).
 */
int fleet_db_open(const char *path, sqlite3 **out);

/* fleet_report.c */

struct fleet_report;
/*
 * Computes the fleet report of db (path names it); against, when not
 * NULL, is an earlier fleet DB the report compares with.  Returns the
 * report, or NULL after saying why.
 */
struct fleet_report *fleet_report_compute(sqlite3 *db, const char *path,
					  sqlite3 *against,
					  const char *against_path);
void fleet_report_free(struct fleet_report *r);
void fleet_report_text(FILE *out, const struct fleet_report *r);
void fleet_report_html(FILE *out, const struct fleet_report *r);
/* The report as a JSON document (malloc'd; NULL: out of memory). */
char *fleet_report_json(const struct fleet_report *r);

#endif
