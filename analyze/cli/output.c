/*
 * Where every command's result goes (cli.h, cli_output()): stdout or a
 * file written whole or not at all (util/outfile.h), as JSON or text.
 * One place, so that every command fails the same way on it: out of
 * memory building the JSON is INTERNAL, a file that cannot be written
 * OUTPUT; and a query of the DB that fails is INPUT.
 */
#include "cli/cli.h"

#include "ingest/ingest.h"
#include "metrics/summary.h"
#include "util/log.h"
#include "util/outfile.h"

#include <stdio.h>
#include <stdlib.h>

int cli_output(const char *path, int as_json, char *json,
	       cli_text_fn *text, const void *res, const char *db_path)
{
	struct outfile out = { 0 };
	int rc = CLI_EXIT_INTERNAL;

	if (as_json && !json) {
		log_error("%s: out of memory", db_path);
		goto end;
	}
	rc = CLI_EXIT_OUTPUT;
	if (outfile_open(&out, path ? path : "-") < 0)
		goto end;
	if (as_json)
		fprintf(out.fp, "%s\n", json);
	else
		text(out.fp, res, db_path);
	if (outfile_commit(&out) < 0)
		goto end;
	rc = CLI_EXIT_OK;
end:
	outfile_discard(&out);
	free(json);
	return rc;
}

int cli_exit_summary(int summary_status)
{
	switch (summary_status) {
	case SUMMARY_OK:
		return CLI_EXIT_OK;
	case SUMMARY_ERR_NOMEM:
		return CLI_EXIT_INTERNAL;
	default:
		return CLI_EXIT_INPUT;
	}
}

int cli_exit_ingest(int ingest_status)
{
	switch (ingest_status) {
	case INGEST_OK:
		return CLI_EXIT_OK;
	case INGEST_PARTIAL:
		return CLI_EXIT_PARTIAL;
	case INGEST_ERR_INPUT:
		return CLI_EXIT_INPUT;
	case INGEST_ERR_OUTPUT:
		return CLI_EXIT_OUTPUT;
	default:
		return CLI_EXIT_INTERNAL;
	}
}
