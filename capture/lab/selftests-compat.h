/* SPDX-License-Identifier: GPL-2.0 */
/*
 * selftests-compat.h - what a kernel tree's KVM selftests call but its
 * own selftest library lacks, for the lab's build of them (build.sh
 * passes it to every selftest with -include).
 *
 * Debian's linux-source-6.1 (6.1.192) carries a stable backport of
 * dirty_log_test.c that calls TEST_ASSERT_EQ(), which that tree's
 * include/test_util.h does not define (it came with 6.7's selftest
 * library), so dirty_log_test does not build there.  The definition
 * below follows test_util.h's own TEST_ASSERT() and is made only where
 * the tree has none: trees that define it are built as they are.
 */
#ifndef MMUREPLAY_SELFTESTS_COMPAT_H
#define MMUREPLAY_SELFTESTS_COMPAT_H

#include "test_util.h"

#ifndef TEST_ASSERT_EQ
#define TEST_ASSERT_EQ(a, b)						\
	TEST_ASSERT((a) == (b), "%#lx != %#lx (%s != %s)",		\
		    (unsigned long)(a), (unsigned long)(b), #a, #b)
#endif

#endif
