/*
 * A capture DB as a Perfetto trace (see export.h).
 *
 * The events are read in seq order by a merge of one query per table
 * (each in its rowid order, so nothing is sorted), and written as they
 * come: memory is one state per thread and per VM, not per event.  Each
 * thread is a packet sequence of its own, so its timestamps only have
 * to keep its own order; its first packet clears the sequence's
 * incremental state and interns the event names.  Counters are written
 * after the events, one sequence per counter track, a value per second
 * (zeros included, so a quiet second reads 0, not the last value).
 *
 * Field numbers are Perfetto's (protos/perfetto/trace/trace_packet.proto,
 * and the track_event protos); tests/perfetto/trace_subset.proto lists the ones
 * used, and the tests decode the output with it.
 */
#include "export/export.h"

#include "db/db.h"
#include "export/pbwire.h"
#include "model/event.h"
#include "replay/capture_info.h"
#include "util/log.h"
#include "util/ptrmap.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Trace, TracePacket */
#define F_TRACE_PACKET          1
#define F_TP_TIMESTAMP          8
#define F_TP_SEQ_ID             10
#define F_TP_TRACK_EVENT        11
#define F_TP_INTERNED           12
#define F_TP_SEQ_FLAGS          13
#define F_TP_DEFAULTS          59
#define F_TP_TRACK_DESCRIPTOR   60
/* TracePacketDefaults, TrackEventDefaults */
#define F_TPD_TRACK_EVENT       11
#define F_TED_TRACK_UUID        11
#define SEQ_INCREMENTAL_STATE_CLEARED 1
#define SEQ_NEEDS_INCREMENTAL_STATE   2
/* TrackEvent */
#define F_TE_DEBUG              4
#define F_TE_TYPE               9
#define F_TE_NAME_IID           10
#define F_TE_TRACK_UUID         11
#define F_TE_COUNTER_VALUE      30
#define TYPE_SLICE_BEGIN        1
#define TYPE_SLICE_END          2
#define TYPE_INSTANT            3
#define TYPE_COUNTER            4
/* DebugAnnotation, DebugAnnotationName */
#define F_DA_NAME_IID           1
#define F_DA_INT                4
#define F_DA_POINTER            7
#define F_DAN_IID               1
#define F_DAN_NAME              2
/* TrackDescriptor, ProcessDescriptor, ThreadDescriptor, CounterDescriptor */
#define F_TD_UUID               1
#define F_TD_NAME               2
#define F_TD_PROCESS            3
#define F_TD_THREAD             4
#define F_TD_PARENT             5
#define F_TD_COUNTER            8
#define F_PD_PID                1
#define F_PD_NAME               6
#define F_THD_PID               1
#define F_THD_TID               2
#define F_THD_NAME              5
#define F_CD_UNIT               3
#define UNIT_COUNT              2
/* InternedData, EventName */
#define F_ID_EVENT_NAMES        2
#define F_ID_ANNOTATION_NAMES   3
#define F_EN_IID                1
#define F_EN_NAME               2

/* The interned event names, iid = index + 1. */
enum name { N_NPF, N_LOCK_WAIT, N_INVALIDATION, N_NX_BATCH, N_SPIKE, N_N };
static const char *const names[N_N] = {
	"NPF", "mmu_lock wait", "invalidation", "NX recovery batch",
	"probe spike",
};

/* The interned debug annotation names, iid = index + 1. */
enum arg { A_WAIT_NS, A_GFN, A_HVA, A_PAGES, A_LEAF_ZAPS, A_TO_ZAP,
	   A_LATENCY_NS, A_PROBE, A_N };
static const char *const args[A_N] = {
	"wait_ns", "gfn", "hva", "pages", "leaf_zaps", "to_zap", "latency_ns",
	"probe",
};

