/*
 * Which VM a kernel thread's work belongs to (see vm_attr.h).
 *
 * Invariants: a context's candidates only shrink; once one VM is left
 * the context is decided and every event of it, buffered or later, maps
 * to that VM; a VM's leaves change only by events of that VM.
 */
#include "replay/vm_attr.h"

#include "model/tdp.h"
#include "util/alloc.h"
#include "util/ptrmap.h"

#include <stdlib.h>
#include <string.h>

/* Events a context holds before a zap tells its VM, at most. */
#define VM_ATTR_HELD_MAX 65536
/* Memslot hva bases learnt per VM, at most (a VMM has a handful of
 * memslots; a new one past these is not learnt). */
#define VM_ATTR_BASES 16

/* A kernel thread's open context, or a VM process thread's window
 * (own: its row's VM, kept when no zap tells another). */
struct kthread {
	uint64_t cand;                  /* VMs its zaps fit (bit vm - 1) */
	int vm;                         /* decided; 0: not yet */
	int own;
	int own_from_thread;            /* own: its thread's process's VM
					 * (the row had none: thread_vm) */
	int own_fit;                    /* own could hold a leaf it zapped */
	int own_unfit;                  /* ... and could not hold one */
	int own_held;                   /* own's state held one */
	int own_off;                    /* one of its zaps cannot be own's:
					 * own's memslot puts it outside its
					 * range, or own's state holds
					 * another page there */
	uint64_t others_held;           /* VMs whose state held one */
	int doubt;                      /* kept as own's on a guess
					 * (own_doubt()) */
	int zapped;                     /* it zapped a present leaf */
	struct model_event *held;       /* undecided: its events */
	size_t nheld, capheld;
	/* Its invalidation's hva range (hs == he: none), its zaps of a
	 * present leaf, and the first of them (level, gfn). */
	uint64_t hs, he;
	int nzaps, zap_level;
	uint64_t zap_gfn;
	/* VMs whose state alone held a leaf it zapped (a bit each), the
	 * memslot base (hva - gpa) its zaps bound, [blo, bhi], and the
	 * gfns they spanned, [glo, ghi). */
	uint64_t held_alone;
	int64_t blo, bhi;
	uint64_t glo, ghi;
};

/* A memslot base (hva - gpa) a window bounds, [lo, hi]: one value, or,
 * where its zaps did not reach both ends of its range, an interval; and
 * the gfns such windows zapped, [glo, ghi): the memslot holds them. */
struct base_span {
	int64_t lo, hi;
	uint64_t glo, ghi;
};

/* A VM's memslots as hva - gpa, learnt from windows decided for it
 * whose zaps include a leaf its state alone held (vm_bases_learn()). */
struct vm_bases {
	struct base_span base[VM_ATTR_BASES];
	int n;
};

struct pass {
	const struct spte_format *fmt;
	struct vm_attr *out;
	struct tdp *leaves;             /* [vm - 1] */
	struct tdp *changed;            /* [vm - 1]: each leaf's last
					 * change applied, its seq */
	int nvms;
	uint64_t all;                   /* every VM's bit */
	uint64_t complete;              /* VMs made in the capture */
	struct ptrmap threads;          /* tid -> struct kthread */
	/* tid -> the VM of the leaf it aged last, until its next event:
	 * a flush then is that VM's. */
	struct u64map aged_by;
	int64_t naged_by;               /* entries not 0 */
	struct vm_bases *bases;         /* [vm - 1] */
	unsigned rules;                 /* VM_ATTR_* */
	int nomem;
};

/* Whether ev zaps a leaf (model/spte.h spte_leaf_zapped()). */
static int ev_leaf_zap(const struct pass *p, const struct model_event *ev)
{
	return ev->kind == MEV_SPTE_CHANGE &&
		spte_leaf_zapped(p->fmt, ev->u.spte.old_spte,
				 ev->u.spte.new_spte, ev->u.spte.level);
}

/* An SPTE change of vm: its leaves as the change leaves them. */
/*
 * A huge leaf replaced by a table in one change is split in place
 * (tdp_mmu_split_huge_page(): 6.12's fault on an NX huge page, eager
 * splitting when dirty logging starts): the table was filled before it
 * was linked, so its entries are never traced as set.  The VM's state
 * holds them as the replay does (engine_overlay.c, rule eager_split),
 * so an aged child (reclaim in another VM's thread clearing its
 * accessed bit) is known as this VM's, not taken for a leaf under a
 * table of another VM whose entries its state never showed.
 */
static void leaves_split(struct pass *p, int vm, const struct model_event *ev)
{
	int level = ev->u.spte.level, as = ev->u.spte.as_id;
	uint64_t old = ev->u.spte.old_spte, new = ev->u.spte.new_spte;
	uint64_t step;
	unsigned i;

	if (!(p->rules & VM_ATTR_EAGER_SPLIT) || level <= TDP_LEVEL_4K ||
	    !spte_present_leaf(p->fmt, old, level) ||
	    !spte_present(p->fmt, new) || spte_leaf(p->fmt, new, level))
		return;
	/* A level below 4K has no size: only now is level - 1 one. */
	step = tdp_level_pages(level - 1);
	for (i = 0; i < TDP_TABLE_ENTRIES; i++)
		if (tdp_set(&p->leaves[vm - 1], as, level - 1,
			    ev->u.spte.gfn + i * step,
			    spte_split_child(p->fmt, old, level - 1, i)) < 0 ||
		    tdp_set(&p->changed[vm - 1], as, level - 1,
			    ev->u.spte.gfn + i * step, ev->seq) < 0)
			p->nomem = 1;
}

