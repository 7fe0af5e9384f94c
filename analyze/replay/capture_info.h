/*
 * Facts about a capture that the replay needs before it starts, read
 * from the DB: the exit ISA and with it the SPTE format (SVM -> NPT,
 * VMX -> EPT), what a fault's error code is (model/fault.h) and the NPF
 * exit reason (from the traced exits; else from the manifest's CPU
 * vendor; else SVM, assumed and said), the NX
 * recovery worker threads, and the policy the trace was recorded with
 * (the kernel series' knobs in the manifest's KVM parameters).
 */
#ifndef MMUREPLAY_REPLAY_CAPTURE_INFO_H
#define MMUREPLAY_REPLAY_CAPTURE_INFO_H

#include "model/spte.h"
#include "replay/policy.h"

#include <sqlite3.h>
#include <stdint.h>

#define CAPTURE_MAX_WORKERS 64

/* Where the exit ISA was read. */
enum capture_isa_source {
	CAPTURE_ISA_ASSUMED = 0,        /* neither says: SVM assumed */
	CAPTURE_ISA_EXITS,              /* kvm_exit's isa field */
	CAPTURE_ISA_MANIFEST,           /* the manifest's cpu.vendor */
};

struct capture_info {
	int isa;                        /* MEV_ISA_VMX or MEV_ISA_SVM */
	enum capture_isa_source isa_source;
	const struct spte_format *fmt;
	int fmt_detected;               /* 0: assumed NPT */
	int64_t npf_exit_reason;
	int32_t workers[CAPTURE_MAX_WORKERS];
	int nworkers;
	/* khugepaged's threads: their invalidations of a whole 2M region
	 * are THP collapses (engine_fault.c host_level_collapse()). */
	int32_t collapsers[CAPTURE_MAX_WORKERS];
	int ncollapsers;
	/* The NX recovery worker can be told: its events were traced, or
	 * the source names threads (perf's CTF without --all names none). */
	int workers_known;
	/* Baseline unless a knob was on; several knobs: their combination
	 * (NULL only if it could not be made). */
	const struct policy *recorded;
	int recorded_from_manifest;
	int knobs_on;
	int64_t nx_ratio;               /* kvm.nx_huge_pages_recovery_ratio */
	/* ..._recovery_period_ms, or the kernel's default from the ratio
	 * when that is 0; 0: unknown */
	int64_t nx_period_ms;
	int nx_off;                     /* kvm.nx_huge_pages says N */
	/* Damage the trace itself carries (ingest kept what was there):
	 * events the tracer discarded (lost_ranges: discard records, some
	 * without a count), and a stream cut short. */
	int64_t lost_events, lost_ranges;
	int truncated;
	/* From when every stream holds data (ns from the capture's time
	 * base): the latest first event of a stream that lost its
	 * beginning (an LTTng snapshot's per-CPU buffers begin apart); 0
	 * when none did. */
	int64_t span_start_ts;
	/* VMs in table vm (ingest/vms.h), and the one a command narrows
	 * to (--vm: its id; 0: the capture whole, as one state). */
	int nvms;
	int vm;
};

/* 0, or -1 after reporting a query error. */
int capture_info_read(sqlite3 *db, struct capture_info *ci);

#endif
