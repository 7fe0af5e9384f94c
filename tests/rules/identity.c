/*
 * Identity: who did it (VM, root) where the trace does not name it.
 */
#include "scenario.h"

/*
 * A memslot deletion (kvm_mmu_zap_all_fast()) invalidates the root; the
 * vCPU loads a new one and refaults page 0x1 into it with the same
 * SPTE, and the old root is zapped afterwards (6.1: its L2 table's
 * removal first, then the leaves beneath).  The old root's zaps are its
 * own (2), and the later zap of the new root's leaf is predicted (1).
 * With rule roots off, the old root's zap takes the new root's leaf:
 * the last zap is a zap_count mismatch.
 */
static void test_coexisting_roots(void)
{
	int off;

	for (off = 0; off <= 1; off++) {
		nev = 0;
		rules_off = off ? REPLAY_RULE_BIT(RULE_ROOTS) : 0;
		memslot(0);
		spte(VCPU, 3, 0, NONPRESENT_612, TABLE);
		spte(VCPU, 2, 0, NONPRESENT_612, TABLE + 0x1000);
		spte(VCPU, 1, 0x1, NONPRESENT_612, RW_4K);
		spte(VCPU, 1, 0x2, NONPRESENT_612, RW_4K + 0x1000);
		entry();
		setregion_entry();
		sp_event(MEV_SP_ALLOC, VCPU, 4, 0);             /* new root */
		spte(VCPU, 3, 0, NONPRESENT_612, TABLE + 0x2000);
		spte(VCPU, 2, 0, NONPRESENT_612, TABLE + 0x3000);
		spte(VCPU, 1, 0x1, NONPRESENT_612, RW_4K);      /* same */
		entry();
		spte(VMM, 3, 0, TABLE, NONPRESENT_612);         /* old root */
		sp_event(MEV_SP_FREE, VMM, 2, 0);
		spte(VMM, 2, 0, TABLE + 0x1000, FROZEN_612);
		sp_event(MEV_SP_FREE, VMM, 1, 0);
		spte(VMM, 1, 0x1, RW_4K, FROZEN_612);
		spte(VMM, 1, 0x2, RW_4K + 0x1000, FROZEN_612);
		syscall_exit(VMM);
		stock_notifier(0x1, 1);                         /* new root */
		spte(VMM, 1, 0x1, RW_4K, NONPRESENT_612);
		syscall_exit(VMM);
		zaps_judged(off, 3);
	}
	rules_off = 0;
}

const struct scenario rules_identity[] = {
	{ "coexisting_roots", test_coexisting_roots },
};
const int rules_identity_n =
	(int)(sizeof(rules_identity) / sizeof(rules_identity[0]));
