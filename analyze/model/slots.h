/*
 * Memslots: how host virtual addresses (what mmu_notifier ranges speak)
 * map to guest frames (what the TDP MMU speaks), and which slots are
 * dirty-logged.
 *
 * Patched kernels trace every memslot change (MEV_MEMSLOT); the table is
 * then measured.  Stock kernels do not, so the mapping is inferred from
 * the invalidations themselves: a window over [hva_start, hva_end) that
 * zapped 4K gfns [gmin, gmax] bounds the slot's offset (hva - gfn * 4096)
 * to [hva_start - gmin * 4096, hva_end - (gmax + 1) * 4096] (a huge leaf,
 * zapped whole when the window meets part of it, bounds it through the
 * alignment KVM requires for it: see scan.c); windows whose bounds
 * intersect belong to the same slot and narrow it; while a range, the
 * offset in it that agrees with the gfn in 2 MiB is used (slots.c
 * slot_off()).  Inferred slots say so (slots_inferred()).
 */
#ifndef MMUREPLAY_MODEL_SLOTS_H
#define MMUREPLAY_MODEL_SLOTS_H

#include "model/kernel.h"

#include <stdint.h>

#define SLOTS_MAX 64

struct slot {
	int as_id, id;
	uint64_t base_gfn, npages;      /* npages 0: extent unknown */
	int64_t off_lo, off_hi;         /* hva - gfn * 4096 */
	int dirty_log;
	int inferred;
	int live;
};

struct slots {
	struct slot s[SLOTS_MAX];
	int n;
	int measured;                   /* memslot events were seen */
};

void slots_init(struct slots *ss);
/* A traced memslot change (patched kernels). */
void slots_apply_event(struct slots *ss, int as_id, int id, int change,
		       uint64_t base_gfn, uint64_t npages, uint64_t hva,
		       uint64_t new_flags);
/* Whether a traced change of slot (as_id, id) is held (live or
 * deleted). */
int slots_traced(const struct slots *ss, int as_id, int id);
/* Learn from a window whose zaps bound the offset to [lo, hi] and whose
 * lowest zapped leaf is at gfn first (the slot starts at or below it). */
void slots_infer(struct slots *ss, int64_t lo, int64_t hi, uint64_t first);
/*
 * Map [hs, he) to gfn ranges, calling fn once per live slot that
 * overlaps; returns how many slots were used.
 */
int slots_hva_to_gfn(const struct slots *ss, uint64_t hs, uint64_t he,
		     void (*fn)(void *arg, int as_id, uint64_t gs,
				uint64_t ge), void *arg);
/* Is gfn in a dirty-logged slot? */
int slots_dirty_logged(const struct slots *ss, int as_id, uint64_t gfn);
int slots_inferred(const struct slots *ss);

#endif
