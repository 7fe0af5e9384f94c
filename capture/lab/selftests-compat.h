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
 *
 * This header comes before the first line of every file, so what it
 * includes fixes the C library's feature macros for the whole file:
 * without _GNU_SOURCE here, a file's own `#define _GNU_SOURCE` would come
 * too late (the 6.1 library's kvm_util.c then lacks
 * program_invocation_name, memfd_create, fallocate).  It is defined
 * empty, as 6.12's lib.mk passes it to every selftest (-D_GNU_SOURCE=),
 * so a file's own empty definition is the same.  The assembler sources
 * (lib/x86_64/handlers.S) get the flags too and are left alone.
 */
#ifndef MMUREPLAY_SELFTESTS_COMPAT_H
#define MMUREPLAY_SELFTESTS_COMPAT_H

#ifndef __ASSEMBLER__

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif

#include "test_util.h"

#ifndef TEST_ASSERT_EQ
#define TEST_ASSERT_EQ(a, b)						\
	TEST_ASSERT((a) == (b), "%#lx != %#lx (%s != %s)",		\
		    (unsigned long)(a), (unsigned long)(b), #a, #b)
#endif

#endif /* __ASSEMBLER__ */

#endif