/* Track uuids: a kind in the high bits, an id below. */
#define UUID_VM         (1ULL << 40)
#define UUID_THREAD     (2ULL << 40)
#define UUID_COUNTER    (3ULL << 40)
#define UUID_WHATIF     (4ULL << 40)

/* Sequence ids: 1 the descriptors, then threads, then counters. */
#define SEQ_DESCRIPTORS 1

struct thr {
	int32_t tid;
	uint32_t seq;
	int64_t last_ts;        /* of its sequence's last packet */
	int inited;
	int npf_open, win_open, nx_open;
	int64_t win_seq;
};

struct exp {
	sqlite3 *db;
	const struct export_opts *o;
	FILE *out;
	struct export_stats *st;
	struct pb pkt;
	struct ptrmap threads;
	uint32_t next_seq;
	int64_t base, last_ts;
	const struct spte_format *fmt;
	int patched_windows;    /* notifier end events exist */
	sqlite3_stmt *zaps;     /* leaf zaps of a thread in a seq range */
	int err;                /* enum export_status */
};

/* Writes the packet built in e->pkt as one Trace.packet field. */
static void flush_packet(struct exp *e)
{
	if (e->pkt.nomem) {
		e->err = EXPORT_ERR_NOMEM;
		return;
	}
	if (fwrite(e->pkt.b, 1, e->pkt.len, e->out) != e->pkt.len)
		e->err = EXPORT_ERR_OUTPUT;
	e->st->bytes += (int64_t)e->pkt.len;
	e->st->packets++;
	pb_reset(&e->pkt);
}

static void descriptor(struct exp *e, uint64_t uuid, uint64_t parent,
		       const char *name)
{
	pb_begin(&e->pkt, F_TRACE_PACKET);
	pb_varint(&e->pkt, F_TP_SEQ_ID, SEQ_DESCRIPTORS);
	pb_begin(&e->pkt, F_TP_TRACK_DESCRIPTOR);
	pb_varint(&e->pkt, F_TD_UUID, uuid);
	if (parent)
		pb_varint(&e->pkt, F_TD_PARENT, parent);
	if (name)
		pb_string(&e->pkt, F_TD_NAME, name);
	e->st->tracks++;
}

static void descriptor_end(struct exp *e)
{
	pb_end(&e->pkt);
	pb_end(&e->pkt);
	flush_packet(e);
}

/* The VMs' process tracks, and the host's for threads of no VM. */
static int vm_tracks(struct exp *e)
{
	sqlite3_stmt *st;
	char name[96];

	descriptor(e, UUID_VM, 0, "host (threads of no VM)");
	descriptor_end(e);
	if (sqlite3_prepare_v2(e->db, "SELECT id, pid, procname FROM vm "
			       "ORDER BY id", -1, &st, NULL) != SQLITE_OK)
		return -1;
	while (sqlite3_step(st) == SQLITE_ROW) {
		const char *p = (const char *)sqlite3_column_text(st, 2);

		if (e->o->vm && sqlite3_column_int(st, 0) != e->o->vm)
			continue;
		snprintf(name, sizeof(name), "VM %d (%s)",
			 sqlite3_column_int(st, 0), p ? p : "?");
		descriptor(e, UUID_VM + (uint64_t)sqlite3_column_int64(st, 0),
			   0, name);
		pb_begin(&e->pkt, F_TD_PROCESS);
		pb_varint(&e->pkt, F_PD_PID,
			  (uint64_t)sqlite3_column_int64(st, 1));
		pb_string(&e->pkt, F_PD_NAME, name);
		pb_end(&e->pkt);
		descriptor_end(e);
	}
	sqlite3_finalize(st);
	return 0;
}

/* Returns thread tid's state, its track described on first use. */
static struct thr *thread_of(struct exp *e, int32_t tid, int64_t vm)
{
	struct thr *t = ptrmap_get(&e->threads, (uint64_t)(uint32_t)tid);
	sqlite3_stmt *st;
	char name[64] = "";
	int64_t pid = -1;

