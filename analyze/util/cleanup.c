/*
 * Temporaries removed on interrupt, and stale ones of dead processes
 * (see cleanup.h).
 *
 * The table is static so that the signal handler reads only memory that
 * is never freed: a slot's path is complete before its 'used' flag is
 * set, and the flag is cleared before the path may change.
 */
#define _GNU_SOURCE
#include "util/cleanup.h"

#include "util/assert.h"
#include "util/log.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A command writes one DB or one report at a time; 8 leaves room. */
#define CLEANUP_SLOTS 8

static struct {
	volatile sig_atomic_t used;
	char path[PATH_MAX];
} slots[CLEANUP_SLOTS];

static const int caught[] = { SIGINT, SIGTERM, SIGHUP };

/* Held sections (nesting depth) and a signal that came during one. */
static volatile sig_atomic_t holding, pending;

int cleanup_tmp_add(const char *path)
{
	size_t n = strlen(path);
	int i;

	if (n >= PATH_MAX)
		return -1;
	for (i = 0; i < CLEANUP_SLOTS; i++) {
		if (slots[i].used)
			continue;
		memcpy(slots[i].path, path, n + 1);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		slots[i].used = 1;
		return 0;
	}
	return -1;
}

void cleanup_tmp_remove(const char *path)
{
	int i;

	for (i = 0; i < CLEANUP_SLOTS; i++)
		if (slots[i].used && strcmp(slots[i].path, path) == 0)
			slots[i].used = 0;
}

void cleanup_tmp_unlink_all(void)
{
	int i;

	for (i = 0; i < CLEANUP_SLOTS; i++)
		if (slots[i].used) {
			slots[i].used = 0;
			unlink(slots[i].path);
		}
}

static void write_str(const char *s)
{
	ssize_t r = write(STDERR_FILENO, s, strlen(s));

	(void)r;
}

/* Remove, say so, leave: from the handler or from a section's end. */
static void interrupted(int sig)
{
	const char *name = sig == SIGINT ? "SIGINT" :
		sig == SIGTERM ? "SIGTERM" : "SIGHUP";
	int i, had = 0;

	for (i = 0; i < CLEANUP_SLOTS; i++)
		had |= slots[i].used;
	cleanup_tmp_unlink_all();
	/* A progress line may be on the terminal: start a fresh one. */
	write_str(isatty(STDERR_FILENO) ? "\r\033[K" : "");
	write_str("mmureplay: interrupted by ");
	write_str(name);
	write_str(had ? ": unfinished output removed, earlier output "
		  "untouched\n" : "\n");
	_exit(128 + sig);
}

static void on_signal(int sig)
{
	if (holding) {
		pending = sig;
		return;
	}
	interrupted(sig);
}

void cleanup_signals_install(void)
{
	struct sigaction sa;
	size_t i;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(caught) / sizeof(caught[0]); i++)
		sigaddset(&sa.sa_mask, caught[i]);
	for (i = 0; i < sizeof(caught) / sizeof(caught[0]); i++)
		sigaction(caught[i], &sa, NULL);
}

void cleanup_signals_hold(void)
{
	holding++;
}

void cleanup_signals_release(void)
{
	/* holding drops first: a signal from here on is acted on by the
	 * handler, one that came before is seen in pending. */
	if (--holding == 0 && pending)
		interrupted(pending);
}

void cleanup_signals_published(void)
{
	/* Still held: the outermost release never comes.  The process
	 * exits as the command decides; a recorded signal is dropped. */
	MR_ASSERT(holding > 0);
}

int cleanup_interrupted(void)
{
	return pending;
}

/* "BASE.tmp-PID" with PID all digits: the PID, else 0. */
static long stale_pid_of(const char *name, const char *base, size_t blen)
{
	const char *p;
	char *end;
	long pid;

	if (strncmp(name, base, blen) != 0 || strncmp(name + blen, ".tmp-", 5))
		return 0;
	p = name + blen + 5;
	if (*p < '0' || *p > '9')
		return 0;
	pid = strtol(p, &end, 10);
	return *end == '\0' && pid > 0 ? pid : 0;
}

int cleanup_stale_reap(const char *path)
{
	char *dir = strdup(path), *slash, full[PATH_MAX];
	const char *base, *dname;
	struct dirent *de;
	DIR *d = NULL;
	size_t blen;
	int n = 0;
	long pid;

	if (!dir)
		goto end;
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		base = slash + 1;
		dname = slash == dir ? "/" : dir;
	} else {
		base = dir;
		dname = ".";
	}
	blen = strlen(base);
	d = opendir(dname);
	if (!d || blen == 0)
		goto end;
	while ((de = readdir(d))) {
		pid = stale_pid_of(de->d_name, base, blen);
		/* A live PID may be another run writing the same name, or
		 * an unrelated process that reused it: leave those. */
		if (!pid || pid == (long)getpid() ||
		    !(kill((pid_t)pid, 0) < 0 && errno == ESRCH))
			continue;
		if (snprintf(full, sizeof(full), "%s%s%s", slash ? dname : "",
			     slash && slash != dir ? "/" : "", de->d_name) >=
		    (int)sizeof(full))
			continue;
		if (unlink(full) == 0) {
			log_warn("%s: removed, left by process %ld which is "
				 "gone", full, pid);
			n++;
		}
	}
end:
	if (d)
		closedir(d);
	free(dir);
	return n;
}
