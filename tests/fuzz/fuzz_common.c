/*
 * Shared pieces of the fuzz targets (see fuzz.h).
 */
#define _GNU_SOURCE
#include "fuzz.h"

#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

int fuzz_file_open(const uint8_t *data, size_t size, char *path, size_t len)
{
	int fd = memfd_create("mmureplay-fuzz", 0);

	if (fd < 0)
		return -1;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return -1;
	}
	snprintf(path, len, "/proc/self/fd/%d", fd);
	return fd;
}

void fuzz_file_close(int fd)
{
	if (fd >= 0)
		close(fd);
}