	if (t)
		return t;
	t = calloc(1, sizeof(*t));
	if (!t || ptrmap_put(&e->threads, (uint64_t)(uint32_t)tid, t) < 0) {
		free(t);
		e->err = EXPORT_ERR_NOMEM;
		return NULL;
	}
	t->tid = tid;
	t->seq = e->next_seq++;
	t->last_ts = INT64_MIN;
	if (sqlite3_prepare_v2(e->db, "SELECT procname, pid FROM thread WHERE "
			       "tid = ? ORDER BY first_seq LIMIT 1", -1, &st,
			       NULL) == SQLITE_OK) {
		sqlite3_bind_int(st, 1, tid);
		if (sqlite3_step(st) == SQLITE_ROW) {
			snprintf(name, sizeof(name), "%s",
				 (const char *)sqlite3_column_text(st, 0));
			if (sqlite3_column_type(st, 1) != SQLITE_NULL)
				pid = sqlite3_column_int64(st, 1);
		}
		sqlite3_finalize(st);
	}
	descriptor(e, UUID_THREAD + (uint32_t)tid, UUID_VM + (uint64_t)vm,
		   NULL);
	pb_begin(&e->pkt, F_TD_THREAD);
	pb_varint(&e->pkt, F_THD_PID, (uint64_t)(pid >= 0 ? pid : tid));
	pb_varint(&e->pkt, F_THD_TID, (uint64_t)(uint32_t)tid);
	if (name[0])
		pb_string(&e->pkt, F_THD_NAME, name);
	pb_end(&e->pkt);
	descriptor_end(e);
	return t;
}

/* Starts a packet on t's sequence at ts (never before its last). */
static void event_begin(struct exp *e, struct thr *t, int64_t ts, int type,
			enum name n)
{
	int i;

	if (ts < t->last_ts)
		ts = t->last_ts;
	t->last_ts = ts;
	pb_begin(&e->pkt, F_TRACE_PACKET);
	pb_varint(&e->pkt, F_TP_TIMESTAMP, (uint64_t)(e->base + ts));
	pb_varint(&e->pkt, F_TP_SEQ_ID, t->seq);
	/* The sequence's first packet clears its state and sets what the
	 * others rely on: the event names and the track (as a default, so
	 * no event repeats it). */
	if (!t->inited) {
		pb_varint(&e->pkt, F_TP_SEQ_FLAGS,
			  SEQ_INCREMENTAL_STATE_CLEARED |
			  SEQ_NEEDS_INCREMENTAL_STATE);
		pb_begin(&e->pkt, F_TP_DEFAULTS);
		pb_begin(&e->pkt, F_TPD_TRACK_EVENT);
		pb_varint(&e->pkt, F_TED_TRACK_UUID,
			  UUID_THREAD + (uint32_t)t->tid);
		pb_end(&e->pkt);
		pb_end(&e->pkt);
		pb_begin(&e->pkt, F_TP_INTERNED);
		for (i = 0; i < N_N; i++) {
			pb_begin(&e->pkt, F_ID_EVENT_NAMES);
			pb_varint(&e->pkt, F_EN_IID, (uint64_t)i + 1);
			pb_string(&e->pkt, F_EN_NAME, names[i]);
			pb_end(&e->pkt);
		}
		for (i = 0; i < A_N; i++) {
			pb_begin(&e->pkt, F_ID_ANNOTATION_NAMES);
			pb_varint(&e->pkt, F_DAN_IID, (uint64_t)i + 1);
			pb_string(&e->pkt, F_DAN_NAME, args[i]);
			pb_end(&e->pkt);
		}
		pb_end(&e->pkt);
		t->inited = 1;
	}
	pb_begin(&e->pkt, F_TP_TRACK_EVENT);
	pb_varint(&e->pkt, F_TE_TYPE, (uint64_t)type);
	if (type != TYPE_SLICE_END)
		pb_varint(&e->pkt, F_TE_NAME_IID, (uint64_t)n + 1);
	if (type == TYPE_SLICE_BEGIN)
		e->st->slices++;
	else if (type == TYPE_INSTANT)
		e->st->instants++;
}

