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
#include "replay/engine.h"
#include "util/log.h"
#include "util/ptrmap.h"

#include <math.h>
#include <pthread.h>
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
#define F_TP_CLOCK_SNAPSHOT     6
/* TracePacketDefaults, TrackEventDefaults */
#define F_TPD_TRACK_EVENT       11
#define F_TPD_CLOCK_ID          58
/* ClockSnapshot, ClockSnapshot.Clock */
#define F_CS_CLOCKS             1
#define F_CLK_ID                1
#define F_CLK_TIMESTAMP         2
#define F_CLK_INCREMENTAL       3
#define F_CLK_UNIT_NS           4
#define PF_CLOCK_BOOTTIME       6       /* the trace's clock by default */
/* Clock ids 64-127 are scoped to the sequence that defines them. */
#define PF_CLOCK_SEQ_DELTA      64
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

/* The interned event names, iid = index + 1 (the what-if's name the
 * policy: struct exp names[]). */
enum name { N_NPF, N_LOCK_WAIT, N_INVALIDATION, N_NX_BATCH, N_SPIKE,
	    N_FAULT_AVOIDED, N_ZAP_KEPT, N_N };
static const char *const names[N_N] = {
	"NPF", "mmu_lock wait", "invalidation", "NX recovery batch",
	"probe spike", "fault avoided", "leaf zap kept",
};

/* The interned debug annotation names, iid = index + 1. */
enum arg { A_WAIT_NS, A_GFN, A_HVA, A_PAGES, A_LEAF_ZAPS, A_TO_ZAP,
	   A_LATENCY_NS, A_PROBE, A_LEVEL, A_SEQ, A_N };
static const char *const args[A_N] = {
	"wait_ns", "gfn", "hva", "pages", "leaf_zaps", "to_zap", "latency_ns",
	"probe", "level", "seq",
};

/* Track uuids: a kind in the high bits, an id below. */
#define UUID_VM         (1ULL << 40)
#define UUID_THREAD     (2ULL << 40)
#define UUID_COUNTER    (3ULL << 40)
#define UUID_WHATIF     (4ULL << 40)

/* Sequence ids: 1 the descriptors, then threads, then counters. */
#define SEQ_DESCRIPTORS 1

/*
 * A packet sequence.  Its first packet clears its incremental state and
 * sets what the others rely on: the event names, the track (a default,
 * so no event repeats it) and a clock of its own, incremental, that
 * starts at the sequence's first timestamp: each later packet's
 * timestamp is the nanoseconds since the sequence's previous one (a
 * varint of 1-3 bytes instead of 9).
 */
struct seq {
	uint32_t id;
	uint64_t track;
	int inited;
	int64_t last_ts;        /* of its last packet, from the base */
};

struct thr {
	int32_t tid;
	struct seq seq;
	int npf_open, win_open, nx_open;
};

/* A VM's counts per second (its counter tracks), each array cap long;
 * a second past cap holds 0. */
enum ct { CT_FAULTS, CT_ZAPS, CT_INVALIDATIONS, CT_N };

struct vmc {
	int64_t vm;
	int64_t *n[CT_N];
	int64_t cap;
};

/*
 * The counting side, a thread of its own on a connection of its own
 * (db_open_again(): narrowed as the writer's is): faults, leaf zaps and
 * invalidations per VM and second (struct vmc), and the leaf zaps inside
 * each patched invalidation window.  It follows each thread's windows by
 * the rule the writer follows (a start opens one when none is open, an
 * end closes the open one), so the writer takes the window counts from
 * the queue in the order it closes the windows.  The queue is bounded:
 * the counter waits while it is full, the writer while it is empty.
 * Until the writer joins the thread, only the counter touches the vmc
 * arrays.
 */
#define WIN_QUEUE 4096

