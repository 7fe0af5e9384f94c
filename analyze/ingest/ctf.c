/*
 * CTF traces through a babeltrace2 graph (see reader.h):
 *
 *   TRACE... --(src.ctf.fs per dir with a 'metadata' file)--> merge
 *            (ingest/merge.h) --> sink (ingest/sink.c) --> capture tables
 *
 * MMUREPLAY_TEST_MUXER=1 puts utils.muxer and a simple sink in place of
 * the merge: the reference the tests hold the merge's order against.
 *
 * A trace refused because a stream file is cut short is retried from a
 * salvaged view (ingest/salvage.h), once per trace directory.  Each
 * metadata file passes the guard (ingest/metaguard.h) before babeltrace2
 * sees it, and the graph is built and run under the no-progress watchdog
 * (util/watchdog.h): the sink kicks it per message batch.
 */
#define _GNU_SOURCE
#include "ingest/reader.h"

#include "ingest/merge.h"
#include "ingest/firstpacket.h"
#include "ingest/metaguard.h"
#include "ingest/salvage.h"
#include "ingest/sink.h"
#include "ingest/tracedirs.h"
#include "util/alloc.h"
#include "util/log.h"
#include "util/watchdog.h"

#include <babeltrace2/babeltrace.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define SRC_PREFIX "src."

struct ingest_graph {
	bt_graph *graph;
	const bt_plugin *ctf, *utils;
	const bt_component_filter *muxer;       /* reference mode only */
	/* Every source output port, in source then port order. */
	const bt_port_output **ports;
	uint64_t nports, capports;
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
		watchdog_kick();
		if (bt_graph_add_source_component(g->graph, cls, name, params,
						  BT_LOGGING_LEVEL_NONE, &src)
		    != BT_GRAPH_ADD_COMPONENT_STATUS_OK) {
			st = INGEST_ERR_INPUT;
			goto end;
		}
		BT_VALUE_PUT_REF_AND_RESET(params);
		np = bt_component_source_get_output_port_count(src);
		if (ALLOC_GROW(g->ports, g->nports + np, g->capports))
			goto end;
		for (p = 0; p < np; p++)
			g->ports[g->nports++] =
				bt_component_source_borrow_output_port_by_index_const(
					src, p);
	}
	*bad_dir = NULL;
	st = INGEST_OK;
end:
	bt_value_put_ref(params);
	return st;
}

static int muxer_wanted(void)
{
	const char *v = getenv("MMUREPLAY_TEST_MUXER");

	return v && strcmp(v, "1") == 0;
}

/* The reference graph's tail: every port into utils.muxer, the muxer
 * into a simple sink. */
static enum ingest_status graph_sink_muxer(struct ingest_graph *g,
					   struct ingest_sink *sink)
{
	const bt_component_class_filter *mux_cls =
		bt_plugin_borrow_filter_component_class_by_name_const(
			g->utils, "muxer");
	const bt_component_sink *snk;
	uint64_t p;

	if (!mux_cls ||
	    bt_graph_add_filter_component(g->graph, mux_cls, "muxer", NULL,
					  BT_LOGGING_LEVEL_NONE, &g->muxer) !=
	    BT_GRAPH_ADD_COMPONENT_STATUS_OK)
		return INGEST_ERR_INTERNAL;
	for (p = 0; p < g->nports; p++)
		if (bt_graph_connect_ports(g->graph, g->ports[p],
			bt_component_filter_borrow_input_port_by_index_const(
				g->muxer, p), NULL) !=
		    BT_GRAPH_CONNECT_PORTS_STATUS_OK)
			return INGEST_ERR_INTERNAL;
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
		return INGEST_ERR_INTERNAL;
	return INGEST_OK;
}

