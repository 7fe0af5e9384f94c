/*
 * The number of each stream file's first packet (see firstpacket.h).
 *
 * LTTng lays out a packet as its metadata declares: the trace's
 * packet.header struct, then the stream's packet.context struct, whose
 * packet_seq_num counts the stream's packets from 0.  babeltrace2 reads
 * that field to report gaps between packets and does not show it, so it
 * is read here from the file, at the offset the declarations give.  Only
 * the subset LTTng writes is understood: integer typealiases ("typealias
 * integer { size = N; align = A; ... } := NAME;"), fields "NAME field;"
 * and "NAME field[N];", the header inline, the context inline or a named
 * struct; every field byte-aligned.  Anything else gives "unknown",
 * never a guess.
 */
#include "ingest/firstpacket.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTF_PACKET_MAGIC 0xc1fc1fc1u

/* Returns the size in bits of integer type name (a typealias of text,
 * or a uintN_t the alias list spells out), and its alignment in *align;
 * 0 when the text does not declare it. */
static unsigned type_bits(const char *text, const char *name,
			  unsigned *align)
{
	char pat[96];
	const char *p = text, *open, *size, *al;

	snprintf(pat, sizeof(pat), "} := %s;", name);
	while ((p = strstr(p, pat))) {
		/* The typealias this closes: its braces' content. */
		for (open = p; open > text && *open != '{'; open--)
			;
		size = strstr(open, "size =");
		al = strstr(open, "align =");
		if (*open == '{' && size && size < p && al && al < p &&
		    strncmp(open - 8, "integer ", 8) == 0) {
			*align = (unsigned)strtoul(al + 7, NULL, 10);
			return (unsigned)strtoul(size + 6, NULL, 10);
		}
		p += strlen(pat);
	}
	return 0;
}

/*
 * Adds the byte size of the fields of the struct body at p (after its
 * '{') to *off, up to the field named stop (its offset left in *off,
 * its size in *stop_bytes) or the closing '}'.  Returns 1 when stop was
 * found, 0 at the struct's end, -1 on a field this reader cannot lay
 * out.
 */
static int struct_walk(const char *text, const char *p, const char *stop,
		       uint64_t *off, unsigned *stop_bytes)
{
	char type[64], field[64];
	unsigned bits, align, n;
	int len;

	for (;;) {
		while (isspace((unsigned char)*p))
			p++;
		if (*p == '}')
			return 0;
		/* "unsigned long x;" has a two-word type. */
		if (sscanf(p, "unsigned long %63[A-Za-z0-9_]%n", field,
			   &len) == 1)
			snprintf(type, sizeof(type), "unsigned long");
		else if (sscanf(p, "%63s %63[A-Za-z0-9_]%n", type, field,
				&len) != 2)
			return -1;
		p += len;
		n = 1;
		if (*p == '[' && sscanf(p, "[%u]%n", &n, &len) == 1)
			p += len;
		if (*p != ';')
			return -1;
		p++;
		bits = type_bits(text, type, &align);
		if (!bits || bits % 8 || !align || align % 8)
			return -1;
		*off = (*off + align / 8 - 1) / (align / 8) * (align / 8);
		if (strcmp(field, stop) == 0) {
			*stop_bytes = bits / 8;
			return n == 1 ? 1 : -1;
		}
		*off += (uint64_t)n * bits / 8;
	}
}

/* Returns the body (after '{') of the struct declared after key in
 * text: inline ("key struct {") or named ("key struct NAME;"). */
static const char *struct_body(const char *text, const char *key)
{
	const char *p = strstr(text, key), *b;
	char name[64], pat[96];

	if (!p)
		return NULL;
	p += strlen(key);
	while (isspace((unsigned char)*p))
		p++;
	if (strncmp(p, "struct", 6) != 0)
		return NULL;
	p += 6;
	while (isspace((unsigned char)*p))
		p++;
	if (*p == '{')
		return p + 1;
	if (sscanf(p, "%63[A-Za-z0-9_]", name) != 1)
		return NULL;
	snprintf(pat, sizeof(pat), "struct %s {", name);
	b = strstr(text, pat);
	return b ? b + strlen(pat) : NULL;
}

int firstpacket_layout(const char *text, struct firstpacket_layout *out)
{
	const char *hdr = struct_body(text, "packet.header :="),
		*ctx = struct_body(text, "packet.context :=");
	uint64_t off = 0;
	unsigned bytes = 0, magic_bytes = 0;

	memset(out, 0, sizeof(out[0]));
	if (!hdr || !ctx || struct_walk(text, hdr, "magic", &off,
					&magic_bytes) != 1 || off != 0 ||
	    magic_bytes != 4)
		return -1;
	if (struct_walk(text, hdr, "", &off, &bytes) != 0 ||
	    struct_walk(text, ctx, "packet_seq_num", &off, &bytes) != 1 ||
	    (bytes != 4 && bytes != 8))
		return -1;
	out->seq_offset = off;
	out->seq_bytes = bytes;
	out->big_endian = strstr(text, "byte_order = be;") != NULL;
	return 0;
}

static uint64_t get(const unsigned char *p, unsigned n, int big)
{
	uint64_t v = 0;
	unsigned i;

	for (i = 0; i < n; i++)
		v |= (uint64_t)p[big ? i : n - 1 - i] << (8 * (n - 1 - i));
	return v;
}

int firstpacket_seq(const char *path, const struct firstpacket_layout *l,
		    uint64_t *seq)
{
	unsigned char buf[256];
	size_t want = (size_t)l->seq_offset + l->seq_bytes;
	FILE *f;
	int ok;

	if (want > sizeof(buf))
		return -1;
	f = fopen(path, "rb");
	if (!f)
		return -1;
	ok = fread(buf, 1, want, f) == want &&
		get(buf, 4, l->big_endian) == CTF_PACKET_MAGIC;
	fclose(f);
	if (!ok)
		return -1;
	*seq = get(buf + l->seq_offset, l->seq_bytes, l->big_endian);
	return 0;
}
