/*
 * Recursive discovery of trace directories (see tracedirs.h).  Symbolic
 * links to directories are not followed, so a loop cannot hang ingest.
 */
#define _GNU_SOURCE
#include "ingest/tracedirs.h"

#include "ingest/salvage.h"
#include "util/alloc.h"
#include "util/log.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int add(struct tracedirs *td, const char *path, const char *arg)
{
	struct tracedir *d;
	size_t alen = strlen(arg);
	const char *rel;

	if (ALLOC_GROW(td->dirs, (size_t)td->n + 1, td->cap))
		return -1;
	d = &td->dirs[td->n];
	rel = strncmp(path, arg, alen) == 0 ? path + alen : path;
	while (*rel == '/')
		rel++;
	d->path = strdup(path);
	d->label = strdup(*rel ? rel : ".");
	d->arg = arg;
	d->view = NULL;
	d->salvage_reason = NULL;
	if (!d->path || !d->label) {
		free(d->path);
		free(d->label);
		return -1;
	}
	td->n++;
	return 0;
}

static int walk(struct tracedirs *td, const char *dir, const char *arg)
{
	struct dirent **ents = NULL;
	int n, i, rc = 0;
	char *sub;
	struct stat sb;

	n = scandir(dir, &ents, NULL, alphasort);
	if (n < 0)
		return 0;       /* unreadable subdirectory: not a trace */
	for (i = 0; i < n && rc == 0; i++) {
		if (strcmp(ents[i]->d_name, "metadata") == 0 &&
		    asprintf(&sub, "%s/metadata", dir) >= 0) {
			if (stat(sub, &sb) == 0 && S_ISREG(sb.st_mode))
				rc = add(td, dir, arg);
			free(sub);
		}
	}
	for (i = 0; i < n; i++) {
		if (rc == 0 && ents[i]->d_name[0] != '.' &&
		    asprintf(&sub, "%s/%s", dir, ents[i]->d_name) >= 0) {
			if (lstat(sub, &sb) == 0 && S_ISDIR(sb.st_mode))
				rc = walk(td, sub, arg);
			free(sub);
		}
		free(ents[i]);
	}
	free(ents);
	return rc;
}

enum tracedirs_status tracedirs_find(struct tracedirs *td, const char *path)
{
	struct stat sb;
	int before = td->n;

	if (stat(path, &sb) != 0) {
		log_error("%s: %s", path, strerror(errno));
		return TRACEDIRS_ERR_MISSING;
	}
	if (!S_ISDIR(sb.st_mode)) {
		log_error("%s: not a CTF trace (not a directory)", path);
		return TRACEDIRS_ERR_EMPTY;
	}
	if (walk(td, path, path) < 0) {
		log_error("%s: out of memory", path);
		return TRACEDIRS_ERR_NOMEM;
	}
	if (td->n == before) {
		log_error("%s: no CTF trace (no 'metadata' file under it)",
			  path);
		return TRACEDIRS_ERR_EMPTY;
	}
	return TRACEDIRS_OK;
}

void tracedirs_free(struct tracedirs *td)
{
	int i;

	for (i = 0; i < td->n; i++) {
		free(td->dirs[i].path);
		free(td->dirs[i].label);
		salvage_view_remove(td->dirs[i].view);
		free(td->dirs[i].salvage_reason);
	}
	free(td->dirs);
	memset(td, 0, sizeof(*td));
}
