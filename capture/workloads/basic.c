// SPDX-License-Identifier: GPL-2.0
/*
 * basic - the TDP MMU basic cycle: a flat 32-bit guest writes one dword
 * per 4 KiB page of its data area per pass and does `out` after each pass;
 * between passes the host changes the backing memory:
 *
 *   pass 1  first touch
 *   pass 2  after mprotect(PROT_READ) then mprotect(PROT_READ|PROT_WRITE)
 *   pass 3  after MADV_DONTNEED of the upper half
 *   pass 4  with dirty logging on (KVM_MEM_LOG_DIRTY_PAGES)
 *   pass 5  after KVM_GET_DIRTY_LOG and dirty logging off
 *   pass 6  after another mprotect RO/RW cycle
 *   pass 7  (--split) after an mprotect RO/RW cycle of [1.5 MiB, mem -
 *           0.5 MiB): both ends fall inside a 2 MiB page, so the host
 *           splits those THPs (one more invalidation each)
 *
 * With --read-tail MiB the last MiB of guest RAM are filled by the host
 * and only read by the guest (one dword per page per pass) and left out
 * of MADV_DONTNEED: after the first mprotect cycle the host maps them
 * read-only, so on THP the guest holds read-only 2 MiB leaves there when
 * dirty logging starts (eager split: children never traced) and stops
 * (collapse: those children zapped).
 *
 * Usage: basic [--mem MiB] [--thp] [--hugepage] [--no-dirty-log] [--split]
 *              [--read-tail MiB] [--mergeable] [--hugepage-late]
 *   --mem MiB       guest RAM (default 32); data is [1 MiB, mem - tail)
 *   --thp           leave THP enabled on guest RAM (default
 *                   MADV_NOHUGEPAGE): THP as the system setting says
 *   --hugepage      MADV_HUGEPAGE on guest RAM: THP under the "madvise"
 *                   setting too (2 MiB leaves in the TDP MMU)
 *   --no-dirty-log  skip passes 4 and 5 (no dirty logging)
 *   --split         add pass 7 (THP splits; needs --mem >= 3)
 *   --read-tail MiB read-only tail (default 0; at most mem - 2)
 *   --mergeable, --hugepage-late  guest RAM options (vmm.h); with
 *                   --hugepage-late RAM is MADV_HUGEPAGE after pass 1
 *
 * Phase markers: "[monotonic s] MARK ..." lines on stdout and marker
 * syscalls ioctl(-1, 0x4d52NNNN) that a kernel trace records.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "vmm.h"

#define MiB		(1024ull * 1024)
#define DATA_GPA	(1 * MiB)

/*
 * esi = data start, ebp = data end, edx = stride, eax = pass number;
 * ecx = end of a read-only tail [ebp, ecx) (0: none)
 */
GUEST_CODE(guest_touch,
	"1:	mov %esi, %edi\n"
	"2:	mov %eax, (%edi)\n"
	"	add %edx, %edi\n"
	"	cmp %ebp, %edi\n"
	"	jb 2b\n"
	"3:	cmp %ecx, %edi\n"
	"	jae 4f\n"
	"	mov (%edi), %ebx\n"
	"	add %edx, %edi\n"
	"	jmp 3b\n"
	"4:	out %al, $0x10\n"
	"	inc %eax\n"
	"	jmp 1b\n");

static struct vm vm;
static uint8_t *mem;
static uint64_t mem_size = 32 * MiB;
static uint64_t data_end;               /* mem_size less the read-only tail */
static int npass;
static int bad_total;

static void pass(void)
{
	double t0 = now_mono();
	uint64_t gpa, touched = 0;
	int port;

	npass++;
	port = vm_run(&vm);
	if (port != PORT_PASS)
		die("pass %d: unexpected exit (port %d)", npass, port);
	for (gpa = DATA_GPA; gpa < data_end; gpa += 4096) {
		uint32_t v;

		memcpy(&v, mem + gpa, sizeof(v));
		if (v == (uint32_t)npass)
			touched++;
		else
			bad_total++;
	}
	printf("pass %d done: %.3fs, %llu pages touched\n", npass, now_mono() - t0,
	       (unsigned long long)touched);
	fflush(stdout);
}

static void mprotect_cycle(unsigned int id)
{
	mark(id, "BASIC MPROTECT_RO_RW");
	if (mprotect(mem, mem_size, PROT_READ))
		die("mprotect RO");
	if (mprotect(mem, mem_size, PROT_READ | PROT_WRITE))
		die("mprotect RW");
	printf("  mprotect RO/RW cycle\n");
}

