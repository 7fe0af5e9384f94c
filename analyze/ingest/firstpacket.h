/*
 * The number of the first packet of each stream of an LTTng CTF trace.
 *
 * A stream whose first packet is not its tracer's packet 0 lost its
 * beginning: an LTTng snapshot (flight recorder) keeps only the last
 * packets of each overwriting ring buffer, and a trace cut at its start
 * does the same.  babeltrace2 sees no gap there and reports nothing
 * lost; the packet's packet_seq_num says it.
 */
#ifndef MMUREPLAY_INGEST_FIRSTPACKET_H
#define MMUREPLAY_INGEST_FIRSTPACKET_H

#include <stdint.h>

/* Where packet_seq_num sits in a packet of the trace. */
struct firstpacket_layout {
	uint64_t seq_offset;    /* bytes from the packet's start */
	unsigned seq_bytes;     /* 4 or 8 */
	int big_endian;
};

/* Fills *out from the head of a trace's metadata text (the trace and
 * stream declarations).  Returns 0, or -1 when the text declares no
 * packet_seq_num or lays it out in a way this reader does not follow. */
int firstpacket_layout(const char *text, struct firstpacket_layout *out);

/* Sets *seq to the packet_seq_num of the first packet of stream file
 * path.  Returns 0, or -1 when the file cannot be read or does not begin
 * with a CTF packet. */
int firstpacket_seq(const char *path, const struct firstpacket_layout *l,
		    uint64_t *seq);

#endif
