// SPDX-License-Identifier: GPL-2.0
/*
 * fragment.c - fragment the lab host's free memory for kcompactd.
 *
 * Usage: fragment MiB
 *
 * Maps MiB of anonymous memory as 4 KiB pages (MADV_NOHUGEPAGE), writes
 * every page, then frees every other page (MADV_DONTNEED): the host is
 * left with MiB/2 free in single pages between pages it cannot free, so
 * no 2 MiB block is free there.  A workload started after it gets its
 * pages from those holes, mixed with this one's in the same pageblocks;
 * with vm.compaction_proactiveness raised, kcompactd then migrates pages
 * of both to build free 2 MiB blocks (notifier calls by the thread
 * kcompactd0 on the workload's guest RAM).  Prints "FRAGMENT ready" and
 * holds its pages until SIGTERM or SIGINT.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE	4096ul

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	(void)sig;
	stop = 1;
}

int main(int argc, char **argv)
{
	unsigned long mib, size, off, kept = 0;
	struct sigaction sa;
	char *mem;

	if (argc != 2 || (mib = strtoul(argv[1], NULL, 0)) == 0) {
		fprintf(stderr, "usage: fragment MiB\n");
		return 2;
	}
	size = mib << 20;
	mem = mmap(NULL, size, PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		perror("fragment: mmap");
		return 1;
	}
	if (madvise(mem, size, MADV_NOHUGEPAGE))
		perror("fragment: madvise NOHUGEPAGE");
	for (off = 0; off < size; off += PAGE)
		memset(mem + off, 0x6b, 64);
	for (off = PAGE; off < size; off += 2 * PAGE) {
		if (madvise(mem + off, PAGE, MADV_DONTNEED)) {
			perror("fragment: madvise DONTNEED");
			return 1;
		}
	}
	for (off = 0; off < size; off += 2 * PAGE)
		kept += mem[off] == 0x6b;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_stop;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	printf("FRAGMENT ready: %lu MiB mapped, %lu pages kept, %lu freed\n",
	       mib, kept, size / PAGE - kept);
	fflush(stdout);
	while (!stop)
		pause();
	return 0;
}
