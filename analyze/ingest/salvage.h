/*
 * Salvaging an LTTng trace whose stream file was cut short (a full disk,
 * a killed consumer, a partial copy).
 *
 * babeltrace2 indexes every packet of a stream file before it decodes
 * anything, so one packet cut short makes the whole trace unreadable.
 * salvage_trace() builds a view of the trace in a temporary directory:
 * the metadata and intact stream files are linked, a cut stream file is
 * copied up to its cut packet (one with no whole packet is left out),
 * and the (now wrong) index/ directory is left out so babeltrace2
 * re-indexes.  The cut packet is lost: its content ends inside an event,
 * on which libbabeltrace2 2.0 can abort (salvage.c).  The caller marks
 * the result truncated with the reason returned here.
 *
 * Only the LTTng packet layout is handled (magic 0xC1FC1FC1, little
 * endian, packet context after the 32-byte header: content_size at byte
 * 48, packet_size at byte 56); anything else is left unsalvaged.
 */
#ifndef MMUREPLAY_INGEST_SALVAGE_H
#define MMUREPLAY_INGEST_SALVAGE_H

enum salvage_status {
	SALVAGE_OK = 0,         /* *view and *reason are set */
	SALVAGE_NOTHING,        /* no cut packet found: the trace is corrupt
				 * in some other way */
	SALVAGE_ERR,            /* I/O error building the view */
};

enum salvage_status salvage_trace(const char *dir, char **view,
				  char **reason);
/* Remove a view made by salvage_trace() and free the path. */
void salvage_view_remove(char *view);

#endif
