/*
 * Report emitters.  Each takes a computed result (metrics/) and writes one
 * format; none of them queries the DB or computes a figure, so the JSON,
 * the text tables and the HTML always say the same thing.
 *
 * Text tables follow the style of LKML cover letters: a header row, a
 * dashed rule, right-aligned numbers with thousands separators, two-space
 * indent, no box drawing - so they can be pasted into a mail as they are.
 */
#ifndef MMUREPLAY_REPORT_REPORT_H
#define MMUREPLAY_REPORT_REPORT_H

#include "metrics/compare.h"
#include "metrics/fidelity.h"
#include "metrics/phases.h"
#include "metrics/replay_metrics.h"
#include "metrics/spikes.h"
#include "metrics/summary.h"
#include "metrics/timeline.h"

#include <stdio.h>

/*
 * Every JSON document names the schema it follows and the version of it:
 * X(id, "schema" value, schema_version); "mmureplay-NAME" follows
 * schemas/NAME.schema.json.  Any change a reader could trip over bumps
 * the version, in the same commit as the schema file (docs/usage.md, "JSON
 * outputs").
 */
#define REPORT_JSON_SCHEMA_LIST(X) \
	X(REPORT_JSON_SUMMARY, "mmureplay-summary", 6) \
	X(REPORT_JSON_FIDELITY, "mmureplay-fidelity", 8) \
	X(REPORT_JSON_REPLAY, "mmureplay-replay", 11) \
	X(REPORT_JSON_SPIKES, "mmureplay-spikes", 2) \
	X(REPORT_JSON_COMPARE, "mmureplay-compare", 5)

#define REPORT_JSON_SCHEMA_ENUM(id, name, version) id,
enum report_json_schema {
	REPORT_JSON_SCHEMA_LIST(REPORT_JSON_SCHEMA_ENUM)
	REPORT_JSON_SCHEMAS
};
#undef REPORT_JSON_SCHEMA_ENUM

struct cJSON;
/* "schema" and "schema_version", the first keys of a document's root. */
void report_json_schema_add(struct cJSON *root, enum report_json_schema s);

/* The summary as a JSON document (caller frees with free()). */
char *report_summary_json(const struct summary *s, const char *db_path);
/* The summary as text tables. */
void report_summary_text(FILE *out, const struct summary *s,
			 const char *db_path);

/*
 * A capture's VMs, each replayed alone as its own state (docs/design.md,
 * "VMs"): its id, process and self-check; the rows ingest gave no VM
 * and the kernel threads' events the replay gave none either.
 */
struct report_vm {
	int64_t id, pid;
	const char *procname;           /* may be NULL */
	struct fidelity fid;
	struct replay_result res;       /* fidelity's: the recorded policy */
	/* replay's: each policy's figures for this VM alone, in the order
	 * of the capture-wide table (met[0] the recorded policy); NULL
	 * where only the self-check ran. */
	struct replay_metrics *met;
};

struct report_vms {
	int n;
	struct report_vm *vm;
	int narrowed;                   /* --vm: its id; 0: every VM */
	int64_t rows_unattributed;      /* ingest's (meta vm_unattributed) */
	int64_t kthread_events_decided, kthread_events_left;
	int64_t aged_leaves_moved;      /* replay/vm_attr.h */
	int64_t aged_leaves_unknown;
	int64_t windows_moved;
	int64_t contexts_by_memslot;
	int64_t windows_in_doubt;
	/* Windows of a VM process's thread its VM's learnt memslot rules
	 * out and no one other VM's tells: given none (vm_attr.h). */
	int64_t windows_no_vm;
};

/* Fidelity (self-check) of a capture as JSON / text; vms NULL for a
 * capture replayed as one state. */
char *report_fidelity_json(const struct fidelity *f,
			   const struct replay_result *r, const char *db_path);
char *report_fidelity_json_vms(const struct fidelity *f,
			       const struct replay_result *r,
			       const char *db_path,
			       const struct report_vms *vms);
/* The VMs' table (text) and "vms" / "vm_attribution" keys (JSON). */
void report_vms_text(FILE *out, const struct report_vms *vms);
void report_vms_json(struct cJSON *root, const struct report_vms *vms);
/* replay's per-VM rows: each VM's what-if under the n policies shown
 * (n 0 after a failed self-check: the VMs' verdicts only). */
