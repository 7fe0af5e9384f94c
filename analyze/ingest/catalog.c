/*
 * Loading schemas/events.json into catalog entries (see catalog.h).
 * The document is validated once, here, so the ingest hot path can trust
 * every entry: a table name, at most CATALOG_MAX_COLS columns, each with
 * one to CATALOG_MAX_ALTS field names or a constant.
 */
#include "ingest/catalog.h"

#include "util/log.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

extern const char schema_events_json[];

static int is_required(const cJSON *req, const char *col)
{
	const cJSON *it;

	cJSON_ArrayForEach(it, req)
		if (cJSON_IsString(it) && strcmp(it->valuestring, col) == 0)
			return 1;
	return 0;
}

static enum catalog_status entry_parse(const cJSON *e,
				       struct catalog_entry *out)
{
	const cJSON *raw = cJSON_GetObjectItemCaseSensitive(e, "raw");
	const cJSON *table = cJSON_GetObjectItemCaseSensitive(e, "table");
	const cJSON *cols = cJSON_GetObjectItemCaseSensitive(e, "columns");
	const cJSON *consts = cJSON_GetObjectItemCaseSensitive(e, "const");
	const cJSON *req = cJSON_GetObjectItemCaseSensitive(e, "required");
	const cJSON *derived = cJSON_GetObjectItemCaseSensitive(e, "derived");
	const cJSON *it, *alt;
	struct catalog_column *c;

	memset(out, 0, sizeof(*out));
	if (!cJSON_IsString(table) || !cJSON_IsObject(cols))
		return CATALOG_ERR_PARSE;
	if (cJSON_IsString(raw)) {
		out->raws[out->nraws++] = raw->valuestring;
	} else if (cJSON_IsArray(raw)) {
		cJSON_ArrayForEach(it, raw) {
			if (!cJSON_IsString(it) ||
			    out->nraws == CATALOG_MAX_ALTS)
				return CATALOG_ERR_PARSE;
			out->raws[out->nraws++] = it->valuestring;
		}
	}
	if (out->nraws == 0)
		return CATALOG_ERR_PARSE;
	out->raw = out->raws[0];
	out->table = table->valuestring;
	out->store_raw_id = cJSON_IsTrue(
		cJSON_GetObjectItemCaseSensitive(e, "raw_id"));
	cJSON_ArrayForEach(it, cols) {
		if (out->ncols == CATALOG_MAX_COLS)
			return CATALOG_ERR_PARSE;
		c = &out->cols[out->ncols++];
		c->name = it->string;
		c->required = is_required(req, it->string);
		if (cJSON_IsString(it)) {
			c->fields[c->nfields++] = it->valuestring;
			continue;
		}
		if (!cJSON_IsArray(it))
			return CATALOG_ERR_PARSE;
		cJSON_ArrayForEach(alt, it) {
			if (!cJSON_IsString(alt) ||
			    c->nfields == CATALOG_MAX_ALTS)
				return CATALOG_ERR_PARSE;
			c->fields[c->nfields++] = alt->valuestring;
		}
		if (c->nfields == 0)
			return CATALOG_ERR_PARSE;
	}
	cJSON_ArrayForEach(it, derived) {
		if (!cJSON_IsString(it) ||
		    out->nderived == CATALOG_MAX_DERIVED)
			return CATALOG_ERR_PARSE;
		out->derived[out->nderived++] = it->valuestring;
	}
	cJSON_ArrayForEach(it, consts) {
		if (out->ncols == CATALOG_MAX_COLS || !cJSON_IsNumber(it))
			return CATALOG_ERR_PARSE;
		c = &out->cols[out->ncols++];
		c->name = it->string;
		c->const_val = (int64_t)it->valuedouble;
	}
	/* A row holds the columns, raw_id and the derived ones
	 * (ROW_MAX_VALS, ingest/writer.h). */
	if (out->ncols + out->store_raw_id + out->nderived >
	    CATALOG_MAX_COLS + 1)
		return CATALOG_ERR_PARSE;
	return CATALOG_OK;
}

enum catalog_status catalog_load(struct catalog *cat)
{
	enum catalog_status st = CATALOG_ERR_PARSE;
	const cJSON *events, *e;
	cJSON *root;
	int i = 0;

	memset(cat, 0, sizeof(*cat));
	root = cJSON_Parse(schema_events_json);
	if (!root)
		goto end;
	cat->json = root;
	cat->version = cJSON_GetNumberValue(
		cJSON_GetObjectItemCaseSensitive(root, "catalogue_version"));
	events = cJSON_GetObjectItemCaseSensitive(root, "events");
	if (!cJSON_IsArray(events))
		goto end;
	cat->nentries = cJSON_GetArraySize(events);
	cat->entries = calloc(cat->nentries ? cat->nentries : 1,
			      sizeof(*cat->entries));
	if (!cat->entries) {
		st = CATALOG_ERR_NOMEM;
		goto end;
	}
	cJSON_ArrayForEach(e, events) {
		st = entry_parse(e, &cat->entries[i]);
		if (st != CATALOG_OK)
			goto end;
		i++;
	}
	st = CATALOG_OK;
end:
	if (st != CATALOG_OK) {
		log_error("schemas/events.json: invalid event catalogue "
			  "(entry %d)", i);
		catalog_free(cat);
	}
	return st;
}

const struct catalog_entry *catalog_find(const struct catalog *cat,
					 const char *raw)
{
	int i, k;

	for (i = 0; i < cat->nentries; i++)
		for (k = 0; k < cat->entries[i].nraws; k++)
			if (strcmp(cat->entries[i].raws[k], raw) == 0)
				return &cat->entries[i];
	return NULL;
}

int catalog_entry_col(const struct catalog_entry *e, const char *name)
{
	int i;

	for (i = 0; e && i < e->ncols; i++)
		if (strcmp(e->cols[i].name, name) == 0)
			return i;
	return -1;
}

void catalog_free(struct catalog *cat)
{
	cJSON_Delete(cat->json);
	free(cat->entries);
	memset(cat, 0, sizeof(*cat));
}
