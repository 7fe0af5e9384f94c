/*
 * The metadata guard (see metaguard.h).  The file is read once, packet
 * by packet; only the text's scanner state (depth, string, comment, the
 * last significant character) is carried across packets, so memory does
 * not grow with the metadata.
 */
#define _GNU_SOURCE
#include "ingest/metaguard.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define MG_MAGIC 0x75d11d57u
/* CTF 1.8 metadata packet header: magic, uuid[16], checksum,
 * content_size and packet_size (bits), then five one-byte fields:
 * compression, encryption, checksum schemes, major, minor. */
#define MG_HEADER 37
#define MG_OFF_UUID 4
#define MG_OFF_CONTENT 24
#define MG_OFF_PACKET 28
#define MG_OFF_SCHEMES 32
#define MG_OFF_MAJOR 35

/* The text metaguard_read() keeps, at most: the trace and stream
 * declarations come first in LTTng's metadata. */
#define MG_HEAD 65536

/* Where the TSDL text scanner is. */
struct mg_text {
	long depth;             /* { } nesting */
	enum { MG_CODE, MG_STRING, MG_STRING_ESC, MG_CHAR, MG_CHAR_ESC,
	       MG_SLASH, MG_LINE_COMMENT, MG_BLOCK_COMMENT,
	       MG_BLOCK_STAR } state;
	char last;              /* last significant code character */
	char *head;             /* the text's first bytes, or NULL */
	size_t head_len;
};

static void text_scan(struct mg_text *t, const unsigned char *s, size_t n)
{
	size_t i, keep;
	int c;

	if (t->head && t->head_len < MG_HEAD) {
		keep = n < MG_HEAD - t->head_len ? n : MG_HEAD - t->head_len;
		memcpy(t->head + t->head_len, s, keep);
		t->head_len += keep;
		t->head[t->head_len] = '\0';
	}

	for (i = 0; i < n; i++) {
		c = s[i];
		switch (t->state) {
		case MG_STRING:
			t->state = c == '\\' ? MG_STRING_ESC :
				c == '"' ? MG_CODE : MG_STRING;
			break;
		case MG_STRING_ESC:
			t->state = MG_STRING;
			break;
		case MG_CHAR:
			t->state = c == '\\' ? MG_CHAR_ESC :
				c == '\'' ? MG_CODE : MG_CHAR;
			break;
		case MG_CHAR_ESC:
			t->state = MG_CHAR;
			break;
		case MG_LINE_COMMENT:
			if (c == '\n')
				t->state = MG_CODE;
			break;
		case MG_BLOCK_COMMENT:
			if (c == '*')
				t->state = MG_BLOCK_STAR;
			break;
		case MG_BLOCK_STAR:
			t->state = c == '/' ? MG_CODE :
				c == '*' ? MG_BLOCK_STAR : MG_BLOCK_COMMENT;
			break;
		case MG_SLASH:
			if (c == '/') {
				t->state = MG_LINE_COMMENT;
				break;
			}
			if (c == '*') {
				t->state = MG_BLOCK_COMMENT;
				break;
			}
			t->state = MG_CODE;
			t->last = '/';
			/* c is code */
			__attribute__((fallthrough));
		case MG_CODE:
			if (c == '"')
				t->state = MG_STRING;
			else if (c == '\'')
				t->state = MG_CHAR;
			else if (c == '/')
				t->state = MG_SLASH;
			else if (c == '{')
				t->depth++;
			else if (c == '}')
				t->depth--;
			if (c != ' ' && c != '\t' && c != '\n' && c != '\r' &&
			    c != '\0' && t->state == MG_CODE)
				t->last = (char)c;
			break;
		}
	}
}

static const char *text_incomplete(const struct mg_text *t)
{
	if (t->state == MG_STRING || t->state == MG_STRING_ESC ||
	    t->state == MG_CHAR || t->state == MG_CHAR_ESC)
		return "ends inside a string";
	if (t->state == MG_BLOCK_COMMENT || t->state == MG_BLOCK_STAR)
		return "ends inside a comment";
	if (t->depth > 0)
		return "ends inside a declaration";
	if (t->depth < 0)
		return "has a '}' without its '{'";
	if (t->last != ';')
		return "does not end with a complete declaration";
	return NULL;
}

/* TSDL text: printable ASCII and white space only. */
static int text_plausible(const unsigned char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((s[i] < 0x20 && s[i] != '\t' && s[i] != '\n' &&
		     s[i] != '\r') || s[i] > 0x7e)
			return 0;
	return 1;
}

static uint32_t get32(const unsigned char *p, int swap)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return swap ? __builtin_bswap32(v) : v;
}

enum metaguard_status metaguard_check(const char *path, char **why)
{
	return metaguard_read(path, why, NULL);
}

