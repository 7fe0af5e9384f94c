/*
 * What a mmureplay process removes when it is stopped before it is done.
 *
 * Every result is written under a temporary name ("NAME.tmp-PID") and
 * renamed when complete (util/outfile.h, db/db.h).  This module keeps the
 * list of those temporaries so that:
 *   - SIGINT, SIGTERM and SIGHUP remove them, print one line and exit
 *     with 128 + the signal number; the previous NAME, if any, is never
 *     touched (the rename did not happen);
 *   - a watchdog that gives up (util/watchdog.h) removes them too;
 *   - the temporaries a killed process (SIGKILL, a crash, a power cut)
 *     left beside NAME are removed by the next run that writes NAME, and
 *     named on stderr.
 *
 * Invariants: a registered path is removed at most once, by whichever of
 * cleanup_tmp_remove(), a signal or the watchdog comes first; the signal
 * handler only calls async-signal-safe functions (unlink, write, _exit).
 * Code that changes a file in place (the replay's DB transactions) holds
 * the signals: one that comes meanwhile is only recorded, the code sees
 * it with cleanup_interrupted() where it can stop (and roll back), and
 * it is acted on when the section ends.  So no hot journal is left, and
 * the DB is as before the run.  Holding is process-wide: a signal may be
 * delivered to any thread.
 */
#ifndef MMUREPLAY_UTIL_CLEANUP_H
#define MMUREPLAY_UTIL_CLEANUP_H

/* Catch SIGINT, SIGTERM, SIGHUP (main, once). */
void cleanup_signals_install(void);

/* Register / drop a temporary file of this process.  0, or -1 when the
 * table is full or the path too long (the file is then only removed by
 * the code that made it, or by a later run). */
int cleanup_tmp_add(const char *path);
void cleanup_tmp_remove(const char *path);

/* Unlink every registered temporary (async-signal-safe). */
void cleanup_tmp_unlink_all(void);

/*
 * Remove "PATH.tmp-PID" files beside PATH whose PID is not a live
 * process, naming each on stderr.  Returns how many were removed.
 */
int cleanup_stale_reap(const char *path);

/* Hold SIGINT/SIGTERM/SIGHUP across an in-place change (nests); a
 * signal that came meanwhile is acted on at the outermost release. */
void cleanup_signals_hold(void);
void cleanup_signals_release(void);
/*
 * Called holding, once the command's result is renamed into place: the
 * hold is never released, so an interrupt after that cannot turn a
 * finished command into a failed one (exit 128 + N with the new result
 * in place).
 */
void cleanup_signals_published(void);
/* The signal that came during a held section, or 0: stop soon. */
int cleanup_interrupted(void);

#endif
