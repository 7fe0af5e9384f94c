/*
 * Which figures a capture's source can give (see coverage.h).
 */
#define _GNU_SOURCE
#include "metrics/coverage.h"

#include "db/db.h"
#include "metrics/summary.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define COVERAGE_KEY(id, key, tables, record) [id] = key,
const char *const coverage_figure_keys[COVERAGE_FIGURES] = {
	COVERAGE_FIGURE_LIST(COVERAGE_KEY)
};
#undef COVERAGE_KEY

#define COVERAGE_TABLES(id, key, tables, record) [id] = tables,
static const char *const figure_tables[COVERAGE_FIGURES] = {
	COVERAGE_FIGURE_LIST(COVERAGE_TABLES)
};
#undef COVERAGE_TABLES

#define COVERAGE_RECORD(id, key, tables, record) [id] = record,
static const char *const figure_record[COVERAGE_FIGURES] = {
	COVERAGE_FIGURE_LIST(COVERAGE_RECORD)
};
#undef COVERAGE_RECORD

static int covered(const struct coverage *c, const char *table, size_t n)
{
	char key[64];

	if (n + 3 > sizeof(key))
		return 0;
	snprintf(key, sizeof(key), ",%.*s,", (int)n, table);
	return strstr(c->tables, key) != NULL;
}

/* ",t1,t2," from meta source_tables, or from the tables with rows. */
static enum coverage_status tables_load(sqlite3 *db, struct coverage *c)
{
	char *meta = db_meta_get_text(db, "source_tables");
	size_t cap = 2;
	int64_t n;
	int i;

	if (meta) {
		if (asprintf(&c->tables, ",%s,", meta) < 0)
			c->tables = NULL;
		free(meta);
		return c->tables ? COVERAGE_OK : COVERAGE_ERR_NOMEM;
	}
	c->from_rows = 1;
	for (i = 0; summary_canonical_tables[i]; i++)
		cap += strlen(summary_canonical_tables[i]) + 1;
	c->tables = malloc(cap);
	if (!c->tables)
		return COVERAGE_ERR_NOMEM;
	strcpy(c->tables, ",");
	for (i = 0; summary_canonical_tables[i]; i++) {
		n = db_table_count(db, summary_canonical_tables[i]);
		if (n < 0)
			return COVERAGE_ERR_SQL;
		if (n > 0) {
			strcat(c->tables, summary_canonical_tables[i]);
			strcat(c->tables, ",");
		}
	}
	return COVERAGE_OK;
}

enum coverage_status coverage_load(sqlite3 *db, struct coverage *c)
{
	enum coverage_status st;
	const char *t, *sp;
	size_t n;
	int f;

	memset(c, 0, sizeof(*c));
	st = tables_load(db, c);
	if (st != COVERAGE_OK)
		return st;
	for (f = 0; f < COVERAGE_FIGURES; f++) {
		for (t = figure_tables[f]; *t; t += n + (t[n] == ' ')) {
			sp = strchr(t, ' ');
			n = sp ? (size_t)(sp - t) : strlen(t);
			if (covered(c, t, n))
				continue;
			snprintf(c->gap_text[f], sizeof(c->gap_text[f]),
				 "the source %s no %.*s events; record %s",
				 c->from_rows ? "holds" : "declares", (int)n, t,
				 figure_record[f]);
			c->gap[f] = c->gap_text[f];
			break;
		}
	}
	return COVERAGE_OK;
}

int coverage_has(const struct coverage *c, const char *table)
{
	return covered(c, table, strlen(table));
}

const char *coverage_gap(const struct coverage *c, enum coverage_figure f)
{
	return c->gap[f];
}

void coverage_free(struct coverage *c)
{
	free(c->tables);
	c->tables = NULL;
}
