/*
 * SQLite insert thread fed by a bounded chunk pool (see writer.h).
 *
 * Invariants: every chunk is in exactly one of {free list, full queue,
 * owned by the decoder, owned by the writer thread}; the full queue is
 * FIFO so rows reach SQLite in seq order.
 */
#include "ingest/writer.h"

#include "util/log.h"

#include <assert.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define POOL_CHUNKS 6

struct writer {
	sqlite3 *db;
	const struct catalog *cat;
	sqlite3_stmt **stmts;           /* per catalogue entry, + thread */
	int *nvals;                     /* bound values after the common 4 */

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

static enum writer_status stmt_prepare(struct writer *w, int kind,
				       const char *sql)
{
	if (sqlite3_prepare_v3(w->db, sql, -1, SQLITE_PREPARE_PERSISTENT,
			       &w->stmts[kind], NULL) != SQLITE_OK) {
		log_error("%s: cannot prepare \"%s\": %s",
			  sqlite3_db_filename(w->db, "main"), sql,
			  sqlite3_errmsg(w->db));
		return WRITER_ERR_SQL;
	}
	return WRITER_OK;
}

static enum writer_status stmts_prepare(struct writer *w)
{
	const struct catalog *cat = w->cat;
	char cols[1024], vals[256];
	char sql[1400];
	int i, j;
	enum writer_status st;

	for (i = 0; i < cat->nentries; i++) {
		const struct catalog_entry *e = &cat->entries[i];

		snprintf(cols, sizeof(cols), "seq, ts, cpu, tid");
		snprintf(vals, sizeof(vals), "?, ?, ?, ?");
		for (j = 0; j < e->ncols; j++) {
			strncat(cols, ", ", sizeof(cols) - strlen(cols) - 1);
			strncat(cols, e->cols[j].name,
				sizeof(cols) - strlen(cols) - 1);
			strncat(vals, ", ?", sizeof(vals) - strlen(vals) - 1);
		}
		w->nvals[i] = e->ncols;
		if (e->store_raw_id) {
			strncat(cols, ", raw_id",
				sizeof(cols) - strlen(cols) - 1);
			strncat(vals, ", ?", sizeof(vals) - strlen(vals) - 1);
			w->nvals[i]++;
		}
		snprintf(sql, sizeof(sql), "INSERT INTO %s (%s) VALUES (%s)",
			 e->table, cols, vals);
		st = stmt_prepare(w, i, sql);
		if (st != WRITER_OK)
			return st;
	}
	w->nvals[i] = 1;
	return stmt_prepare(w, ROW_KIND_THREAD(cat),
			    "INSERT OR IGNORE INTO thread (tid, first_seq, "
			    "procname) VALUES (?, ?, ?)");
}

static int row_insert(struct writer *w, const struct ingest_row *r)
{
	sqlite3_stmt *s = w->stmts[r->kind];
	int i, base = 5;

	if ((int)r->kind == ROW_KIND_THREAD(w->cat)) {
		sqlite3_bind_int64(s, 1, r->tid);
		sqlite3_bind_int64(s, 2, r->seq);
		base = 3;
	} else {
		sqlite3_bind_int64(s, 1, r->seq);
		sqlite3_bind_int64(s, 2, r->ts);
		if (r->nullmask & ROW_NULL_CPU)
			sqlite3_bind_null(s, 3);
		else
			sqlite3_bind_int64(s, 3, r->cpu);
		if (r->nullmask & ROW_NULL_TID)
			sqlite3_bind_null(s, 4);
		else
			sqlite3_bind_int64(s, 4, r->tid);
	}
	for (i = 0; i < w->nvals[r->kind]; i++) {
		if (r->nullmask & (1u << i))
			sqlite3_bind_null(s, base + i);
		else if (r->textmask & (1u << i))
			sqlite3_bind_text(s, base + i,
					  (const char *)(intptr_t)r->v[i], -1,
					  SQLITE_STATIC);
		else
			sqlite3_bind_int64(s, base + i, r->v[i]);
	}
	i = sqlite3_step(s);
	sqlite3_reset(s);
	if (i != SQLITE_DONE) {
		log_error("%s: insert failed: %s",
			  sqlite3_db_filename(w->db, "main"),
			  sqlite3_errmsg(w->db));
		return -1;
	}
	return 0;
}

static void *writer_main(void *arg)
{
	struct writer *w = arg;
	struct ingest_chunk *c;
	int i, failed = 0;

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

		for (i = 0; i < c->n && !failed; i++)
			failed = row_insert(w, &c->rows[i]) < 0;
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
	w->nvals = calloc(nkinds, sizeof(*w->nvals));
	w->pool = calloc(POOL_CHUNKS, sizeof(*w->pool));
	if (!w->stmts || !w->nvals || !w->pool)
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
	if (w) {
		for (i = 0; w->stmts && i < nkinds; i++)
			sqlite3_finalize(w->stmts[i]);
		free(w->stmts);
		free(w->nvals);
		free(w->pool);
		free(w);
	}
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
	assert(c->n == 0);
	return c;
}

void writer_chunk_submit(struct writer *w, struct ingest_chunk *c)
{
	pthread_mutex_lock(&w->lock);
	assert(w->qlen < POOL_CHUNKS);
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
	int i;

	pthread_mutex_lock(&w->lock);
	w->closing = 1;
	pthread_cond_broadcast(&w->cond);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	st = w->status;
	for (i = 0; i <= w->cat->nentries; i++)
		sqlite3_finalize(w->stmts[i]);
	pthread_mutex_destroy(&w->lock);
	pthread_cond_destroy(&w->cond);
	free(w->stmts);
	free(w->nvals);
	free(w->pool);
	free(w);
	return st;
}
