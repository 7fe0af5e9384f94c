/*
 * SQLite insert thread fed by a bounded chunk pool (see writer.h).
 *
 * Invariants: every chunk is in exactly one of {free list, full queue,
 * owned by the decoder, owned by the writer thread}; the full queue is
 * FIFO so rows reach SQLite in seq order.
 */
#include "ingest/writer.h"

#include "util/assert.h"
#include "util/log.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define POOL_CHUNKS 6

struct writer {
	sqlite3 *db;
	const struct catalog *cat;
	sqlite3_stmt *stmt_thread;      /* one thread row */
	/* Per catalogue entry: its bucket of a chunk from ingest_rows.
	 * Order across tables does not matter (each table is its own
	 * b-tree keyed by seq); within a table it is kept. */
	sqlite3_stmt **stmts_rows;
	/* The bucket ingest_rows shows: rows order[begin..end) of chunk. */
	const struct ingest_chunk *cur_chunk;
	int cur_begin, cur_end;
	int *nvals;                     /* bound values after the common 4 */
	int *order, *start;             /* chunk rows bucketed by kind */

	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct ingest_chunk *free_list[POOL_CHUNKS];
	int nfree;
	struct ingest_chunk *queue[POOL_CHUNKS];
	int qhead, qlen;
	int closing;
	enum writer_status status;      /* first error, sticky */
	atomic_int failed;              /* status != OK, read without lock */
	struct ingest_chunk *pool;
	/* Times (seconds), each written by one thread only and read after
	 * pthread_join. */
	struct writer_stats stats;
};

static double clock_s(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) != 0)
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static enum writer_status stmt_prepare(struct writer *w, sqlite3_stmt **st,
				       const char *sql)
{
	if (sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT, st,
			       NULL) != SQLITE_OK) {
		log_error("%s: cannot prepare \"%.80s...\": %s",
			  sqlite3_db_filename(w->db, "main"), sql,
			  sqlite3_errmsg(w->db));
		return WRITER_ERR_SQL;
	}
	return WRITER_OK;
}

static void append(char *buf, size_t len, const char *s)
{
	strncat(buf, s, len - strlen(buf) - 1);
}

/*
 * ingest_rows: the rows of one kind of the chunk being inserted, as a
 * table SQLite reads.  One "INSERT INTO t SELECT ... FROM ingest_rows"
 * per table per chunk moves a whole bucket without binding a parameter
 * per value: binding, copying each parameter into a register and the
 * multi-row VALUES co-routine cost a fifth of this thread's time.
 * Column 0..4: seq, ts, cpu, tid, vm; 5 + i: value i of the row.
 */
#define ROWS_COMMON 5
#define ROWS_COLS (ROWS_COMMON + ROW_MAX_VALS)

struct rows_vtab {
	sqlite3_vtab base;
	struct writer *w;
};

struct rows_cursor {
	sqlite3_vtab_cursor base;
	struct writer *w;
	int pos;
};

static int rows_connect(sqlite3 *db, void *aux, int argc,
			const char *const *argv, sqlite3_vtab **out,
			char **err)
{
	char sql[512];
	struct rows_vtab *v;
	int i, rc;

	(void)argc;
	(void)argv;
	(void)err;
	snprintf(sql, sizeof(sql), "CREATE TABLE x(c0");
	for (i = 1; i < ROWS_COLS; i++)
		snprintf(sql + strlen(sql), sizeof(sql) - strlen(sql),
			 ", c%d", i);
	append(sql, sizeof(sql), ")");
	rc = sqlite3_declare_vtab(db, sql);
	if (rc != SQLITE_OK)
		return rc;
	v = sqlite3_malloc(sizeof(*v));
	if (!v)
		return SQLITE_NOMEM;
	memset(v, 0, sizeof(*v));
	v->w = aux;
	*out = &v->base;
	return SQLITE_OK;
}

static int rows_disconnect(sqlite3_vtab *v)
{
	sqlite3_free(v);
	return SQLITE_OK;
}

static int rows_best_index(sqlite3_vtab *v, sqlite3_index_info *info)
{
	(void)v;
	info->estimatedCost = CHUNK_ROWS;
	info->estimatedRows = CHUNK_ROWS;
	return SQLITE_OK;
}

