/*
 * Replay rules on small hand-built event sequences (SYNTHETIC events in
 * the shape the Linux 6.1 TDP MMU traces them, 6.12 where said), one
 * scenario per rule of docs/design.md, "The model".  The scenarios live
 * in tests/rules/, a file per layer of the model, each file's comment
 * saying what its layer is: kernel (the kernel's semantics), timing (a
 * change and its tracepoint apart), identity (who did it), facts (what
 * a stock kernel or a mid-run capture hides), verdict (how the
 * self-check judges) and policy (what a what-if changes); the builder
 * they share is tests/rules/scenario.h.  By subject:
 *
 *   perm-upgrade   a zap on a pure upgrade, then a read fault: avoided;
 *                  then a write fault on the kept read-only leaf: still
 *                  a fault; no TLB flush for the kept invalidation;
 *   nx-skip-dirty  recovery of a page in a dirty-logged slot: skipped,
 *                  and the exec refault that followed disappears; the
 *                  table it kept goes in the collapse when logging
 *                  stops, and the fault after it is a refault;
 *   nx-readlock    a vCPU's lock wait inside a write-locked recovery
 *                  window: removed; one outside it: kept;
 *   nx-period=MS   twice the recorded period: every other batch is not
 *                  run, its page stays split (the refault disappears)
 *                  and the lock wait inside it goes; the recorded period
 *                  is baseline; a period that is not a multiple of the
 *                  recorded one is refused;
 *   combined       two knob policies at once: each decision point takes
 *                  the change of the part that makes one;
 *   nx_snapshot    a batch one short of the model's count is settled by
 *                  the trace when a split was accounted after the
 *                  worker woke, and a mismatch when none was;
 *   nx_off         with the mitigation off the worker's table frees are
 *                  a teardown, not a recovery batch;
 *   free after link a removed table freed after a new one took its
 *                  place: its free predicts the removed table's leaves;
 *   nx_count       a write-locked batch's end count against the model's
 *                  list (not a read-locked one's); two tables at one
 *                  entry for a while (read-locked recovery) both listed;
 *   self-check     a fault that a present leaf permits, and an
 *                  invalidation that zaps fewer leaves than the model
 *                  holds, are reported as mismatches;
 *   reachability   a leaf under a zapped parent table does not map;
 *   races          an NPF traced before the recovery zap that caused it
 *                  (inside a batch: explained by that zap); one that no
 *                  later zap explains, or that comes after a stock
 *                  batch went quiet, is a mismatch; a traced batch that
 *                  pauses stays one batch;
 *   verdict        per-context mismatches of opposite sign fail it
 *                  although the totals agree;
 *   lock waits     a vCPU's wait for the write lock of an invalidation
 *                  whose zaps the policy keeps goes; so does the wait
 *                  of a fault the policy avoids;
 *   both ways      under the recorded policy no fault is avoided; a
 *                  policy that kept a read-only leaf takes the write
 *                  fault the trace shows only as the dirty bit of the
 *                  writable leaf the recorded kernel mapped instead;
 *   huge pages     a fault zaps a 2M leaf only when its goal level
 *                  (kvm_mmu_spte_requested) is below it; an unaligned
 *                  invalidation zaps the 2M leaf at its boundary, traced
 *                  at the leaf's aligned gfn; an eager split fills the
 *                  new table with 512 untraced 4K leaves that later zaps
 *                  find;
 *   stock windows  a leaf installed between a stock invalidation's start
 *                  and its walk is zapped by it: predicted when the
 *                  window holds leaves of its own, settled by the trace
 *                  (and counted) when it holds none; a huge leaf at a
 *                  window's boundary does not skew the inferred slot;
 *   teardown       a table torn down tears down the tables below it
 *                  inside its own walk, in entry order; the zap of the
 *                  whole VM that zaps leaves before tables (Linux 6.12)
 *                  is one teardown, also when the NX recovery worker
 *                  runs it (6.12: the vhost task that exits last); a
 *                  leaf another thread removes ahead of that zap's
 *                  walk is not its;
 *   fault split    a fault that splits a huge leaf in place (6.12)
 *                  zaps nothing;
 *   removed table  a table a fault links where a removed one was is
 *                  empty, and the removed table's entries traced after
 *                  that are not its, nor is its unlink traced after the
 *                  new table (6.12's read-locked collapse);
 *   frozen entry   faults in a range a thread flushed, traced before its
 *                  zap of the entry mapping it, are required;
 *   6.12 upgrade   a read fault retried inside a kept upgrade window is
 *                  avoided too, and the writable, dirty leaf a read
 *                  fault maps (6.12) is no evidence of a guest write;
 *   late capture   a sequence that begins while the VM runs: what it
 *                  only reveals is counted apart, never a mismatch;
 *   upgrade cause  on a stock kernel only mprotect or a userfaultfd
 *                  unprotect infers a permission upgrade, not a
 *                  kernel thread's invalidation refaulted identical;
 *   memslot swap   exec faults inside a dirty-logging change saw the
 *                  old memslots or the new, as the worker's count
 *                  settles (first in trace order the old ones);
 *   window leaves  a stock invalidation zaps leaves only: a table its
 *                  thread removes later (the VM's teardown) ends it;
 *   window walk    a window's walk is past the whole span of the huge
 *                  leaf it zapped: another thread's zap there later is
 *                  no removal ahead of it;
 *   aging flush    the flush after a thread cleared accessed bits is
 *                  the page aging's, not its fault's.
 */

