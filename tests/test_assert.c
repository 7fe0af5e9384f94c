/*
 * The invariant checks (util/assert.h) fire in the build the tests run:
 * a failed MR_ASSERT aborts with its one-line message even with NDEBUG
 * defined (defined here on purpose, as release builds do), MR_ASSERT_DBG
 * does when the build has MMUREPLAY_ASSERT_DBG (the default), and a
 * check inside the library (tdp.c) is live.  Each case runs in a child
 * process; the parent reads its stderr and exit signal.
 *
 * What this cannot catch: a check missing from a place that needs one.
 */
#define NDEBUG 1

#include "check.h"
#include "model/spte.h"
#include "model/tdp.h"
#include "util/assert.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile int zero;

static void leaf_none(void *arg, int level, uint64_t gfn, uint64_t spte)
{
	(void)arg;
	(void)level;
	(void)gfn;
	(void)spte;
}

static void fail_assert(void)
{
	MR_ASSERT(zero == 1);
}

static void fail_assert_dbg(void)
{
	MR_ASSERT_DBG(zero == 2);
}

static void fail_tdp_range(void)
{
	struct tdp t;

	tdp_init(&t, spte_format_get(SPTE_FORMAT_NPT));
	tdp_for_each_leaf(&t, 0, 10, 5, leaf_none, NULL);
	tdp_free(&t);
}

/* Run fn in a child: did it abort, with what on stderr? */
static int run_child(void (*fn)(void), char *err, size_t errsz)
{
	int fds[2], status;
	ssize_t n, got = 0;
	pid_t pid;

	if (pipe(fds) < 0)
		return -1;
	pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		dup2(fds[1], STDERR_FILENO);
		close(fds[0]);
		fn();
		_exit(0);
	}
	close(fds[1]);
	while (got < (ssize_t)errsz - 1 &&
	       (n = read(fds[0], err + got, errsz - 1 - (size_t)got)) > 0)
		got += n;
	err[got] = 0;
	close(fds[0]);
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT;
}

int main(void)
{
	char err[4096];

	CHECK(run_child(fail_assert, err, sizeof(err)) == 1);
	CHECK(strstr(err, "mmureplay: internal error: ") != NULL);
	CHECK(strstr(err, "fail_assert: zero == 1") != NULL);
#ifdef MMUREPLAY_ASSERT_DBG
	CHECK(run_child(fail_assert_dbg, err, sizeof(err)) == 1);
	CHECK(strstr(err, "zero == 2") != NULL);
#else
	CHECK(run_child(fail_assert_dbg, err, sizeof(err)) == 0);
#endif
	CHECK(run_child(fail_tdp_range, err, sizeof(err)) == 1);
	CHECK(strstr(err, "start <= end") != NULL);
	return check_finish();
}
