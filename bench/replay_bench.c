/*
 * replay_bench DB POLICY [tables]: one replay of a capture DB under one
 * policy, timed.  The replay stream is derived first when the DB lacks
 * it (timed apart, as `mmureplay replay` does once per capture); with
 * "tables" the replay reads the canonical tables instead.  Prints
 * "events seconds events_per_s peak_tdp_entries peak_rss_kib
 * derive_seconds stream_bytes".
 */
#include "replay/capture_info.h"
#include "replay/engine.h"
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

int main(int argc, char **argv)
{
	struct capture_info ci;
	struct replay_result r;
	struct replay_opts o;
	struct timespec t0, t1;
	struct source *src;
	sqlite3 *db;
	double secs, derive = 0;
	int tables = argc == 4 && strcmp(argv[3], "tables") == 0;

	if (argc != 3 && !tables) {
		fprintf(stderr, "usage: replay_bench DB POLICY [tables]\n");
		return 1;
	}
	o.policy = policy_find(argv[2]);
	if (!o.policy || sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE |
					 SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK || capture_info_read(db, &ci) < 0)
		return 1;
	if (!tables && !stream_current(db)) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (source_stream_ensure(db) < 0)
			return 1;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		derive = (double)(t1.tv_sec - t0.tv_sec) +
			(double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	}
	src = tables ? source_open_tables(db) : source_open(db);
	if (!src)
		return 1;
	memset(&o, 0, sizeof(o));
	o.policy = policy_find(argv[2]);
	o.self_check = o.policy == ci.recorded;
	o.nx_ratio = ci.nx_ratio;
	o.fmt = ci.fmt;
	o.nx_worker_tids = ci.workers;
	o.n_nx_worker_tids = ci.nworkers;
	o.npf_exit_reason = ci.npf_exit_reason;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (replay_run(src, &o, &r) != REPLAY_OK)
		return 1;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	secs = (double)(t1.tv_sec - t0.tv_sec) +
		(double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
	printf("%lld %.6f %.0f %lld %ld %.6f %lld\n", (long long)r.events,
	       secs, (double)r.events / secs, (long long)r.peak_tdp_entries,
	       peak_rss_kib(), derive, (long long)stream_bytes(db));
	replay_result_free(&r);
	source_close(src);
	sqlite3_close(db);
	return 0;
}