static int rows_open(sqlite3_vtab *v, sqlite3_vtab_cursor **out)
{
	struct rows_cursor *c = sqlite3_malloc(sizeof(*c));

	if (!c)
		return SQLITE_NOMEM;
	memset(c, 0, sizeof(*c));
	c->w = ((struct rows_vtab *)v)->w;
	*out = &c->base;
	return SQLITE_OK;
}

static int rows_close(sqlite3_vtab_cursor *c)
{
	sqlite3_free(c);
	return SQLITE_OK;
}

static int rows_filter(sqlite3_vtab_cursor *cur, int idx, const char *idxs,
		       int argc, sqlite3_value **argv)
{
	struct rows_cursor *c = (struct rows_cursor *)cur;

	(void)idx;
	(void)idxs;
	(void)argc;
	(void)argv;
	c->pos = c->w->cur_begin;
	return SQLITE_OK;
}

static int rows_next(sqlite3_vtab_cursor *cur)
{
	((struct rows_cursor *)cur)->pos++;
	return SQLITE_OK;
}

static int rows_eof(sqlite3_vtab_cursor *cur)
{
	struct rows_cursor *c = (struct rows_cursor *)cur;

	return c->pos >= c->w->cur_end;
}

static int rows_column(sqlite3_vtab_cursor *cur, sqlite3_context *ctx,
		       int col)
{
	struct rows_cursor *c = (struct rows_cursor *)cur;
	const struct ingest_row *r =
		&c->w->cur_chunk->rows[c->w->order[c->pos]];
	int i = col - ROWS_COMMON;

	switch (col) {
	case 0:
		sqlite3_result_int64(ctx, r->seq);
		break;
	case 1:
		sqlite3_result_int64(ctx, r->ts);
		break;
	case 2:
		if (!(r->nullmask & ROW_NULL_CPU))
			sqlite3_result_int64(ctx, r->cpu);
		break;
	case 3:
		if (!(r->nullmask & ROW_NULL_TID))
			sqlite3_result_int64(ctx, r->tid);
		break;
	case 4:
		if (!(r->nullmask & ROW_NULL_VM))
			sqlite3_result_int64(ctx, r->vm);
		break;
	default:
		/* No result set: NULL. */
		if (r->nullmask & (1u << i))
			break;
		if (r->textmask & (1u << i))
			sqlite3_result_text(ctx, r->v[i].text, -1,
					    SQLITE_STATIC);
		else
			sqlite3_result_int64(ctx, r->v[i].i);
	}
	return SQLITE_OK;
}

static int rows_rowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid)
{
	*rowid = ((struct rows_cursor *)cur)->pos;
	return SQLITE_OK;
}

static const sqlite3_module rows_module = {
	.iVersion = 1,
	/* xCreate NULL: eponymous-only, never in the DB's schema. */
	.xConnect = rows_connect,
	.xBestIndex = rows_best_index,
	.xDisconnect = rows_disconnect,
	.xOpen = rows_open,
	.xClose = rows_close,
	.xFilter = rows_filter,
	.xNext = rows_next,
	.xEof = rows_eof,
	.xColumn = rows_column,
	.xRowid = rows_rowid,
};

static enum writer_status stmts_prepare(struct writer *w)
{
	const struct catalog *cat = w->cat;
	char cols[1024], sel[512], sql[2048];
	int i, j;
	enum writer_status st;

	for (i = 0; i < cat->nentries; i++) {
		const struct catalog_entry *e = &cat->entries[i];

		snprintf(cols, sizeof(cols), "seq, ts, cpu, tid, vm");
		snprintf(sel, sizeof(sel), "c0, c1, c2, c3, c4");
		for (j = 0; j < e->ncols; j++) {
			append(cols, sizeof(cols), ", ");
			append(cols, sizeof(cols), e->cols[j].name);
			snprintf(sel + strlen(sel), sizeof(sel) - strlen(sel),
				 ", c%d", ROWS_COMMON + j);
		}
		w->nvals[i] = e->ncols;
		if (e->store_raw_id) {
			append(cols, sizeof(cols), ", raw_id");
			snprintf(sel + strlen(sel), sizeof(sel) - strlen(sel),
				 ", c%d", ROWS_COMMON + j);
			w->nvals[i]++;
		}
		for (j = 0; j < e->nderived; j++) {
			append(cols, sizeof(cols), ", ");
			append(cols, sizeof(cols), e->derived[j]);
			snprintf(sel + strlen(sel), sizeof(sel) - strlen(sel),
				 ", c%d", ROWS_COMMON + w->nvals[i]);
			w->nvals[i]++;
		}
		snprintf(sql, sizeof(sql), "INSERT INTO %s (%s) SELECT %s "
			 "FROM mmureplay_ingest_rows", e->table, cols, sel);
		st = stmt_prepare(w, &w->stmts_rows[i], sql);
		if (st != WRITER_OK)
			return st;
	}
	w->nvals[i] = 2;
	return stmt_prepare(w, &w->stmt_thread, "INSERT OR IGNORE INTO "
			    "thread (tid, first_seq, procname, pid) VALUES "
			    "(?, ?, ?, ?)");
}

