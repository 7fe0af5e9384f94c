/*
 * Salvage of cut LTTng stream files (see salvage.h).
 */
#define _GNU_SOURCE
#include "ingest/salvage.h"

#include "util/log.h"

#include <dirent.h>
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define LTTNG_PACKET_MAGIC 0xC1FC1FC1u
#define HDR_CONTENT_SIZE 48
#define HDR_PACKET_SIZE 56
#define HDR_LEN 64

struct cut {
	uint64_t file_size;
	uint64_t packet_off;    /* start of the packet cut short */
	uint64_t packet_len;    /* its declared length in bytes */
};

static uint32_t rd32(const unsigned char *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

static uint64_t rd64(const unsigned char *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return le64toh(v);
}

/*
 * Walk the packets of one stream file.  Returns 1 and fills *c when a
 * packet runs past the end of the file, 0 when the file is whole, -1 when
 * it is not in the LTTng layout (nothing to salvage here).
 */
static int stream_find_cut(int fd, struct cut *c)
{
	unsigned char h[HDR_LEN];
	struct stat sb;
	uint64_t off = 0, psize = 0;

	if (fstat(fd, &sb) != 0)
		return -1;
	c->file_size = (uint64_t)sb.st_size;
	while (off < c->file_size) {
		if (c->file_size - off < HDR_LEN)
			goto cut;
		if (pread(fd, h, HDR_LEN, (off_t)off) != HDR_LEN ||
		    rd32(h) != LTTNG_PACKET_MAGIC)
			return -1;
		psize = rd64(h + HDR_PACKET_SIZE);
		if (psize == 0 || psize % 8 || rd64(h + HDR_CONTENT_SIZE) >
		    psize)
			return -1;
		if (off + psize / 8 > c->file_size)
			goto cut;
		off += psize / 8;
	}
	return 0;
cut:
	c->packet_off = off;
	c->packet_len = c->file_size - off < HDR_LEN ? 0 : psize / 8;
	return 1;
}

/*
 * Copy src's whole packets, [0, packet_off), into dst; the cut packet is
 * left out.  Its content ends inside an event, and libbabeltrace2's CTF
 * source (2.0, Debian 12) aborts on some such packets (a precondition
 * check: it goes on after its decoder failed), as the babeltrace2 CLI
 * does on the same file: no event of it is worth a crash.  A file with
 * no whole packet is not copied.  Returns 0, or -1 on an I/O error.
 */
static int stream_copy_cut(int src, const char *dst, const struct cut *c)
{
	loff_t in = 0;
	ssize_t n;
	int fd, rc = -1;

	if (!c->packet_off)
		return 0;
	fd = open(dst, O_WRONLY | O_CREAT | O_EXCL, 0600);
	if (fd < 0)
		return -1;
	while ((uint64_t)in < c->packet_off) {
		n = copy_file_range(src, &in, fd, NULL,
				    c->packet_off - (uint64_t)in, 0);
		if (n <= 0)
			goto end;
	}
	rc = 0;
end:
	close(fd);
	return rc;
}

void salvage_view_remove(char *view)
{
	struct dirent *de;
	char path[PATH_MAX];
	DIR *d;

	if (!view)
		return;
	d = opendir(view);
	while (d && (de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", view, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(view);
	free(view);
}

enum salvage_status salvage_trace(const char *dir, char **view,
				  char **reason)
{
	enum salvage_status st = SALVAGE_ERR;
	char src[PATH_MAX], dst[PATH_MAX], real[PATH_MAX];
	const char *tmp = getenv("TMPDIR");
	struct dirent *de;
	struct stat sb;
	struct cut c;
	DIR *d = NULL;
	int fd, r, ncut = 0;

	*view = NULL;
	*reason = NULL;
	if (asprintf(view, "%s/mmureplay-salvage-XXXXXX", tmp ? tmp : "/tmp")
	    < 0) {
		*view = NULL;
		goto end;
	}
	if (!mkdtemp(*view) || !(d = opendir(dir)))
		goto end;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || strcmp(de->d_name, "index") == 0)
			continue;
		snprintf(src, sizeof(src), "%s/%s", dir, de->d_name);
		snprintf(dst, sizeof(dst), "%s/%s", *view, de->d_name);
		if (stat(src, &sb) != 0 || !S_ISREG(sb.st_mode))
			continue;
		fd = strcmp(de->d_name, "metadata") ? open(src, O_RDONLY) : -1;
		r = fd >= 0 ? stream_find_cut(fd, &c) : 0;
		if (r == 1) {
			if (stream_copy_cut(fd, dst, &c) < 0) {
				close(fd);
				goto end;
			}
			if (!*reason && asprintf(reason, "stream file %s ends "
				     "inside the packet at byte %llu (%llu of "
				     "%llu bytes present; that packet is left "
				     "out)", src,
				     (unsigned long long)c.packet_off,
				     (unsigned long long)(c.file_size -
							  c.packet_off),
				     (unsigned long long)c.packet_len) < 0)
				*reason = NULL;
			ncut++;
		} else if (!realpath(src, real) || symlink(real, dst) != 0) {
			if (fd >= 0)
				close(fd);
			goto end;
		}
		if (fd >= 0)
			close(fd);
	}
	st = ncut ? SALVAGE_OK : SALVAGE_NOTHING;
end:
	if (d)
		closedir(d);
	if (st == SALVAGE_ERR)
		log_error("%s: cannot build a salvage copy: %s", dir,
			  strerror(errno));
	if (st != SALVAGE_OK) {
		salvage_view_remove(*view);
		*view = NULL;
		free(*reason);
		*reason = NULL;
	}
	return st;
}
