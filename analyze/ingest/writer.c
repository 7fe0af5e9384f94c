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

#define POOL_CHUNKS 6
/*
 * Rows per multi-row INSERT.  One statement per row spends most of its
 * time in statement setup and reset, not in the b-tree; batching rows of
 * one table amortizes that.  Order across tables does not matter (each
 * table is its own b-tree keyed by seq) and within a table it is kept.
 */
#define BATCH_ROWS 32

struct writer {
	sqlite3 *db;
	const struct catalog *cat;
	sqlite3_stmt **stmts;           /* per catalogue entry, + thread */
	sqlite3_stmt **stmts_batch;     /* BATCH_ROWS rows at once */
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
};

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

static enum writer_status stmts_prepare(struct writer *w)
{
	const struct catalog *cat = w->cat;
	char cols[1024], row[256], sql[16384];
	int i, j;
	enum writer_status st;

	for (i = 0; i < cat->nentries; i++) {
		const struct catalog_entry *e = &cat->entries[i];

		snprintf(cols, sizeof(cols), "seq, ts, cpu, tid");
		snprintf(row, sizeof(row), "(?, ?, ?, ?");
		for (j = 0; j < e->ncols; j++) {
			append(cols, sizeof(cols), ", ");
			append(cols, sizeof(cols), e->cols[j].name);
			append(row, sizeof(row), ", ?");
		}
		w->nvals[i] = e->ncols;
		if (e->store_raw_id) {
			append(cols, sizeof(cols), ", raw_id");
			append(row, sizeof(row), ", ?");
			w->nvals[i]++;
		}
		append(row, sizeof(row), ")");
		snprintf(sql, sizeof(sql), "INSERT INTO %s (%s) VALUES %s",
			 e->table, cols, row);
		st = stmt_prepare(w, &w->stmts[i], sql);
		for (j = 1; j < BATCH_ROWS && st == WRITER_OK; j++) {
			append(sql, sizeof(sql), ", ");
			append(sql, sizeof(sql), row);
		}
		if (st == WRITER_OK)
			st = stmt_prepare(w, &w->stmts_batch[i], sql);
		if (st != WRITER_OK)
			return st;
	}
	w->nvals[i] = 1;
	return stmt_prepare(w, &w->stmts[i], "INSERT OR IGNORE INTO thread "
			    "(tid, first_seq, procname) VALUES (?, ?, ?)");
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
 * bucket in BATCH_ROWS statements and single rows for the rest. */
static int chunk_insert(struct writer *w, const struct ingest_chunk *c)
{
	int nkinds = w->cat->nentries + 1, k, i, j, p, end;

	memset(w->start, 0, (size_t)(nkinds + 1) * sizeof(*w->start));
	for (i = 0; i < c->n; i++)
		w->start[c->rows[i].kind + 1]++;
	for (k = 0; k < nkinds; k++)
		w->start[k + 1] += w->start[k];
	for (i = 0; i < c->n; i++)
		w->order[w->start[c->rows[i].kind]++] = i;
	/* start[k] now ends bucket k; it began at start[k - 1]. */
	for (k = 0, i = 0; k < nkinds; k++) {
		end = w->start[k];
		for (; k < w->cat->nentries && end - i >= BATCH_ROWS;
		     i += BATCH_ROWS) {
			for (j = 0, p = 0; j < BATCH_ROWS; j++)
				p = row_bind(w, w->stmts_batch[k], p,
					     &c->rows[w->order[i + j]]);
			if (stmt_run(w, w->stmts_batch[k]) < 0)
				return -1;
		}
		for (; i < end; i++) {
			row_bind(w, w->stmts[k], 0, &c->rows[w->order[i]]);
			if (stmt_run(w, w->stmts[k]) < 0)
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

	for (;;) {
		pthread_mutex_lock(&w->lock);
		while (w->qlen == 0 && !w->closing)
			pthread_cond_wait(&w->cond, &w->lock);
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
	return NULL;
}

static void writer_free(struct writer *w)
{
	int i;

	for (i = 0; i <= w->cat->nentries; i++) {
		if (w->stmts)
			sqlite3_finalize(w->stmts[i]);
		if (w->stmts_batch)
			sqlite3_finalize(w->stmts_batch[i]);
	}
	free(w->stmts);
	free(w->stmts_batch);
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
	w->stmts = calloc(nkinds, sizeof(*w->stmts));
	w->stmts_batch = calloc(nkinds, sizeof(*w->stmts_batch));
	w->nvals = calloc(nkinds, sizeof(*w->nvals));
	w->order = calloc(CHUNK_ROWS, sizeof(*w->order));
	w->start = calloc(nkinds + 1, sizeof(*w->start));
	w->pool = calloc(POOL_CHUNKS, sizeof(*w->pool));
	if (!w->stmts || !w->stmts_batch || !w->nvals || !w->order ||
	    !w->start || !w->pool)
		goto end;
	for (i = 0; i < POOL_CHUNKS; i++)
		w->free_list[w->nfree++] = &w->pool[i];
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

	pthread_mutex_lock(&w->lock);
	while (w->nfree == 0)
		pthread_cond_wait(&w->cond, &w->lock);
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

enum writer_status writer_finish(struct writer *w)
{
	enum writer_status st;

	pthread_mutex_lock(&w->lock);
	w->closing = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	st = w->status;
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	writer_free(w);
	return st;
}