enum metaguard_status metaguard_read(const char *path, char **why,
				     char **head)
{
	enum metaguard_status st = METAGUARD_ERR_IO;
	unsigned char hdr[MG_HEADER], uuid[16], *buf = NULL;
	struct mg_text text = { 0 };
	uint32_t magic, content, psize;
	uint64_t off = 0, size, pkt = 0;
	const char *bad;
	struct stat sb;
	int swap = 0;
	FILE *f;

	*why = NULL;
	if (head) {
		*head = NULL;
		text.head = calloc(1, MG_HEAD + 1);
		if (!text.head) {
			*why = strdup("out of memory");
			return METAGUARD_ERR_IO;
		}
	}
	f = fopen(path, "rb");
	if (!f || fstat(fileno(f), &sb) != 0) {
		if (asprintf(why, "cannot read: %s", strerror(errno)) < 0)
			*why = NULL;
		goto end;
	}
	size = (uint64_t)sb.st_size;
	st = METAGUARD_BAD;
	if (size < 4) {
		if (asprintf(why, "%llu bytes: not CTF metadata",
			     (unsigned long long)size) < 0)
			*why = NULL;
		goto end;
	}
	if (fread(hdr, 1, 4, f) != 4)
		goto io;
	memcpy(&magic, hdr, 4);
	if (magic != MG_MAGIC && __builtin_bswap32(magic) != MG_MAGIC) {
		/* Plain-text metadata: only the text is checked. */
		if (!text_plausible(hdr, 4)) {
			*why = strdup("neither packetized nor plain-text CTF "
				      "metadata (bad magic)");
			goto end;
		}
		/* babeltrace2 reads text only after this signature. */
		if (memcmp(hdr, "/* C", 4) != 0) {
			*why = strdup("plain-text metadata that does not begin "
				      "with \"/* CTF 1.8\"");
			goto end;
		}
		buf = malloc(65536);
		if (!buf)
			goto io;
		text_scan(&text, hdr, 4);
		while ((content = (uint32_t)fread(buf, 1, 65536, f)) > 0)
			text_scan(&text, buf, content);
		if (ferror(f))
			goto io;
		bad = text_incomplete(&text);
		if (bad && asprintf(why, "metadata text %s (cut short?)",
				    bad) < 0)
			*why = NULL;
		st = bad ? METAGUARD_BAD : METAGUARD_OK;
		goto end;
	}
	swap = magic != MG_MAGIC;
	rewind(f);
	for (; off < size; pkt++) {
		if (size - off < MG_HEADER) {
			if (asprintf(why, "packet %llu at byte %llu cut short: "
				     "%llu of the header's %d bytes",
				     (unsigned long long)pkt,
				     (unsigned long long)off,
				     (unsigned long long)(size - off),
				     MG_HEADER) < 0)
				*why = NULL;
			goto end;
		}
		if (fread(hdr, 1, MG_HEADER, f) != MG_HEADER)
			goto io;
		content = get32(hdr + MG_OFF_CONTENT, swap);
		psize = get32(hdr + MG_OFF_PACKET, swap);
		if (get32(hdr, swap) != MG_MAGIC)
			bad = "bad magic";
		else if (pkt > 0 && memcmp(hdr + MG_OFF_UUID, uuid, 16) != 0)
			bad = "UUID differs from the first packet's";
		else if (content % 8 || psize % 8 || content < MG_HEADER * 8 ||
			 content > psize)
			bad = "impossible content or packet size";
		else if (hdr[MG_OFF_SCHEMES] || hdr[MG_OFF_SCHEMES + 1] ||
			 hdr[MG_OFF_SCHEMES + 2])
			bad = "compressed, encrypted or checksummed (unsupported)";
		else if (hdr[MG_OFF_MAJOR] != 1 || hdr[MG_OFF_MAJOR + 1] != 8)
			bad = "not CTF 1.8";
		else
			bad = NULL;
		if (bad) {
			if (asprintf(why, "packet %llu at byte %llu: %s",
				     (unsigned long long)pkt,
				     (unsigned long long)off, bad) < 0)
				*why = NULL;
			goto end;
		}
		if (pkt == 0)
			memcpy(uuid, hdr + MG_OFF_UUID, 16);
		if (psize / 8 > size - off) {
			if (asprintf(why, "packet %llu at byte %llu cut short: "
				     "%llu of its %u bytes",
				     (unsigned long long)pkt,
				     (unsigned long long)off,
				     (unsigned long long)(size - off),
				     psize / 8) < 0)
				*why = NULL;
			goto end;
		}
		content = content / 8 - MG_HEADER;
		free(buf);
		buf = content ? malloc(content) : NULL;
		if (content && (!buf || fread(buf, 1, content, f) != content))
			goto io;
		text_scan(&text, buf, content);
		off += psize / 8;
		if (fseeko(f, (off_t)off, SEEK_SET) != 0)
			goto io;
	}
	bad = text_incomplete(&text);
	if (bad) {
		if (asprintf(why, "metadata text %s after %llu packets (cut "
			     "short at a packet boundary?)", bad,
			     (unsigned long long)pkt) < 0)
			*why = NULL;
		goto end;
	}
	st = METAGUARD_OK;
	goto end;
io:
	st = METAGUARD_ERR_IO;
	free(*why);
	if (asprintf(why, "read error: %s", strerror(errno ? errno : EIO)) < 0)
		*why = NULL;
end:
	if (f)
		fclose(f);
	free(buf);
	if (head && st == METAGUARD_OK) {
		*head = text.head;
		text.head = NULL;
	}
	free(text.head);
	if (st != METAGUARD_OK && !*why)
		*why = strdup("out of memory");
	return st;
}
