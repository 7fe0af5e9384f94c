/*
 * The list of policies the CLI offers, and the "no change" decisions
 * that policies share for the points they leave alone.
 */
#include "replay/policy.h"

#include <string.h>

int policy_keep_none(const struct replay_invalidation *inv)
{
	(void)inv;
	return 0;
}

int policy_skip_none(const struct replay_recovery *rec)
{
	(void)rec;
	return 0;
}

const struct policy *const policy_registry[] = {
	&policy_baseline,
	&policy_perm_upgrade,
	&policy_nx_skip_dirty,
	&policy_nx_readlock,
	NULL,
};

const struct policy *policy_find(const char *name)
{
	int i;

	for (i = 0; policy_registry[i]; i++)
		if (strcmp(policy_registry[i]->name, name) == 0)
			return policy_registry[i];
	return NULL;
}
