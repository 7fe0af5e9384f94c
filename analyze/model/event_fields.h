/*
 * The fields of each model event kind: the one list from which the table
 * source (replay/source.c: its SELECT text and its decoding) and the
 * replay stream (replay/stream.c: its encoder and decoder) are made.
 *
 * MEV_FIELDS_KIND(X) calls X(column, type, member) once per field, in
 * the order the stream packs them (changing that order changes the
 * stream's bytes: bump STREAM_FORMAT):
 *   column  what the table source selects for it, in the kind's table:
 *           a column name or an SQL expression over the row;
 *   type    the value's type, which says both how its column is read and
 *           how the stream packs it:
 *             INT    int (column as integer); a zigzag varint
 *             I64    int64_t; a zigzag varint
 *             U64    uint64_t; the difference to the kind's previous
 *                    event, zigzag
 *             SPT    uint64_t, an SPTE; XOR the kind's previous one
 *             XOR    uint64_t, an SPTE; XOR the SPTE before it in the
 *                    event (an SPTE change's new value against the old)
 *             SYS    enum model_syscall, from a raw event name
 *                    ("syscall_entry_ioctl"); one byte
 *             ENTRY  int, 1 when a raw event name is a syscall entry;
 *                    as INT
 *   member  the struct model_event member it fills (model/event.h); a
 *           C type other than the type's is an incompatible pointer in
 *           the generated code (an error with MMUREPLAY_WERROR).
 * Members a kind's list does not name are 0 in both sources.
 *
 * MEV_EVENT_TABLES(K) calls K(kind, fields, table, also, join) once per
 * kind: its list, the canonical table its rows come from (one row an
 * event, read in seq order), and, when its fields read another table,
 * that table (" name", appended to the table's for the stream's guards
 * and messages) and the SQL that joins it (appended after "FROM table").
 *
 * Pure data: the model does not read the DB.  schemas/capture.sql and
 * schemas/events.json declare the tables and how raw events fill them.
 */
#ifndef MMUREPLAY_MODEL_EVENT_FIELDS_H
#define MMUREPLAY_MODEL_EVENT_FIELDS_H

#include "model/event.h"

#define MEV_FIELDS_SPTE_CHANGE(X) X("as_id", INT, u.spte.as_id) \
	X("level", INT, u.spte.level) X("gfn", U64, u.spte.gfn) \
	X("old_spte", SPT, u.spte.old_spte) \
	X("new_spte", XOR, u.spte.new_spte)
#define MEV_FIELDS_FAULT(X) X("vcpu", I64, u.fault.vcpu) \
	X("gpa", U64, u.fault.gpa) X("error_code", U64, u.fault.error_code)
#define MEV_FIELDS_FAST_FAULT(X) MEV_FIELDS_FAULT(X) \
	X("old_spte", SPT, fast_old) X("new_spte", XOR, fast_new)
/* has_event: a patched kernel traced the event, flags and perm_upgrade
 * (NULL on a stock kernel's kvm_unmap_hva_range). */
#define MEV_FIELDS_NOTIFIER(X) X("phase", INT, u.notifier.phase) \
	X("hva_start", U64, u.notifier.hva_start) \
	X("hva_end", U64, u.notifier.hva_end) \
	X("event IS NOT NULL", INT, u.notifier.has_event) \
	X("event", I64, u.notifier.event) X("flags", I64, u.notifier.flags) \
	X("perm_upgrade", INT, u.notifier.perm_upgrade)
#define MEV_FIELDS_SP(X) X("gfn", U64, u.sp.gfn) X("role", U64, u.sp.role)
#define MEV_FIELDS_VCPU_EXIT(X) X("vcpu", I64, u.vcpu.vcpu) \
	X("exit_reason", I64, u.vcpu.reason)
#define MEV_FIELDS_VCPU_ENTRY(X) X("vcpu", I64, u.vcpu.vcpu)
/* name: the raw event's (raw_event.name), joined on syscall.raw_id. */
#define MEV_FIELDS_SYSCALL(X) X("name", ENTRY, u.sys.entry) \
	X("name", SYS, u.sys.call) X("a0", U64, u.sys.a0) \
	X("a1", U64, u.sys.a1) X("a2", U64, u.sys.a2)
#define MEV_FIELDS_UNMAP(X) X("as_id", INT, u.unmap.as_id) \
	X("slot", INT, u.unmap.slot) X("event", INT, u.unmap.event) \
	X("perm_upgrade", INT, u.unmap.perm_upgrade) \
	X("flush", INT, u.unmap.flush) X("decision", INT, u.unmap.decision) \
	X("gfn_start", U64, u.unmap.gfn_start) \
	X("gfn_end", U64, u.unmap.gfn_end)
