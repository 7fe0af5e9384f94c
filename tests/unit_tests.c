/*
 * Unit tests of the ground-floor pieces: the pointer map, the string
 * pool, SPTE decoding (values taken from the lab traces), number
 * formatting for the mail tables, the catalogue against the schema, and
 * the DB file lifecycle.  Each check prints its expression on failure;
 * the exit status is the number of failures.
 */
#include "check.h"
#include "db/db.h"
#include "ingest/catalog.h"
#include "model/spte.h"
#include "report/report.h"
#include "util/ptrmap.h"
#include "util/strpool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


static void test_ptrmap(void)
{
	struct ptrmap m;
	uintptr_t i;

	ptrmap_init(&m);
	CHECK(ptrmap_get(&m, 8) == NULL);
	for (i = 1; i <= 10000; i++)
		CHECK(ptrmap_put(&m, i * 8, (void *)(i + 1)) == 0);
	for (i = 1; i <= 10000; i++)
		CHECK(ptrmap_get(&m, i * 8) == (void *)(i + 1));
	CHECK(ptrmap_get(&m, 80008) == NULL);
	CHECK(m.m.len == 10000 && m.m.len * 2 <= m.m.cap);
	CHECK(ptrmap_put(&m, 8, (void *)7) == 0 && m.m.len == 10000);
	CHECK(ptrmap_get(&m, 8) == (void *)7);
	ptrmap_free(&m);
}

static void test_strpool(void)
{
	struct strpool p;
	const char *a, *b, *c;
	char buf[16];

	strpool_init(&p);
	a = strpool_intern(&p, "kvm-nx-lpage-re");
	strcpy(buf, "kvm-nx-lpage-re");
	b = strpool_intern(&p, buf);
	c = strpool_intern(&p, "kvmtest");
	CHECK(a && a == b && a != buf);
	CHECK(c && c != a && strcmp(c, "kvmtest") == 0);
	strpool_free(&p);
}

static void test_spte(void)
{
	const struct spte_format *npt = spte_format_by_name("npt");
	const struct spte_format *ept = spte_format_by_name("ept");

	CHECK(npt && ept && spte_format_by_name("pae") == NULL);
	/* A 4K leaf the lab installed (tdp-basic: kvm_mmu_set_spte). */
	CHECK(spte_present_leaf(npt, 0xC8E0E67, 1));
	CHECK(spte_writable(npt, 0xC8E0E67));
	CHECK(spte_executable(npt, 0xC8E0E67));
	CHECK(spte_pfn(npt, 0xC8E0E67) == 0xC8E0);
	/* A non-leaf (level 4 root entry) is present but not a leaf. */
	CHECK(spte_present(npt, 0x1579B827) &&
	      !spte_present_leaf(npt, 0x1579B827, 4));
	/* NX huge page: large bit, NX in bit 63. */
	CHECK(spte_present_leaf(npt, 0x8000000012345EE7ULL, 2));
	CHECK(!spte_executable(npt, 0x8000000012345EE7ULL));
	/* REMOVED_SPTE (0x5a0) while a SP is torn down: not present. */
	CHECK(spte_removed(npt, 0x5a0) && !spte_present(npt, 0x5a0));
	/* EPT: exec is bit 2 and no NX bit. */
	CHECK(spte_executable(ept, 0x804) && !spte_executable(ept, 0x803));
}

static void test_fmt(void)
{
	char b[32];

	CHECK(strcmp(report_fmt_count(b, sizeof(b), 0), "0") == 0);
	CHECK(strcmp(report_fmt_count(b, sizeof(b), 999), "999") == 0);
	CHECK(strcmp(report_fmt_count(b, sizeof(b), 950015), "950,015") == 0);
	CHECK(strcmp(report_fmt_count(b, sizeof(b), -1440), "-1,440") == 0);
	CHECK(strcmp(report_fmt_count(b, sizeof(b), 1234567), "1,234,567")
	      == 0);
}

/* Every catalogue entry must insert into the schema's tables. */
static void test_catalog_matches_schema(const char *dir)
{
	struct catalog cat;
	struct db_out out;
	sqlite3_stmt *st;
	char path[512], sql[1024];
	int i, j;

	CHECK(catalog_load(&cat) == CATALOG_OK);
	CHECK(catalog_find(&cat, "kvm_tdp_mmu_spte_changed") != NULL);
	CHECK(catalog_find(&cat, "kvm_fpu") == NULL);
	snprintf(path, sizeof(path), "%s/unit-cat.db", dir);
	CHECK(db_out_create(&out, path) == DB_OK);
	for (i = 0; i < cat.nentries; i++) {
		const struct catalog_entry *e = &cat.entries[i];

		snprintf(sql, sizeof(sql), "SELECT seq, ts, cpu, tid%s FROM %s",
			 e->store_raw_id ? ", raw_id" : "", e->table);
		for (j = 0; j < e->ncols; j++) {
			/* splice the column list in before " FROM" */
			char *from = strstr(sql, " FROM");
			char tail[256];

			snprintf(tail, sizeof(tail), "%s", from);
			snprintf(from, sizeof(sql) - (from - sql), ", %s%s",
				 e->cols[j].name, tail);
		}
		st = NULL;
		if (sqlite3_prepare_v2(out.db, sql, -1, &st, NULL) !=
		    SQLITE_OK) {
			fprintf(stderr, "catalogue entry %s: %s\n", e->raw,
				sqlite3_errmsg(out.db));
			failures++;
		}
		sqlite3_finalize(st);
	}
	db_out_discard(&out);
	CHECK(access(path, F_OK) != 0);
	catalog_free(&cat);
}

static void test_db_lifecycle(const char *dir)
{
	struct db_out out;
	sqlite3 *db = NULL;
	char path[512], tmp[600];
	struct stat sb;

	snprintf(path, sizeof(path), "%s/unit-life.db", dir);
	unlink(path);
	CHECK(db_out_create(&out, path) == DB_OK);
	snprintf(tmp, sizeof(tmp), "%s", out.tmp_path);
	/* Until published, only the temporary exists. */
	CHECK(stat(path, &sb) != 0 && stat(tmp, &sb) == 0);
	CHECK(db_meta_set_int(out.db, "events", 42) == DB_OK);
	CHECK(db_out_publish(&out) == DB_OK);
	CHECK(stat(path, &sb) == 0 && stat(tmp, &sb) != 0);
	CHECK(db_open(path, 1, &db) == DB_OK);
	CHECK(db && db_meta_get_int(db, "events", 0) == 42);
	CHECK(db && db_meta_get_int(db, "complete", 0) == 1);
	sqlite3_close(db);

	/* A DB from a newer schema is refused. */
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	CHECK(sqlite3_exec(db, "PRAGMA user_version = 2", NULL, NULL, NULL)
	      == SQLITE_OK);
	sqlite3_close(db);
	db = NULL;
	CHECK(db_open(path, 1, &db) == DB_ERR_NEWER && db == NULL);
	unlink(path);
	CHECK(db_open(path, 1, &db) == DB_ERR_NOT_DB);
}

int main(void)
{
	char dir[] = "/tmp/mmureplay-unit-XXXXXX";

	if (!mkdtemp(dir))
		return 1;
	test_ptrmap();
	test_strpool();
	test_spte();
	test_fmt();
	test_catalog_matches_schema(dir);
	test_db_lifecycle(dir);
	rmdir(dir);
	return check_finish();
}
