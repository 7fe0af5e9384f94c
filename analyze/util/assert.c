/*
 * The failure path of the invariant checks (see assert.h).
 */
#include "util/assert.h"

#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>

void assert_fail(const char *file, int line, const char *func,
		 const char *cond)
{
	log_progress_end();
	fprintf(stderr, "mmureplay: internal error: %s:%d: %s: %s\n", file,
		line, func, cond);
	abort();
}
