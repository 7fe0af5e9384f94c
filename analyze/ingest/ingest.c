/*
 * The ingest pipeline (see ingest.h): trace discovery, the babeltrace2
 * graph, the sink and the writer thread, and the decision between a whole
 * DB, a truncated one, and none.
 */
#define _GNU_SOURCE
#include "ingest/ingest.h"

#include "db/db.h"
#include "ingest/catalog.h"
#include "ingest/salvage.h"
#include "ingest/sink.h"
#include "ingest/tracedirs.h"
#include "ingest/writer.h"
#include "util/log.h"

#include <babeltrace2/babeltrace.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SRC_PREFIX "src."

struct ingest_graph {
	bt_graph *graph;
	const bt_plugin *ctf, *utils;
	const bt_component_filter *muxer;
	uint64_t muxer_ports;
};

/*
 * The most specific message of the current thread's babeltrace2 error,
 * and the trace directory whose source component raised it (or NULL).
 * Cause 0 is the root one (the plugin's own words, e.g. which stream
 * file could not be indexed); later causes are the library passing it up.
 */
static char *bt_error_take(const struct tracedirs *td, const char **dir)
{
	const bt_error *err = bt_current_thread_take_error();
	const bt_error_cause *cause;
	const char *comp = NULL, *msg = "unknown babeltrace2 error";
	char *out, *nl;
	uint64_t i, n;
	long idx;

	*dir = NULL;
	if (!err)
		return strdup(msg);
	n = bt_error_get_cause_count(err);
	for (i = 0; i < n; i++) {
		cause = bt_error_borrow_cause_by_index(err, i);
		switch (bt_error_cause_get_actor_type(cause)) {
		case BT_ERROR_CAUSE_ACTOR_TYPE_COMPONENT:
			comp = bt_error_cause_component_actor_get_component_name(
				cause);
			break;
		case BT_ERROR_CAUSE_ACTOR_TYPE_MESSAGE_ITERATOR:
			comp = bt_error_cause_message_iterator_actor_get_component_name(
				cause);
			break;
		default:
			comp = NULL;
		}
		if (comp && strncmp(comp, SRC_PREFIX, strlen(SRC_PREFIX)) == 0) {
			idx = strtol(comp + strlen(SRC_PREFIX), NULL, 10);
			if (idx >= 0 && idx < td->n)
				*dir = td->dirs[idx].path;
		}
	}
	if (n)
		msg = bt_error_cause_get_message(
			bt_error_borrow_cause_by_index(err, 0));
	out = strdup(msg);
	/* One line: the user gets the gist, not babeltrace2's backtrace. */
	for (nl = out; nl && *nl; nl++)
		if (*nl == '\n')
			*nl = ' ';
	bt_error_release(err);
	return out;
}

static enum ingest_status graph_add_sources(struct ingest_graph *g,
					    const struct tracedirs *td,
					    const char **bad_dir)
{
	const bt_component_class_source *cls =
		bt_plugin_borrow_source_component_class_by_name_const(g->ctf,
								      "fs");
	const bt_component_source *src;
	bt_value *params = NULL, *inputs;
	enum ingest_status st = INGEST_ERR_INTERNAL;
	char name[32];
	uint64_t p, np;
	int i;

	if (!cls)
		goto end;
	for (i = 0; i < td->n; i++) {
		*bad_dir = td->dirs[i].path;
		params = bt_value_map_create();
		if (!params ||
		    bt_value_map_insert_empty_array_entry(params, "inputs",
							  &inputs) ||
		    bt_value_array_append_string_element(inputs,
				td->dirs[i].view ? td->dirs[i].view :
				td->dirs[i].path) ||
		    bt_value_map_insert_string_entry(params, "trace-name",
						     td->dirs[i].label) ||
		    /*
		     * Kernel and UST traces of one capture, or of different
		     * hosts, must share one time line to be muxed.
		     */
		    bt_value_map_insert_bool_entry(
			    params, "force-clock-class-origin-unix-epoch",
			    BT_TRUE))
			goto end;
		snprintf(name, sizeof(name), SRC_PREFIX "%d", i);
		if (bt_graph_add_source_component(g->graph, cls, name, params,
						  BT_LOGGING_LEVEL_NONE, &src)
		    != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
			st = INGEST_ERR_INPUT;
			goto end;
		}
		BT_VALUE_PUT_REF_AND_RESET(params);
		np = bt_component_source_get_output_port_count(src);
		for (p = 0; p < np; p++) {
			if (bt_graph_connect_ports(g->graph,
				bt_component_source_borrow_output_port_by_index_const(
					src, p),
				bt_component_filter_borrow_input_port_by_index_const(
					g->muxer, g->muxer_ports), NULL) !=
			    BT_GRAPH_CONNECT_PORTS_STATUS_OK)
				goto end;
			g->muxer_ports++;
		}
	}
	*bad_dir = NULL;
	st = INGEST_OK;
end:
	bt_value_put_ref(params);
	return st;
}