static void annotate(struct exp *e, enum arg a, int64_t v)
{
	pb_begin(&e->pkt, F_TE_DEBUG);
	pb_varint(&e->pkt, F_DA_NAME_IID, (uint64_t)a + 1);
	pb_int64(&e->pkt, F_DA_INT, v);
	pb_end(&e->pkt);
}

/* An address: a pointer value, which Perfetto shows in hex. */
static void annotate_addr(struct exp *e, enum arg a, uint64_t v)
{
	pb_begin(&e->pkt, F_TE_DEBUG);
	pb_varint(&e->pkt, F_DA_NAME_IID, (uint64_t)a + 1);
	pb_varint(&e->pkt, F_DA_POINTER, v);
	pb_end(&e->pkt);
}

static void event_end(struct exp *e)
{
	pb_end(&e->pkt);
	pb_end(&e->pkt);
	flush_packet(e);
}

static void slice_end(struct exp *e, struct thr *t, int64_t ts)
{
	event_begin(e, t, ts, TYPE_SLICE_END, N_NPF);
	event_end(e);
}

/* The leaf zaps thread tid traced from seq lo to hi. */
static int64_t window_zaps(struct exp *e, int32_t tid, int64_t lo, int64_t hi)
{
	int64_t n = -1;

	sqlite3_bind_int64(e->zaps, 1, lo);
	sqlite3_bind_int64(e->zaps, 2, hi);
	sqlite3_bind_int(e->zaps, 3, tid);
	if (sqlite3_step(e->zaps) == SQLITE_ROW)
		n = sqlite3_column_int64(e->zaps, 0);
	sqlite3_reset(e->zaps);
	return n;
}

/* The merged stream: one cursor per table, columns kind, seq, ts, tid,
 * vm, a, b, c. */
enum kind { K_EXIT, K_ENTRY, K_LOCK, K_NOTIFIER, K_NX, K_PROBE, K_N };

static const char *const stream_sql[K_N] = {
	[K_EXIT] = "SELECT seq, ts, tid, coalesce(vm, 0), 0, 0, 0 FROM "
		   "vcpu_exit WHERE exit_reason = ?1 ORDER BY seq",
	[K_ENTRY] = "SELECT seq, ts, tid, coalesce(vm, 0), 0, 0, 0 FROM "
		    "vcpu_entry ORDER BY seq",
	[K_LOCK] = "SELECT seq, ts, tid, coalesce(vm, 0), wait_ns, "
		   "coalesce(gfn, 0), 0 FROM lock_wait ORDER BY seq",
	[K_NOTIFIER] = "SELECT seq, ts, tid, coalesce(vm, 0), phase, "
		       "coalesce(hva_start, 0), coalesce(hva_end, 0) FROM "
		       "notifier ORDER BY seq",
	[K_NX] = "SELECT seq, ts, tid, coalesce(vm, 0), phase, "
		 "coalesce(pages, 0), coalesce(to_zap, 0) FROM nx_recovery "
		 "WHERE phase IN (0, 1) ORDER BY seq",
	[K_PROBE] = "SELECT seq, ts, tid, coalesce(vm, 0), ns, probe, 0 FROM "
		    "latency_sample WHERE ns >= ?1 ORDER BY seq",
};

