/*
 * Finding the CTF traces under the paths a user gives.
 *
 * src.ctf.fs reads one trace per directory and does not descend, while an
 * LTTng session output nests them (kernel/, ust/uid/N/64-bit/, rotation
 * chunks).  Every directory that holds a file named 'metadata' is one
 * trace; the list is sorted so the trace ids in the DB are reproducible.
 */
#ifndef MMUREPLAY_INGEST_TRACEDIRS_H
#define MMUREPLAY_INGEST_TRACEDIRS_H

#include <stddef.h>

struct tracedir {
	char *path;     /* as found, for opening */
	char *label;    /* path relative to the argument it came from */
	const char *arg;
	char *view;     /* salvaged copy babeltrace2 reads instead (or NULL) */
	char *salvage_reason;
};

struct tracedirs {
	struct tracedir *dirs;
	int n;
	size_t cap;
};

enum tracedirs_status {
	TRACEDIRS_OK = 0,
	TRACEDIRS_ERR_MISSING,  /* the path does not exist / not readable */
	TRACEDIRS_ERR_EMPTY,    /* no 'metadata' file under it */
	TRACEDIRS_ERR_NOMEM,
};

/* Append the trace directories under path (reporting problems). */
enum tracedirs_status tracedirs_find(struct tracedirs *td, const char *path);
void tracedirs_free(struct tracedirs *td);

#endif