static void leaves_apply(struct pass *p, int vm,
			 const struct model_event *ev)
{
	if (vm < 1 || vm > p->nvms || ev->kind != MEV_SPTE_CHANGE)
		return;
	if (tdp_set(&p->leaves[vm - 1], ev->u.spte.as_id, ev->u.spte.level,
		    ev->u.spte.gfn, ev->u.spte.new_spte) < 0 ||
	    tdp_set(&p->changed[vm - 1], ev->u.spte.as_id, ev->u.spte.level,
		    ev->u.spte.gfn, ev->seq) < 0)
		p->nomem = 1;
	leaves_split(p, vm, ev);
}

/* x rounded down to a multiple of a (a > 0), negative x too. */
static int64_t floor_to(int64_t x, int64_t a)
{
	int64_t q = x / a;

	if (x % a && x < 0)
		q--;
	return q * a;
}

/*
 * The memslot base a zap of the leaf at (level, gfn) by an invalidation
 * of [hs, he) bounds: the walk zaps a leaf whose span meets the range
 * through the memslot (kvm_handle_hva_range(): hva = base + gpa), so
 * base + gfn * 4096 < he and hs < base + (gfn + pages) * 4096; and a
 * huge leaf's memslot has hva and gpa agree in its size (KVM maps no
 * huge page in a memslot whose userspace_addr and base_gfn disagree
 * there: kvm_alloc_memslot_metadata()), so base is a multiple of it.
 * Folded into k's [blo, bhi] (blo > bhi: its zaps fit no one base, as
 * when its range covers several memslots), and [glo, ghi).
 */
static void base_bound(struct kthread *k, int level, uint64_t gfn)
{
	int64_t g = (int64_t)gfn << 12;
	int64_t n = (int64_t)tdp_level_pages(level) << 12;
	int64_t lo = (int64_t)k->hs - g - n + 4096;
	int64_t hi = (int64_t)k->he - g - 4096;

	if (level > TDP_LEVEL_4K) {
		lo = -floor_to(-lo, n);
		hi = floor_to(hi, n);
	}
	if (k->nzaps == 1 || lo > k->blo)
		k->blo = lo;
	if (k->nzaps == 1 || hi < k->bhi)
		k->bhi = hi;
	if (k->nzaps == 1 || gfn < k->glo)
		k->glo = gfn;
	if (k->nzaps == 1 || gfn + tdp_level_pages(level) > k->ghi)
		k->ghi = gfn + tdp_level_pages(level);
}

/*
 * A window decided for vm, one of whose zaps was of a leaf vm's state
 * alone held (pfn included), tells one of vm's memslots: the base its
 * zaps bound (base_bound()); exact where they reach both ends of the
 * range (a 4K uffd-wp unprotect, a KSM merge, a reclaimed page; a 2M
 * collapse; the VM's exit that zapped its first and last page), else
 * an interval.  Only where its state alone held one: a decision of its
 * thread's VM by default (a capture begun mid-run, where no state
 * showed the leaves) would teach one VM another's base.  A narrower
 * span of the same memslot replaces the one it lies in.
 */
static void vm_bases_learn(struct pass *p, int vm, const struct kthread *k)
{
	struct vm_bases *b;
	int i;

	if (vm < 1 || vm > p->nvms || !k->nzaps || k->he <= k->hs ||
	    !(k->held_alone & 1ull << (vm - 1)) || k->blo > k->bhi)
		return;
	/* Without the rule: one zap that pins the base alone. */
	if (!(p->rules & VM_ATTR_SLOT_SPAN) &&
	    (k->nzaps != 1 || k->blo != k->bhi))
		return;
	b = &p->bases[vm - 1];
	for (i = 0; i < b->n; i++) {
		struct base_span *s = &b->base[i];

		if (s->lo <= k->blo && k->bhi <= s->hi) {
			s->lo = k->blo;
			s->hi = k->bhi;
		} else if (!(k->blo <= s->lo && s->hi <= k->bhi)) {
			continue;
		}
		if (k->glo < s->glo)
			s->glo = k->glo;
		if (k->ghi > s->ghi)
			s->ghi = k->ghi;
		return;
	}
	if (b->n < VM_ATTR_BASES)
		b->base[b->n++] = (struct base_span){
			k->blo, k->bhi, k->glo, k->ghi,
		};
}

/* Whether span s can put the leaf at (level, gfn) inside k's range. */
static int base_maps(const struct base_span *s, const struct kthread *k,
		     int level, uint64_t gfn)
{
	int64_t lo = s->lo + (int64_t)(gfn << 12);
	int64_t hi = s->hi + (int64_t)((gfn + tdp_level_pages(level)) << 12);

	return lo < (int64_t)k->he && (int64_t)k->hs < hi;
}

