/*
 * Unit tests of the ground-floor pieces: the pointer map, the string
 * pool, SPTE decoding (values taken from the lab traces), number
 * formatting for the mail tables, the catalogue against the schema, the
 * TDP table store against a plain list of entries, and the DB file
 * lifecycle; unit_spte_bits.c adds one test per SPTE bit and EPT
 * exit qualification bit against the kernel's masks.  Each check prints
 * its expression on failure; the exit status is the number of failures.
 */
#include "check.h"
#include "db/db.h"
#include "export/pbwire.h"
#include "ingest/catalog.h"
#include "model/spte.h"
#include "metrics/latency.h"
#include "model/tdp.h"
#include "report/report.h"
#include "util/ptrmap.h"
#include "util/u64map.h"
#include "util/strpool.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* unit_spte_bits.c: returns the number of its checks that failed. */
int unit_spte_bits(void);

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

static void count_val(void *arg, uint64_t val)
{
	*(uint64_t *)arg += val;
}

/* Keys 0 (tid 0, the idle task; gfn 0) and UINT64_MAX are keys like
 * any other: no caller offsets them. */
static void test_u64map_edge_keys(void)
{
	struct u64map m;
	uint64_t sum = 0, i;

	u64map_init(&m);
	CHECK(u64map_find(&m, 0) == NULL && u64map_find(&m, UINT64_MAX) ==
	      NULL);
	CHECK(u64map_put(&m, 0, 5) == 0);
	CHECK(u64map_find(&m, 0) != NULL && u64map_get(&m, 0) == 5);
	CHECK(u64map_find(&m, 1) == NULL);
	CHECK(u64map_find(&m, UINT64_MAX) == NULL);
	CHECK(u64map_put(&m, UINT64_MAX, 7) == 0);
	CHECK(u64map_get(&m, UINT64_MAX) == 7 && u64map_get(&m, 0) == 5);
	/* A value of 0 is stored, not absent. */
	CHECK(u64map_put(&m, 3, 0) == 0 && u64map_find(&m, 3) != NULL);
	for (i = 1; i <= 1000; i++)
		CHECK(u64map_put(&m, i + 3, i) == 0);
	CHECK(u64map_get(&m, 0) == 5 && u64map_get(&m, UINT64_MAX) == 7);
	CHECK(u64map_put(&m, 0, 6) == 0 && u64map_get(&m, 0) == 6);
	u64map_each(&m, count_val, &sum);
	CHECK(sum == 6 + 7 + 0 + 1000 * 1001 / 2);
	u64map_free(&m);
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

/* Nested messages' lengths: one byte below 128, longer varints moved
 * in (bytes worked out by hand from the wire format). */
static void test_pbwire(void)
{
	static const uint8_t small[] = { 0x0a, 0x02, 0x10, 0x01 };
	static const uint8_t head[] = { 0x0a, 0xd1, 0x01, 0x12, 0xcb, 0x01,
					0x0a, 0xc8, 0x01 };
	static const uint8_t tail[] = { 0x18, 0xac, 0x02 };
	static const uint8_t big[] = { 0x2a, 0x9a, 0x9c, 0x01, 0x0a, 0x96,
				       0x9c, 0x01 };
	struct pb p = { 0 };
	char *s = malloc(19991);

	CHECK(s != NULL);
	pb_begin(&p, 1);
	pb_varint(&p, 2, 1);
	pb_end(&p);
	CHECK(p.len == sizeof(small) && !memcmp(p.b, small, sizeof(small)));
	pb_reset(&p);
	/* 1 { 2 { 1: 200 bytes } 3: 300 }: bodies of 203 and 209. */
	memset(s, 'x', 200);
	s[200] = 0;
	pb_begin(&p, 1);
	pb_begin(&p, 2);
	pb_string(&p, 1, s);
	pb_end(&p);
	pb_varint(&p, 3, 300);
	pb_end(&p);
	CHECK(p.len == 212 && !memcmp(p.b, head, sizeof(head)) &&
	      p.b[9] == 'x' && p.b[208] == 'x' &&
	      !memcmp(p.b + 209, tail, sizeof(tail)));
	pb_reset(&p);
	/* A body of 19,994 bytes: a 3-byte length. */
	memset(s, 'y', 19990);
	s[19990] = 0;
	pb_begin(&p, 5);
	pb_string(&p, 1, s);
	pb_end(&p);
	CHECK(p.len == 19998 && !memcmp(p.b, big, sizeof(big)) &&
	      p.b[8] == 'y' && p.b[19997] == 'y');
	CHECK(!p.nomem && p.depth == 0);
	pb_free(&p);
	free(s);
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
	/* A fraction that rounds up carries into the whole part. */
	CHECK(strcmp(report_fmt_num(b, sizeof(b), 0.954, 1), "1.0") == 0);
	CHECK(strcmp(report_fmt_num(b, sizeof(b), 1999.96, 1), "2,000.0")
	      == 0);
	CHECK(strcmp(report_fmt_num(b, sizeof(b), -0.96, 1), "-1.0") == 0);
	CHECK(strcmp(report_fmt_num(b, sizeof(b), -0.04, 1), "-0.0") == 0);
	CHECK(strcmp(report_fmt_num(b, sizeof(b), 12.34, 2), "12.34") == 0);
	CHECK(strcmp(report_fmt_num(b, sizeof(b), 1234.5, 0), "1,235") == 0);
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
	sqlite3 *db = NULL, *db2 = NULL;
	char path[512], tmp[600], other[512], sql[64];
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

	/* A second connection for a helper thread: the same capture, or
	 * none once another file took the name. */
	CHECK(db_open_again(db, &db2) == DB_OK && db2 &&
	      db_meta_get_int(db2, "events", 0) == 42);
	sqlite3_close(db2);
	db2 = NULL;
	snprintf(other, sizeof(other), "%s/unit-life-other.db", dir);
	unlink(other);
	CHECK(db_out_create(&out, other) == DB_OK);
	CHECK(db_meta_set_int(out.db, "events", 43) == DB_OK);
	CHECK(db_out_publish(&out) == DB_OK);
	CHECK(rename(other, path) == 0);
	CHECK(db_open_again(db, &db2) == DB_ERR_IO && db2 == NULL);
	CHECK(db_meta_get_int(db, "events", 0) == 42);
	sqlite3_close(db);

	/* A DB from a newer schema is refused. */
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d",
		 DB_SCHEMA_VERSION + 1);
	CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL) == SQLITE_OK);
	sqlite3_close(db);
	db = NULL;
	CHECK(db_open(path, 1, &db) == DB_ERR_NEWER && db == NULL);
	/* ... and one from an older, to ingest again. */
	CHECK(sqlite3_open(path, &db) == SQLITE_OK);
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d",
		 DB_SCHEMA_VERSION - 1);
	CHECK(sqlite3_exec(db, sql, NULL, NULL, NULL)
	      == SQLITE_OK);
	sqlite3_close(db);
	db = NULL;
	CHECK(db_open(path, 1, &db) == DB_ERR_OLDER && db == NULL);
	unlink(path);
	CHECK(db_open(path, 1, &db) == DB_ERR_NOT_DB);
}