#define MEV_FIELDS_TLB_FLUSH(X) X("ranged", INT, u.flush.ranged) \
	X("gfn_start", U64, u.flush.gfn_start) \
	X("pages", U64, u.flush.pages)
#define MEV_FIELDS_NX(X) X("phase", INT, u.nx.phase) \
	X("lock_mode", INT, u.nx.lock_mode) X("pages", I64, u.nx.pages) \
	X("to_zap", I64, u.nx.to_zap) X("ratio", I64, u.nx.ratio) \
	X("zapped", I64, u.nx.zapped) \
	X("skipped_dirty", I64, u.nx.skipped_dirty) \
	X("raced", I64, u.nx.raced) X("gfn", U64, u.nx.gfn) \
	X("level", INT, u.nx.level) X("action", INT, u.nx.action)
#define MEV_FIELDS_LOCK_WAIT(X) X("vcpu", I64, u.lock.vcpu) \
	X("wait_ns", I64, u.lock.wait_ns) X("gfn", U64, u.lock.gfn) \
	X("error_code", U64, u.lock.error_code) \
	X("lock_mode", INT, u.lock.lock_mode)
#define MEV_FIELDS_CONTENTION(X) X("phase", INT, u.contention.phase) \
	X("lock_addr", U64, u.contention.lock_addr)
#define MEV_FIELDS_MEMSLOT(X) X("as_id", INT, u.memslot.as_id) \
	X("slot", INT, u.memslot.slot) X("change", INT, u.memslot.change) \
	X("base_gfn", U64, u.memslot.base_gfn) \
	X("npages", U64, u.memslot.npages) X("hva", U64, u.memslot.hva) \
	X("old_flags", U64, u.memslot.old_flags) \
	X("new_flags", U64, u.memslot.new_flags)
/* pfn_off: the host page's offset from the gfn's place in a 2M page
 * (0 when the pfn is not traced). */
#define MEV_FIELDS_SPTE_REQUEST(X) X("gfn", U64, u.req.gfn) \
	X("level", INT, u.req.level) \
	X("coalesce((pfn - gfn) & 511, 0)", INT, u.req.pfn_off)
#define MEV_FIELDS_LATENCY(X) X("probe", I64, u.lat.probe) \
	X("ns", I64, u.lat.ns)

/* Every kind, once. */
#define MEV_EVENT_TABLES(K) \
	K(MEV_SPTE_CHANGE, MEV_FIELDS_SPTE_CHANGE, "spte_change", "", "") \
	K(MEV_FAULT, MEV_FIELDS_FAULT, "fault", "", "") \
	K(MEV_FAST_FAULT, MEV_FIELDS_FAST_FAULT, "fast_fault", "", "") \
	K(MEV_NOTIFIER, MEV_FIELDS_NOTIFIER, "notifier", "", "") \
	K(MEV_SP_ALLOC, MEV_FIELDS_SP, "sp_alloc", "", "") \
	K(MEV_SP_FREE, MEV_FIELDS_SP, "sp_free", "", "") \
	K(MEV_VCPU_EXIT, MEV_FIELDS_VCPU_EXIT, "vcpu_exit", "", "") \
	K(MEV_VCPU_ENTRY, MEV_FIELDS_VCPU_ENTRY, "vcpu_entry", "", "") \
	K(MEV_SYSCALL, MEV_FIELDS_SYSCALL, "syscall", " raw_event", \
	  " JOIN raw_event ON raw_event.id = syscall.raw_id") \
	K(MEV_UNMAP_DECISION, MEV_FIELDS_UNMAP, "unmap_decision", "", "") \
	K(MEV_TLB_FLUSH, MEV_FIELDS_TLB_FLUSH, "tlb_flush", "", "") \
	K(MEV_NX_RECOVERY, MEV_FIELDS_NX, "nx_recovery", "", "") \
	K(MEV_LOCK_WAIT, MEV_FIELDS_LOCK_WAIT, "lock_wait", "", "") \
	K(MEV_LOCK_CONTENTION, MEV_FIELDS_CONTENTION, "lock_contention", "", \
	  "") \
	K(MEV_MEMSLOT, MEV_FIELDS_MEMSLOT, "memslot", "", "") \
	K(MEV_SPTE_REQUEST, MEV_FIELDS_SPTE_REQUEST, "spte_request", "", "") \
	K(MEV_LATENCY_SAMPLE, MEV_FIELDS_LATENCY, "latency_sample", "", "")

/* Every kind is listed: one entry each (a kind twice is a duplicate case
 * in the sources' switches, so the count finds a kind left out). */
#define MEV_COUNT_KIND_(kind, fields, table, also, join) + 1
_Static_assert(0 MEV_EVENT_TABLES(MEV_COUNT_KIND_) == MEV_KINDS,
	       "a model_event kind is missing from MEV_EVENT_TABLES");
#undef MEV_COUNT_KIND_

#endif
