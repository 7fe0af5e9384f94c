/*
 * One-line diagnostics and terminal-only progress (see log.h).
 */
#include "util/log.h"

#include <stdarg.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>

static int progress_shown;

__attribute__((format(printf, 2, 0)))
static void vlog(const char *prefix, const char *fmt, va_list ap)
{
	log_progress_end();
	fputs("mmureplay: ", stderr);
	fputs(prefix, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void log_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("", fmt, ap);
	va_end(ap);
}

void log_warn(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog("warning: ", fmt, ap);
	va_end(ap);
}

void log_progress(const char *what, uint64_t done)
{
	static int tty = -1;
	static struct timespec last;
	struct timespec now;

	if (tty < 0)
		tty = isatty(STDERR_FILENO);
	if (!tty)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	/* Four updates a second are enough and cost nothing. */
	if (progress_shown && (now.tv_sec - last.tv_sec) * 1000000000L +
	    (now.tv_nsec - last.tv_nsec) < 250000000L)
		return;
	last = now;
	fprintf(stderr, "\r%s: %llu", what, (unsigned long long)done);
	progress_shown = 1;
}

void log_progress_end(void)
{
	if (progress_shown) {
		fputs("\r\033[K", stderr);
		progress_shown = 0;
	}
}
