/*
 * replay_bench DB POLICY: one replay of a capture DB under one policy,
 * timed.  Prints "events seconds events_per_s peak_tdp_entries
 * peak_rss_kib".
 */
#include "replay/capture_info.h"
#include "replay/engine.h"
#include "replay/source.h"

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
	double secs;

	if (argc != 3) {
		fprintf(stderr, "usage: replay_bench DB POLICY\n");
		return 1;
	}
	o.policy = policy_find(argv[2]);
	if (!o.policy || sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READONLY |
					 SQLITE_OPEN_NOMUTEX, NULL) !=
	    SQLITE_OK ||
	    capture_info_read(db, &ci) < 0 || !(src = source_open(db)))
		return 1;
	o.self_check = o.policy == ci.recorded;
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
	printf("%lld %.6f %.0f %lld %ld\n", (long long)r.events, secs,
	       (double)r.events / secs, (long long)r.peak_tdp_entries,
	       peak_rss_kib());
	replay_result_free(&r);
	source_close(src);
	sqlite3_close(db);
	return 0;
}