/*
 * The TDP store against the simplest model of its contract: a list of
 * (as_id, level, gfn) -> SPTE entries searched linearly.  Random stores
 * of 4K/2M/1G leaves, non-leaf parents and zaps in a small gfn window
 * (so ranges hit large leaves that start before them, tables of every
 * level and both range strategies), then every query compared.
 */
struct ref_entry {
	int as_id, level;
	uint64_t gfn, spte;
};

struct ref_tdp {
	struct ref_entry e[4096];
	int n;
};

static struct ref_entry *ref_find(struct ref_tdp *r, int as_id, int level,
				  uint64_t gfn)
{
	int i;

	for (i = 0; i < r->n; i++)
		if (r->e[i].as_id == as_id && r->e[i].level == level &&
		    r->e[i].gfn == gfn)
			return &r->e[i];
	return NULL;
}

static int ref_leaf(struct ref_tdp *r, const struct spte_format *f,
		    int as_id, uint64_t gfn, uint64_t *spte)
{
	struct ref_entry *e, *p;
	int level, up, hidden;

	for (level = 1; level <= 3; level++) {
		e = ref_find(r, as_id, level, tdp_align(gfn, level));
		if (!e || !spte_present_leaf(f, e->spte, level))
			continue;
		for (hidden = 0, up = level + 1; up <= TDP_MAX_LEVEL; up++) {
			p = ref_find(r, as_id, up, tdp_align(gfn, up));
			if (p && (!spte_present(f, p->spte) ||
				  spte_leaf(f, p->spte, up)))
				hidden = 1;
		}
		if (!hidden) {
			*spte = e->spte;
			return level;
		}
	}
	*spte = 0;
	return 0;
}

struct leaf_list {
	uint64_t key[4096];
	int n;
};

static void leaf_collect(void *arg, int level, uint64_t gfn, uint64_t spte)
{
	struct leaf_list *l = arg;

	(void)spte;
	if (l->n < 4096)
		l->key[l->n++] = gfn << 4 | (uint64_t)level;
}

