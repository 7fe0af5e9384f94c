/*
 * Report files written whole or not at all: output goes to NAME.tmp-PID
 * and is renamed over NAME only when every byte was written.  "-" means
 * standard output.  A NAME that exists and is not a regular file (a
 * device such as /dev/null, a FIFO) is written in place: renaming over
 * it would replace the device with a file.
 */
#ifndef MMUREPLAY_UTIL_OUTFILE_H
#define MMUREPLAY_UTIL_OUTFILE_H

#include <stdio.h>

struct outfile {
	FILE *fp;
	char *path;
	char *tmp;              /* NULL: written in place */
};

/* 0, or -1 after reporting the error. */
int outfile_open(struct outfile *o, const char *path);
/* Flush, close, rename; 0, or -1 after reporting (the temp is removed). */
int outfile_commit(struct outfile *o);
/* Drop the temporary; safe after commit. */
void outfile_discard(struct outfile *o);

#endif
