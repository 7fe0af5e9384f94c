/*
 * The summary of a capture DB: what was recorded, how much, how fast.
 *
 * Rates are per second of trace time (last event - first event), the way
 * the perm-upgrade mail quotes pf/s: NPF faults/s, leaf zaps/s (a present
 * leaf SPTE changed to non-present) and notifier invalidations/s.
 */
#ifndef MMUREPLAY_METRICS_SUMMARY_H
#define MMUREPLAY_METRICS_SUMMARY_H

#include "model/fault.h"
#include "metrics/coverage.h"
#include "metrics/latency.h"
#include "metrics/timeline.h"

#include <sqlite3.h>
#include <stddef.h>
#include <stdint.h>

struct summary_raw {
	char *name;
	int64_t count;
	char *canonical;        /* NULL: counted only */
	char *note;
};

struct summary_count {
	const char *name;
	int64_t count;
};

struct summary_trace {
	char *path, *hostname, *domain, *kernel_release, *kernel_version;
	char *tracer_name, *tracer_version, *trace_name, *creation;
};

struct summary_lost {
	int64_t stream_id;
	char *stream, *kind;
	int64_t begin_ts, end_ts, count;    /* -1: unknown */
};

/* enum mmu_notifier_event (include/linux/mmu_notifier.h, 6.1 and 6.12:
 * UNMAP, CLEAR, PROTECTION_VMA, PROTECTION_PAGE, SOFT_DIRTY, RELEASE,
 * MIGRATE, EXCLUSIVE). */
#define SUMMARY_NOTIFY_KINDS 8
extern const char *const summary_notify_names[SUMMARY_NOTIFY_KINDS];

/* A vCPU of a VM (vm 0: of no VM; vcpu -1: faults whose vCPU the
 * source does not name). */
struct summary_vcpu {
	int64_t vm;
	int64_t vcpu;
	int64_t faults;
};

/* Who invalidated and zapped: a thread name (its last), the VM of its
 * rows (0: none, a kernel thread), its invalidation starts and the
 * leaves it zapped. */
struct summary_source {
	char *procname;
	int64_t vm;
	int64_t invalidations, leaf_zaps;
	int key;                        /* its order of creation */
};

/* One source's work in one second of the capture (from its first
 * event): sources[source]'s invalidation starts and leaf zaps. */
struct summary_source_second {
	int source;                     /* index into summary.sources */
	int64_t second, invalidations, leaf_zaps;
};

/* A VM of the capture (table vm, ingest/vms.h): its process and what
 * its own events show; kernel threads' work the replay attributes is
 * not here (their rows have no VM). */
struct summary_vm {
	int64_t id, pid;
	char *procname;
	int64_t created_ts;             /* -1: made before the capture */
	int64_t destroyed_ts;           /* -1: not traced destroyed */
	int kernel_named;               /* the patched kernel named it */
	int64_t faults, leaf_zaps, vcpus;
};

/*
 * KVM's own counter against the trace's events over the sampled time:
 * counter_delta = last - first sample of the counter, events = the
 * canonical events after the first sample up to the last.  Equal when
 * the trace holds every event KVM counted (one VM sampled; -1: not
 * sampled, or several VMs).
 */
struct summary_counter_check {
	const char *counter, *table;
	int64_t counter_delta, events;
};

#define SUMMARY_COUNTER_CHECKS 3

struct summary {
	/* The VM the DB was narrowed to (db_narrow_vm(): its events alone,
	 * the raw counts and meta still the capture's), or 0. */
	int narrowed_vm;
	int64_t events;
	int64_t first_ts, last_ts;          /* ns from the capture time base */
	int64_t ts_base_ns;
	double duration_s;
	int truncated;
	char *truncated_reason;
	/* Where the capture came from (meta source_*; NULL in DBs written
	 * before they were recorded). */
	char *source_format, *source_tracer, *source_events, *source_lossy;
	int64_t ts_resolution_ns;           /* 1, or 1000 for text in us */
	int64_t source_duplicates;          /* repeats dropped at ingest */
	const char *spte_format;
	int spte_format_detected;           /* 0: assumed */
	/* Where the exit ISA (format, fault decoding) was read: "exits",
	 * "manifest" or "assumed" (replay/capture_info.h). */
	const char *isa_source;
	/* Faults by access kind (model/fault.h) and those on a present
	 * entry (permission faults), decoded by the exit ISA. */
	int64_t fault_access[MEV_ACCESS_KINDS], faults_present;
	/* The capture began while the VM ran: no allocation of its root
	 * table is traced before the first event that meets the TDP state
	 * (the replay's rule, replay/engine.c began_decide()); what that
	 * leaves unknown the self-check says. */
	int began_mid_run;

	struct summary_raw *raw;
	int nraw;
	struct summary_count *canon;
	int ncanon;
	struct summary_trace *traces;
	int ntraces;
	struct summary_lost *lost;
	int nlost;
	int64_t lost_events, lost_packets;
	struct summary_vcpu *vcpus;
	int nvcpus;
	/* Capacities of the arrays above (util/alloc.h). */
	size_t capraw, capcanon, captraces, caplost, capvcpus, capvms;

	/* From mmureplay:stats_sample (KVM's own counters), when sampled:
	 * increase of pf_taken / remote_tlb_flush over the sampled time,
	 * summed over VMs; -1 when not sampled. */
	double stats_pf_per_s, stats_tlb_per_s;
	struct summary_counter_check counters[SUMMARY_COUNTER_CHECKS];

	struct latency latency;

	/* What the source can give: a figure with a gap is unknown, and
	 * its count and rate are shown as such, never as 0. */
	struct coverage cov;

	int64_t faults, leaf_zaps, invalidations;
	double faults_per_s, leaf_zaps_per_s, invalidations_per_s;

	/* The capture's VMs (none without the pid context), and the
	 * faults and leaf zaps of rows of no VM; meta vm_attribution and
	 * vm_unattributed:* ingest wrote. */
	struct summary_vm *vms;
	int nvms;
	/* By thread name and VM, most leaf zaps first; and the patched
	 * notifier's event kinds (MMU_NOTIFY_*: their counts, -1 unseen). */
	struct summary_source *sources;
	int nsources;
	size_t capsources;
	/* The same per second, by second then source; seconds and sources
	 * with no work left out. */
	struct summary_source_second *source_seconds;
	int nsource_seconds;
	size_t capsource_seconds;
	int64_t notifier_events[SUMMARY_NOTIFY_KINDS];
	int64_t novm_faults, novm_leaf_zaps, rows_unattributed;
	char *vm_attribution;
};

enum summary_status {
	SUMMARY_OK = 0,
	SUMMARY_ERR_SQL,
	SUMMARY_ERR_NOMEM,
};

enum summary_status summary_compute(sqlite3 *db, struct summary *out);
/*
 * The same, binning on the way what a timeline (timeline_init()) counts
 * from the tables summary reads anyway (faults, invalidations, leaf
 * zaps): the report's timeline_fill() then skips those scans.
 */
enum summary_status summary_compute_binned(sqlite3 *db, struct summary *out,
					   struct timeline *tl);
void summary_free(struct summary *s);

/* The canonical tables, in report order (NULL-terminated). */
extern const char *const summary_canonical_tables[];

#endif
