/*
 * Diagnostics for every mmureplay command.
 *
 * Errors are one line on stderr, "mmureplay: FILE: problem", so that a
 * user (or a test) can tell which input was bad without a backtrace.
 * Progress goes to stderr only when it is a terminal, and is erased
 * before any error line is printed.
 */
#ifndef MMUREPLAY_UTIL_LOG_H
#define MMUREPLAY_UTIL_LOG_H

#include <stdint.h>

/* Print "mmureplay: " + message + newline on stderr. */
void log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Progress line: "WHAT: DONE of TOTAL (P%), R M/s, ETA S s" (without
 * total: "WHAT: DONE, R M/s"), the rate over the step so far: a step
 * starts at the first call with a new WHAT (the string, compared) and
 * ends at log_progress_end().  A no-op unless stderr is a terminal;
 * redrawn four times a second at most, so callers may call it often
 * (every 64 Ki events is the custom).  Thread-safe: each thread has its
 * own step, and the line shows the one drawn last.
 */
void log_progress_of(const char *what, uint64_t done, uint64_t total);
void log_progress(const char *what, uint64_t done);
void log_progress_end(void);

#endif
