/*
 * A watchdog for work done inside a dependency that can spin forever.
 *
 * babeltrace2 2.0.4's CTF source loops at 100% CPU on some damaged
 * metadata (docs/design.md, "Damaged input"); the ingest guards the
 * known case before the graph is built, and runs the graph under this
 * watchdog for the cases no guard knows.  The work calls watchdog_kick()
 * whenever it makes progress; if SECONDS pass without a kick, the
 * watchdog thread prints one line naming what was stuck, removes the
 * process's temporaries (util/cleanup.h) and exits with the given code.
 *
 * Invariants: at most one watchdog runs at a time; watchdog_kick() is a
 * relaxed atomic increment, cheap enough for a per-batch hot path; a
 * stopped watchdog never fires.
 */
#ifndef MMUREPLAY_UTIL_WATCHDOG_H
#define MMUREPLAY_UTIL_WATCHDOG_H

enum watchdog_status {
	WATCHDOG_OK = 0,
	WATCHDOG_ERR,           /* the thread could not be started */
};

/*
 * Start watching: after `seconds` without a kick, "mmureplay: WHAT: no
 * progress for N s (REASON); stopped" and _exit(code).  seconds == 0:
 * nothing is started (WATCHDOG_OK).  what is copied.
 */
enum watchdog_status watchdog_start(unsigned seconds, const char *what,
				    const char *reason, int code);
void watchdog_kick(void);
void watchdog_stop(void);

#endif