struct counter {
	sqlite3 *db;
	struct exp *e;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int64_t q[WIN_QUEUE];
	size_t head, n;         /* under lock */
	int done, stop;         /* under lock */
	int err;                /* enum export_status; read after join */
	int sql_failed;
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
	/* The VMs shown, by vm + 1 (0: the host's threads of no VM). */
	struct ptrmap vmcs;
	struct counter *counter;
	const char *names[N_N];
	char whatif_names[2][80];
	/* The what-if's sequences of the replay run going on, by tid (a
	 * run's events are in time order, several runs' are not). */
	struct ptrmap whatif_seqs;
	int err;                /* enum export_status */
};

/* Writes the packets built so far. */
static void write_out(struct exp *e)
{
	if (e->pkt.nomem) {
		e->err = EXPORT_ERR_NOMEM;
		return;
	}
	if (e->pkt.len &&
	    fwrite(e->pkt.b, 1, e->pkt.len, e->out) != e->pkt.len)
		e->err = EXPORT_ERR_OUTPUT;
	e->st->bytes += (int64_t)e->pkt.len;
	pb_reset(&e->pkt);
}

/* The packet built in e->pkt (one Trace.packet field) is whole: it is
 * written with the next ones, 64 KiB at a time. */
static void flush_packet(struct exp *e)
{
	e->st->packets++;
	if (e->pkt.len >= 65536 || e->pkt.nomem)
		write_out(e);
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

/* Returns thread tid's state, its track described on first use (under
 * VM vm's track, the host's when vm is 0). */
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
	t->seq.id = e->next_seq++;
	t->seq.track = UUID_THREAD + (uint32_t)tid;
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

/* A clock of a snapshot, reading ts (from the base). */
static void snapshot_clock(struct exp *e, uint32_t id, int64_t ts,
			   int incremental)
{
	pb_begin(&e->pkt, F_CS_CLOCKS);
	pb_varint(&e->pkt, F_CLK_ID, id);
	pb_varint(&e->pkt, F_CLK_TIMESTAMP, (uint64_t)(e->base + ts));
	if (incremental) {
		pb_varint(&e->pkt, F_CLK_INCREMENTAL, 1);
		pb_varint(&e->pkt, F_CLK_UNIT_NS, 1);
	}
	pb_end(&e->pkt);
}

/* sq's first packet (struct seq), its clock at ts. */
static void seq_init(struct exp *e, struct seq *sq, int64_t ts)
{
	int i;

	pb_begin(&e->pkt, F_TRACE_PACKET);
	pb_varint(&e->pkt, F_TP_SEQ_ID, sq->id);
	pb_varint(&e->pkt, F_TP_SEQ_FLAGS, SEQ_INCREMENTAL_STATE_CLEARED |
		  SEQ_NEEDS_INCREMENTAL_STATE);
	pb_begin(&e->pkt, F_TP_DEFAULTS);
	pb_varint(&e->pkt, F_TPD_CLOCK_ID, PF_CLOCK_SEQ_DELTA);
	pb_begin(&e->pkt, F_TPD_TRACK_EVENT);
	pb_varint(&e->pkt, F_TED_TRACK_UUID, sq->track);
	pb_end(&e->pkt);
	pb_end(&e->pkt);
	pb_begin(&e->pkt, F_TP_INTERNED);
	for (i = 0; i < N_N; i++) {
		pb_begin(&e->pkt, F_ID_EVENT_NAMES);
		pb_varint(&e->pkt, F_EN_IID, (uint64_t)i + 1);
		pb_string(&e->pkt, F_EN_NAME, e->names[i]);
		pb_end(&e->pkt);
	}
	for (i = 0; i < A_N; i++) {
		pb_begin(&e->pkt, F_ID_ANNOTATION_NAMES);
		pb_varint(&e->pkt, F_DAN_IID, (uint64_t)i + 1);
		pb_string(&e->pkt, F_DAN_NAME, args[i]);
		pb_end(&e->pkt);
	}
	pb_end(&e->pkt);
	/* Trace processors take a packet with a clock snapshot for the
	 * snapshot alone: the sequence's events come after it. */
	pb_begin(&e->pkt, F_TP_CLOCK_SNAPSHOT);
	snapshot_clock(e, PF_CLOCK_BOOTTIME, ts, 0);
	snapshot_clock(e, PF_CLOCK_SEQ_DELTA, ts, 1);
	pb_end(&e->pkt);
	pb_end(&e->pkt);
	flush_packet(e);
	sq->inited = 1;
	sq->last_ts = ts;
}

/* Starts a packet on sq at ts (never before its last: a clock that
 * disagrees by a few nanoseconds is clamped). */
static void event_begin(struct exp *e, struct seq *sq, int64_t ts, int type,
			enum name n)
{
	if (!sq->inited)
		seq_init(e, sq, ts);
	if (ts < sq->last_ts)
		ts = sq->last_ts;
	pb_begin(&e->pkt, F_TRACE_PACKET);
	pb_varint(&e->pkt, F_TP_TIMESTAMP, (uint64_t)(ts - sq->last_ts));
	pb_varint(&e->pkt, F_TP_SEQ_ID, sq->id);
	sq->last_ts = ts;
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
	event_begin(e, &t->seq, ts, TYPE_SLICE_END, N_NPF);
	event_end(e);
}

/* The merged stream: one cursor per table, columns seq, ts, tid, vm and
 * a, b, c where the kind has them (a column read costs: each is read
 * where it is used). */
enum kind { K_EXIT, K_ENTRY, K_LOCK, K_NOTIFIER, K_NX, K_PROBE, K_N };

static const char *const stream_sql[K_N] = {
	[K_EXIT] = "SELECT seq, ts, tid, coalesce(vm, 0) FROM "
		   "vcpu_exit WHERE exit_reason = ?1 ORDER BY seq",
	[K_ENTRY] = "SELECT seq, ts, tid FROM "
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

static void free_ptr(void *arg, void *v)
{
	(void)arg;
	free(v);
}

/* One more of what in VM vm's second of ts (a VM not shown: none). */
static void count(struct counter *c, int64_t vm, int64_t ts, enum ct what)
{
	struct vmc *v = ptrmap_get(&c->e->vmcs, (uint64_t)vm + 1);
	int64_t sec = ts > 0 ? ts / 1000000000LL : 0, cap, *n;
	int k;

	if (!v)
		return;
	if (sec >= v->cap) {
		cap = v->cap ? v->cap : 64;
		while (cap <= sec)
			cap *= 2;
		for (k = 0; k < CT_N; k++) {
			n = realloc(v->n[k], (size_t)cap * sizeof(*n));
			if (!n) {
				c->err = EXPORT_ERR_NOMEM;
				return;
			}
			memset(n + v->cap, 0,
			       (size_t)(cap - v->cap) * sizeof(*n));
			v->n[k] = n;
		}
		v->cap = cap;
	}
	v->n[what][sec]++;
}

/* Queues a window's count; returns -1 when the writer stopped. */
static int window_put(struct counter *c, int64_t zaps)
{
	int rc = 0;

	pthread_mutex_lock(&c->lock);
	while (c->n == WIN_QUEUE && !c->stop)
		pthread_cond_wait(&c->cond, &c->lock);
	if (c->stop) {
		rc = -1;
	} else {
		c->q[(c->head + c->n++) % WIN_QUEUE] = zaps;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	return rc;
}

/* The leaf zaps of the window the writer closes now (-1 when the
 * counter failed: the writer learns why at the join). */
static int64_t window_zaps(struct exp *e)
{
	struct counter *c = e->counter;
	int64_t v = -1;

	pthread_mutex_lock(&c->lock);
	while (!c->n && !c->done)
		pthread_cond_wait(&c->cond, &c->lock);
	if (c->n) {
		v = c->q[c->head];
		c->head = (c->head + 1) % WIN_QUEUE;
		c->n--;
		pthread_cond_broadcast(&c->cond);
	}
	pthread_mutex_unlock(&c->lock);
	return v;
}

/* The counter's cursors, merged in seq order: columns seq, ts, tid, vm,
 * phase.  (Reading the faults after the windows, so that the counts the
 * writer waits for come sooner, measured slower: 1.43 s against 1.28 s
 * on bench/export.py's capture.) */
enum { C_NOTIFIER, C_ZAP, C_FAULT, C_N };

static const char *const counter_sql[C_N] = {
	[C_NOTIFIER] = "SELECT seq, ts, tid, coalesce(vm, 0), phase FROM "
		       "notifier ORDER BY seq",
	/* A present leaf made non-present (?1 present, ?2 large). */
	[C_ZAP] = "SELECT seq, ts, tid, coalesce(vm, 0), 0 FROM spte_change "
		  "WHERE (old_spte & ?1) != 0 AND (level = 1 OR (old_spte & "
		  "?2) != 0) AND (new_spte & ?1) = 0 ORDER BY seq",
	[C_FAULT] = "SELECT seq, ts, 0, coalesce(vm, 0), 0 FROM fault ORDER "
		    "BY seq",
};

/*
 * The merge of n statements, each in seq order (column 0), that the
 * writer and the counter each run: steps statement prev (-1 the first
 * time: every statement), and returns the one whose row comes next, or
 * -1 when every one is done.  live[] and cur[] are its state.
 */
static int merge_next(sqlite3_stmt *const *st, int n, int *live,
		      int64_t *cur, int prev)
{
	int k, best = -1;

	for (k = 0; k < n; k++) {
		if (prev >= 0 && k != prev)
			continue;
		live[k] = sqlite3_step(st[k]) == SQLITE_ROW;
		if (live[k])
			cur[k] = sqlite3_column_int64(st[k], 0);
	}
	for (k = 0; k < n; k++)
		if (live[k] && (best < 0 || cur[k] < cur[best]))
			best = k;
	return best;
}

/* Each thread's window as the writer sees it: open, and its zaps. */
struct win {
	int open;
	int64_t zaps;
};

static void *counter_main(void *arg)
{
	struct counter *c = arg;
	struct ptrmap wins;
	sqlite3_stmt *st[C_N] = { 0 };
	int64_t cur[C_N], ts, vm;
	int live[C_N], k, best;
	struct win *w;
	int32_t tid;

	ptrmap_init(&wins);
	for (k = 0; k < C_N; k++) {
		if (sqlite3_prepare_v2(c->db, counter_sql[k], -1, &st[k],
				       NULL) != SQLITE_OK) {
			c->sql_failed = 1;
			goto end;
		}
		if (k == C_ZAP) {
			sqlite3_bind_int64(st[k], 1,
					   (int64_t)c->e->fmt->mmu_present);
			sqlite3_bind_int64(st[k], 2,
					   (int64_t)c->e->fmt->large);
		}
	}
	for (best = merge_next(st, C_N, live, cur, -1); best >= 0 && !c->err;
	     best = merge_next(st, C_N, live, cur, best)) {
		ts = sqlite3_column_int64(st[best], 1);
		vm = sqlite3_column_int64(st[best], 3);
		if (best == C_FAULT) {
			count(c, vm, ts, CT_FAULTS);
			continue;
		}
		tid = sqlite3_column_int(st[best], 2);
		w = ptrmap_get(&wins, (uint64_t)(uint32_t)tid);
		if (best == C_ZAP) {
			count(c, vm, ts, CT_ZAPS);
			if (w && w->open)
				w->zaps++;
			continue;
		}
		if (sqlite3_column_int(st[best], 4) == MEV_PHASE_START)
			count(c, vm, ts, CT_INVALIDATIONS);
		if (!c->e->patched_windows)
			continue;
		if (!w) {
			w = calloc(1, sizeof(*w));
			if (!w || ptrmap_put(&wins, (uint64_t)(uint32_t)tid,
					     w) < 0) {
				free(w);
				c->err = EXPORT_ERR_NOMEM;
				break;
			}
		}
		if (sqlite3_column_int(st[best], 4) == MEV_PHASE_START &&
		    !w->open) {
			w->open = 1;
			w->zaps = 0;
		} else if (sqlite3_column_int(st[best], 4) == MEV_PHASE_END &&
			   w->open) {
			w->open = 0;
			if (window_put(c, w->zaps) < 0)
				break;
		}
	}
end:
	for (k = 0; k < C_N; k++)
		sqlite3_finalize(st[k]);
	ptrmap_each(&wins, free_ptr, NULL);
	ptrmap_free(&wins);
	pthread_mutex_lock(&c->lock);
	c->done = 1;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

/* Starts the counter on a second connection.  Returns 0, or -1 after
 * saying why. */
static int counter_start(struct exp *e)
{
	struct counter *c = calloc(1, sizeof(*c));

	if (!c) {
		e->err = EXPORT_ERR_NOMEM;
		return -1;
	}
	c->e = e;
	if (db_open_again(e->db, &c->db) != DB_OK) {
		log_error("%s: cannot open it a second time to count its "
			  "events", e->o->db_path);
		free(c);
		return -1;
	}
	pthread_mutex_init(&c->lock, NULL);
	pthread_cond_init(&c->cond, NULL);
	if (pthread_create(&c->thread, NULL, counter_main, c) != 0) {
		log_error("%s: cannot start a thread", e->o->db_path);
		pthread_mutex_destroy(&c->lock);
		pthread_cond_destroy(&c->cond);
		sqlite3_close(c->db);
		free(c);
		return -1;
	}
	e->counter = c;
	return 0;
}

/* Stops (if the writer stopped early) and joins the counter.  Returns 0,
 * or -1 after a failed query (said); e->err set on a failure. */
static int counter_join(struct exp *e)
{
	struct counter *c = e->counter;
	int rc = 0;

	if (!c)
		return 0;
	pthread_mutex_lock(&c->lock);
	c->stop = 1;
	pthread_cond_broadcast(&c->cond);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	if (c->sql_failed) {
		log_error("%s: cannot read: %s", e->o->db_path,
			  sqlite3_errmsg(c->db));
		rc = -1;
	}
	if (c->err && !e->err)
		e->err = c->err;
	pthread_mutex_destroy(&c->lock);
	pthread_cond_destroy(&c->cond);
	sqlite3_close(c->db);
	free(c);
	e->counter = NULL;
	return rc;
}

static void on_row(struct exp *e, enum kind k, sqlite3_stmt *r)
{
	int64_t ts = sqlite3_column_int64(r, 1);
	int32_t tid = sqlite3_column_int(r, 2);
	int64_t vm, a = 0, b = 0, c = 0;
	struct thr *t;
	struct seq *sq;

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
	vm = sqlite3_column_int64(r, 3);
	if (k != K_EXIT) {
		a = sqlite3_column_int64(r, 4);
		/* A window's end has no range to show. */
		if (k != K_NOTIFIER || a == MEV_PHASE_START) {
			b = sqlite3_column_int64(r, 5);
			c = sqlite3_column_int64(r, 6);
		}
	}
	t = thread_of(e, tid, vm);
	if (!t)
		return;
	sq = &t->seq;
	switch (k) {
	case K_EXIT:
		if (t->npf_open)
			slice_end(e, t, ts);
		event_begin(e, sq, ts, TYPE_SLICE_BEGIN, N_NPF);
		event_end(e);
		t->npf_open = 1;
		break;
	case K_LOCK:
		/* The wait ended at the event; it began wait_ns earlier,
		 * inside the NPF exit it delayed (clamped to it). */
		event_begin(e, sq, ts - a, TYPE_SLICE_BEGIN, N_LOCK_WAIT);
		annotate(e, A_WAIT_NS, a);
		annotate_addr(e, A_GFN, (uint64_t)b);
		event_end(e);
		slice_end(e, t, ts);
		break;
	case K_NOTIFIER:
		if (!e->patched_windows) {
			event_begin(e, sq, ts, TYPE_INSTANT, N_INVALIDATION);
			annotate_addr(e, A_HVA, (uint64_t)b);
			annotate(e, A_PAGES, (int64_t)(((uint64_t)c -
							(uint64_t)b) >> 12));
			event_end(e);
		} else if (a == MEV_PHASE_START && !t->win_open) {
			t->win_open = 1;
			event_begin(e, sq, ts, TYPE_SLICE_BEGIN, N_INVALIDATION);
			annotate_addr(e, A_HVA, (uint64_t)b);
			annotate(e, A_PAGES, (int64_t)(((uint64_t)c -
							(uint64_t)b) >> 12));
			event_end(e);
		} else if (a == MEV_PHASE_END && t->win_open) {
			t->win_open = 0;
			event_begin(e, sq, ts, TYPE_SLICE_END, N_INVALIDATION);
			annotate(e, A_LEAF_ZAPS, window_zaps(e));
			event_end(e);
		}
		break;
	case K_NX:
		if (a == MEV_NX_BEGIN && !t->nx_open) {
			t->nx_open = 1;
			event_begin(e, sq, ts, TYPE_SLICE_BEGIN, N_NX_BATCH);
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
		event_begin(e, sq, ts - a, TYPE_SLICE_BEGIN, N_SPIKE);
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
	}
	for (best = merge_next(st, K_N, live, cur, -1); best >= 0 && !e->err;
	     best = merge_next(st, K_N, live, cur, best))
		on_row(e, (enum kind)best, st[best]);
	ptrmap_each(&e->threads, close_open, e);
	rc = 0;
end:
	for (k = 0; k < K_N; k++)
		sqlite3_finalize(st[k]);
	return rc;
}

/* A counter track and its values, one per second from 0 to last: v[s]
 * for s < n, 0 past it (a quiet second reads 0, not the last value). */
static void counter_track(struct exp *e, uint64_t uuid, uint64_t parent,
			  const char *name, const int64_t *v, int64_t n,
			  int64_t last)
{
	uint32_t seq = e->next_seq++;
	int64_t s;

	descriptor(e, uuid, parent, name);
	pb_begin(&e->pkt, F_TD_COUNTER);
	pb_varint(&e->pkt, F_CD_UNIT, UNIT_COUNT);
	pb_end(&e->pkt);
	descriptor_end(e);
	for (s = 0; s <= last && !e->err; s++) {
		pb_begin(&e->pkt, F_TRACE_PACKET);
		pb_varint(&e->pkt, F_TP_TIMESTAMP,
			  (uint64_t)(e->base + s * 1000000000LL));
		pb_varint(&e->pkt, F_TP_SEQ_ID, seq);
		pb_begin(&e->pkt, F_TP_TRACK_EVENT);
		pb_varint(&e->pkt, F_TE_TYPE, TYPE_COUNTER);
		pb_varint(&e->pkt, F_TE_TRACK_UUID, uuid);
		pb_int64(&e->pkt, F_TE_COUNTER_VALUE, s < n ? v[s] : 0);
		pb_end(&e->pkt);
		pb_end(&e->pkt);
		flush_packet(e);
		e->st->counters++;
	}
}

/* The VMs shown (every VM, or the one asked for, and 0 for the host's
 * threads of no VM), their counts zero.  Returns 0, or -1 after a failed
 * query; e->err when out of memory. */
static int vm_counts_init(struct exp *e)
{
	sqlite3_stmt *vms;
	struct vmc *v;
	int64_t vm;

	if (sqlite3_prepare_v2(e->db, "SELECT 0 UNION SELECT id FROM vm ORDER "
			       "BY 1", -1, &vms, NULL) != SQLITE_OK)
		return -1;
	while (sqlite3_step(vms) == SQLITE_ROW) {
		vm = sqlite3_column_int64(vms, 0);
		if (e->o->vm && vm != e->o->vm)
			continue;
		v = calloc(1, sizeof(*v));
		if (!v || ptrmap_put(&e->vmcs, (uint64_t)vm + 1, v) < 0) {
			free(v);
			e->err = EXPORT_ERR_NOMEM;
			break;
		}
		v->vm = vm;
	}
	sqlite3_finalize(vms);
	return 0;
}

static void vm_max(void *arg, void *val)
{
	int64_t *max = arg;
	const struct vmc *v = val;

	if (v->vm > *max)
		*max = v->vm;
}

static void vmc_free(void *arg, void *val)
{
	struct vmc *v = val;
	int k;

	(void)arg;
	for (k = 0; k < CT_N; k++)
		free(v->n[k]);
	free(v);
}

/* faults/s, leaf zaps/s and invalidations/s of each VM shown, in VM
 * order. */
static void vm_counters(struct exp *e)
{
	static const char *const what[CT_N] = { "faults/s", "leaf zaps/s",
						"invalidations/s" };
	int64_t last = e->last_ts / 1000000000LL, vm, max = 0;
	struct vmc *v;
	int k;

	ptrmap_each(&e->vmcs, vm_max, &max);
	for (vm = 0; vm <= max && !e->err; vm++) {
		v = ptrmap_get(&e->vmcs, (uint64_t)vm + 1);
		for (k = 0; v && k < CT_N; k++)
			counter_track(e, UUID_COUNTER + ((uint64_t)vm << 4) +
				      (uint64_t)k, UUID_VM + (uint64_t)vm,
				      what[k], v->n[k], v->cap, last);
	}
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
	char name[128];
	sqlite3_stmt *rows;
	int64_t run, last = e->last_ts / 1000000000LL, sec, *v;
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
			/* The stored series are the capture's, not a VM's:
			 * said under --vm (the instants are the VM's). */
			snprintf(name, sizeof(name), "what-if: %s against %s%s",
				 e->o->policy, recorded, e->o->vm ?
				 " (counters: the whole capture)" : "");
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
			v = calloc((size_t)last + 1, sizeof(*v));
			if (!v) {
				sqlite3_finalize(rows);
				return EXPORT_ERR_NOMEM;
			}
			while (sqlite3_step(rows) == SQLITE_ROW) {
				sec = sqlite3_column_int64(rows, 0);
				if (sec >= 0 && sec <= last)
					v[sec] = sqlite3_column_int64(rows, 1);
			}
			sqlite3_finalize(rows);
			snprintf(name, sizeof(name), "%s (%s)",
				 k == 0 ? "faults/s" : "leaf zaps/s", pols[p]);
			counter_track(e, UUID_WHATIF + 1 + (uint64_t)(p * 2 + k),
				      UUID_WHATIF, name, v, last + 1, last);
			free(v);
		}
	}
	return EXPORT_OK;
}

/* A replay run begins: its decisions go on sequences of their own. */
static void whatif_run(void *arg)
{
	struct exp *e = arg;

	ptrmap_each(&e->whatif_seqs, free_ptr, NULL);
	ptrmap_free(&e->whatif_seqs);
	ptrmap_init(&e->whatif_seqs);
}

/* A fault the policy avoids or a leaf zap it keeps: an instant on the
 * thread that traced the event. */
static void whatif_event(void *arg, const struct replay_whatif *w)
{
	struct exp *e = arg;
	uint64_t key = (uint64_t)(uint32_t)w->tid;
	struct seq *sq;
	struct thr *t;

	if (e->err)
		return;
	/* The thread traced events the stream showed (an NPF exit, an
	 * invalidation, a batch), so its track is described; one that did
	 * not is put under the host's. */
	t = thread_of(e, w->tid, 0);
	if (!t)
		return;
	sq = ptrmap_get(&e->whatif_seqs, key);
	if (!sq) {
		sq = calloc(1, sizeof(*sq));
		if (!sq || ptrmap_put(&e->whatif_seqs, key, sq) < 0) {
			free(sq);
			e->err = EXPORT_ERR_NOMEM;
			return;
		}
		sq->id = e->next_seq++;
		sq->track = t->seq.track;
	}
	event_begin(e, sq, w->ts, TYPE_INSTANT,
		    w->kind == REPLAY_WHATIF_FAULT_AVOIDED ? N_FAULT_AVOIDED :
		    N_ZAP_KEPT);
	/* The event's seq: its row in the capture DB's tables. */
	annotate(e, A_SEQ, (int64_t)w->seq);
	annotate_addr(e, A_GFN, w->gfn);
	if (w->kind == REPLAY_WHATIF_ZAP_KEPT)
		annotate(e, A_LEVEL, w->level);
	event_end(e);
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
	ptrmap_init(&e.whatif_seqs);
	ptrmap_init(&e.vmcs);
	memcpy(e.names, names, sizeof(e.names));
	if (o->policy) {
		snprintf(e.whatif_names[0], sizeof(e.whatif_names[0]),
			 "fault avoided (%s)", o->policy);
		snprintf(e.whatif_names[1], sizeof(e.whatif_names[1]),
			 "leaf zap kept (%s)", o->policy);
		e.names[N_FAULT_AVOIDED] = e.whatif_names[0];
		e.names[N_ZAP_KEPT] = e.whatif_names[1];
	}
	if (capture_info_read(db, &ci) < 0)
		return EXPORT_ERR_INPUT;
	e.fmt = ci.fmt;
	e.base = db_meta_get_int(db, "ts_base_ns", 0);
	e.last_ts = db_meta_get_int(db, "last_ts", 0);
	e.patched_windows = count_of(db, "SELECT EXISTS (SELECT 1 FROM "
				     "notifier WHERE phase = 1)");
	if (vm_tracks(&e) < 0 || vm_counts_init(&e) < 0)
		goto sqlerr;
	if (!e.err && counter_start(&e) < 0) {
		rc = e.err ? (enum export_status)e.err : EXPORT_ERR_INPUT;
		goto end;
	}
	if (!e.err && stream(&e, ci.npf_exit_reason) < 0)
		goto sqlerr;
	if (counter_join(&e) < 0) {
		rc = EXPORT_ERR_INPUT;
		goto end;
	}
	if (!e.err)
		vm_counters(&e);
	if (!e.err && o->policy) {
		struct replay_hook hook = { whatif_run, whatif_event, &e };

		rc = whatif(&e, ci.recorded->name);
		if (rc != EXPORT_OK)
			goto end;
		if (o->replay(o->replay_arg, &hook) < 0) {
			rc = EXPORT_ERR_CANNOT;
			goto end;
		}
	}
	if (!e.err)
		write_out(&e);
	rc = e.err ? (enum export_status)e.err : EXPORT_OK;
	if (rc == EXPORT_ERR_NOMEM)
		log_error("%s: out of memory", o->db_path);
	goto end;
sqlerr:
	log_error("%s: cannot read: %s", o->db_path, sqlite3_errmsg(db));
	rc = EXPORT_ERR_INPUT;
end:
	counter_join(&e);
	ptrmap_each(&e.vmcs, vmc_free, NULL);
	ptrmap_free(&e.vmcs);
	ptrmap_each(&e.threads, free_ptr, NULL);
	ptrmap_each(&e.whatif_seqs, free_ptr, NULL);
	ptrmap_free(&e.whatif_seqs);
	ptrmap_free(&e.threads);
	pb_free(&e.pkt);
	return rc;
}
