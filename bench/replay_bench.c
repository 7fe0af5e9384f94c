/*
 * replay_bench DB POLICY [tables]: one replay of a capture DB under one
 * policy, timed.  The replay stream is derived first when the DB lacks
 * it (timed apart, as `mmureplay replay` does once per capture); with
 * "tables" the replay reads the canonical tables instead.  POLICY "all":
 * every registered policy in one process, the first pass made once, as
 * `mmureplay replay` runs them; events then counts each policy's pass.
 * Prints "events seconds events_per_s peak_tdp_entries peak_rss_kib
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
	struct capture_info ci;
	struct replay_result r;
	struct replay_opts o;
	struct timespec t0;
	struct source *src;
	struct scan scan;
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
	if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE |
			    SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK ||
	    capture_info_read(db, &ci) < 0)
		return 1;
	if (!tables && !stream_current(db)) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (source_stream_ensure(db) < 0)
			return 1;
		derive = since(&t0);
	}
	src = tables ? source_open_tables(db) : source_open(db);
	if (!src)
		return 1;
	memset(&o, 0, sizeof(o));
	o.policy = pols[0];
	o.nx_ratio = ci.nx_ratio;
	o.nx_period_ms = ci.nx_period_ms;
	o.fmt = ci.fmt;
	o.nx_worker_tids = ci.workers;
	o.n_nx_worker_tids = ci.nworkers;
	o.npf_exit_reason = ci.npf_exit_reason;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	if (replay_prepare(src, &o, &scan) != REPLAY_OK)
		return 1;
	for (i = 0; pols[i]; i++) {
		o.policy = pols[i];
		o.self_check = o.policy == ci.recorded;
		if (replay_run_scanned(src, &o, &scan, &r) != REPLAY_OK)
			return 1;
		events += r.events;
		if (r.peak_tdp_entries > peak)
			peak = r.peak_tdp_entries;
		replay_result_free(&r);
	}
	secs = since(&t0);
	scan_free(&scan);
	printf("%lld %.6f %.0f %lld %ld %.6f %lld\n", (long long)events,
	       secs, (double)events / secs, (long long)peak, peak_rss_kib(),
	       derive, (long long)stream_bytes(db));
	source_close(src);
	sqlite3_close(db);
	return 0;
}
