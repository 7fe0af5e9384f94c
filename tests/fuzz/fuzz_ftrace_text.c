/*
 * Fuzz target: ingest of tracefs text (ingest/ftrace_text.c) into a real
 * capture DB.  Invariant checked: any text ends in a DB or a refusal,
 * never a crash; a refused input leaves no file.
 */
#define _GNU_SOURCE
#include "fuzz.h"

#include "ingest/ingest.h"
#include "util/log.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char in[64], out[128];
	const char *inputs[1] = { in };
	struct ingest_opts opts = { 0 };
	struct ingest_result res;
	enum ingest_status st;
	struct stat sb;
	int fd = fuzz_file_open(data, size, in, sizeof(in));

	if (fd < 0)
		return 0;
	snprintf(out, sizeof(out), "%s/mmureplay-fuzz-%ld.db",
		 access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp",
		 (long)getpid());
	opts.inputs = inputs;
	opts.ninputs = 1;
	opts.output = out;
	st = ingest_run(&opts, &res);
	if ((st == INGEST_ERR_INPUT || st == INGEST_ERR_INTERNAL) &&
	    stat(out, &sb) == 0)
		abort();        /* a refused input left a DB */
	unlink(out);
	fuzz_file_close(fd);
	return 0;
}
