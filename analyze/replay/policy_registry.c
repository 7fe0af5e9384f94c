/*
 * The list of policies the CLI offers, and the "no change" decisions
 * that policies share for the points they leave alone.
 */
#include "replay/policy.h"

#include <stddef.h>
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
 * Sweeps: baseline rules with another recovery ratio or period.  Each
 * distinct value asked for gets one slot (the CLI asks for a handful);
 * the names stay valid for the life of the process.
 */
static struct policy sweep[MAX_SWEEP];
static char sweep_names[MAX_SWEEP][32];
static int nsweep;

static const struct {
	const char *prefix;
	size_t off;             /* the int64_t member of struct policy */
	const char *summary, *limits;
} sweep_kinds[] = {
	{ "nx-ratio=", offsetof(struct policy, nx_ratio),
	  "baseline with another NX recovery ratio",
	  "below the recorded ratio, the pages its larger batches would "
	  "take (not in the trace): it undercounts" },
	{ "nx-period=", offsetof(struct policy, nx_period_ms),
	  "baseline with another NX recovery period (ms)",
	  "the phase of the slower worker's wake-ups: the first traced "
	  "batch is taken as one it runs" },
};

static int64_t *sweep_value(struct policy *p, size_t off)
{
	return (int64_t *)(void *)((char *)p + off);
}

static const struct policy *sweep_find(const char *name)
{
	size_t k, len;
	char *end;
	long long v;
	int i;

	for (k = 0; k < sizeof(sweep_kinds) / sizeof(sweep_kinds[0]); k++) {
		len = strlen(sweep_kinds[k].prefix);
		if (strncmp(name, sweep_kinds[k].prefix, len) == 0)
			break;
	}
	if (k == sizeof(sweep_kinds) / sizeof(sweep_kinds[0]))
		return NULL;
	v = strtoll(name + len, &end, 10);
	if (*end || end == name + len || v <= 0 || v > 100000000)
		return NULL;
	for (i = 0; i < nsweep; i++)
		if (strncmp(sweep[i].name, name, len) == 0 &&
		    *sweep_value(&sweep[i], sweep_kinds[k].off) == v)
			return &sweep[i];
	if (nsweep == MAX_SWEEP)
		return NULL;
	snprintf(sweep_names[nsweep], sizeof(sweep_names[0]), "%s%lld",
		 sweep_kinds[k].prefix, v);
	sweep[nsweep] = policy_baseline;
	sweep[nsweep].name = sweep_names[nsweep];
	sweep[nsweep].summary = sweep_kinds[k].summary;
	sweep[nsweep].limits = sweep_kinds[k].limits;
	*sweep_value(&sweep[nsweep], sweep_kinds[k].off) = v;
	return &sweep[nsweep++];
}

int64_t policy_period_factor(const struct policy *p, int64_t recorded_ms)
{
	if (!p->nx_period_ms)
		return 1;
	if (recorded_ms <= 0 || p->nx_period_ms % recorded_ms)
		return 0;
	return p->nx_period_ms / recorded_ms;
}

const struct policy *policy_find(const char *name)
{
	int i;

	for (i = 0; policy_registry[i]; i++)
		if (strcmp(policy_registry[i]->name, name) == 0)
			return policy_registry[i];
	return sweep_find(name);
}