/* Bind row r to the parameters of s from index p + 1; returns the next
 * free index. */
static int row_bind(struct writer *w, sqlite3_stmt *s, int p,
		    const struct ingest_row *r)
{
	int i;

	if ((int)r->kind == ROW_KIND_THREAD(w->cat)) {
		sqlite3_bind_int64(s, ++p, r->tid);
		sqlite3_bind_int64(s, ++p, r->seq);
	} else {
		sqlite3_bind_int64(s, ++p, r->seq);
		sqlite3_bind_int64(s, ++p, r->ts);
		if (r->nullmask & ROW_NULL_CPU)
			sqlite3_bind_null(s, ++p);
		else
			sqlite3_bind_int64(s, ++p, r->cpu);
		if (r->nullmask & ROW_NULL_TID)
			sqlite3_bind_null(s, ++p);
		else
			sqlite3_bind_int64(s, ++p, r->tid);
		if (r->nullmask & ROW_NULL_VM)
			sqlite3_bind_null(s, ++p);
		else
			sqlite3_bind_int64(s, ++p, r->vm);
	}
	for (i = 0; i < w->nvals[r->kind]; i++) {
		++p;
		if (r->nullmask & (1u << i))
			sqlite3_bind_null(s, p);
		else if (r->textmask & (1u << i))
			sqlite3_bind_text(s, p, r->v[i].text, -1,
					  SQLITE_STATIC);
		else
			sqlite3_bind_int64(s, p, r->v[i].i);
	}
	return p;
}

static int stmt_run(struct writer *w, sqlite3_stmt *s)
{
	int rc = sqlite3_step(s);

	sqlite3_reset(s);
	if (rc != SQLITE_DONE) {
		log_error("%s: insert failed: %s",
			  sqlite3_db_filename(w->db, "main"),
			  sqlite3_errmsg(w->db));
		return -1;
	}
	return 0;
}

/* Insert a chunk: rows bucketed by kind (a counting sort, stable), each
 * catalogue bucket in one statement, thread rows one by one. */
static int chunk_insert(struct writer *w, const struct ingest_chunk *c)
{
	int nkinds = w->cat->nentries + 1, k, i, end;

	memset(w->start, 0, (size_t)(nkinds + 1) * sizeof(*w->start));
	for (i = 0; i < c->n; i++)
		w->start[c->rows[i].kind + 1]++;
	for (k = 0; k < nkinds; k++)
		w->start[k + 1] += w->start[k];
	for (i = 0; i < c->n; i++)
		w->order[w->start[c->rows[i].kind]++] = i;
	/* start[k] now ends bucket k; it began at start[k - 1]. */
	w->cur_chunk = c;
	for (k = 0, i = 0; k < nkinds; k++) {
		end = w->start[k];
		if (k < w->cat->nentries && end > i) {
			w->cur_begin = i;
			w->cur_end = end;
			if (stmt_run(w, w->stmts_rows[k]) < 0)
				return -1;
			i = end;
		}
		for (; i < end; i++) {
			row_bind(w, w->stmt_thread, 0, &c->rows[w->order[i]]);
			if (stmt_run(w, w->stmt_thread) < 0)
				return -1;
		}
	}
	return 0;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct ingest_chunk *c;
	int failed = 0;
	double t0;

	for (;;) {
		pthread_mutex_lock(&w->lock);
		t0 = clock_s(CLOCK_MONOTONIC);
		while (w->qlen == 0 && !w->closing)
			pthread_cond_wait(&w->cond, &w->lock);
		w->stats.wait_rows_s += clock_s(CLOCK_MONOTONIC) - t0;
		if (w->qlen == 0) {
			pthread_mutex_unlock(&w->lock);
			break;
		}
		c = w->queue[w->qhead];
		w->qhead = (w->qhead + 1) % POOL_CHUNKS;
		w->qlen--;
		failed = w->status != WRITER_OK;
		pthread_mutex_unlock(&w->lock);

		if (!failed)
			failed = chunk_insert(w, c) < 0;
		c->n = 0;

		pthread_mutex_lock(&w->lock);
		if (failed && w->status == WRITER_OK) {
			w->status = WRITER_ERR_SQL;
			atomic_store(&w->failed, 1);
		}
		w->free_list[w->nfree++] = c;
		pthread_cond_broadcast(&w->cond);
		pthread_mutex_unlock(&w->lock);
	}
	w->stats.cpu_s = clock_s(CLOCK_THREAD_CPUTIME_ID);
	return NULL;
}