static enum ingest_status graph_build(struct ingest_graph *g,
				      const struct tracedirs *td,
				      struct ingest_sink *sink,
				      const char **bad_dir)
{
	const bt_component_sink *snk;
	enum ingest_status st = INGEST_ERR_INTERNAL;
	uint64_t p;

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
	if (!g->graph)
		goto end;
	st = graph_add_sources(g, td, bad_dir);
	if (st != INGEST_OK)
		goto end;
	st = INGEST_ERR_INTERNAL;
	if (muxer_wanted())
		st = graph_sink_muxer(g, sink);
	else if (merge_sink_add(g->graph, "mmureplay", sink, g->nports,
				&snk) == MERGE_OK) {
		for (p = 0; p < g->nports; p++)
			if (bt_graph_connect_ports(g->graph, g->ports[p],
				bt_component_sink_borrow_input_port_by_index_const(
					snk, p), NULL) !=
			    BT_GRAPH_CONNECT_PORTS_STATUS_OK)
				goto end;
		st = INGEST_OK;
	}
	if (st != INGEST_OK)
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
	free(g->ports);
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

/* The tracer named by the first kernel trace's environment. */
static char *tracer_describe(struct ingest_tables *t)
{
	const struct tables_trace *tr = tables_trace_first(t);
	char *out = NULL;

	if (!tr || !tr->env[ENV_TRACER_NAME])
		return strdup("lttng");
	if (asprintf(&out, "%s%s%s", tr->env[ENV_TRACER_NAME],
		     tr->env[ENV_TRACER_VERSION] ? " " : "",
		     tr->env[ENV_TRACER_VERSION] ?
		     tr->env[ENV_TRACER_VERSION] : "") < 0)
		return NULL;
	return out;
}

/*
 * Every trace's metadata through the guard; INGEST_OK or INGEST_ERR_INPUT
 * after the error line.  layouts[i] is where trace i's packets carry
 * their number (valid: 0 from firstpacket_layout()), from the text the
 * guard read.  MMUREPLAY_TEST_NO_METADATA_GUARD=1 skips the guard, so
 * that the tests can show the watchdog catching what it would.
 */
static enum ingest_status metadata_guard(const struct tracedirs *td,
					 struct firstpacket_layout *layouts,
					 int *valid)
{
	const char *off = getenv("MMUREPLAY_TEST_NO_METADATA_GUARD");
	enum ingest_status st = INGEST_OK;
	char path[4096], *why = NULL, *head = NULL;
	int i;

	for (i = 0; i < td->n; i++)
		valid[i] = -1;
	if (off && strcmp(off, "1") == 0)
		return st;
	for (i = 0; i < td->n && st == INGEST_OK; i++) {
		snprintf(path, sizeof(path), "%s/metadata", td->dirs[i].path);
		if (metaguard_read(path, &why, &head) != METAGUARD_OK) {
			log_error("%s: %s", path, why);
			st = INGEST_ERR_INPUT;
		} else {
			valid[i] = firstpacket_layout(head, &layouts[i]);
		}
		free(why);
		free(head);
		why = head = NULL;
	}
	return st;
}

/*
 * Streams whose first packet is not their tracer's first (an LTTng
 * snapshot, a trace cut at its start): recorded as lost packets
 * (tables_stream_late_start()).  Each stream file babeltrace2 read is
 * named by its path; a file it did not read is not looked at.
 */
static int late_streams(const struct tracedirs *td, struct ingest_tables *t,
			const struct firstpacket_layout *layouts,
			const int *valid)
{
	const struct tables_stream *ss;
	char path[4096];
	const char *dir;
	struct dirent *de;
	uint64_t first;
	DIR *d;
	int i, rc = 0;

	for (i = 0; i < td->n && rc == 0; i++) {
		if (valid[i] != 0)
			continue;
		dir = td->dirs[i].view ? td->dirs[i].view : td->dirs[i].path;
		d = opendir(dir);
		while (d && rc == 0 && (de = readdir(d))) {
			snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
			ss = tables_stream_find(t, path);
			if (ss && firstpacket_seq(path, &layouts[i], &first) ==
			    0 && first > 0)
				rc = tables_stream_late_start(t, ss, first);
		}
		if (d)
			closedir(d);
	}
	return rc;
}

/*
 * A stream file LTTng wrote an index for but that is not there (a copy
 * that missed a file): the rest is read, the DB marked truncated.  NULL
 * when every indexed stream is present; else the reason (malloc'd) and
 * *bad the trace directory.
 */
static char *streams_missing(const struct tracedirs *td, const char **bad)
{
	char path[4096], *why = NULL;
	struct dirent *de;
	struct stat sb;
	size_t n;
	DIR *d;
	int i;

	for (i = 0; i < td->n && !why; i++) {
		snprintf(path, sizeof(path), "%s/index", td->dirs[i].path);
		d = opendir(path);
		while (d && !why && (de = readdir(d))) {
			n = strlen(de->d_name);
			if (n <= 4 || strcmp(de->d_name + n - 4, ".idx") != 0)
				continue;
			snprintf(path, sizeof(path), "%s/%.*s",
				 td->dirs[i].path, (int)(n - 4), de->d_name);
			if (stat(path, &sb) == 0)
				continue;
			if (asprintf(&why, "stream file %.*s is missing (its "
				     "index is there)", (int)(n - 4),
				     de->d_name) < 0)
				why = NULL;
			*bad = td->dirs[i].path;
		}
		if (d)
			closedir(d);
	}
	return why;
}

enum ingest_status ctf_read(const struct ingest_opts *opts,
			    struct ingest_tables *t, struct reader_result *rr)
{
	enum ingest_status st = INGEST_ERR_INPUT;
	struct tracedirs td = { 0 };
	struct ingest_graph g = { 0 };
	struct ingest_sink *sink = NULL;
	struct firstpacket_layout *layouts = NULL;
	const char *bad_dir = NULL;
	char *why = NULL;
	int i, *valid = NULL;

	for (i = 0; i < opts->ninputs; i++)
		if (tracedirs_find(&td, opts->inputs[i]) != TRACEDIRS_OK)
			goto end;
	rr->ntraces = td.n;
	rr->format = "ctf";
	rr->ts_resolution_ns = 1;
	st = INGEST_ERR_INTERNAL;
	layouts = calloc((size_t)td.n + 1, sizeof(*layouts));
	valid = calloc((size_t)td.n + 1, sizeof(*valid));
	if (!layouts || !valid)
		goto end;
	st = metadata_guard(&td, layouts, valid);
	if (st != INGEST_OK)
		goto end;
	st = INGEST_ERR_INTERNAL;
	if (watchdog_start(opts->watchdog_s, opts->inputs[0],
			   "babeltrace2's CTF source is stuck; damaged trace?",
			   opts->watchdog_exit) != WATCHDOG_OK)
		goto end;
	sink = sink_create(t);
	if (!sink)
		goto end;
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
			rr->truncated = 1;
			why = strdup(td.dirs[i].salvage_reason);
		}
	if (!why && (why = streams_missing(&td, &bad_dir)))
		rr->truncated = 1;
	if (graph_run(&g) < 0) {
		free(why);
		why = bt_error_take(&td, &bad_dir);
		rr->truncated = 1;
	}
	if (rr->truncated) {
		rr->why = why;
		why = NULL;
		rr->bad = strdup(bad_dir ? bad_dir : opts->inputs[0]);
	}
	st = INGEST_ERR_INTERNAL;
	if (late_streams(&td, t, layouts, valid) < 0)
		goto end;
	rr->tracer = tracer_describe(t);
	rr->duplicates = sink_duplicates(sink);
	rr->events = sink_declared(sink);
	st = INGEST_OK;
end:
	watchdog_stop();
	graph_destroy(&g);
	sink_destroy(sink);
	tracedirs_free(&td);
	free(layouts);
	free(valid);
	free(why);
	return st;
}