static void on_row(struct exp *e, enum kind k, sqlite3_stmt *r)
{
	int64_t seq = sqlite3_column_int64(r, 0), ts = sqlite3_column_int64(r, 1);
	int32_t tid = sqlite3_column_int(r, 2);
	int64_t vm = sqlite3_column_int64(r, 3), a = sqlite3_column_int64(r, 4);
	int64_t b = sqlite3_column_int64(r, 5), c = sqlite3_column_int64(r, 6);
	struct thr *t;

	if (ts > e->last_ts)
		e->last_ts = ts;
	if (k == K_ENTRY) {
		t = ptrmap_get(&e->threads, (uint64_t)(uint32_t)tid);
		if (t && t->npf_open) {
			t->npf_open = 0;
			slice_end(e, t, ts);
		}
		return;
	}
	t = thread_of(e, tid, vm);
	if (!t)
		return;
	switch (k) {
	case K_EXIT:
		if (t->npf_open)
			slice_end(e, t, ts);
		event_begin(e, t, ts, TYPE_SLICE_BEGIN, N_NPF);
		event_end(e);
		t->npf_open = 1;
		break;
	case K_LOCK:
		/* The wait ended at the event; it began wait_ns earlier,
		 * inside the NPF exit it delayed (clamped to it). */
		event_begin(e, t, ts - a, TYPE_SLICE_BEGIN, N_LOCK_WAIT);
		annotate(e, A_WAIT_NS, a);
		annotate_addr(e, A_GFN, (uint64_t)b);
		event_end(e);
		slice_end(e, t, ts);
		break;
	case K_NOTIFIER:
		if (!e->patched_windows) {
			event_begin(e, t, ts, TYPE_INSTANT, N_INVALIDATION);
			annotate_addr(e, A_HVA, (uint64_t)b);
			annotate(e, A_PAGES, (int64_t)(((uint64_t)c -
							(uint64_t)b) >> 12));
			event_end(e);
		} else if (a == MEV_PHASE_START && !t->win_open) {
			t->win_open = 1;
			t->win_seq = seq;
			event_begin(e, t, ts, TYPE_SLICE_BEGIN, N_INVALIDATION);
			annotate_addr(e, A_HVA, (uint64_t)b);
			annotate(e, A_PAGES, (int64_t)(((uint64_t)c -
							(uint64_t)b) >> 12));
			event_end(e);
		} else if (a == MEV_PHASE_END && t->win_open) {
			t->win_open = 0;
			event_begin(e, t, ts, TYPE_SLICE_END, N_INVALIDATION);
			annotate(e, A_LEAF_ZAPS,
				 window_zaps(e, tid, t->win_seq, seq));
			event_end(e);
		}
		break;
	case K_NX:
		if (a == MEV_NX_BEGIN && !t->nx_open) {
			t->nx_open = 1;
			event_begin(e, t, ts, TYPE_SLICE_BEGIN, N_NX_BATCH);
			annotate(e, A_PAGES, b);
			annotate(e, A_TO_ZAP, c);
			event_end(e);
		} else if (a == MEV_NX_END && t->nx_open) {
			t->nx_open = 0;
			slice_end(e, t, ts);
		}
		break;
	case K_PROBE:
		/* The sample's interval ended at the event. */
		event_begin(e, t, ts - a, TYPE_SLICE_BEGIN, N_SPIKE);
		annotate(e, A_LATENCY_NS, a);
		annotate(e, A_PROBE, b);
		event_end(e);
		slice_end(e, t, ts);
		break;
	default:
		break;
	}
}

static void close_open(void *arg, void *v)
{
	struct exp *e = arg;
	struct thr *t = v;

	if (t->win_open)
		slice_end(e, t, e->last_ts);
	if (t->nx_open)
		slice_end(e, t, e->last_ts);
	if (t->npf_open)
		slice_end(e, t, e->last_ts);
	t->win_open = t->nx_open = t->npf_open = 0;
}

/* The probe threshold: the option's, else the samples' nearest-rank
 * p99 (INT64_MAX when there is no sample). */
