/*
 * nx-readlock: recover NX huge pages under the MMU read lock (upstream in
 * 6.18): vCPU faults no longer wait for the recovery worker.
 */
#include "replay/policy.h"

const struct policy policy_nx_readlock = {
	.name = "nx-readlock",
	.summary = "recover NX huge pages under the read lock",
	.keep_invalidation = policy_keep_none,
	.skip_recovery = policy_skip_none,
	.recovery_read_lock = 1,
	/* What the lab pairs measured of it: docs/design.md, "What the
	 * policies leave out". */
	.limits = "the faults vCPUs retry while the read-locked worker "
		  "zaps (so the NPF service times; the probe's samples "
		  "take the retries as free)",
	/* The replay keeps the recorded faults (the retries are not
	 * modelled) and the recorded recovery's zaps (the same pages,
	 * under the other lock): both the recorded run's by construction.
	 * The retries' exits, short and many, would move every percentile
	 * of the NPF service times; a probe sample holds one access, whose
	 * retries cost microseconds against the waits the policy removes. */
	.not_modelled = POLICY_FIG_FAULTS | POLICY_FIG_LEAF_ZAPS |
		POLICY_FIG_NPF_LATENCY,
};
