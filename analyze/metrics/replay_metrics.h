/*
 * The figures of a replay, named the way reports and the DB name them,
 * and their storage in the capture DB (tables replay_*).
 *
 * Rates are per second of trace time, like the pf/s and tlb/s columns of
 * the perm-upgrade mail.
 */
#ifndef MMUREPLAY_METRICS_REPLAY_METRICS_H
#define MMUREPLAY_METRICS_REPLAY_METRICS_H

#include "replay/engine.h"

#include <sqlite3.h>

#define REPLAY_METRICS_MAX 48

struct named_metric {
	char name[40];
	double value;
};

struct replay_metrics {
	const char *policy;
	const char *limits;             /* what the replay does not model */
	/* Why the policy cannot act on this host (replay_na_texts[]);
	 * NULL when it can.  Its figures are then the recorded run's by
	 * construction: reports say this instead of showing them. */
	const char *not_applicable;
	double duration_s;
	struct named_metric m[REPLAY_METRICS_MAX];
	int n;
};

/* Flatten a result into named figures (faults, faults_per_s, ...). */
void replay_metrics_compute(const struct replay_result *r,
			    double duration_s, struct replay_metrics *out);
/* 1 for a figure of the self-check (observed.*, predicted.*, exempt.*,
 * mismatches): stored with a run, but never shown among the what-if
 * figures of a policy. */
int replay_metric_is_self_check(const char *name);
/* The value of a named figure (0 if absent). */
double replay_metrics_get(const struct replay_metrics *m, const char *name);

/* A run as stored by replay_metrics_store(). */
struct stored_run {
	struct replay_metrics m;
	int self_check_ok;
	char policy[32];
	char knowledge[4][16];          /* memslots, perm_upgrade, dirty, lock */
	char not_applicable[200];       /* m.not_applicable's text */
	struct replay_second *series;
	int64_t nseconds;
};

/* Load every stored run, baseline first; *runs is malloc'd. 0 or -1. */
int replay_metrics_load(sqlite3 *db, struct stored_run **runs, int *n);
void replay_metrics_free_runs(struct stored_run *runs, int n);
/* A run as it would be stored, from a replay made now; r's per-second
 * series moves into out (freed with the runs). */
void replay_metrics_stored_from(struct replay_result *r, double duration_s,
				int self_check_ok, struct stored_run *out);

/* Drop every stored run (a failed self-check withholds what-ifs that an
 * earlier replay stored); the caller holds a transaction.  0 or -1. */
int replay_metrics_clear(sqlite3 *db);

/* Replace the stored run of r->policy; the caller holds a transaction. */
int replay_metrics_store(sqlite3 *db, const struct replay_result *r,
			 const struct replay_metrics *m, int self_check_ok);

#endif