static void writer_free(struct writer *w)
{
	int i;

	sqlite3_finalize(w->stmt_thread);
	for (i = 0; w->stmts_rows && i < w->cat->nentries; i++)
		sqlite3_finalize(w->stmts_rows[i]);
	/* The module's instance points at w: gone with it. */
	sqlite3_drop_modules(w->db, NULL);
	free(w->stmts_rows);
	free(w->nvals);
	free(w->order);
	free(w->start);
	free(w->pool);
	free(w);
}

enum writer_status writer_start(struct writer **out, sqlite3 *db,
				const struct catalog *cat)
{
	enum writer_status st = WRITER_ERR_NOMEM;
	struct writer *w;
	int i, nkinds = cat->nentries + 1;

	*out = NULL;
	w = calloc(1, sizeof(*w));
	if (!w)
		return st;
	w->db = db;
	w->cat = cat;
	w->stmts_rows = calloc(nkinds, sizeof(*w->stmts_rows));
	w->nvals = calloc(nkinds, sizeof(*w->nvals));
	w->order = calloc(CHUNK_ROWS, sizeof(*w->order));
	w->start = calloc(nkinds + 1, sizeof(*w->start));
	w->pool = calloc(POOL_CHUNKS, sizeof(*w->pool));
	if (!w->stmts_rows || !w->nvals || !w->order ||
	    !w->start || !w->pool)
		goto end;
	for (i = 0; i < POOL_CHUNKS; i++)
		w->free_list[w->nfree++] = &w->pool[i];
	st = WRITER_ERR_SQL;
	if (sqlite3_create_module_v2(db, "mmureplay_ingest_rows", &rows_module,
				     w, NULL) != SQLITE_OK)
		goto end;
	st = stmts_prepare(w);
	if (st != WRITER_OK)
		goto end;
	pthread_mutex_init(&w->lock, NULL);
	pthread_cond_init(&w->cond, NULL);
	if (pthread_create(&w->thread, NULL, writer_main, w) != 0) {
		pthread_mutex_destroy(&w->lock);
		pthread_cond_destroy(&w->cond);
		st = WRITER_ERR_NOMEM;
		goto end;
	}
	*out = w;
	w = NULL;
end:
	if (w)
		writer_free(w);
	return st;
}

struct ingest_chunk *writer_chunk_get(struct writer *w)
{
	struct ingest_chunk *c;
	double t0;

	pthread_mutex_lock(&w->lock);
	if (w->nfree == 0) {
		t0 = clock_s(CLOCK_MONOTONIC);
		while (w->nfree == 0)
			pthread_cond_wait(&w->cond, &w->lock);
		w->stats.wait_chunk_s += clock_s(CLOCK_MONOTONIC) - t0;
	}
	c = w->free_list[--w->nfree];
	pthread_mutex_unlock(&w->lock);
	MR_ASSERT(c->n == 0);
	return c;
}

void writer_chunk_submit(struct writer *w, struct ingest_chunk *c)
{
	pthread_mutex_lock(&w->lock);
	MR_ASSERT(w->qlen < POOL_CHUNKS);
	w->queue[(w->qhead + w->qlen) % POOL_CHUNKS] = c;
	w->qlen++;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
}

int writer_failed(struct writer *w)
{
	/* Polled per message batch: a relaxed load, no lock. */
	return atomic_load_explicit(&w->failed, memory_order_relaxed);
}

enum writer_status writer_finish(struct writer *w, struct writer_stats *stats)
{
	enum writer_status st;

	pthread_mutex_lock(&w->lock);
	w->closing = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	st = w->status;
	if (stats)
		*stats = w->stats;
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	writer_free(w);
	return st;
}
