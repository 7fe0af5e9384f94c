/*
 * replay_bench DB POLICY [tables]: one replay of a capture DB under one
 * policy, timed.  The replay stream is derived first when the DB lacks
 * it (timed apart, as `mmureplay replay` does once per capture); with
 * "tables" the replay reads the canonical tables instead.  POLICY "all":
 * every registered policy in one process, the first pass made once, as
 * `mmureplay replay` runs them; events then counts each policy's pass.
 * The DB is opened as mmureplay opens it (db_open(): the schema check)
 * and replayed through the same session (replay/session.h).
 * Prints "events seconds events_per_s peak_tdp_entries peak_rss_kib
 * derive_seconds stream_bytes".
 */
#include "db/db.h"
#include "replay/capture_info.h"
#include "replay/session.h"
#include "replay/source.h"
#include "replay/stream.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* VmHWM of this process (after exec: only what the replay used). */
static long peak_rss_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;

	while (f && fgets(line, sizeof(line), f))
		if (strncmp(line, "VmHWM:", 6) == 0)
			kib = strtol(line + 6, NULL, 10);
	if (f)
		fclose(f);
	return kib;
}

static double since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) +
		(double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

int main(int argc, char **argv)
{
	const struct policy *one[2] = { NULL, NULL };
	const struct policy *const *pols = one;
	struct replay_session s;
	struct capture_info ci;
	struct replay_result r;
	struct timespec t0;
	sqlite3 *db;
	double secs, derive = 0;
	int64_t events = 0, peak = 0;
	int tables = argc == 4 && strcmp(argv[3], "tables") == 0;
	int i;

	if (argc != 3 && !tables) {
		fprintf(stderr, "usage: replay_bench DB POLICY|all [tables]\n");
		return 1;
	}
	if (strcmp(argv[2], "all") == 0)
		pols = policy_registry;
	else if (!(one[0] = policy_find(argv[2])))
		return 1;
	/* Read-write: the stream may be derived. */
	if (db_open(argv[1], 0, &db) != DB_OK ||
	    capture_info_read(db, &ci) < 0)
		return 1;
	if (!tables && !stream_current(db)) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (source_stream_ensure(db) < 0)
			return 1;
		derive = since(&t0);
	}
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (replay_session_open(&s, db, &ci, 0, tables ? REPLAY_INPUT_TABLES :
				REPLAY_INPUT_ANY) != REPLAY_OK)
		return 1;
	for (i = 0; pols[i]; i++) {
		if (replay_session_run(&s, pols[i], &r) != REPLAY_OK)
			return 1;
		events += r.events;
		if (r.peak_tdp_entries > peak)
			peak = r.peak_tdp_entries;
		replay_result_free(&r);
	}
	secs = since(&t0);
	replay_session_close(&s);
	printf("%lld %.6f %.0f %lld %ld %.6f %lld\n", (long long)events,
	       secs, (double)events / secs, (long long)peak, peak_rss_kib(),
	       derive, (long long)stream_bytes(db));
	sqlite3_close(db);
	return 0;
}