/*
 * The VMs (bits) that cannot have zapped the leaf at (level, gfn) in
 * k's invalidation: a memslot learnt for the VM holds that gfn, and
 * puts it outside the range.  A VM's memslots do not overlap in gpa
 * (__kvm_set_memory_region() refuses it), so no other memslot of it
 * can map the gfn there.
 * What it cannot catch: a memslot moved to another hva since it was
 * learnt (deleted and made again), which it takes for another VM's.
 */
static uint64_t vm_bases_excluding(const struct pass *p,
				   const struct kthread *k, int level,
				   uint64_t gfn)
{
	uint64_t out = 0, n = tdp_level_pages(level);
	int v, i, holds, maps;

	if (k->he <= k->hs || !(p->rules & VM_ATTR_SLOT_EXCL))
		return 0;
	for (v = 0; v < p->nvms; v++) {
		const struct vm_bases *b = &p->bases[v];

		holds = maps = 0;
		for (i = 0; i < b->n; i++) {
			holds |= b->base[i].glo <= gfn &&
				gfn + n <= b->base[i].ghi;
			maps |= base_maps(&b->base[i], k, level, gfn);
		}
		if (holds && !maps)
			out |= 1ull << v;
	}
	return out;
}

/*
 * Of the VMs in cand, those with a learnt memslot that maps the leaf ev
 * zaps into k's hva range: an invalidation zaps only the gfns its range
 * maps to through the VM's memslots (kvm_handle_hva_range()), so a VM
 * whose memslot puts that leaf elsewhere in the host's address space
 * is not the one, where another VM's puts it inside.  A VM with no
 * learnt memslot, or whose learnt ones do not reach the leaf, tells
 * nothing here (it may have memslots not learnt): this only picks;
 * vm_bases_excluding() excludes, where a learnt memslot holds the gfn.
 */
static uint64_t vm_bases_mapping(const struct pass *p,
				 const struct kthread *k, uint64_t cand,
				 int level, uint64_t gfn)
{
	uint64_t out = 0;
	int v, i;

	if (k->he <= k->hs)
		return 0;
	for (v = 0; v < p->nvms; v++) {
		const struct vm_bases *b = &p->bases[v];

		if (!(cand & (1ull << v)))
			continue;
		for (i = 0; i < b->n; i++)
			if (base_maps(&b->base[i], k, level, gfn)) {
				out |= 1ull << v;
				break;
			}
	}
	return out;
}

/*
 * Which VMs the leaf this change zaps fits: *held, those whose state
 * holds it (present, the same pfn); the return, those whose state does
 * not contradict it (it holds it, or never showed that entry: a capture
 * that began mid-run).
 */
static uint64_t zap_fits(const struct pass *p, const struct model_event *ev,
			 uint64_t *held)
{
	uint64_t fits = 0, now;
	int v, as = ev->u.spte.as_id, level = ev->u.spte.level;

	*held = 0;
	for (v = 0; v < p->nvms; v++) {
		if (!tdp_stored(&p->leaves[v], as, level, ev->u.spte.gfn)) {
			fits |= 1ull << v;
			continue;
		}
		now = tdp_get(&p->leaves[v], as, level, ev->u.spte.gfn);
		if (spte_present_leaf(p->fmt, now, level) &&
		    spte_pfn(p->fmt, now) == spte_pfn(p->fmt, ev->u.spte.old_spte)) {
			fits |= 1ull << v;
			*held |= 1ull << v;
		}
	}
	return fits;
}

/* Whether vm's state holds a present leaf where ev changes one, of
 * another page than ev's. */
static int holds_other_page(const struct pass *p, int vm,
			    const struct model_event *ev)
{
	uint64_t now = tdp_get(&p->leaves[vm - 1], ev->u.spte.as_id,
			       ev->u.spte.level, ev->u.spte.gfn);

	return spte_present_leaf(p->fmt, now, ev->u.spte.level) &&
		spte_pfn(p->fmt, now) != spte_pfn(p->fmt, ev->u.spte.old_spte);
}

/*
 * The VM of an aged leaf: the one VM whose state holds the leaf as the
 * change found it (its value but for the accessed and dirty bits, which
 * the CPU sets with no event), else the one whose leaf there maps the
 * same page (a permission its state missed), else the one whose table
 * above it holds no entry the state knows (a huge page split into a
 * table filled without a trace: the eager split of dirty logging); 0
 * when none or several (a page shared at one gfn).  *unknown is set
 * when none of these tells: on a capture that began mid-run, a leaf no
 * event showed yet, or at a gfn another VM also maps.
 */
