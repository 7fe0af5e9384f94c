/*
 * The no-progress watchdog (see watchdog.h): one thread that wakes every
 * quarter second and compares the kick counter with what it saw last.
 */
#define _GNU_SOURCE
#include "util/watchdog.h"

#include "util/assert.h"
#include "util/cleanup.h"
#include "util/log.h"

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static struct {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int running, stop;
	unsigned seconds;
	int code;
	char what[1024], reason[256];
	uint64_t kicks;
} wd = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };

void watchdog_kick(void)
{
	__atomic_fetch_add(&wd.kicks, 1, __ATOMIC_RELAXED);
}

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *watchdog_main(void *arg)
{
	uint64_t seen = __atomic_load_n(&wd.kicks, __ATOMIC_RELAXED), k;
	uint64_t since = now_ms();
	struct timespec until;

	(void)arg;
	pthread_mutex_lock(&wd.lock);
	while (!wd.stop) {
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 250 * 1000000L;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&wd.cond, &wd.lock, &until);
		if (wd.stop)
			break;
		k = __atomic_load_n(&wd.kicks, __ATOMIC_RELAXED);
		if (k != seen) {
			seen = k;
			since = now_ms();
			continue;
		}
		if (now_ms() - since < (uint64_t)wd.seconds * 1000)
			continue;
		/* The stuck thread cannot be unwound: leave from here. */
		cleanup_tmp_unlink_all();
		log_error("%s: no progress for %u s (%s); stopped", wd.what,
			  wd.seconds, wd.reason);
		_exit(wd.code);
	}
	pthread_mutex_unlock(&wd.lock);
	return NULL;
}

enum watchdog_status watchdog_start(unsigned seconds, const char *what,
				    const char *reason, int code)
{
	MR_ASSERT(!wd.running);
	if (seconds == 0)
		return WATCHDOG_OK;
	snprintf(wd.what, sizeof(wd.what), "%s", what);
	snprintf(wd.reason, sizeof(wd.reason), "%s", reason);
	wd.seconds = seconds;
	wd.code = code;
	wd.stop = 0;
	if (pthread_create(&wd.thread, NULL, watchdog_main, NULL) != 0)
		return WATCHDOG_ERR;
	wd.running = 1;
	return WATCHDOG_OK;
}

void watchdog_stop(void)
{
	if (!wd.running)
		return;
	pthread_mutex_lock(&wd.lock);
	wd.stop = 1;
	pthread_cond_signal(&wd.cond);
	pthread_mutex_unlock(&wd.lock);
	pthread_join(wd.thread, NULL);
	wd.running = 0;
}
