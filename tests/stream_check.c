/*
 * stream_check DB: the replay stream of a real capture DB holds exactly
 * the events of its canonical tables, and a damaged or stale stream is
 * never read as if it were whole.
 *
 * 1. derive the stream (source_stream_ensure) and read both sources in
 *    lockstep: every model event identical (both decoders start from a
 *    zeroed event, so memcmp compares every member);
 * 2. a stale stream (meta 'events' no longer the one it was made from)
 *    is ignored: source_open() falls back to the tables;
 * 3. a chunk cut short fails the read with an error, never a crash or a
 *    silent short stream.
 * 2 and 3 run inside a transaction that is rolled back: the DB is left
 * as step 1 made it.  Exit status: the number of failures.
 */
#include "check.h"
#include "db/db.h"
#include "replay/source.h"
#include "replay/stream.h"

#include <stdio.h>
#include <string.h>

static long compare(sqlite3 *db)
{
	struct source *tab = source_open_tables(db), *str = source_open(db);
	struct model_event a, b, first;
	enum source_status sa, sb;
	long n = 0;

	CHECK(tab && str && source_is_stream(str) && !source_is_stream(tab));
	if (!tab || !str)
		goto end;
	for (;;) {
		sa = source_next(tab, &a);
		sb = source_next(str, &b);
		if (sa != SOURCE_OK || sb != SOURCE_OK)
			break;
		if (memcmp(&a, &b, sizeof(a)) != 0) {
			fprintf(stderr, "event seq %llu differs (kind %d/%d)\n",
				(unsigned long long)a.seq, a.kind, b.kind);
			failures++;
			break;
		}
		if (!n++)
			first = a;
	}
	CHECK(sa == SOURCE_END && sb == SOURCE_END);
	/* A rewound stream gives the first event again. */
	CHECK(n == 0 || (source_rewind(str) == SOURCE_OK &&
			 source_next(str, &b) == SOURCE_OK &&
			 memcmp(&b, &first, sizeof(b)) == 0));
end:
	source_close(tab);
	source_close(str);
	return n;
}

int main(int argc, char **argv)
{
	struct source *src;
	struct model_event ev;
	enum source_status ss;
	sqlite3 *db = NULL;
	long n;

	if (argc != 2 || db_open(argv[1], 0, &db) != DB_OK) {
		fprintf(stderr, "usage: stream_check DB (read-write)\n");
		return 2;
	}
	CHECK(source_stream_ensure(db) == 0 && stream_current(db));
	n = compare(db);
	CHECK(n > 0 && n == db_meta_get_int(db, "replay_stream_events", -1));
	printf("%ld events identical in tables and stream (%lld bytes)\n", n,
	       (long long)stream_bytes(db));

	CHECK(db_exec(db, "BEGIN") == DB_OK);
	CHECK(db_exec(db, "UPDATE meta SET value = value + 1 WHERE key = "
		      "'events'") == DB_OK);
	src = source_open(db);
	CHECK(src && !source_is_stream(src));
	source_close(src);
	CHECK(db_exec(db, "ROLLBACK") == DB_OK);

	CHECK(db_exec(db, "BEGIN") == DB_OK);
	CHECK(db_exec(db, "UPDATE replay_stream SET data = substr(data, 1, "
		      "length(data) - 3) WHERE chunk = (SELECT max(chunk) "
		      "FROM replay_stream)") == DB_OK);
	src = source_open(db);
	CHECK(src && source_is_stream(src));
	while (src && (ss = source_next(src, &ev)) == SOURCE_OK)
		;
	CHECK(src && ss == SOURCE_ERR);
	source_close(src);
	CHECK(db_exec(db, "ROLLBACK") == DB_OK);
	CHECK(stream_current(db));
	sqlite3_close(db);
	return check_finish();
}