static int aged_vm(const struct pass *p, const struct model_event *ev,
		   int *unknown)
{
	int v, found = 0, same_page = 0, npage = 0, split = 0, nsplit = 0;
	int as = ev->u.spte.as_id, level = ev->u.spte.level;
	uint64_t hw = p->fmt->accessed | p->fmt->dirty, held;
	uint64_t pfn = spte_pfn(p->fmt, ev->u.spte.old_spte);

	*unknown = 0;
	for (v = 0; v < p->nvms; v++) {
		if (!tdp_stored(&p->leaves[v], as, level, ev->u.spte.gfn)) {
			/* Only a VM made in the capture showed every entry
			 * it had: in another, an entry under a known table
			 * may be one the capture has not shown yet. */
			if (!(p->complete & (1ull << v)))
				continue;
			held = level < TDP_MAX_LEAF_LEVEL ?
				tdp_get(&p->leaves[v], as, level + 1,
					tdp_align(ev->u.spte.gfn,
						  level + 1)) : 0;
			if (spte_present(p->fmt, held) &&
			    !spte_present_leaf(p->fmt, held, level + 1)) {
				split = v + 1;
				nsplit++;
			}
			continue;
		}
		held = tdp_get(&p->leaves[v], as, level, ev->u.spte.gfn);
		if ((held | hw) == (ev->u.spte.old_spte | hw)) {
			if (found)
				return 0;
			found = v + 1;
		} else if (spte_pfn(p->fmt, held) == pfn) {
			same_page = v + 1;
			npage++;
		}
	}
	if (found)
		return found;
	if (npage)
		return npage == 1 ? same_page : 0;
	*unknown = nsplit != 1;
	return nsplit == 1 ? split : 0;
}

/*
 * A held change of vm, applied when its context is decided: after the
 * changes other threads traced since, so it moves the leaf only where
 * none of them changed it meanwhile: no change applied to the entry
 * came after it in the trace, and the leaf still reads as the change
 * found it (but for the accessed and dirty bits the CPU sets).  A zap
 * applied last whatever came after it would leave the VM's state
 * without a leaf its vCPU refaulted before the context ended, and a
 * later zap of that leaf would fit the VM no more.  The value alone
 * cannot tell a refault of the same page with the same permissions: a
 * held zap applied after such a refault empties the entry the VM holds
 * again.
 */
static void leaves_apply_held(struct pass *p, int vm,
			      const struct model_event *ev)
{
	uint64_t hw = p->fmt->accessed | p->fmt->dirty, now;

	if (vm < 1 || vm > p->nvms || ev->kind != MEV_SPTE_CHANGE)
		return;
	if (tdp_get(&p->changed[vm - 1], ev->u.spte.as_id, ev->u.spte.level,
		    ev->u.spte.gfn) > ev->seq)
		return;
	if (tdp_stored(&p->leaves[vm - 1], ev->u.spte.as_id,
		       ev->u.spte.level, ev->u.spte.gfn)) {
		now = tdp_get(&p->leaves[vm - 1], ev->u.spte.as_id,
			      ev->u.spte.level, ev->u.spte.gfn);
		if ((now | hw) != (ev->u.spte.old_spte | hw))
			return;
	}
	leaves_apply(p, vm, ev);
}

/* vm's leaves move with ev (held: a change held until its context
 * was decided, leaves_apply_held()). */
static void leaves_move(struct pass *p, int vm, const struct model_event *ev,
			int held)
{
	if (held)
		leaves_apply_held(p, vm, ev);
	else
		leaves_apply(p, vm, ev);
}

/* ev is vm's: mapped, and its leaves move with it. */
static void decide_ev(struct pass *p, int vm, const struct model_event *ev,
		      int held)
{
	if (u64map_put(&p->out->seq_vm, ev->seq, (uint64_t)vm) < 0)
		p->nomem = 1;
	leaves_move(p, vm, ev, held);
}

static void decide(struct pass *p, int vm, const struct model_event *ev)
{
	decide_ev(p, vm, ev, 0);
}

/*
 * The event after a thread aged a leaf: a flush is the aged VM's
 * (kvm_mmu_notifier_clear_flush_young() flushes the VM whose leaf was
 * young), moved where its row says another; any event ends it.
 * Returns 0, or -1 when out of memory.
 */
static int aged_flush(struct pass *p, const struct model_event *ev)
{
	uint64_t tid = (uint64_t)(uint32_t)ev->tid;
	uint64_t a = u64map_get(&p->aged_by, tid);
	int v = (int)a;

	if (!a)
		return 0;
	if (a == VM_ATTR_NO_VM) {
		/* The leaf it aged was no known VM's: nor is the flush. */
		if (ev->kind == MEV_TLB_FLUSH && ev->vm &&
		    u64map_put(&p->out->moved, ev->seq, VM_ATTR_NO_VM) < 0)
			return -1;
	} else if (ev->kind == MEV_TLB_FLUSH && v != ev->vm) {
		if (ev->vm) {
			if (u64map_put(&p->out->moved, ev->seq,
				       (uint64_t)v) < 0)
				return -1;
			p->out->aged_moved++;
		} else {
			decide(p, v, ev);
		}
	}
	p->naged_by--;
	return u64map_put(&p->aged_by, tid, 0);
}

/* Thread tid aged a leaf of vm (or VM_ATTR_NO_VM): its next flush is
 * that VM's.  Returns 0, or -1 when out of memory. */
static int aged_by_set(struct pass *p, int32_t tid, uint64_t vm)
{
	uint64_t key = (uint64_t)(uint32_t)tid;

	if (!u64map_get(&p->aged_by, key))
		p->naged_by++;
	return u64map_put(&p->aged_by, key, vm);
}

