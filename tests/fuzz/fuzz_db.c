/*
 * Fuzz target: a real capture DB edited at random, then replayed under
 * its recorded policy (the self-check) and baseline.
 *
 * The DB is the one MMR_FUZZ_DB names (scripts/fuzz.sh and the corpus
 * test ingest a fixture into it), loaded once and copied into memory for
 * every input.  The input is a list of 16-byte edits: table (one of the
 * canonical tables), row, column (past seq), and the 8-byte value set
 * there.  Invariant checked: the replay runs or refuses in one line,
 * never crashes, whatever the edited rows hold.
 */
#define _GNU_SOURCE
#include "fuzz.h"

#include "db/db.h"
#include "replay/capture_info.h"
#include "replay/policy.h"
#include "replay/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const tables[] = {
	"spte_change", "fault", "spte_request", "spte_set", "fast_fault",
	"sp_alloc", "sp_free", "huge_split", "notifier", "memslot",
	"vcpu_exit", "vcpu_entry", "syscall", "nx_recovery", "lock_wait",
	"unmap_decision", "tlb_flush",
};
#define NTABLES (sizeof(tables) / sizeof(tables[0]))

static unsigned char *image;
static sqlite3_int64 image_len;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *path = getenv("MMR_FUZZ_DB");
	sqlite3 *db = NULL;
	unsigned char *p;

	(void)argc;
	(void)argv;
	if (!path || sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL) !=
	    SQLITE_OK) {
		fprintf(stderr, "fuzz_db: MMR_FUZZ_DB must name a capture DB\n");
		exit(2);
	}
	p = sqlite3_serialize(db, "main", &image_len, 0);
	image = malloc((size_t)image_len);
	if (!p || !image)
		exit(2);
	memcpy(image, p, (size_t)image_len);
	sqlite3_free(p);
	sqlite3_close(db);
	return 0;
}

static void edit(sqlite3 *db, const uint8_t *e)
{
	const char *t = tables[e[0] % NTABLES];
	sqlite3_stmt *st = NULL;
	char sql[256];
	int64_t v;
	int ncol;

	snprintf(sql, sizeof(sql), "SELECT * FROM %s LIMIT 0", t);
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return;
	ncol = sqlite3_column_count(st);
	sqlite3_finalize(st);
	if (ncol < 2)
		return;
	memcpy(&v, e + 8, 8);
	/* Column 0 is seq, the merge key: edits go after it. */
	snprintf(sql, sizeof(sql), "SELECT name FROM pragma_table_info('%s') "
		 "LIMIT 1 OFFSET %d", t, 1 + e[1] % (ncol - 1));
	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return;
	if (sqlite3_step(st) == SQLITE_ROW) {
		char col[64];
		sqlite3_stmt *up = NULL;

		snprintf(col, sizeof(col), "%s", sqlite3_column_text(st, 0));
		snprintf(sql, sizeof(sql), "UPDATE %s SET %s = ? WHERE rowid = "
			 "(SELECT rowid FROM %s LIMIT 1 OFFSET ?)", t, col, t);
		if (sqlite3_prepare_v2(db, sql, -1, &up, NULL) == SQLITE_OK) {
			sqlite3_bind_int64(up, 1, v);
			sqlite3_bind_int(up, 2, e[2] | e[3] << 8 | e[4] << 16);
			sqlite3_step(up);
		}
		sqlite3_finalize(up);
	}
	sqlite3_finalize(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct replay_session s;
	struct replay_result res;
	struct capture_info ci;
	unsigned char *copy;
	sqlite3 *db = NULL;
	size_t i;

	if (size < 16 || size > 16 * 64 ||
	    sqlite3_open(":memory:", &db) != SQLITE_OK)
		goto end;
	copy = sqlite3_malloc64((sqlite3_uint64)image_len);
	if (!copy)
		goto end;
	memcpy(copy, image, (size_t)image_len);
	if (sqlite3_deserialize(db, "main", copy, image_len, image_len,
				SQLITE_DESERIALIZE_FREEONCLOSE |
				SQLITE_DESERIALIZE_RESIZEABLE) != SQLITE_OK)
		goto end;
	for (i = 0; i + 16 <= size; i += 16)
		edit(db, data + i);
	if (capture_info_read(db, &ci) < 0 ||
	    replay_session_open(&s, db, &ci, 0, REPLAY_INPUT_ANY) != REPLAY_OK)
		goto end;
	if (replay_session_run(&s, ci.recorded, &res) == REPLAY_OK)
		replay_result_free(&res);
	if (replay_session_run(&s, &policy_baseline, &res) == REPLAY_OK)
		replay_result_free(&res);
	replay_session_close(&s);
end:
	sqlite3_close(db);
	return 0;
}
