/*
 * Fuzz target: the CTF metadata guard (ingest/metaguard.h) on any bytes.
 * Invariant checked: it returns OK or BAD with a reason, never crashes,
 * hangs or leaks, whatever the packet headers claim.
 */
#include "fuzz.h"

#include "ingest/metaguard.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[64], *why = NULL;
	int fd = fuzz_file_open(data, size, path, sizeof(path));

	if (fd < 0)
		return 0;
	if (metaguard_check(path, &why) != METAGUARD_OK && !why)
		abort();        /* a refusal always says why */
	free(why);
	fuzz_file_close(fd);
	return 0;
}