/*
 * A row of window k is vm's: a row that had no VM (its thread's
 * process's, thread_vm) is mapped to it; its leaves move with it.  But
 * a leaf zap of a window kept as vm's on a guess (k->doubt) leaves the
 * entry unknown in vm's state, as it was: emptied, it would rule vm
 * out for the next zap of the entry, though the guess may be wrong
 * (rule vm_doubt_state).
 */
static void own_row(struct pass *p, const struct kthread *k, int vm,
		    const struct model_event *ev, int held)
{
	if (k->doubt && ev_leaf_zap(p, ev)) {
		if (k->own_from_thread && !ev->vm &&
		    u64map_put(&p->out->seq_vm, ev->seq, (uint64_t)vm) < 0)
			p->nomem = 1;
		tdp_forget(&p->leaves[vm - 1], ev->u.spte.as_id,
			   ev->u.spte.level, ev->u.spte.gfn);
		return;
	}
	if (k->own_from_thread && !ev->vm)
		decide_ev(p, vm, ev, held);
	else
		leaves_move(p, vm, ev, held);
}

/* ev of window k, decided: moved where the window is another VM's;
 * a row that had no VM (its thread's process's, thread_vm) is given
 * the window's. */
static void own_give(struct pass *p, struct kthread *k,
		     const struct model_event *ev)
{
	if (k->vm != k->own) {
		if (ev->vm &&
		    u64map_put(&p->out->moved, ev->seq,
			       k->vm ? (uint64_t)k->vm : VM_ATTR_NO_VM) < 0)
			p->nomem = 1;
		p->out->window_events_moved++;
	}
	if (k->vm)
		own_row(p, k, k->vm, ev, 1);
}

/*
 * The VM (a bit) a window of a VM process's thread moves to at its
 * end, 0: none.  Another VM's only when one other VM fits all its
 * zaps, and none of them could be its own VM's, or its own VM's state
 * held none of them and the other's some (a capture begun mid-run,
 * where states show what the capture did); else, where no state tells,
 * when the one VM whose learnt memslot maps its first zap into its
 * range is another that fits them all (kvm_handle_hva_range()).
 */
static uint64_t own_moved_to(const struct pass *p, const struct kthread *k)
{
	uint64_t mapped;

	if (!k->zapped || !k->cand)
		return 0;
	if (!(k->cand & (k->cand - 1)) &&
	    (!k->own_fit || (!k->own_held && (k->others_held & k->cand))))
		return k->cand;
	if (k->own_held || !k->nzaps)
		return 0;
	mapped = vm_bases_mapping(p, k, p->all, k->zap_level, k->zap_gfn);
	if (mapped && !(mapped & (mapped - 1)) && (mapped & k->cand))
		return mapped;
	return 0;
}

/*
 * Window k stays its own VM's, though another VM's state fitted all its
 * zaps and its own held none of them (on a capture begun mid-run,
 * neither state had shown those entries): the VM is a guess, and so is
 * what its zaps leave in its state.  Its leaf zaps are listed; the
 * replay holds the entries in doubt.
 */
static void own_doubt(struct pass *p, const struct kthread *k)
{
	const struct model_event *ev;
	size_t i;

	p->out->windows_in_doubt++;
	for (i = 0; i < k->nheld; i++) {
		ev = &k->held[i];
		if (ev_leaf_zap(p, ev) &&
		    u64map_put(&p->out->zaps_in_doubt, ev->seq, 1) < 0)
			p->nomem = 1;
	}
}

/*
 * Whether window k, kept as its own VM's, could be no other VM's: its
 * own VM's state fitted every leaf it zapped, no other VM's fitted them
 * all, and no learnt memslot ruled its own out.  Its zaps then tell
 * its own VM's memslot as a leaf only that VM's state held would
 * (rule vm_slot_elim): the zaps of one invalidation are one mm's, so
 * one VM's.  Learnt, the memslots move a window that zapped another
 * VM's pages to the VM they map (own_moved_to()).
 * What it cannot catch: a zap of a VM the capture does not know (its
 * process traced nothing), taken for the only VM left.
 */
static int own_alone(const struct pass *p, const struct kthread *k)
{
	return (p->rules & VM_ATTR_SLOT_ELIM) && k->vm == k->own &&
		k->zapped && !k->cand && k->own_fit && !k->own_unfit &&
		!k->own_off;
}

/* The context ends: its held events stay without a VM (a window's,
 * with its row's). */