static int u64_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void test_tdp(void)
{
	const struct spte_format *f = spte_format_by_name("npt");
	static struct ref_tdp ref;
	static struct leaf_list got, want;
	struct ref_entry *e;
	uint64_t gfn, spte, rspte, start, end, seed = 12345;
	struct tdp t;
	int i, k, as_id, level, rl;

#define RND() (seed = seed * 6364136223846793005ULL + 1442695040888963407ULL, \
	       seed >> 33)
	tdp_init(&t, f);
	ref.n = 0;
	for (i = 0; i < 3000; i++) {
		as_id = (int)(RND() % 2);
		level = 1 + (int)(RND() % 4);
		/* 8 GiB of guest: several 1G, many 2M spans. */
		gfn = tdp_align(RND() % (8ULL << 18), level);
		switch (RND() % 4) {
		case 0:
			spte = 0;       /* zapped */
			break;
		case 1:
			spte = f->mmu_present | (gfn << 12);    /* table */
			break;
		default:
			spte = f->mmu_present | (gfn << 12) |
				(level > 1 ? f->large : 0);
			break;
		}
		CHECK(tdp_set(&t, as_id, level, gfn, spte) == 0);
		e = ref_find(&ref, as_id, level, gfn);
		if (!e && ref.n < 4096)
			e = &ref.e[ref.n++];
		if (e)
			*e = (struct ref_entry){ as_id, level, gfn, spte };
	}
	CHECK(tdp_size(&t) == (size_t)ref.n);
	for (i = 0; i < 2000; i++) {
		as_id = (int)(RND() % 2);
		gfn = RND() % (8ULL << 18);
		if (i % 2) {    /* inside an entry the trace showed */
			e = &ref.e[RND() % (uint64_t)ref.n];
			as_id = e->as_id;
			gfn = e->gfn + RND() % tdp_level_pages(e->level);
		}
		rl = ref_leaf(&ref, f, as_id, gfn, &rspte);
		CHECK(tdp_leaf(&t, as_id, gfn, &spte) == rl && spte == rspte);
		level = 1 + (int)(RND() % 4);
		e = ref_find(&ref, as_id, level, tdp_align(gfn, level));
		CHECK(tdp_get(&t, as_id, level, gfn) == (e ? e->spte : 0));
	}
	for (i = 0; i < 300; i++) {
		as_id = (int)(RND() % 2);
		start = RND() % (8ULL << 18);
		/* Short ranges probe tables, long ones scan the list. */
		end = start + (i % 3 == 0 ? RND() % (8ULL << 18) :
			       RND() % 2048);
		if (i == 0)
			end = UINT64_MAX;
		got.n = want.n = 0;
		tdp_for_each_leaf(&t, as_id, start, end, leaf_collect, &got);
		for (k = 0; k < ref.n; k++) {
			e = &ref.e[k];
			if (e->as_id == as_id &&
			    spte_present_leaf(f, e->spte, e->level) &&
			    e->level <= 3 && e->gfn < end &&
			    e->gfn + tdp_level_pages(e->level) > start)
				want.key[want.n++] = e->gfn << 4 |
					(uint64_t)e->level;
		}
		qsort(got.key, (size_t)got.n, sizeof(got.key[0]), u64_cmp);
		qsort(want.key, (size_t)want.n, sizeof(want.key[0]), u64_cmp);
		CHECK(got.n == want.n &&
		      memcmp(got.key, want.key,
			     (size_t)got.n * sizeof(got.key[0])) == 0);
	}
#undef RND
	tdp_free(&t);
	CHECK(tdp_size(&t) == 0 && tdp_get(&t, 0, 1, 0) == 0);
}

/*
 * Known and unknown entries (tdp.h), with SPTE values from the lab's
 * traces (npt): a 4K leaf, a table entry, REMOVED_SPTE.
 */
