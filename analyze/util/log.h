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

/* Progress line; a no-op unless stderr is a terminal.  Rate-limited. */
void log_progress(const char *what, uint64_t done);
void log_progress_end(void);

#endif
