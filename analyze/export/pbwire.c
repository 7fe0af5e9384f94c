/*
 * Protobuf wire format (see pbwire.h).  A nested message's length is a
 * varint before its body, unknown until the body ends: pb_begin()
 * reserves one byte, the length of every body below 128 bytes (a trace
 * packet's, nearly always); pb_end() writes it there, or, for a longer
 * body, moves the body up to make room for the longer varint.
 */
#include "export/pbwire.h"

#include "util/assert.h"

#include <stdlib.h>
#include <string.h>

#define PB_LEN_MAX 10

enum { WT_VARINT = 0, WT_FIXED64 = 1, WT_LEN = 2 };

static int room(struct pb *p, size_t n)
{
	uint8_t *nb;
	size_t cap;

	if (p->nomem)
		return -1;
	if (p->len + n <= p->cap)
		return 0;
	cap = p->cap ? p->cap : 256;
	while (cap < p->len + n)
		cap *= 2;
	nb = realloc(p->b, cap);
	if (!nb) {
		p->nomem = 1;
		return -1;
	}
	p->b = nb;
	p->cap = cap;
	return 0;
}

/* Appends v as a varint (room checked by the caller). */
static void put_varint(struct pb *p, uint64_t v)
{
	while (v >= 0x80) {
		p->b[p->len++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	p->b[p->len++] = (uint8_t)v;
}

static void put_tag(struct pb *p, uint32_t field, int wire)
{
	put_varint(p, ((uint64_t)field << 3) | (uint64_t)wire);
}

void pb_varint(struct pb *p, uint32_t field, uint64_t v)
{
	if (room(p, 20) == 0) {
		put_tag(p, field, WT_VARINT);
		put_varint(p, v);
	}
}

void pb_int64(struct pb *p, uint32_t field, int64_t v)
{
	/* int64 is the two's complement as a varint (10 bytes if < 0). */
	pb_varint(p, field, (uint64_t)v);
}

void pb_double(struct pb *p, uint32_t field, double v)
{
	uint64_t bits;
	int i;

	if (room(p, 16) < 0)
		return;
	memcpy(&bits, &v, sizeof(bits));
	put_tag(p, field, WT_FIXED64);
	for (i = 0; i < 8; i++)
		p->b[p->len++] = (uint8_t)(bits >> (8 * i));
}

void pb_string(struct pb *p, uint32_t field, const char *s)
{
	size_t n = strlen(s);

	if (room(p, n + 16) < 0)
		return;
	put_tag(p, field, WT_LEN);
	put_varint(p, n);
	memcpy(p->b + p->len, s, n);
	p->len += n;
}

void pb_begin(struct pb *p, uint32_t field)
{
	MR_ASSERT(p->depth < PB_DEPTH);
	if (room(p, 16) < 0)
		return;
	put_tag(p, field, WT_LEN);
	p->len++;               /* the length, if below 128 */
	p->open[p->depth++] = p->len;
}

void pb_end(struct pb *p)
{
	size_t body, n, k;
	uint8_t tmp[PB_LEN_MAX];
	uint64_t v;

	MR_ASSERT(p->depth > 0);
	if (p->nomem)
		return;
	body = p->open[--p->depth];
	n = p->len - body;
	if (n < 0x80) {
		p->b[body - 1] = (uint8_t)n;
		return;
	}
	for (v = n, k = 0; v >= 0x80; v >>= 7)
		tmp[k++] = (uint8_t)(v | 0x80);
	tmp[k++] = (uint8_t)v;
	/* The outer messages' bodies begin before this one: moving it up
	 * leaves their offsets as they are. */
	if (room(p, k - 1) < 0)
		return;
	memmove(p->b + body + k - 1, p->b + body, n);
	memcpy(p->b + body - 1, tmp, k);
	p->len += k - 1;
}

void pb_reset(struct pb *p)
{
	MR_ASSERT(p->depth == 0);
	p->len = 0;
}

void pb_free(struct pb *p)
{
	free(p->b);
	memset(p, 0, sizeof(*p));
}