#include "rules/scenario.h"
#include "util/assert.h"

/* check.h's count, one for every file of the test (CHECK_FAILURES_EXTERN). */
int failures;

/* The layers, in the order they run (tests/rules/LAYER.c). */
static const struct layer {
	const char *name;
	const struct scenario *scenarios;
	const int *n;
} layers[] = {
	{ "kernel", rules_kernel, &rules_kernel_n },
	{ "timing", rules_timing, &rules_timing_n },
	{ "identity", rules_identity, &rules_identity_n },
	{ "facts", rules_facts, &rules_facts_n },
	{ "verdict", rules_verdict, &rules_verdict_n },
	{ "policy", rules_policy, &rules_policy_n },
};
#define NLAYERS (int)(sizeof(layers) / sizeof(layers[0]))

/* Whether arg names scenario s of layer l: LAYER.NAME, or NAME alone. */
static int named(const char *arg, const struct layer *l,
		 const struct scenario *s)
{
	size_t n = strlen(l->name);

	if (strncmp(arg, l->name, n) == 0 && arg[n] == '.')
		arg += n + 1;
	return strcmp(arg, s->name) == 0;
}

/* Every scenario with its layer, layer by layer in table order. */
#define MAX_SCENARIOS 256
static struct entry {
	const struct layer *l;
	const struct scenario *s;
} all[MAX_SCENARIOS];
static int nall;

/* Whether any of argv[1..argc-1] names e. */
static int wanted(int argc, char **argv, const struct entry *e)
{
	int j;

	for (j = 1; j < argc; j++)
		if (named(argv[j], e->l, e->s))
			return 1;
	return 0;
}

/*
 * No argument: every scenario, layer by layer, in table order.
 * NAME...: those (LAYER.NAME or NAME).  --list: LAYER.NAME, one a line.
 * Exit 0 when every check held, 1 when one failed, 2 on a bad command
 * line (unknown name: nothing runs) or a name given twice in the tables.
 */
int main(int argc, char **argv)
{
	int i, j;

	for (i = 0; i < NLAYERS; i++)
		for (j = 0; j < *layers[i].n; j++) {
			MR_ASSERT(nall < MAX_SCENARIOS);
			all[nall].l = &layers[i];
			all[nall++].s = &layers[i].scenarios[j];
		}
	for (i = 0; i < nall; i++)
		for (j = 0; j < i; j++)
			if (strcmp(all[i].s->name, all[j].s->name) == 0) {
				fprintf(stderr, "%s: scenario '%s' named "
					"twice\n", argv[0], all[i].s->name);
				return 2;
			}
	if (argc == 2 && strcmp(argv[1], "--list") == 0) {
		for (i = 0; i < nall; i++)
			printf("%s.%s\n", all[i].l->name, all[i].s->name);
		return 0;
	}
	for (j = 1; j < argc; j++) {
		for (i = 0; i < nall; i++)
			if (named(argv[j], all[i].l, all[i].s))
				break;
		if (i == nall) {
			fprintf(stderr, "%s: no scenario named '%s' "
				"(--list names them)\n", argv[0], argv[j]);
			return 2;
		}
	}
	for (i = 0; i < nall; i++) {
		int before = failures;

		if (argc > 1 && !wanted(argc, argv, &all[i]))
			continue;
		all[i].s->fn();
		if (failures != before)
			fprintf(stderr, "scenario %s.%s: FAILED\n",
				all[i].l->name, all[i].s->name);
	}
	return check_finish();
}
