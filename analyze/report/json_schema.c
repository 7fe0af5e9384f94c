/*
 * The schema name and version every JSON output starts with (see
 * report.h).  The versions live here and in schemas/NAME.schema.json
 * ("schema_version": {"const": N}); tests/test_json_schemas.py validates
 * every output of every fixture against its file, so the two cannot
 * drift apart unnoticed.
 */
#include "report/report.h"

#include <cjson/cJSON.h>

#define SCHEMA_NAME(id, name, version) [id] = name,
static const char *const schema_names[REPORT_JSON_SCHEMAS] = {
	REPORT_JSON_SCHEMA_LIST(SCHEMA_NAME)
};
#undef SCHEMA_NAME

#define SCHEMA_VERSION(id, name, version) [id] = version,
static const int schema_versions[REPORT_JSON_SCHEMAS] = {
	REPORT_JSON_SCHEMA_LIST(SCHEMA_VERSION)
};
#undef SCHEMA_VERSION

void report_json_schema_add(struct cJSON *root, enum report_json_schema s)
{
	cJSON_AddStringToObject(root, "schema", schema_names[s]);
	cJSON_AddNumberToObject(root, "schema_version", schema_versions[s]);
}
