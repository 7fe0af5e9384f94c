/*
 * The host's total of per-VM replay results (docs/design.md, "VMs"):
 * each VM is replayed alone, as its own state, and a capture's figures
 * are the sums of its VMs'.
 *
 * Invariants: counts add; a fact known for one VM is known for the
 * total (a source measured anywhere is measured); times take the span
 * of all; the mismatches stay in trace (seq) order.
 */
#include "replay/engine.h"

#include "util/alloc.h"

#include <stdlib.h>
#include <string.h>

#define ADD(f) (dst->f += src->f)

static void add_array(int64_t *dst, const int64_t *src, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		dst[i] += src[i];
}

/* Measured beats inferred beats none (enum replay_source's order is not
 * relied on). */
static enum replay_source source_merge(enum replay_source a,
				       enum replay_source b)
{
	if (a == REPLAY_SRC_MEASURED || b == REPLAY_SRC_MEASURED)
		return REPLAY_SRC_MEASURED;
	if (a == REPLAY_SRC_INFERRED || b == REPLAY_SRC_INFERRED)
		return REPLAY_SRC_INFERRED;
	return a;
}

static int mismatch_cmp(const void *a, const void *b)
{
	const struct mismatch *x = a, *y = b;

	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

void replay_kept_by_add(struct replay_result *r, int32_t tid, int64_t n)
{
	int i;

	for (i = 0; i < r->nkept_by && r->kept_by[i].tid != tid; i++)
		;
	if (i == r->nkept_by) {
		if (i == REPLAY_KEPT_THREADS) {
			r->kept_by_other += n;
			return;
		}
		r->kept_by[r->nkept_by++].tid = tid;
	}
	r->kept_by[i].zaps += n;
}

int replay_result_merge(struct replay_result *dst,
			const struct replay_result *src, int first)
{
	int had_events = !first && dst->events > 0;
	int64_t i;

	if (first) {
		memset(dst, 0, sizeof(*dst));
		dst->policy = src->policy;
		dst->limits = src->limits;
		dst->nx_ratio_known = src->nx_ratio_known;
		dst->nx_workers_known = src->nx_workers_known;
		dst->span_start_ts = src->span_start_ts;
		dst->not_applicable = src->not_applicable;
		dst->lock_wait_min_ns = src->lock_wait_min_ns;
	} else if (src->lock_waits && (!dst->lock_waits ||
				       src->lock_wait_min_ns <
				       dst->lock_wait_min_ns)) {
		dst->lock_wait_min_ns = src->lock_wait_min_ns;
	}
	/* Not applicable only where it is for every VM. */
	if (!first && src->not_applicable == REPLAY_NA_NONE)
		dst->not_applicable = REPLAY_NA_NONE;
	ADD(events);
	ADD(faults_observed);
	ADD(zaps_observed);
	ADD(flushes_observed);
	dst->flushes_measured |= src->flushes_measured;
	ADD(flushes_other);
	ADD(flushes_teardown);
	ADD(faults_predicted);
	add_array(dst->faults_exempt, src->faults_exempt, EXEMPT_REASONS);
	ADD(zaps_predicted);
	ADD(flushes_predicted);
	dst->began_mid_run |= src->began_mid_run;
	ADD(events_before_span);
	ADD(faults_revealed);
	ADD(zaps_revealed);
	ADD(flushes_revealed);
	ADD(nx_recovered_revealed);
	ADD(nx_batches_revealed);
	ADD(contexts_before);
	ADD(memslots_dumped);
	if (src->warmup_ts > dst->warmup_ts)
		dst->warmup_ts = src->warmup_ts;
	if (src->events) {
		if (!had_events || src->first_ts < dst->first_ts)
			dst->first_ts = src->first_ts;
		if (!had_events || src->last_ts > dst->last_ts)
			dst->last_ts = src->last_ts;
	}
	ADD(race_windows);
	ADD(zaps_race_settled);
	ADD(nx_batches_settled);
	ADD(span_faults_settled);
	ADD(span_faults_old);
	ADD(nx_guessed_splits);
	ADD(nx_guessed_settled);
	ADD(vms_failed);
	/* The capture's, not the VM's: every VM has the same. */
	dst->kthread_events_decided = src->kthread_events_decided;
	dst->kthread_events_left = src->kthread_events_left;
	dst->aged_leaves_moved = src->aged_leaves_moved;
	dst->aged_leaves_unknown = src->aged_leaves_unknown;
	dst->windows_moved = src->windows_moved;
	dst->contexts_by_memslot = src->contexts_by_memslot;
	dst->windows_in_doubt = src->windows_in_doubt;
	dst->windows_no_vm = src->windows_no_vm;
	ADD(mismatches_total);
	add_array(dst->mismatches_by_kind, src->mismatches_by_kind,
		  MISMATCH_KINDS);
	if (src->nmismatches) {
		if (ALLOC_GROW(dst->mismatches, (size_t)(dst->nmismatches +
							  src->nmismatches),
			       dst->capmismatches))
			return -1;
		memcpy(dst->mismatches + dst->nmismatches, src->mismatches,
		       (size_t)src->nmismatches * sizeof(*src->mismatches));
		dst->nmismatches += src->nmismatches;
		qsort(dst->mismatches, (size_t)dst->nmismatches,
		      sizeof(*dst->mismatches), mismatch_cmp);
	}
	ADD(faults);
	ADD(faults_avoided);
	ADD(faults_added);
	ADD(faults_undecided);
	add_array(dst->zaps, src->zaps, ZAP_CAUSES);
	ADD(zaps_kept);
	ADD(zaps_kept_inferred);
	for (i = 0; i < src->nkept_by; i++)
		replay_kept_by_add(dst, src->kept_by[i].tid,
				   src->kept_by[i].zaps);
	dst->kept_by_other += src->kept_by_other;
	add_array(dst->refaults, src->refaults, ZAP_CAUSES);
	ADD(flushes);
	ADD(lock_wait_ns);
	ADD(lock_waits);
	ADD(lock_wait_removed_ns);
	if (valcount_merge(&dst->lat.npf, &src->lat.npf) < 0 ||
	    valcount_merge(&dst->lat.probe, &src->lat.probe) < 0)
		return -1;
	ADD(lat.npf_exits_removed);
	ADD(lat.npf_removed_ns);
	ADD(lat.npf_shortened_ns);
	ADD(lat.probe_removed_ns);
	dst->slots_src = source_merge(dst->slots_src, src->slots_src);
	dst->upgrade_src = source_merge(dst->upgrade_src, src->upgrade_src);
	dst->dirty_src = source_merge(dst->dirty_src, src->dirty_src);
	dst->lock_src = source_merge(dst->lock_src, src->lock_src);
	ADD(upgrade_windows);
	add_array(&dst->upgrade_infer[0][0], &src->upgrade_infer[0][0], 4);
	ADD(recovery_batches);
	ADD(recovery_batches_run);
	ADD(recovery_batches_measured);
	dst->read_lock_unverifiable |= src->read_lock_unverifiable;
	ADD(nx_recovered_observed);
	ADD(nx_recovered_predicted);
	ADD(nx_splits_observed);
	if (src->nseconds > dst->nseconds) {
		struct replay_second *s = realloc(dst->series,
			(size_t)src->nseconds * sizeof(*s));

		if (!s)
			return -1;
		memset(s + dst->nseconds, 0, (size_t)(src->nseconds -
						       dst->nseconds) *
		       sizeof(*s));
		dst->series = s;
		dst->nseconds = src->nseconds;
	}
	for (i = 0; i < src->nseconds; i++) {
		dst->series[i].faults += src->series[i].faults;
		dst->series[i].zaps += src->series[i].zaps;
		dst->series[i].flushes += src->series[i].flushes;
		dst->series[i].lock_wait_ns += src->series[i].lock_wait_ns;
	}
	/* Each VM's tables are its own: the host holds them all. */
	ADD(peak_tdp_entries);
	return replay_latency_settle(dst);
}
