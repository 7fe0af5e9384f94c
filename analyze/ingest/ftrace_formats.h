/*
 * The print formats of the stock kernel's events as tracefs text shows
 * them, so the text reader (ftrace_text.c) can take each event line back
 * to its fields by name.
 *
 * A format is the event's TP_printk as a pattern: literal text, and
 * {field:conv} where the value is read (conversions in ftrace_formats.c).
 * What TP_printk does not print cannot come back: such fields are derived
 * from what is printed when the kernel's rules allow it (the MMU page
 * role from its printed bits) or left absent (NULL), and the format says
 * so in 'lossy'.  Formats follow Linux 6.1 (arch/x86/kvm/trace.h,
 * mmu/mmutrace.h, include/trace/events/kvm.h); a line of a known event
 * that does not match its format is an error, never a guess.
 */
#ifndef MMUREPLAY_INGEST_FTRACE_FORMATS_H
#define MMUREPLAY_INGEST_FTRACE_FORMATS_H

#include <stdint.h>

#define FTRACE_MAX_FIELDS 24

enum ftrace_fmt_kind {
	FTRACE_FMT_PATTERN,     /* TP_printk pattern */
	FTRACE_FMT_SYS_ENTER,   /* syscall entry: name: value pairs */
	FTRACE_FMT_SYS_EXIT,    /* syscall exit: the return value */
	FTRACE_FMT_NONE,        /* counted only (trace_marker text) */
};

struct ftrace_format {
	const char *name;       /* event name as the text prints it */
	const char *system;
	const char *event;      /* the tracefs name when it differs */
	enum ftrace_fmt_kind kind;
	const char *pattern;
	const char *lossy;      /* what the text cannot give back, or NULL */
	/* libtraceevent cannot evaluate this TP_printk (a statement
	 * expression), so trace-cmd report -R prints every value in
	 * decimal, not in the pattern's conversion */
	int raw_decimal;
};

/* The values of one line's fields. */
struct ftrace_values {
	int n;
	char name[FTRACE_MAX_FIELDS][32];
	int64_t v[FTRACE_MAX_FIELDS];
	uint8_t present[FTRACE_MAX_FIELDS];
	uint8_t is_signed[FTRACE_MAX_FIELDS];
};

/* Returns the first format of an event name printed in the text, or
 * NULL. */
const struct ftrace_format *ftrace_format_find(const char *name);
/* Returns the event's next format after f (an older kernel's, trace-cmd's
 * plugin's), or NULL. */
const struct ftrace_format *ftrace_format_next(const struct ftrace_format *f);

/* Match msg (the text after "event: ") against f's pattern into vals;
 * 0 on a match, -1 when msg does not follow the format. */
int ftrace_format_match(const struct ftrace_format *f, const char *msg,
			struct ftrace_values *vals);

/* Syscall arguments "name: hex, name: hex" (up to ')' or the end) or a
 * return value "hex" into vals; 0, or -1 when msg is neither. */
int ftrace_syscall_match(enum ftrace_fmt_kind kind, const char *msg,
			 struct ftrace_values *vals);

/* Raw fields "name=value ..." (trace-cmd report -R, and libtraceevent's
 * "[FAILED TO PARSE]" lines) of an event of format f into vals; 0, or -1
 * when msg is not that.  libtraceevent prints each raw value with the
 * conversion its TP_printk uses (%llx: hex without "0x"), so only a known
 * format tells hex from decimal: f NULL is refused, not guessed. */
int ftrace_raw_match(const struct ftrace_format *f, const char *msg,
		     struct ftrace_values *vals);

/* Index of field name in vals, or -1. */
int ftrace_values_find(const struct ftrace_values *vals, const char *name);

#endif
