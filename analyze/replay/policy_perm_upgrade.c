/*
 * perm-upgrade: an invalidation that only loosens permissions (an
 * mprotect or uffd-wp unprotect; MMU_NOTIFIER_RANGE_PERM_UPGRADE) keeps
 * the SPTEs: the old ones stay valid, so nothing is zapped or flushed,
 * and a later fault is avoided when the kept leaf permits the access.
 */
#include "replay/policy.h"

static int keep_upgrade(const struct replay_invalidation *inv)
{
	return inv->is_upgrade;
}

const struct policy policy_perm_upgrade = {
	.name = "perm-upgrade",
	.summary = "keep SPTEs on an invalidation that only loosens "
		   "permissions",
	.keep_invalidation = keep_upgrade,
	.skip_recovery = policy_skip_none,
	.recovery_read_lock = 0,
	/* A kept invalidation still takes mmu_lock, briefly, to decide:
	 * the faults that meet that hold wait at moments of the policy's
	 * own run, which no recorded wait dates.  Their time is short (the
	 * lock-wait time stays a bound), their number is not. */
	.not_modelled = POLICY_FIG_LOCK_WAIT_COUNT,
	/* What the lab pairs measured of it: docs/design.md, "What the
	 * policies leave out". */
	.limits = "the waits that the short mmu_lock hold of a kept "
		  "invalidation (the kernel still takes the lock to "
		  "decide) makes where the recorded vCPUs did not wait; "
		  "that hold is taken as the recorded one up to its first "
		  "zap",
};