static int64_t spike_threshold(struct exp *e)
{
	sqlite3_stmt *st;
	int64_t n = 0, v = INT64_MAX;

	if (e->o->spike_ns > 0)
		return e->o->spike_ns;
	if (sqlite3_prepare_v2(e->db, "SELECT count(*) FROM latency_sample",
			       -1, &st, NULL) != SQLITE_OK)
		return v;
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	if (!n || sqlite3_prepare_v2(e->db, "SELECT ns FROM latency_sample "
				     "ORDER BY ns LIMIT 1 OFFSET ?", -1, &st,
				     NULL) != SQLITE_OK)
		return v;
	sqlite3_bind_int64(st, 1, (int64_t)ceil(0.99 * (double)n) - 1);
	if (sqlite3_step(st) == SQLITE_ROW)
		v = sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return v;
}

static int stream(struct exp *e, int64_t npf_reason)
{
	sqlite3_stmt *st[K_N] = { 0 };
	int64_t cur[K_N];       /* each live cursor's seq */
	int live[K_N], k, best, rc = -1;

	for (k = 0; k < K_N; k++) {
		if (sqlite3_prepare_v2(e->db, stream_sql[k], -1, &st[k], NULL) !=
		    SQLITE_OK)
			goto end;
		if (k == K_EXIT)
			sqlite3_bind_int64(st[k], 1, npf_reason);
		if (k == K_PROBE)
			sqlite3_bind_int64(st[k], 1, spike_threshold(e));
		live[k] = sqlite3_step(st[k]) == SQLITE_ROW;
		cur[k] = live[k] ? sqlite3_column_int64(st[k], 0) : 0;
	}
	while (!e->err) {
		best = -1;
		for (k = 0; k < K_N; k++)
			if (live[k] && (best < 0 || cur[k] < cur[best]))
				best = k;
		if (best < 0)
			break;
		on_row(e, (enum kind)best, st[best]);
		live[best] = sqlite3_step(st[best]) == SQLITE_ROW;
		if (live[best])
			cur[best] = sqlite3_column_int64(st[best], 0);
	}
	ptrmap_each(&e->threads, close_open, e);
	rc = 0;
end:
	for (k = 0; k < K_N; k++)
		sqlite3_finalize(st[k]);
	return rc;
}

/* A counter track and its values, one per second from 0 to last
 * (missing seconds 0); rows: (second, value) in order. */
static int counter_track(struct exp *e, uint64_t uuid, uint64_t parent,
			 const char *name, sqlite3_stmt *rows, int64_t last)
{
	uint32_t seq = e->next_seq++;
	int64_t s, next = -1, v = 0;
	int have;

	descriptor(e, uuid, parent, name);
	pb_begin(&e->pkt, F_TD_COUNTER);
	pb_varint(&e->pkt, F_CD_UNIT, UNIT_COUNT);
	pb_end(&e->pkt);
	descriptor_end(e);
	have = sqlite3_step(rows) == SQLITE_ROW;
	for (s = 0; s <= last && !e->err; s++) {
		if (have && next < 0) {
			next = sqlite3_column_int64(rows, 0);
			v = sqlite3_column_int64(rows, 1);
		}
		pb_begin(&e->pkt, F_TRACE_PACKET);
		pb_varint(&e->pkt, F_TP_TIMESTAMP,
			  (uint64_t)(e->base + s * 1000000000LL));
		pb_varint(&e->pkt, F_TP_SEQ_ID, seq);
		pb_begin(&e->pkt, F_TP_TRACK_EVENT);
		pb_varint(&e->pkt, F_TE_TYPE, TYPE_COUNTER);
		pb_varint(&e->pkt, F_TE_TRACK_UUID, uuid);
		pb_int64(&e->pkt, F_TE_COUNTER_VALUE, next == s ? v : 0);
		pb_end(&e->pkt);
		pb_end(&e->pkt);
		flush_packet(e);
		e->st->counters++;
		if (next == s) {
			have = sqlite3_step(rows) == SQLITE_ROW;
			next = -1;
		}
	}
	sqlite3_reset(rows);
	return 0;
}

/* faults/s, leaf zaps/s and invalidations/s of each VM (0: the host's
 * threads of no VM). */