static enum ingest_status graph_build(struct ingest_graph *g,
				      const struct tracedirs *td,
				      struct ingest_sink *sink,
				      const char **bad_dir)
{
	const bt_component_class_filter *mux_cls;
	const bt_component_sink *snk;
	enum ingest_status st = INGEST_ERR_INTERNAL;

	*bad_dir = NULL;
	if (bt_plugin_find("ctf", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE,
			   &g->ctf) != BT_PLUGIN_FIND_STATUS_OK ||
	    bt_plugin_find("utils", BT_TRUE, BT_TRUE, BT_TRUE, BT_TRUE,
			   BT_TRUE, &g->utils) != BT_PLUGIN_FIND_STATUS_OK) {
		log_error("babeltrace2 plugins 'ctf' and 'utils' not found "
			  "(install babeltrace2)");
		goto end;
	}
	g->graph = bt_graph_create(0);
	mux_cls = bt_plugin_borrow_filter_component_class_by_name_const(
		g->utils, "muxer");
	if (!g->graph || !mux_cls ||
	    bt_graph_add_filter_component(g->graph, mux_cls, "muxer", NULL,
					  BT_LOGGING_LEVEL_NONE, &g->muxer) !=
	    BT_GRAPH_ADD_COMPONENT_STATUS_OK)
		goto end;
	st = graph_add_sources(g, td, bad_dir);
	if (st != INGEST_OK)
		goto end;
	st = INGEST_ERR_INTERNAL;
	if (bt_graph_add_simple_sink_component(g->graph, "mmureplay",
					       sink_bt_initialize,
					       sink_bt_consume,
					       sink_bt_finalize, sink, &snk) !=
	    BT_GRAPH_ADD_COMPONENT_STATUS_OK ||
	    bt_graph_connect_ports(g->graph,
		bt_component_filter_borrow_output_port_by_index_const(
			g->muxer, 0),
		bt_component_sink_borrow_input_port_by_index_const(snk, 0),
		NULL) != BT_GRAPH_CONNECT_PORTS_STATUS_OK)
		goto end;
	st = INGEST_OK;
end:
	return st;
}

static void graph_destroy(struct ingest_graph *g)
{
	bt_graph_put_ref(g->graph);
	bt_plugin_put_ref(g->ctf);
	bt_plugin_put_ref(g->utils);
	memset(g, 0, sizeof(*g));
}

/* Run to the end.  Returns 0, or -1 with the error left for the caller. */
static int graph_run(struct ingest_graph *g)
{
	for (;;) {
		switch (bt_graph_run(g->graph)) {
		case BT_GRAPH_RUN_STATUS_OK:
			return 0;
		case BT_GRAPH_RUN_STATUS_AGAIN:
			usleep(1000);
			break;
		default:
			return -1;
		}
	}
}

/*
 * The capture manifest (capture/mmureplay-capture writes manifest.json at
 * the root of what it records) goes into meta 'manifest' as it is, once
 * it parses as JSON: the replay reads the CPU vendor and the KVM
 * parameters (the recorded policy) from it.  A bad manifest is reported
 * and left out; the trace is still good.
 */
static int manifest_store(sqlite3 *db, const struct ingest_opts *opts)
{
	char path[4096], *text = NULL;
	const char *found = NULL;
	cJSON *doc = NULL;
	long len;
	FILE *f;
	int i, rc = 0;

	for (i = 0; i < opts->ninputs && !found; i++) {
		snprintf(path, sizeof(path), "%s/manifest.json",
			 opts->inputs[i]);
		f = fopen(path, "r");
		if (!f)
			continue;
		found = path;
		if (fseek(f, 0, SEEK_END) == 0 && (len = ftell(f)) >= 0 &&
		    len < (1 << 20) && fseek(f, 0, SEEK_SET) == 0 &&
		    (text = calloc(1, (size_t)len + 1)) &&
		    fread(text, 1, (size_t)len, f) == (size_t)len)
			doc = cJSON_Parse(text);
		fclose(f);
	}
	if (!found)
		goto end;
	if (!doc || !cJSON_IsObject(doc) ||
	    !cJSON_GetObjectItemCaseSensitive(doc, "manifest_version")) {
		log_warn("%s: not a capture manifest (ignored)", found);
		goto end;
	}
	rc = db_meta_set_text(db, "manifest", text) == DB_OK ? 0 : -1;
end:
	cJSON_Delete(doc);
	free(text);
	return rc;
}

