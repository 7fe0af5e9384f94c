/*
 * The list of policies the CLI offers, and the "no change" decisions
 * that policies share for the points they leave alone.
 */
#include "replay/policy.h"

#include <stdio.h>
#include <stdlib.h>
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

#define MAX_SWEEP 16

/*
 * Ratio sweeps: baseline rules with another recovery ratio.  Each distinct
 * ratio asked for gets one slot (the CLI asks for a handful); the names
 * stay valid for the life of the process.
 */
static struct policy sweep[MAX_SWEEP];
static char sweep_names[MAX_SWEEP][32];
static int nsweep;

static const struct policy *sweep_find(const char *name)
{
	char *end;
	long long ratio;
	int i;

	if (strncmp(name, "nx-ratio=", 9) != 0)
		return NULL;
	ratio = strtoll(name + 9, &end, 10);
	if (*end || ratio <= 0 || ratio > 1000000)
		return NULL;
	for (i = 0; i < nsweep; i++)
		if (sweep[i].nx_ratio == ratio)
			return &sweep[i];
	if (nsweep == MAX_SWEEP)
		return NULL;
	snprintf(sweep_names[nsweep], sizeof(sweep_names[0]), "nx-ratio=%lld",
		 ratio);
	sweep[nsweep] = policy_baseline;
	sweep[nsweep].name = sweep_names[nsweep];
	sweep[nsweep].summary = "baseline with another NX recovery ratio";
	sweep[nsweep].nx_ratio = ratio;
	return &sweep[nsweep++];
}

const struct policy *policy_find(const char *name)
{
	int i;

	for (i = 0; policy_registry[i]; i++)
		if (strcmp(policy_registry[i]->name, name) == 0)
			return policy_registry[i];
	return sweep_find(name);
}