int main(int argc, char **argv)
{
	struct guest_code code = { guest_touch_start, guest_touch_end };
	struct vm_regs regs;
	int thp = 0, hugepage = 0, dirty_log = 1, split = 0, i;
	uint64_t tail = 0;
	double t0;
	uint64_t dirty;

	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--mem") && i + 1 < argc)
			mem_size = strtoull(argv[++i], NULL, 0) * MiB;
		else if (!strcmp(argv[i], "--thp"))
			thp = 1;
		else if (!strcmp(argv[i], "--hugepage"))
			thp = hugepage = 1;
		else if (!strcmp(argv[i], "--no-dirty-log"))
			dirty_log = 0;
		else if (!strcmp(argv[i], "--split"))
			split = 1;
		else if (!strcmp(argv[i], "--read-tail") && i + 1 < argc)
			tail = strtoull(argv[++i], NULL, 0) * MiB;
		else if (!vmm_mem_opt(argv[i]))
			die("usage: basic [--mem MiB] [--thp] [--hugepage] "
			    "[--no-dirty-log] [--split] [--read-tail MiB] "
			    VMM_MEM_USAGE);
	}
	if (mem_size < 2 * MiB)
		die("--mem must be >= 2");
	if (split && mem_size < 3 * MiB)
		die("--split needs --mem >= 3");
	if (tail + 2 * MiB > mem_size)
		die("--read-tail must be <= mem - 2");
	data_end = mem_size - tail;
	setvbuf(stdout, NULL, _IOLBF, 0);

	mem = xmmap_aligned(mem_size, 2 * MiB);
	if (!thp && madvise(mem, mem_size, MADV_NOHUGEPAGE))
		die("madvise NOHUGEPAGE");
	if (hugepage && madvise(mem, mem_size, MADV_HUGEPAGE))
		die("madvise HUGEPAGE");
	vmm_mem_advise(mem, mem_size);
	memset(mem + data_end, 0x5a, tail);    /* host-written, guest-read */
	vm_create(&vm, mem, mem_size);
	vm_load_code(&vm, &code);
	memset(&regs, 0, sizeof(regs));
	regs.eip = GUEST_CODE_GPA;
	regs.esp = GUEST_STACK_TOP;
	regs.esi = DATA_GPA;
	regs.ebp = data_end;
	regs.ecx = mem_size;
	regs.edx = 4096;
	regs.eax = 1;
	vm_set_regs(&vm, &regs);
	printf("basic mem=%lluMiB data_pages=%llu thp=%d hugepage=%d "
	       "dirty_log=%d split=%d read_tail=%lluMiB pid=%d debugfs=%s %s\n",
	       (unsigned long long)(mem_size / MiB),
	       (unsigned long long)((data_end - DATA_GPA) / 4096), thp,
	       hugepage, dirty_log, split, (unsigned long long)(tail / MiB),
	       getpid(), vm_debugfs_dir(&vm), vmm_mem_desc());
	t0 = now_mono();

	mark(1, "BASIC START");
	pass();
	vmm_mem_late(mem, mem_size);
	mprotect_cycle(2);
	pass();
	mark(3, "BASIC MADV_DONTNEED_UPPER_HALF");
	if (data_end > mem_size / 2 &&
	    madvise(mem + mem_size / 2, data_end - mem_size / 2, MADV_DONTNEED))
		die("madvise DONTNEED");
	printf("  MADV_DONTNEED on upper half\n");
	pass();
	if (dirty_log) {
		mark(4, "BASIC DIRTY_LOG_ON");
		vm_set_dirty_logging(&vm, 1);
		printf("  dirty logging enabled\n");
		pass();
		mark(5, "BASIC DIRTY_LOG_GET_OFF");
		dirty = vm_get_dirty_log(&vm);
		vm_set_dirty_logging(&vm, 0);
		printf("  dirty pages logged: %llu; dirty logging disabled\n",
		       (unsigned long long)dirty);
		pass();
	}
	mprotect_cycle(6);
	pass();
	if (split) {
		mark(8, "BASIC MPROTECT_SPLIT");
		if (mprotect(mem + DATA_GPA + MiB / 2, mem_size - 2 * MiB,
			     PROT_READ))
			die("mprotect RO (split)");
		if (mprotect(mem + DATA_GPA + MiB / 2, mem_size - 2 * MiB,
			     PROT_READ | PROT_WRITE))
			die("mprotect RW (split)");
		printf("  mprotect RO/RW cycle of [1.5 MiB, mem - 0.5 MiB)\n");
		pass();
	}
	mark(7, "BASIC STOP");
	printf("BASIC RESULT %s: %d passes, %.3fs total, bad=%d pages_4k=%lld pages_2m=%lld\n",
	       bad_total ? "FAIL" : "OK", npass, now_mono() - t0, bad_total,
	       vm_stat(&vm, "pages_4k"), vm_stat(&vm, "pages_2m"));
	vm_destroy(&vm);
	return bad_total ? 1 : 0;
}