/* Build a salvaged view of the trace directory dir; 0 on success. */
static int try_salvage(struct tracedirs *td, const char *dir)
{
	struct tracedir *d = NULL;
	int i;

	for (i = 0; i < td->n; i++)
		if (td->dirs[i].path == dir)
			d = &td->dirs[i];
	if (!d || d->view)
		return -1;
	if (salvage_trace(d->path, &d->view, &d->salvage_reason) !=
	    SALVAGE_OK)
		return -1;
	log_warn("%s: %s; reading what is there", d->path, d->salvage_reason);
	return 0;
}

enum ingest_status ingest_run(const struct ingest_opts *opts,
			      struct ingest_result *res)
{
	enum ingest_status st = INGEST_ERR_INPUT;
	struct tracedirs td = { 0 };
	struct catalog cat = { 0 };
	struct db_out out = { 0 };
	struct ingest_graph g = { 0 };
	struct writer *w = NULL;
	struct ingest_sink *sink = NULL;
	const char *bad_dir = NULL;
	char *why = NULL;
	int i, truncated = 0;

	memset(res, 0, sizeof(*res));
	for (i = 0; i < opts->ninputs; i++)
		if (tracedirs_find(&td, opts->inputs[i]) != TRACEDIRS_OK)
			goto end;
	res->ntraces = td.n;
	st = INGEST_ERR_INTERNAL;
	if (catalog_load(&cat) != CATALOG_OK)
		goto end;
	st = INGEST_ERR_OUTPUT;
	if (db_out_create(&out, opts->output) != DB_OK)
		goto end;
	if (writer_start(&w, out.db, &cat) != WRITER_OK)
		goto end;
	st = INGEST_ERR_INTERNAL;
	sink = sink_create(&cat, w);
	if (!sink)
		goto end;
	/* A trace refused because a stream file is cut short is retried
	 * from a salvaged view (at most once per trace directory). */
	while ((st = graph_build(&g, &td, sink, &bad_dir)) != INGEST_OK) {
		why = bt_error_take(&td, &bad_dir);
		if (st == INGEST_ERR_INPUT && bad_dir &&
		    try_salvage(&td, bad_dir) == 0) {
			graph_destroy(&g);
			free(why);
			why = NULL;
			continue;
		}
		if (st == INGEST_ERR_INPUT)
			log_error("%s: not a readable CTF trace: %s",
				  bad_dir ? bad_dir : opts->inputs[0], why);
		else
			log_error("cannot build the babeltrace2 graph: %s",
				  why);
		goto end;
	}
	for (i = 0; i < td.n && !why; i++)
		if (td.dirs[i].salvage_reason) {
			truncated = 1;
			why = strdup(td.dirs[i].salvage_reason);
		}
	if (graph_run(&g) < 0) {
		free(why);
		why = bt_error_take(&td, &bad_dir);
		truncated = 1;
	}
	log_progress_end();
	sink_flush(sink);
	i = writer_finish(w) != WRITER_OK;
	w = NULL;
	res->events = sink_event_count(sink);
	res->lost_events = sink_lost_count(sink);
	if (i) {
		st = INGEST_ERR_OUTPUT;
		goto end;
	}
	if (truncated && res->events == 0) {
		log_error("%s: not a readable CTF trace: %s",
			  bad_dir ? bad_dir : opts->inputs[0], why);
		st = INGEST_ERR_INPUT;
		goto end;
	}
	if (truncated)
		log_error("%s: trace broken after %llu events (kept, marked "
			  "truncated): %s", bad_dir ? bad_dir : opts->inputs[0],
			  (unsigned long long)res->events, why);
	st = INGEST_ERR_OUTPUT;
	if (sink_store_tables(sink, out.db) != SINK_OK ||
	    db_meta_set_int(out.db, "truncated", truncated) != DB_OK ||
	    (truncated && db_meta_set_text(out.db, "truncated_reason", why) !=
	     DB_OK) ||
	    db_meta_set_int(out.db, "catalogue_version", cat.version) !=
	    DB_OK || manifest_store(out.db, opts) < 0 ||
	    db_out_publish(&out) != DB_OK)
		goto end;
	st = truncated ? INGEST_PARTIAL : INGEST_OK;
end:
	if (w) {
		sink_flush(sink);
		writer_finish(w);
	}
	graph_destroy(&g);
	sink_destroy(sink);
	db_out_discard(&out);
	catalog_free(&cat);
	tracedirs_free(&td);
	free(why);
	return st;
}
