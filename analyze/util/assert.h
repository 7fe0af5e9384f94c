/*
 * Invariant checks.
 *
 *   MR_ASSERT(cond)      always compiled in, whatever NDEBUG says: the
 *                        invariants a file header states, checked where
 *                        a break would otherwise corrupt a result
 *                        silently;
 *   MR_ASSERT_DBG(cond)  for hot loops (per event, per SPTE): compiled in
 *                        when MMUREPLAY_ASSERT_DBG is defined (the CMake
 *                        option of that name, on by default and in every
 *                        test build), else not evaluated;
 *   MR_UNREACHABLE()     a branch the callers' invariants rule out.
 *
 * A failed check is a bug in mmureplay, not bad input (bad input gets a
 * one-line error and an exit code, util/log.h): it prints
 * "mmureplay: internal error: FILE:LINE: FUNC: COND" and aborts, so that
 * a test, a sanitizer run or a core dump catches it.
 *
 * What these cannot catch: an invariant nobody wrote down as a check,
 * and, with MMUREPLAY_ASSERT_DBG off, anything MR_ASSERT_DBG guards.
 */
#ifndef MMUREPLAY_UTIL_ASSERT_H
#define MMUREPLAY_UTIL_ASSERT_H

void assert_fail(const char *file, int line, const char *func,
		 const char *cond) __attribute__((noreturn, cold));

#define MR_ASSERT(cond) do { \
	if (__builtin_expect(!(cond), 0)) \
		assert_fail(__FILE__, __LINE__, __func__, #cond); \
} while (0)

#ifdef MMUREPLAY_ASSERT_DBG
#define MR_ASSERT_DBG(cond) MR_ASSERT(cond)
#else
/* Not evaluated, but still compiled: a stale condition breaks the build. */
#define MR_ASSERT_DBG(cond) ((void)sizeof(!(cond)))
#endif

#define MR_UNREACHABLE() \
	assert_fail(__FILE__, __LINE__, __func__, "unreachable")

#endif