void report_vms_whatif_text(FILE *out, const struct report_vms *vms, int n);
void report_vms_whatif_json(struct cJSON *root, const struct report_vms *vms,
			    int n);
void report_fidelity_text(FILE *out, const struct fidelity *f,
			  const struct replay_result *r, const char *db_path);

/* The self-check's figures, verdict and mismatches into a JSON object
 * (fidelity's document, and replay's "self_check"). */
void report_fidelity_json_add(struct cJSON *o, const struct fidelity *f,
			      const struct replay_result *r);

/* How the replay knew its facts (memslots, upgrades, dirty logging,
 * lock waits: measured / inferred / unknown), as a "knowledge" object. */
void report_knowledge_json(struct cJSON *root, const struct replay_result *r);

/* What-if results of several policies side by side; each policy marked
 * verified when the self-check (f) holds.  n == 0 after a failed
 * self-check: the what-if is withheld and said so. */
char *report_replay_json(const struct replay_metrics *m, int n,
			 const struct replay_result *r,
			 const struct replay_result *self_check,
			 const struct fidelity *f, const char *db_path,
			 const struct report_vms *vms);
/* The same as text tables, m[0..n) shown; m[0] (the recorded policy's
 * run) must be there even when n is 0, for the trace's duration.  vms:
 * per-VM rows after the capture's (NULL or vms->n 0: none). */
void report_replay_text(FILE *out, const struct replay_metrics *m, int n,
			const struct fidelity *f, const char *db_path,
			const struct report_vms *vms);

/* The self-contained HTML report: summary, the timeline (tl, or NULL),
 * spikes, self-check, what-if, each VM's what-if (vms[0..nvms), a
 * capture of several VMs), charts from the replay runs (the
 * self-check's first); replay_note, when not NULL, says where they come
 * from or why there are none. */
void report_html(FILE *out, const struct summary *s,
		 const struct stored_run *runs, int n,
		 const struct stored_vm_run *vms, int nvms,
		 const struct spikes *sp, const struct timeline *tl,
		 const char *replay_note, const char *db_path);

/* Whether the spikes have rows per VM to show: samples, VMs, and no
 * --vm. */
int spikes_per_vm(const struct spikes *s);
/* Latency spikes and the MMU activity in their windows. */
void report_spikes_text(FILE *out, const struct spikes *s,
			const char *db_path);
char *report_spikes_json(const struct spikes *s, const char *db_path);

/* The capture's damage (lost events, truncation), when there is any: a
 * paragraph of text / a "capture_damage" object in root. */
void report_damage_text(FILE *out, const struct fidelity *f);
void report_damage_json(struct cJSON *root, const struct fidelity *f);
/* A capture that began while the VM ran: what it only revealed and its
 * warm-up, a paragraph of text (none for a capture from the VM's
 * creation; whatif: followed by what-if figures, which it bounds) / a
 * "capture_start" object in root (always). */
void report_start_text(FILE *out, const struct fidelity *f, int whatif);
void report_start_json(struct cJSON *root, const struct fidelity *f);

/* The rows of a latency table, named alike in every format: each probe
 * phase ("probe N"), then the NPF service time when there is one. */
void report_latency_each(const struct latency *l,
			 void (*row)(void *arg, const char *name,
				     const struct latency_dist *d),
			 void *arg);

/* Run A's workload phases against run B's: samples at or above A's
 * threshold, p99 and MMU activity per phase; text, and an "against"
 * object added to root. */
void report_phases_text(FILE *out, const struct phases *a,
			const struct phases *b, const char *b_path);
struct cJSON;
void report_phases_json_add(struct cJSON *root, const struct phases *a,
			    const struct phases *b, const char *b_path);

/* Run sets side by side: the cover-letter table and the what-if. */
void report_compare_text(FILE *out, const struct compare *c);
void report_compare_html(FILE *out, const struct compare *c);
char *report_compare_json(const struct compare *c);

/* s as HTML text (< > & " ' escaped). */
void report_html_esc(FILE *o, const char *s);

/* v with thousands separators and that many decimals ("-" for NAN);
 * returns buf. */
char *report_fmt_num(char *buf, size_t len, double v, int decimals);

/* "1,234,567" into buf; returns buf. */
char *report_fmt_count(char *buf, size_t len, int64_t n);

#endif