static void context_close(struct pass *p, struct kthread *k)
{
	size_t i;

	if (k->own) {
		uint64_t to = own_moved_to(p, k);

		k->vm = k->own;
		if (to) {
			k->vm = __builtin_ctzll(to) + 1;
			p->out->windows_moved++;
		} else if (k->own_off && !k->own_held) {
			/* Not its VM's (own_off), and no one other VM's:
			 * no VM's, never its thread's guess. */
			k->vm = 0;
			p->out->windows_no_vm++;
		} else if (k->zapped && k->cand && !k->own_held) {
			own_doubt(p, k);
			k->doubt = !!(p->rules & VM_ATTR_DOUBT_STATE);
		}
		for (i = 0; i < k->nheld; i++)
			own_give(p, k, &k->held[i]);
		if (own_alone(p, k))
			k->held_alone |= 1ull << (k->own - 1);
		vm_bases_learn(p, k->vm, k);
		k->nheld = 0;
		k->vm = 0;
		k->own = 0;
		k->own_from_thread = 0;
		k->nzaps = 0;
		k->hs = k->he = 0;
		k->own_fit = k->own_held = 0;
		k->own_unfit = 0;
		k->own_off = 0;
		k->doubt = 0;
		k->others_held = 0;
		k->zapped = 0;
		k->held_alone = 0;
		k->cand = p->all;
		return;
	}
	vm_bases_learn(p, k->vm, k);
	k->nzaps = 0;
	k->held_alone = 0;
	k->hs = k->he = 0;
	if (!k->nheld && !k->vm)
		return;
	if (!k->vm) {
		if (k->zapped)
			p->out->contexts_several++;
		else
			p->out->contexts_empty++;
		p->out->events_left += (int64_t)k->nheld;
	}
	k->nheld = 0;
	k->vm = 0;
	k->zapped = 0;
	k->cand = p->all;
}

static void context_event(struct pass *p, struct kthread *k,
			  const struct model_event *ev)
{
	uint64_t fits, raw = 0, was, held = 0, mapped, off;
	int zap = ev_leaf_zap(p, ev);
	size_t i;

	if (ev->kind == MEV_NOTIFIER &&
	    ev->u.notifier.phase == MEV_PHASE_START) {
		k->hs = ev->u.notifier.hva_start;
		k->he = ev->u.notifier.hva_end;
	}
	if (zap) {
		if (!k->nzaps++) {
			k->zap_level = ev->u.spte.level;
			k->zap_gfn = ev->u.spte.gfn;
		}
		raw = zap_fits(p, ev, &held);
		if (held && !(held & (held - 1)))
			k->held_alone |= held;
		base_bound(k, ev->u.spte.level, ev->u.spte.gfn);
	}
	if (k->vm) {
		decide(p, k->vm, ev);
		p->out->events_decided++;
		return;
	}
	if (!k->nheld && !k->own)
		p->out->contexts++;
	/* Memory stays bounded: a context that long without a zap that
	 * tells is left, from here on unattributed (a window: its row's). */
	if (k->nheld == VM_ATTR_HELD_MAX) {
		if (k->own) {
			k->own_fit = 1;         /* its own, from here on */
			own_row(p, k, k->own, ev, 0);
		} else {
			p->out->events_left++;
		}
		return;
	}
	if (ALLOC_GROW(k->held, k->nheld + 1, k->capheld)) {
		p->nomem = 1;
		return;
	}
	k->held[k->nheld++] = *ev;
	if (ev->kind != MEV_SPTE_CHANGE ||
	    !spte_present_leaf(p->fmt, ev->u.spte.old_spte, ev->u.spte.level))
		return;
	off = vm_bases_excluding(p, k, ev->u.spte.level, ev->u.spte.gfn);
	/* A zap's fit was taken above; another change of a leaf's now. */
	if (!zap)
		raw = zap_fits(p, ev, &held);
	fits = raw & ~off;
	k->zapped = 1;
	if (k->own) {
		/* A VM made in the capture showed every leaf it had: one
		 * its state never held is not its.  Decided at its end
		 * (context_close()), on all its zaps. */
		uint64_t own = 1ull << (k->own - 1);

		fits &= held | ~p->complete;
		k->own_off |= (off & own) ||
			((p->rules & VM_ATTR_OWN_PAGE) &&
			 holds_other_page(p, k->own, ev));
		k->own_fit |= !!(fits & own);
		k->own_unfit |= !(fits & own);
		k->own_held |= !!(held & own);
		k->others_held |= held & ~own;
		k->cand &= fits & ~own;
		return;
	}
	/* Several states fitted, and the memslots left one. */
	was = k->cand & raw;
	k->cand &= fits;
	if ((was & (was - 1)) && k->cand && !(k->cand & (k->cand - 1)))
		p->out->contexts_by_memslot++;
	/* One VM left; or, of several, the one whose memslot maps the leaf
	 * into the invalidation's range (a page KSM shares at one gfn in
	 * two VMs; the kernel's own rule, so before the next); or the one
	 * whose state holds the leaf (on a capture begun mid-run another
	 * may not have shown it yet). */
	held &= k->cand;
	mapped = k->cand & (k->cand - 1) ?
		vm_bases_mapping(p, k, k->cand, ev->u.spte.level,
				 ev->u.spte.gfn) : 0;
	if (mapped && !(mapped & (mapped - 1))) {
		k->cand = mapped;
		p->out->contexts_by_memslot++;
	} else if (held && !(held & (held - 1))) {
		k->cand = held;
	}
	if (!k->cand || (k->cand & (k->cand - 1)))
		return;
	/* One VM left: the context is its, from its first event. */
	k->vm = __builtin_ctzll(k->cand) + 1;
	p->out->contexts_decided++;
	for (i = 0; i < k->nheld; i++)
		decide_ev(p, k->vm, &k->held[i], 1);
	p->out->events_decided += (int64_t)k->nheld;
	k->nheld = 0;
}

