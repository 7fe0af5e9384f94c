/*
 * Temp-and-rename output files (see outfile.h).
 */
#define _GNU_SOURCE
#include "util/outfile.h"

#include "util/cleanup.h"
#include "util/log.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int outfile_open(struct outfile *o, const char *path)
{
	struct stat st;

	memset(o, 0, sizeof(*o));
	if (strcmp(path, "-") == 0) {
		o->fp = stdout;
		return 0;
	}
	o->path = strdup(path);
	if (o->path && stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		o->fp = fopen(path, "w");
		if (!o->fp) {
			log_error("%s: cannot open: %s", path, strerror(errno));
			outfile_discard(o);
			return -1;
		}
		return 0;
	}
	if (!o->path || asprintf(&o->tmp, "%s.tmp-%ld", path,
				 (long)getpid()) < 0) {
		o->tmp = NULL;
		log_error("%s: out of memory", path);
		outfile_discard(o);
		return -1;
	}
	cleanup_stale_reap(path);
	cleanup_tmp_add(o->tmp);
	o->fp = fopen(o->tmp, "w");
	if (!o->fp) {
		log_error("%s: cannot create: %s", path, strerror(errno));
		outfile_discard(o);
		return -1;
	}
	return 0;
}

int outfile_commit(struct outfile *o)
{
	int rc = -1;

	if (!o->path) {
		rc = fflush(stdout) == 0 ? 0 : -1;
		if (rc)
			log_error("stdout: %s", strerror(errno));
		o->fp = NULL;
		return rc;
	}
	if (ferror(o->fp) | fclose(o->fp)) {
		o->fp = NULL;
		log_error("%s: write failed: %s", o->path, strerror(errno));
		goto end;
	}
	o->fp = NULL;
	/* After the rename the name is the result, not a temporary. */
	cleanup_signals_hold();
	if (o->tmp && rename(o->tmp, o->path) != 0) {
		cleanup_signals_release();
		log_error("%s: cannot rename into place: %s", o->path,
			  strerror(errno));
		goto end;
	}
	if (o->tmp)
		cleanup_tmp_remove(o->tmp);
	free(o->tmp);
	o->tmp = NULL;
	cleanup_signals_published();
	rc = 0;
end:
	outfile_discard(o);
	return rc;
}

void outfile_discard(struct outfile *o)
{
	if (o->fp && o->fp != stdout)
		fclose(o->fp);
	if (o->tmp) {
		cleanup_tmp_remove(o->tmp);
		unlink(o->tmp);
	}
	free(o->tmp);
	free(o->path);
	memset(o, 0, sizeof(*o));
}
