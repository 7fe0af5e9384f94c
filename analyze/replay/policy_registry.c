/*
 * The list of policies the CLI offers, the "no change" decisions that
 * policies share for the points they leave alone, and the policies made
 * on demand: sweeps of the recovery ratio or period, and combinations
 * of knob policies.  Made ones live for the life of the process, one
 * per distinct name (the CLI asks for a handful).
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

int policy_keeps_invalidation(const struct policy *p,
			      const struct replay_invalidation *inv)
{
	int i;

	if (!p->nparts)
		return p->keep_invalidation(inv);
	for (i = 0; i < p->nparts; i++)
		if (p->parts[i]->keep_invalidation(inv))
			return 1;
	return 0;
}

int policy_skips_recovery(const struct policy *p,
			  const struct replay_recovery *rec)
{
	int i;

	if (!p->nparts)
		return p->skip_recovery(rec);
	for (i = 0; i < p->nparts; i++)
		if (p->parts[i]->skip_recovery(rec))
			return 1;
	return 0;
}

int policy_nx_only(const struct policy *p)
{
	int i;

	if (p->nparts) {
		for (i = 0; i < p->nparts; i++)
			if (!policy_nx_only(p->parts[i]))
				return 0;
		return 1;
	}
	return p->keep_invalidation == policy_keep_none &&
		(p->skip_recovery != policy_skip_none ||
		 p->recovery_read_lock || p->nx_ratio || p->nx_period_ms);
}

enum policy_figure_kind policy_figure_kind(const char *name,
					   const char *recorded,
					   enum policy_figure fig)
{
	const struct policy *p = policy_find(name);

	if (strcmp(name, recorded) == 0)
		return POLICY_FIGURE_RESTATED;
	return p && (p->not_modelled & fig) ? POLICY_FIGURE_NOT_MODELLED :
		POLICY_FIGURE_PREDICTED;
}

const char *policy_figure_kind_name(enum policy_figure_kind kind)
{
#define POLICY_FIGURE_KIND_NAME(e, name) [e] = name,
	static const char *const names[] = {
		POLICY_FIGURE_KIND_LIST(POLICY_FIGURE_KIND_NAME)
	};
#undef POLICY_FIGURE_KIND_NAME

	return names[kind];
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

/* The knob policies of the registry, in its order (all but baseline). */
static int knob_index(const struct policy *p)
{
	int i;

	for (i = 1; policy_registry[i]; i++)
		if (policy_registry[i] == p)
			return i;
	return -1;
}

#define MAX_COMBO 8
#define COMBO_TEXT 1024

static struct policy combo[MAX_COMBO];
static char combo_names[MAX_COMBO][64];
static char combo_summaries[MAX_COMBO][COMBO_TEXT];
static char combo_limits[MAX_COMBO][COMBO_TEXT];
static int ncombo;

/* Appends "sep text" to buf (size COMBO_TEXT), cut if it must be. */
static void text_append(char *buf, const char *sep, const char *text)
{
	size_t len = strlen(buf);

	snprintf(buf + len, COMBO_TEXT - len, "%s%s", len ? sep : "", text);
}

const struct policy *policy_combine(const struct policy *const *parts,
				    int n)
{
	const struct policy *sorted[POLICY_MAX_PARTS] = { NULL };
	struct policy *c;
	int i, k;

	if (n < 2 || n > POLICY_MAX_PARTS)
		return NULL;
	for (i = 0; i < n; i++) {
		k = knob_index(parts[i]);
		if (k < 1 || k > POLICY_MAX_PARTS || sorted[k - 1])
			return NULL;
		sorted[k - 1] = parts[i];
	}
	/* One policy per combination, whatever order it was named in. */
	c = NULL;
	for (k = 0; k < ncombo && !c; k++) {
		int j = 0, same = 1;

		for (i = 0; i < POLICY_MAX_PARTS; i++) {
			if (!sorted[i])
				continue;
			if (j >= combo[k].nparts || combo[k].parts[j++] !=
			    sorted[i])
				same = 0;
		}
		if (same && j == combo[k].nparts)
			c = &combo[k];
	}
	if (c)
		return c;
	if (ncombo == MAX_COMBO)
		return NULL;
	c = &combo[ncombo];
	memset(c, 0, sizeof(*c));
	for (i = 0; i < POLICY_MAX_PARTS; i++) {
		const struct policy *p = sorted[i];

		if (!p)
			continue;
		c->parts[c->nparts++] = p;
		text_append(combo_names[ncombo], "+", p->name);
		text_append(combo_summaries[ncombo], "; ", p->summary);
		if (p->limits)
			text_append(combo_limits[ncombo], "; ", p->limits);
		c->recovery_read_lock |= p->recovery_read_lock;
		c->not_modelled |= p->not_modelled;
	}
	c->name = combo_names[ncombo];
	c->summary = combo_summaries[ncombo];
	c->limits = combo_limits[ncombo][0] ? combo_limits[ncombo] : NULL;
	c->keep_invalidation = policy_keep_none;
	c->skip_recovery = policy_skip_none;
	ncombo++;
	return c;
}

/* "a+b[+c]": each a knob policy of the registry. */
static const struct policy *combo_find(const char *name)
{
	const struct policy *parts[POLICY_MAX_PARTS];
	char buf[128], *tok, *save = NULL;
	int n = 0, i;

	if (!strchr(name, '+') || strlen(name) >= sizeof(buf))
		return NULL;
	snprintf(buf, sizeof(buf), "%s", name);
	for (tok = strtok_r(buf, "+", &save); tok;
	     tok = strtok_r(NULL, "+", &save)) {
		for (i = 1; policy_registry[i] &&
		     strcmp(policy_registry[i]->name, tok); i++)
			;
		if (!policy_registry[i] || n == POLICY_MAX_PARTS)
			return NULL;
		parts[n++] = policy_registry[i];
	}
	return policy_combine(parts, n);
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
	return strchr(name, '+') ? combo_find(name) : sweep_find(name);
}