static struct kthread *kthread_get(struct pass *p, int32_t tid)
{
	struct kthread *k = ptrmap_get(&p->threads, (uint64_t)(uint32_t)tid);

	if (k)
		return k;
	k = calloc(1, sizeof(*k));
	if (!k || ptrmap_put(&p->threads, (uint64_t)(uint32_t)tid, k) < 0) {
		free(k);
		return NULL;
	}
	k->cand = p->all;
	return k;
}

static void kthread_free(void *arg, void *val)
{
	struct kthread *k = val;

	context_close(arg, k);
	free(k->held);
}

/*
 * A window of a VM process's thread on a capture whose kernel names no
 * VM: opened at its invalidation start, it holds the thread's changes
 * of leaves and its flushes until any other event of the thread.  An
 * invalidation zaps leaves only: a table the thread changes next is
 * other work (the VM's teardown after a stock start with no end event,
 * as the engine's rule window_leaves has it) and ends the window.
 * Returns 1 when ev went to one (taken), else 0.
 */
static int own_window(struct pass *p, const struct model_event *ev,
		      int own)
{
	struct kthread *k = ptrmap_get(&p->threads,
				       (uint64_t)(uint32_t)ev->tid);

	if (ev->kind == MEV_NOTIFIER &&
	    ev->u.notifier.phase == MEV_PHASE_START) {
		if (!k && !(k = kthread_get(p, ev->tid))) {
			p->nomem = 1;
			return 1;
		}
		context_close(p, k);
		k->own = own;
		k->own_from_thread = !ev->vm;
		context_event(p, k, ev);
		return 1;
	}
	if (!k || !k->own)
		return 0;
	/* Each leaf it zaps holds a page of its range, a page no other
	 * zap of it holds: a zap past its pages is other work (on 6.12
	 * the VM's zap at its exit, every 4K leaf first, by the thread
	 * whose reclaim window came last: taken into that window, the
	 * exit's zaps would keep the window with its thread's VM where
	 * it zapped another VM's leaf). */
	if (k->he > k->hs && k->nzaps >= (int)((k->he - k->hs) >> 12) &&
	    ev_leaf_zap(p, ev)) {
		context_close(p, k);
		return 0;
	}
	if ((ev->kind == MEV_SPTE_CHANGE &&
	     (ev->u.spte.level == 1 ||
	      spte_present_leaf(p->fmt, ev->u.spte.old_spte,
				ev->u.spte.level) ||
	      spte_present_leaf(p->fmt, ev->u.spte.new_spte,
				ev->u.spte.level))) ||
	    ev->kind == MEV_TLB_FLUSH) {
		context_event(p, k, ev);
		return 1;
	}
	context_close(p, k);
	return 0;
}

/* The pass's per-VM state, empty; bases kept (0, or -1 when out of
 * memory). */
static int pass_begin(struct pass *p, struct vm_attr *out)
{
	int v;

	memset(out, 0, sizeof(*out));
	u64map_init(&out->seq_vm);
	u64map_init(&out->moved);
	u64map_init(&out->zaps_in_doubt);
	p->out = out;
	ptrmap_init(&p->threads);
	u64map_init(&p->aged_by);
	p->naged_by = 0;
	p->leaves = calloc((size_t)(p->nvms ? p->nvms : 1),
			   sizeof(*p->leaves));
	p->changed = calloc((size_t)(p->nvms ? p->nvms : 1),
			    sizeof(*p->changed));
	if (!p->leaves || !p->changed)
		return -1;
	for (v = 0; v < p->nvms; v++) {
		tdp_init(&p->leaves[v], p->fmt);
		tdp_init(&p->changed[v], p->fmt);
	}
	return 0;
}

static void pass_end(struct pass *p)
{
	int v;

	ptrmap_each(&p->threads, kthread_free, p);
	ptrmap_free_values(&p->threads);
	u64map_free(&p->aged_by);
	for (v = 0; p->leaves && p->changed && v < p->nvms; v++) {
		tdp_free(&p->leaves[v]);
		tdp_free(&p->changed[v]);
	}
	free(p->leaves);
	free(p->changed);
	p->leaves = NULL;
	p->changed = NULL;
}