static int vm_counters(struct exp *e)
{
	static const char *const what[] = { "faults/s", "leaf zaps/s",
					    "invalidations/s" };
	char sql[512], name[64];
	sqlite3_stmt *vms, *rows;
	int64_t last = e->last_ts / 1000000000LL;
	int k, rc = 0;

	if (sqlite3_prepare_v2(e->db, "SELECT 0 UNION SELECT id FROM vm ORDER "
			       "BY 1", -1, &vms, NULL) != SQLITE_OK)
		return -1;
	while (rc == 0 && sqlite3_step(vms) == SQLITE_ROW) {
		int64_t vm = sqlite3_column_int64(vms, 0);

		if (e->o->vm && vm != e->o->vm)
			continue;
		for (k = 0; k < 3 && rc == 0; k++) {
			snprintf(sql, sizeof(sql), "SELECT ts / 1000000000, "
				 "count(*) FROM %s WHERE coalesce(vm, 0) = ?1 "
				 "%s GROUP BY 1 ORDER BY 1",
				 k == 0 ? "fault" : k == 1 ? "spte_change" :
				 "notifier",
				 k == 0 ? "" : k == 1 ?
				 "AND (old_spte & ?2) != 0 AND (level = 1 OR "
				 "(old_spte & ?3) != 0) AND (new_spte & ?2) = 0" :
				 "AND phase = 0");
			if (sqlite3_prepare_v2(e->db, sql, -1, &rows, NULL) !=
			    SQLITE_OK) {
				rc = -1;
				break;
			}
			sqlite3_bind_int64(rows, 1, vm);
			if (k == 1) {
				sqlite3_bind_int64(rows, 2,
						   (int64_t)e->fmt->mmu_present);
				sqlite3_bind_int64(rows, 3,
						   (int64_t)e->fmt->large);
			}
			snprintf(name, sizeof(name), "%s", what[k]);
			rc = counter_track(e, UUID_COUNTER + ((uint64_t)vm << 4) +
					   (uint64_t)k, UUID_VM + (uint64_t)vm,
					   name, rows, last);
			sqlite3_finalize(rows);
		}
	}
	sqlite3_finalize(vms);
	return rc;
}

/* The stored run of policy: its id, or -1 (none, or not verified). */
static int64_t run_of(struct exp *e, const char *policy, int *verified)
{
	sqlite3_stmt *st;
	int64_t id = -1;

	*verified = 0;
	if (sqlite3_prepare_v2(e->db, "SELECT id, self_check_ok FROM "
			       "main.replay_run WHERE policy = ?", -1, &st,
			       NULL) != SQLITE_OK)
		return -1;
	sqlite3_bind_text(st, 1, policy, -1, SQLITE_STATIC);
	if (sqlite3_step(st) == SQLITE_ROW) {
		id = sqlite3_column_int64(st, 0);
		*verified = sqlite3_column_int(st, 1);
	}
	sqlite3_finalize(st);
	return id;
}

/* The policy's faults and leaf zaps per second beside the recorded
 * run's, from the replay stored in the DB. */
static enum export_status whatif(struct exp *e, const char *recorded)
{
	const char *pols[2] = { recorded, e->o->policy };
	char name[96];
	sqlite3_stmt *rows;
	int64_t run, last = e->last_ts / 1000000000LL;
	int verified, p, k;

