/*
 * The event catalogue: which raw trace events become which canonical rows.
 *
 * It is data (schemas/events.json, embedded at build time), not code, so
 * supporting a new kernel's event or a renamed field is a one-line change.
 * Events are matched by name and their fields by name, never by position;
 * an event may have several names (LTTng's probe name and ftrace's
 * system:event name) and a column may list alternative field names for
 * different kernels and tracers.
 */
#ifndef MMUREPLAY_INGEST_CATALOG_H
#define MMUREPLAY_INGEST_CATALOG_H

#include <stdint.h>

#define CATALOG_MAX_COLS 10
#define CATALOG_MAX_ALTS 4
#define CATALOG_MAX_DERIVED 2

enum catalog_status {
	CATALOG_OK = 0,
	CATALOG_ERR_PARSE,
	CATALOG_ERR_NOMEM,
};

struct catalog_column {
	const char *name;                       /* column of the table */
	const char *fields[CATALOG_MAX_ALTS];   /* raw field names */
	int nfields;                            /* 0: a constant */
	int required;
	int64_t const_val;
};

struct catalog_entry {
	const char *raw;        /* raw event name, e.g. "kvm_x86_exit" */
	/* every name of the event: LTTng's, then ftrace's "system:event"
	 * (kvm:kvm_exit); raws[0] is raw */
	const char *raws[CATALOG_MAX_ALTS];
	int nraws;
	const char *table;      /* canonical table */
	int store_raw_id;       /* fill column raw_id with the raw name's id */
	int ncols;
	struct catalog_column cols[CATALOG_MAX_COLS];
	/* Columns ingest computes (tables.c), after cols and raw_id. */
	int nderived;
	const char *derived[CATALOG_MAX_DERIVED];
};

struct catalog {
	void *json;             /* parsed document; entries point into it */
	int version;
	int nentries;
	struct catalog_entry *entries;
};

/* Parse the embedded schemas/events.json. */
enum catalog_status catalog_load(struct catalog *cat);
/* The entry for a raw event name, or NULL when the name is not mapped. */
const struct catalog_entry *catalog_find(const struct catalog *cat,
					 const char *raw);
/* Index of column name in entry e (NULL: none), or -1. */
int catalog_entry_col(const struct catalog_entry *e, const char *name);
void catalog_free(struct catalog *cat);

#endif
