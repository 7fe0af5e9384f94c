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
	.limits = "the faults after dirty logging is switched off: in "
		  "held-out lab pairs the knob-on runs took 850-930 fewer "
		  "in the 0.2 s after it (A 2,104 / 1,594, B 1,250 / 662), "
		  "where identical knob-off runs vary from 251 to 1,327 "
		  "faults; whole-run faults are judged there, not predicted",
	.not_modelled = POLICY_FIG_FAULTS,
};
