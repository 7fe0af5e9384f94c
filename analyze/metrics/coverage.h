/*
 * What a capture's source can answer.
 *
 * A DB from a stock host may lack whole event families: Debian's
 * lttng-modules has no x86 KVM probes (no faults, no SPTE changes), a
 * `trace-cmd record -e kvm` without kvmmmu has no SPTE changes, perf's
 * CTF without --all names no thread.  A figure such a source cannot give
 * is "unknown", never 0, and a command that cannot answer at all says so
 * in one line.
 *
 * The evidence is meta source_tables: the canonical tables the source's
 * events could fill, written by ingest from the events the source
 * declares (the CTF metadata's event classes, trace.dat's formats), fired
 * or not; for tracefs text (which names only the events that fired) and
 * for DBs written before the key existed, the tables that hold rows.
 *
 * Invariant: a figure is MEASURED only if every table it reads is
 * covered; coverage_gap() names the first missing one in words a user
 * can act on (which event to record).
 */
#ifndef MMUREPLAY_METRICS_COVERAGE_H
#define MMUREPLAY_METRICS_COVERAGE_H

#include <sqlite3.h>

/* X(id, key, tables (space-separated, all needed), what to record) */
#define COVERAGE_FIGURE_LIST(X) \
	X(COVERAGE_FAULTS, "npf_faults", "fault", \
	  "kvm_page_fault (kvm:kvm_page_fault, LTTng kvm_x86_page_fault)") \
	X(COVERAGE_LEAF_ZAPS, "leaf_zaps", "spte_change", \
	  "kvm_tdp_mmu_spte_changed (kvmmmu:)") \
	X(COVERAGE_INVALIDATIONS, "notifier_invalidations", "notifier", \
	  "kvm_unmap_hva_range (kvm:), or the series' " \
	  "kvm_invalidate_range_start/end") \
	X(COVERAGE_NPF_SERVICE, "npf_service", "vcpu_exit vcpu_entry fault", \
	  "kvm_exit, kvm_entry and kvm_page_fault (kvm:)") \
	X(COVERAGE_REPLAY, "replay", "spte_change fault", \
	  "kvm_tdp_mmu_spte_changed (kvmmmu:) and kvm_page_fault (kvm:)")

#define COVERAGE_ENUM(id, key, tables, record) id,
enum coverage_figure {
	COVERAGE_FIGURE_LIST(COVERAGE_ENUM)
	COVERAGE_FIGURES
};
#undef COVERAGE_ENUM

extern const char *const coverage_figure_keys[COVERAGE_FIGURES];

struct coverage {
	char *tables;           /* ",t1,t2,": the covered tables */
	int from_rows;          /* 1: no source_tables; tables with rows */
	/* The gap of each figure (NULL: measured): static text, or
	 * gap_text[] when it names the source. */
	const char *gap[COVERAGE_FIGURES];
	char gap_text[COVERAGE_FIGURES][256];
};

enum coverage_status {
	COVERAGE_OK = 0,
	COVERAGE_ERR_SQL,
	COVERAGE_ERR_NOMEM,
};

enum coverage_status coverage_load(sqlite3 *db, struct coverage *c);
/* Whether the source can fill canonical table t. */
int coverage_has(const struct coverage *c, const char *table);
/* Why figure f cannot be given from this source, or NULL: it can. */
const char *coverage_gap(const struct coverage *c, enum coverage_figure f);
void coverage_free(struct coverage *c);

#endif
