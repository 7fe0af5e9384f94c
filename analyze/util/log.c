/*
 * One-line diagnostics and terminal-only progress (see log.h).
 */
#include "util/log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/*
 * The progress line on the terminal is shared: any thread may draw it
 * (summary scans on two), under progress_lock, four times a second at
 * most in all, the last drawer's step showing.  A step (its name, and
 * when and at what count it was first reported) is each thread's own,
 * so that two threads' steps keep their own rates.
 */
static pthread_mutex_t progress_lock = PTHREAD_MUTEX_INITIALIZER;
static int progress_shown;
static struct timespec progress_drawn;
static _Thread_local char progress_what[64];       /* "": no step */
static _Thread_local struct timespec progress_start;
static _Thread_local uint64_t progress_start_done;
static _Thread_local int progress_step_drawn;      /* this step, once */

__attribute__((format(printf, 2, 0)))
static void vlog(const char *prefix, const char *fmt, va_list ap)
{
	/* The line is erased and the message printed in one hold of the
	 * lock: another thread's progress cannot land in between. */
	progress_what[0] = '\0';
	pthread_mutex_lock(&progress_lock);
	if (progress_shown) {
		fputs("\r\033[K", stderr);
		progress_shown = 0;
	}
	fputs("mmureplay: ", stderr);
	fputs(prefix, stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	pthread_mutex_unlock(&progress_lock);
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

/* 12345678 -> "12,345,678" into buf (at least 27 bytes). */
static const char *thousands(char *buf, uint64_t v)
{
	char tmp[24];
	int n = snprintf(tmp, sizeof(tmp), "%llu", (unsigned long long)v);
	int i, o = 0;

	for (i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = tmp[i];
	}
	buf[o] = '\0';
	return buf;
}

static double seconds_between(const struct timespec *a,
			      const struct timespec *b)
{
	return (double)(b->tv_sec - a->tv_sec) +
		(double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

void log_progress_of(const char *what, uint64_t done, uint64_t total)
{
	static _Atomic int tty = -1;    /* any thread may be the first */
	struct timespec now;
	char d[32], t[32], r[32] = "", eta[32] = "";
	double secs, rate;

	if (tty < 0)
		tty = isatty(STDERR_FILENO);
	if (!tty)
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	/* A new step starts its clock: the rate is the step's own. */
	if (strncmp(progress_what, what, sizeof(progress_what) - 1) != 0) {
		snprintf(progress_what, sizeof(progress_what), "%s", what);
		progress_start = now;
		progress_start_done = done;
		progress_step_drawn = 0;
	}
	pthread_mutex_lock(&progress_lock);
	/* Four updates a second are enough and cost nothing; but every
	 * step shows once, even while another thread's is on the line. */
	if (progress_shown && progress_step_drawn &&
	    seconds_between(&progress_drawn, &now) < 0.25)
		goto end;
	progress_drawn = now;
	progress_step_drawn = 1;
	secs = seconds_between(&progress_start, &now);
	rate = secs > 0 && done > progress_start_done ?
		(double)(done - progress_start_done) / secs : 0;
	if (total > done && rate > 0)
		snprintf(eta, sizeof(eta), ", ETA %.0f s",
			 (double)(total - done) / rate);
	if (rate > 0)
		snprintf(r, sizeof(r), ", %.2f M/s", rate / 1e6);
	if (total)
		fprintf(stderr, "\r%s: %s of %s (%.0f%%)%s%s\033[K", what,
			thousands(d, done), thousands(t, total),
			100.0 * (double)(done < total ? done : total) /
			(double)total, r, eta);
	else
		fprintf(stderr, "\r%s: %s%s\033[K", what, thousands(d, done),
			r);
	progress_shown = 1;
end:
	pthread_mutex_unlock(&progress_lock);
}

void log_progress(const char *what, uint64_t done)
{
	log_progress_of(what, done, 0);
}

void log_progress_end(void)
{
	progress_what[0] = '\0';
	pthread_mutex_lock(&progress_lock);
	if (progress_shown) {
		fputs("\r\033[K", stderr);
		progress_shown = 0;
	}
	pthread_mutex_unlock(&progress_lock);
}
