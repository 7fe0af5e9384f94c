/*
 * baseline: Linux 6.1 LTS.  Every invalidation zaps, NX recovery runs
 * under the write lock and recovers dirty-logged pages too.
 */
#include "replay/policy.h"


const struct policy policy_baseline = {
	.name = "baseline",
	.summary = "Linux 6.1: zap on every invalidation, recover NX pages "
		   "under the write lock, dirty-logged ones too",
	.keep_invalidation = policy_keep_none,
	.skip_recovery = policy_skip_none,
	.recovery_read_lock = 0,
};