static void test_tdp_known(void)
{
	const struct spte_format *f = spte_format_by_name("npt");
	uint64_t known[TDP_TABLE_ENTRIES / 64];
	struct tdp t;

	tdp_init(&t, f);
	/* Nothing shown: every entry and every walk is unknown. */
	CHECK(!tdp_known(&t, 0, 1, 0x1a00) && !tdp_path_known(&t, 0, 0x1a00));
	/* A leaf stored is known; its neighbours in the table are not. */
	CHECK(tdp_set(&t, 0, 1, 0x1a00, 0xEC00E67) == 0);
	CHECK(tdp_known(&t, 0, 1, 0x1a00) && tdp_stored(&t, 0, 1, 0x1a00));
	CHECK(!tdp_known(&t, 0, 1, 0x1a01) && tdp_path_known(&t, 0, 0x1a00));
	CHECK(!tdp_path_known(&t, 0, 0x1a01));
	/* A table born in the trace: all its entries known, none stored. */
	CHECK(tdp_mark_born(&t, 0, 1, 0x1a00) == 0);
	CHECK(tdp_known(&t, 0, 1, 0x1a01) && !tdp_stored(&t, 0, 1, 0x1a01));
	CHECK(tdp_path_known(&t, 0, 0x1a01) && !tdp_known(&t, 0, 1, 0x1c00));
	tdp_table_known(&t, 0, 1, 0x1a00, 1, known);
	CHECK(known[0] == ~0ULL && known[7] == ~0ULL);
	tdp_table_known(&t, 0, 1, 0x1a00, 0, known);
	CHECK(known[0] == 1 && known[1] == 0);
	/* A parent known not present decides the walk below it. */
	CHECK(tdp_set(&t, 0, 2, 0x4000, 0x5A0) == 0);
	CHECK(tdp_path_known(&t, 0, 0x4001) && !tdp_known(&t, 0, 1, 0x4001));
	/* A table entry known present does not: the walk goes on. */
	CHECK(tdp_set(&t, 0, 2, 0x6000, 0x2B11827) == 0);
	CHECK(!tdp_path_known(&t, 0, 0x6001));
	/* Flags sit beside the entries: they store none. */
	CHECK(!tdp_flag(&t, 0, 1, 0x8000));
	CHECK(tdp_flag_set(&t, 0, 1, 0x8000) == 0 && tdp_flag(&t, 0, 1, 0x8000));
	CHECK(!tdp_flag(&t, 0, 1, 0x8001) && !tdp_known(&t, 0, 1, 0x8000));
	tdp_free(&t);
}

/*
 * The latency tail points: for samples 1..n ns the value at rank r is r,
 * so every point must be exactly the nearest rank of its quantile; the
 * first is the median, quantiles and values increase, the ranks are
 * distinct, and there are never more than LAT_TAIL_POINTS.
 */
static void test_latency_tail(void)
{
	extern const char schema_capture_sql[];
	static const int64_t sizes[] = { 1, 7, 1000, 123457 };
	struct latency l;
	sqlite3 *db = NULL;
	sqlite3_stmt *st = NULL;
	size_t z;
	int64_t i, n, rank;
	int k;

	for (z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
		n = sizes[z];
		CHECK(sqlite3_open(":memory:", &db) == SQLITE_OK);
		CHECK(sqlite3_exec(db, schema_capture_sql, NULL, NULL, NULL) ==
		      SQLITE_OK);
		CHECK(sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) == SQLITE_OK);
		CHECK(sqlite3_prepare_v2(db, "INSERT INTO latency_sample (seq, "
					 "ts, probe, ns) VALUES (?1, ?1, 1, "
					 "?2)", -1, &st, NULL) == SQLITE_OK);
		/* Inserted out of order: the walk must sort. */
		for (i = 0; i < n; i++) {
			sqlite3_bind_int64(st, 1, i);
			sqlite3_bind_int64(st, 2, (i * 7919) % n + 1);
			CHECK(sqlite3_step(st) == SQLITE_DONE);
			sqlite3_reset(st);
		}
		sqlite3_finalize(st);
		CHECK(sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK);
		CHECK(latency_compute(db, 0x400, &l) == 0 && l.nprobes == 1);
		CHECK(l.probe[0].ntail >= 1 &&
		      l.probe[0].ntail <= LAT_TAIL_POINTS);
		CHECK(l.probe[0].tail[0] == l.probe[0].pct[LAT_P50] &&
		      l.probe[0].tail_q[0] == 0.5);
		for (k = 0; k < l.probe[0].ntail; k++) {
			rank = (int64_t)ceil(l.probe[0].tail_q[k] * (double)n -
					     1e-9);
			CHECK(l.probe[0].tail[k] == (rank < 1 ? 1 : rank));
			CHECK(k == 0 || (l.probe[0].tail[k] >
					 l.probe[0].tail[k - 1] &&
					 l.probe[0].tail_q[k] >
					 l.probe[0].tail_q[k - 1]));
		}
		/* 123,457 samples: every quantile up to 0.99995 has its own
		 * rank. */
		CHECK(n < 100000 || l.probe[0].ntail == LAT_TAIL_POINTS);
		sqlite3_close(db);
	}
}

int main(void)
{
	char dir[] = "/tmp/mmureplay-unit-XXXXXX";

	if (!mkdtemp(dir))
		return 1;
	test_ptrmap();
	test_pbwire();
	test_u64map_edge_keys();
	test_strpool();
	test_spte();
	failures += unit_spte_bits();
	test_tdp();
	test_tdp_known();
	test_fmt();
	test_catalog_matches_schema(dir);
	test_db_lifecycle(dir);
	test_latency_tail();
	rmdir(dir);
	return check_finish();
}
