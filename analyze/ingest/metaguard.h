/*
 * The metadata guard: a CTF trace's 'metadata' file checked before
 * babeltrace2 reads it.
 *
 * Why: babeltrace2 2.0.4's CTF source spins at 100% CPU, forever, on a
 * packetized metadata file whose last packet is cut short (a capture
 * copied half-way, a disk that filled); its own CLI does the same.  The
 * guard turns that into a one-line error naming the file, the packet and
 * the byte.  It checks what the CTF 1.8 packet header promises, not the
 * TSDL grammar (babeltrace2 reports grammar errors itself):
 *   - every packet: the magic (in one byte order for the whole file), the
 *     same UUID as the first, header <= content size <= packet size,
 *     whole bytes, no compression, encryption or checksum scheme,
 *     version 1.8;
 *   - the packets tile the file exactly: the last one is complete;
 *   - the text (packet contents, or a plain-text file beginning with
 *     "/" "* CTF") ends outside any declaration, string or comment, on
 *     a ';'.
 * What it cannot catch: a file cut exactly between two top-level
 * declarations (the text is complete, only shorter; babeltrace2 then
 * reports events it has no class for), and damage inside a string or
 * number that leaves the text well formed.
 */
#ifndef MMUREPLAY_INGEST_METAGUARD_H
#define MMUREPLAY_INGEST_METAGUARD_H

enum metaguard_status {
	METAGUARD_OK = 0,
	METAGUARD_BAD,          /* *why says what; the trace is refused */
	METAGUARD_ERR_IO,       /* cannot read the file; *why says so */
};

/* Checks PATH (a trace's 'metadata' file).  Returns METAGUARD_OK, or an
 * error status with *why (malloc'd) saying what. */
enum metaguard_status metaguard_check(const char *path, char **why);
/* The same, and on METAGUARD_OK sets *head to the text's first 64 KiB
 * (malloc'd, NUL-terminated; packetized metadata without its packet
 * headers): where the trace and stream declarations are. */
enum metaguard_status metaguard_read(const char *path, char **why,
				     char **head);

#endif
