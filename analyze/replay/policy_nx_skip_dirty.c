/*
 * nx-skip-dirty: NX huge page recovery leaves pages of dirty-logged slots
 * split; zapping them only makes the guest refault them at 4 KiB.
 */
#include "replay/policy.h"

static int skip_dirty(const struct replay_recovery *rec)
{
	return rec->dirty_logged;
}

const struct policy policy_nx_skip_dirty = {
	.name = "nx-skip-dirty",
	.summary = "do not recover NX huge pages of dirty-logged slots",
	.keep_invalidation = policy_keep_none,
	.skip_recovery = skip_dirty,
	.recovery_read_lock = 0,
	/* What the lab pairs measured of it: docs/design.md, "What the
	 * policies leave out". */
	.limits = "a few of the faults its kept pages avoid while dirty "
		  "logging is on (6.12 lab run sets: 42 of 46), so "
		  "whole-run faults are not predicted",
	.not_modelled = POLICY_FIG_FAULTS | POLICY_FIG_NPF_LATENCY |
		POLICY_FIG_PROBE_LATENCY,
};
