/*
 * A protobuf wire-format writer, as small as Perfetto's trace format
 * needs: varint, fixed64 (double) and length-delimited fields, and
 * nested messages.
 *
 * Why not protobuf-c (Debian's libprotobuf-c): it encodes messages it
 * has built in memory from code generated from .proto files, so an
 * export would first copy every event into generated structs and need
 * Perfetto's protos (hundreds of files) or a subset compiled into the
 * build.  A trace is written once, field by field, in a fixed shape:
 * this writer appends each field to one buffer and patches a nested
 * message's length when it ends, with no allocation per message and no
 * generated code; tests/perfetto/ decodes the output with protoc.
 *
 * Invariants: fields are appended in call order; pb_begin()/pb_end()
 * nest (at most PB_DEPTH deep) and every message is ended before the
 * buffer is read; after an allocation failure nomem is set and later
 * calls do nothing.
 */
#ifndef MMUREPLAY_EXPORT_PBWIRE_H
#define MMUREPLAY_EXPORT_PBWIRE_H

#include <stddef.h>
#include <stdint.h>

#define PB_DEPTH 8

struct pb {
	uint8_t *b;
	size_t len, cap;
	size_t open[PB_DEPTH];  /* where each open message's body starts */
	int depth;
	int nomem;
};

void pb_varint(struct pb *p, uint32_t field, uint64_t v);
void pb_int64(struct pb *p, uint32_t field, int64_t v);
void pb_double(struct pb *p, uint32_t field, double v);
void pb_string(struct pb *p, uint32_t field, const char *s);
/* A nested message as field: its fields follow, until pb_end(). */
void pb_begin(struct pb *p, uint32_t field);
void pb_end(struct pb *p);
/* Empties the buffer (keeps its memory); no message may be open. */
void pb_reset(struct pb *p);
void pb_free(struct pb *p);

#endif
