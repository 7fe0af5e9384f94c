/*
 * --vm ID for the commands that read the canonical tables with SQL
 * (summary, spikes, report): the DB narrowed to one VM's events
 * (db_narrow_vm()).  The replay narrows its event source instead
 * (cli_narrow_vm()); both, and compare, check the VM exists here.
 */
#include "cli/cli.h"

#include "db/db.h"
#include "util/log.h"

int cli_vm_check(const char *path, long long vm, int nvms)
{
	if (vm <= nvms)
		return CLI_EXIT_OK;
	log_error("%s: no VM %lld: the capture holds %d (table vm%s)", path,
		  vm, nvms, nvms ? "" : "; without the pid context ingest "
		  "cannot tell VMs apart");
	return CLI_EXIT_USAGE;
}

int cli_narrow_db(const struct cli_args *a, int opt, int with_none)
{
	sqlite3_stmt *st = NULL;
	int vms = -1;

	if (!a->str[opt])
		return CLI_EXIT_OK;
	if (sqlite3_prepare_v2(a->db, "SELECT count(*) FROM vm", -1, &st,
			       NULL) == SQLITE_OK &&
	    sqlite3_step(st) == SQLITE_ROW)
		vms = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	if (vms < 0) {
		log_error("%s: %s", a->path, sqlite3_errmsg(a->db));
		return CLI_EXIT_INPUT;
	}
	if (cli_vm_check(a->path, a->num[opt], vms) != CLI_EXIT_OK)
		return CLI_EXIT_USAGE;
	return db_narrow_vm(a->db, (int)a->num[opt], with_none) == DB_OK ?
		CLI_EXIT_OK : CLI_EXIT_INPUT;
}
