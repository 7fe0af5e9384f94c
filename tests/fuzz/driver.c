/*
 * A main() for the fuzz targets without libFuzzer: each argument is an
 * input file (or a directory of them) run once through the target, the
 * way libFuzzer runs a corpus.  Used by ctest (tests/test_fuzz_corpus.py)
 * in every build, so the corpus and the inputs that once crashed stay
 * regression tests.
 */
#define _GNU_SOURCE
#include "fuzz.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}

static int run_file(const char *path)
{
	uint8_t *buf = NULL;
	long n;
	FILE *f = fopen(path, "rb");
	int rc = -1;

	if (!f || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0)
		goto end;
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		goto end;
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	rc = 0;
end:
	if (rc)
		fprintf(stderr, "driver: %s: cannot read\n", path);
	if (f)
		fclose(f);
	free(buf);
	return rc;
}

int main(int argc, char **argv)
{
	char path[4096];
	struct dirent *de;
	struct stat sb;
	int i, n = 0, bad = 0;
	DIR *d;

	LLVMFuzzerInitialize(&argc, &argv);
	for (i = 1; i < argc; i++) {
		if (stat(argv[i], &sb) == 0 && S_ISDIR(sb.st_mode)) {
			d = opendir(argv[i]);
			while (d && (de = readdir(d))) {
				if (de->d_name[0] == '.')
					continue;
				snprintf(path, sizeof(path), "%s/%s", argv[i],
					 de->d_name);
				bad |= run_file(path);
				n++;
			}
			if (d)
				closedir(d);
			continue;
		}
		bad |= run_file(argv[i]);
		n++;
	}
	printf("%s: %d inputs run\n", argv[0], n);
	return bad;
}