	for (p = 0; p < 2; p++) {
		run = run_of(e, pols[p], &verified);
		if (run < 0 || !verified) {
			log_error("%s: no %s replay of %s stored: run mmureplay "
				  "replay %s --policy %s first", e->o->db_path,
				  run < 0 ? "" : "verified", pols[p],
				  e->o->db_path, pols[p]);
			return EXPORT_ERR_CANNOT;
		}
		if (p == 0) {
			snprintf(name, sizeof(name), "what-if: %s against %s",
				 e->o->policy, recorded);
			descriptor(e, UUID_WHATIF, 0, name);
			descriptor_end(e);
		}
		for (k = 0; k < 2; k++) {
			if (sqlite3_prepare_v2(e->db, k == 0 ?
					       "SELECT second, faults FROM "
					       "main.replay_series WHERE run_id "
					       "= ? ORDER BY second" :
					       "SELECT second, zaps FROM "
					       "main.replay_series WHERE run_id "
					       "= ? ORDER BY second", -1, &rows,
					       NULL) != SQLITE_OK)
				return EXPORT_ERR_INPUT;
			sqlite3_bind_int64(rows, 1, run);
			snprintf(name, sizeof(name), "%s (%s)",
				 k == 0 ? "faults/s" : "leaf zaps/s", pols[p]);
			counter_track(e, UUID_WHATIF + 1 + (uint64_t)(p * 2 + k),
				      UUID_WHATIF, name, rows, last);
			sqlite3_finalize(rows);
		}
	}
	return EXPORT_OK;
}

static int count_of(sqlite3 *db, const char *sql)
{
	sqlite3_stmt *st;
	int n = 0;

	if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
		return 0;
	if (sqlite3_step(st) == SQLITE_ROW)
		n = sqlite3_column_int(st, 0);
	sqlite3_finalize(st);
	return n;
}

static void free_thr(void *arg, void *v)
{
	(void)arg;
	free(v);
}

enum export_status export_perfetto(sqlite3 *db, const struct export_opts *o,
				   FILE *out, struct export_stats *st)
{
	struct capture_info ci;
	struct exp e;
	enum export_status rc;

	memset(st, 0, sizeof(*st));
	memset(&e, 0, sizeof(e));
	e.db = db;
	e.o = o;
	e.out = out;
	e.st = st;
	e.next_seq = SEQ_DESCRIPTORS + 1;
	ptrmap_init(&e.threads);
	if (capture_info_read(db, &ci) < 0)
		return EXPORT_ERR_INPUT;
	e.fmt = ci.fmt;
	e.base = db_meta_get_int(db, "ts_base_ns", 0);
	e.last_ts = db_meta_get_int(db, "last_ts", 0);
	e.patched_windows = count_of(db, "SELECT EXISTS (SELECT 1 FROM "
				     "notifier WHERE phase = 1)");
	rc = EXPORT_ERR_INPUT;
	if (sqlite3_prepare_v2(db, "SELECT count(*) FROM spte_change WHERE "
			       "seq BETWEEN ?1 AND ?2 AND tid = ?3 AND "
			       "(old_spte & ?4) != 0 AND (level = 1 OR "
			       "(old_spte & ?5) != 0) AND (new_spte & ?4) = 0",
			       -1, &e.zaps, NULL) != SQLITE_OK)
		goto sqlerr;
	sqlite3_bind_int64(e.zaps, 4, (int64_t)e.fmt->mmu_present);
	sqlite3_bind_int64(e.zaps, 5, (int64_t)e.fmt->large);
	if (vm_tracks(&e) < 0 || stream(&e, ci.npf_exit_reason) < 0)
		goto sqlerr;
	if (!e.err && vm_counters(&e) < 0)
		goto sqlerr;
	if (!e.err && o->policy) {
		rc = whatif(&e, ci.recorded->name);
		if (rc != EXPORT_OK)
			goto end;
	}
	rc = e.err ? (enum export_status)e.err : EXPORT_OK;
	if (rc == EXPORT_ERR_NOMEM)
		log_error("%s: out of memory", o->db_path);
	goto end;
sqlerr:
	log_error("%s: cannot read: %s", o->db_path, sqlite3_errmsg(db));
	rc = EXPORT_ERR_INPUT;
end:
	sqlite3_finalize(e.zaps);
	ptrmap_each(&e.threads, free_thr, NULL);
	ptrmap_free(&e.threads);
	pb_free(&e.pkt);
	return rc;
}