/* One pass over src (rewound first) into p->out. */
static enum vm_attr_status pass_run(struct pass *p, struct source *src,
				    const struct u64map *thread_vm,
				    int kernel_named)
{
	const struct spte_format *fmt = p->fmt;
	struct vm_attr *out = p->out;
	enum source_status ss = SOURCE_OK;
	struct model_event ev;
	struct kthread *k;
	int v, aged, unknown, nvms = p->nvms;

	if (source_rewind(src) != SOURCE_OK)
		return VM_ATTR_ERR_SOURCE;
	source_progress(src, "replay: VMs of kernel threads");
	while (!p->nomem && (ss = source_next(src, &ev)) == SOURCE_OK) {
		if (p->naged_by && aged_flush(p, &ev) < 0)
			return VM_ATTR_ERR_NOMEM;
		aged = ev.kind == MEV_SPTE_CHANGE &&
			spte_present_leaf(fmt, ev.u.spte.old_spte,
					  ev.u.spte.level) &&
			spte_present_leaf(fmt, ev.u.spte.new_spte,
					  ev.u.spte.level) &&
			spte_aged(fmt, ev.u.spte.old_spte, ev.u.spte.new_spte);
		unknown = 0;
		if (aged && (v = aged_vm(p, &ev, &unknown))) {
			out->aged_decided++;
			if (v != ev.vm && ev.vm &&
			    u64map_put(&out->moved, ev.seq, (uint64_t)v) < 0)
				return VM_ATTR_ERR_NOMEM;
			if (aged_by_set(p, ev.tid, (uint64_t)v) < 0)
				return VM_ATTR_ERR_NOMEM;
			out->aged_moved += v != ev.vm && ev.vm;
			if (ev.vm)
				leaves_apply(p, v, &ev);
			else
				decide(p, v, &ev);
			continue;
		}
		if (unknown && nvms > 1) {
			/* No VM's: none is known to hold it (a row of no
			 * VM is not given its thread's process's). */
			if (ev.vm && u64map_put(&out->moved, ev.seq,
						VM_ATTR_NO_VM) < 0)
				return VM_ATTR_ERR_NOMEM;
			out->aged_unknown++;
			/* ... and so is the flush its thread traces next. */
			if (aged_by_set(p, ev.tid, VM_ATTR_NO_VM) < 0)
				return VM_ATTR_ERR_NOMEM;
			continue;
		}
		v = !ev.vm && thread_vm ?
			(int)u64map_get(thread_vm,
					(uint64_t)(uint32_t)ev.tid) : 0;
		if (v < 0 || v > nvms)
			v = 0;
		/* A row of a VM process's thread from before its VM
		 * showed (thread_vm) is its VM's as one with it is. */
		if ((ev.vm || v) && nvms > 1 && !kernel_named &&
		    own_window(p, &ev, ev.vm ? ev.vm : v))
			continue;
		if (ev.vm) {
			leaves_apply(p, ev.vm, &ev);
			continue;
		}
		if (v) {
			decide(p, v, &ev);
			out->events_of_process++;
			continue;
		}
		k = kthread_get(p, ev.tid);
		if (!k)
			return VM_ATTR_ERR_NOMEM;
		if (k->own)
			context_close(p, k);
		if (ev.kind == MEV_NOTIFIER && ev.u.notifier.phase ==
		    MEV_PHASE_START)
			context_close(p, k);
		/* A syscall of a process with no VM touches none. */
		if (ev.kind == MEV_SYSCALL) {
			out->events_left++;
			continue;
		}
		context_event(p, k, &ev);
	}
	if (p->nomem)
		return VM_ATTR_ERR_NOMEM;
	return ss == SOURCE_END ? VM_ATTR_OK : VM_ATTR_ERR_SOURCE;
}

enum vm_attr_status vm_attr_run(struct source *src,
				const struct spte_format *fmt, int nvms,
				const struct u64map *thread_vm,
				int kernel_named, uint64_t complete,
				unsigned rules, struct vm_attr *out)
{
	enum vm_attr_status st = VM_ATTR_ERR_NOMEM;
	struct vm_attr first;
	struct pass p;

	memset(out, 0, sizeof(*out));
	memset(&p, 0, sizeof(p));
	if (nvms > VM_ATTR_MAX_VMS)
		nvms = VM_ATTR_MAX_VMS;
	p.fmt = fmt;
	p.nvms = nvms;
	p.rules = rules;
	p.all = nvms == 64 ? ~0ull : (1ull << nvms) - 1;
	p.complete = complete & p.all;
	p.bases = calloc((size_t)(nvms ? nvms : 1), sizeof(*p.bases));
	if (!p.bases)
		return VM_ATTR_ERR_NOMEM;
	/*
	 * Where the windows of VM process threads are decided without the
	 * kernel's word and some VM was made before the capture (its
	 * state shows only what the capture did), a first pass learns
	 * the memslots the second decides them by from its first event
	 * on: the learnt bases are what a pass keeps.
	 */
	if (nvms > 1 && !kernel_named && p.complete != p.all) {
		if (pass_begin(&p, &first) < 0) {
			pass_end(&p);
			vm_attr_free(&first);
			goto end;
		}
		st = pass_run(&p, src, thread_vm, kernel_named);
		pass_end(&p);
		vm_attr_free(&first);
		if (st != VM_ATTR_OK)
			goto end;
		st = VM_ATTR_ERR_NOMEM;
	}
	if (pass_begin(&p, out) == 0)
		st = pass_run(&p, src, thread_vm, kernel_named);
	pass_end(&p);
	if (st != VM_ATTR_OK)
		vm_attr_free(out);
end:
	free(p.bases);
	return st;
}

void vm_attr_free(struct vm_attr *a)
{
	u64map_free(&a->seq_vm);
	u64map_free(&a->moved);
	u64map_free(&a->zaps_in_doubt);
}
