/*
 * The assertion of the C tests: print the failed expression with its
 * place and count it; main() returns the count.
 */
#ifndef MMUREPLAY_TESTS_CHECK_H
#define MMUREPLAY_TESTS_CHECK_H

#include <stdio.h>

/* A test of several files counts in one place: each file is compiled
 * with CHECK_FAILURES_EXTERN and one of them defines `int failures`. */
#ifdef CHECK_FAILURES_EXTERN
extern int failures;
#else
static int failures;
#endif

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, \
			#cond); \
		failures++; \
	} \
} while (0)

/* Print the verdict; the exit status for main(). */
static inline int check_finish(void)
{
	if (failures)
		fprintf(stderr, "%d failure(s)\n", failures);
	else
		printf("ok\n");
	return failures != 0;
}

#endif
