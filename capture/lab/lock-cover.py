#!/usr/bin/env python3
"""Which traced waits for mmu_lock a traced hold of the lock can explain.

usage: capture/lab/lock-cover.py [--slack-us N] [--list N] DB...

A patched kernel traces each fault's wait for mmu_lock
(kvm_mmu_fault_lock_wait: its end and length).  The lock was held, or a
writer waited for it, when the wait began, and was let go when it ended.
This asks, per capture DB (mmureplay ingest), whether each wait's two
ends fall inside a span in which another thread of the trace may have
held mmu_lock for write (or waited for it), as the events show:

  window   an invalidation, from its start event to its thread's next
           event after its end event: the end event is traced before
           __kvm_handle_hva_range() takes the lock once more to end the
           invalidation (6.1 and 6.12), and nothing dates that unlock.
           An end with no start (begun before the capture) from the
           capture's first event.
  batch    an NX recovery batch, from its begin event to its thread's
           next event after its end event.
  ioctl    a KVM ioctl other than KVM_RUN (memslot changes, dirty log),
           entry to exit.
  vcpu     another vCPU between an exit and its entry (root allocation
           and other vCPU paths that take the lock for write).

A span is widened by --slack-us (default 20) at both ends: the events
that date it are traced a few microseconds from the lock itself.  Spans
of another VM do not count where both rows name their VM.

A wait with an end no span meets was held up by something the capture
does not show: a writer no event traces (the aging notifiers,
clear_flush_young and friends, take mmu_lock for write on 6.1 and 6.12,
and LTTng has no probe for their kvm_age_hva tracepoint), or time the
waiting CPU did not run (in the QEMU TCG lab, the host's scheduler
taking the vCPU thread away; no guest event shows it).  Prints, per DB,
the waits, how many have an end no span meets, and the longest of those
with what met each end (NONE: nothing).  Exit status: 0, or 2 when a DB
cannot be read.
"""
import argparse
import bisect
import os
import sqlite3
import sys
from collections import defaultdict

KVM_RUN = 0xAE80
NEVER = 1 << 62
# Tables whose rows date what a thread does (its next event).
TIMELINE = ["fault", "vcpu_exit", "vcpu_entry", "spte_change", "spte_set",
            "tlb_flush", "syscall", "memslot", "unmap_decision", "notifier",
            "lock_wait", "nx_recovery", "fast_fault", "sp_alloc", "sp_free",
            "huge_split", "spte_request"]


def tables(db):
    return {r[0] for r in db.execute(
        "SELECT name FROM sqlite_master WHERE type = 'table'")}


def spans(db, have):
    """Returns [(from, to, tid, vm, kind)]: where a thread may have held
    mmu_lock for write, as the events show."""
    times = defaultdict(list)
    for t in TIMELINE:
        if t in have:
            for ts, tid in db.execute(f"SELECT ts, tid FROM {t}"):
                times[tid].append(ts)
    for v in times.values():
        v.sort()
    first = min((v[0] for v in times.values() if v), default=0)

    def next_of(tid, ts):
        v = times[tid]
        i = bisect.bisect_right(v, ts)
        return v[i] if i < len(v) else NEVER

    out = []
    if "notifier" in have:
        begun = {}
        for ts, tid, vm, phase in db.execute(
                "SELECT ts, tid, vm, phase FROM notifier ORDER BY seq"):
            if phase == 0:
                begun.setdefault(tid, (ts, vm))
            else:
                out.append((begun.pop(tid, (first,))[0], next_of(tid, ts),
                            tid, vm, "window"))
        out += [(b[0], NEVER, tid, b[1], "window")
                for tid, b in begun.items()]
    if "nx_recovery" in have:
        begun = {}
        for ts, tid, vm, phase in db.execute(
                "SELECT ts, tid, vm, phase FROM nx_recovery "
                "WHERE phase IN (0, 1) ORDER BY seq"):
            if phase == 0:
                begun[tid] = (ts, vm)
            else:
                out.append((begun.pop(tid, (first,))[0], next_of(tid, ts),
                            tid, vm, "batch"))
        out += [(b[0], NEVER, tid, b[1], "batch") for tid, b in begun.items()]
    if "syscall" in have:
        names = dict(db.execute("SELECT id, name FROM raw_event"))
        begun = {}
        for ts, tid, vm, rid, a1 in db.execute(
                "SELECT ts, tid, vm, raw_id, a1 FROM syscall ORDER BY seq"):
            name = names.get(rid, "")
            if name.startswith("syscall_entry_ioctl") and a1 != KVM_RUN:
                begun[tid] = ts
            elif name.startswith("syscall_exit_ioctl") and tid in begun:
                out.append((begun.pop(tid), ts, tid, vm, "ioctl"))
    if "vcpu_exit" in have:
        rows = [(ts, 0, tid, vm) for ts, tid, vm in
                db.execute("SELECT ts, tid, vm FROM vcpu_exit")]
        rows += [(ts, 1, tid, vm) for ts, tid, vm in
                 db.execute("SELECT ts, tid, vm FROM vcpu_entry")]
        rows.sort()
        begun = {}
        for ts, entry, tid, vm in rows:
            if not entry:
                begun[tid] = ts
            elif tid in begun:
                out.append((begun.pop(tid), ts, tid, vm, "vcpu"))
    return out


def met_by(sp, slack, points):
    """For each (ts, tid, vm) of points, the kinds of the spans of other
    threads (of its VM) that hold ts, by a sweep over both."""
    ev = []
    for i, (f, t, tid, vm, kind) in enumerate(sp):
        ev.append((f - slack, 0, i))
        ev.append((t + slack, 2, i))
    for j, p in enumerate(points):
        ev.append((p[0], 1, j))
    ev.sort()
    live = set()
    res = [None] * len(points)
    for ts, what, k in ev:
        if what == 0:
            live.add(k)
        elif what == 2:
            live.discard(k)
        else:
            _, tid, vm = points[k]
            res[k] = sorted({sp[i][4] for i in live if sp[i][2] != tid and
                             (vm is None or sp[i][3] is None or
                              sp[i][3] == vm)})
    return res


def cover(path, slack, nlist):
    db = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    have = tables(db)
    if "lock_wait" not in have:
        raise sqlite3.DatabaseError("not a capture DB (no lock_wait table)")
    waits = db.execute("SELECT seq, ts - wait_ns, ts, wait_ns, tid, vm "
                       "FROM lock_wait ORDER BY seq").fetchall()
    # Both ends of every wait in one sweep.
    met = met_by(spans(db, have), slack,
                 [(w[1], w[4], w[5]) for w in waits] +
                 [(w[2], w[4], w[5]) for w in waits])
    at_start, at_end = met[:len(waits)], met[len(waits):]
    unmet = [(w, s, e) for w, s, e in zip(waits, at_start, at_end)
             if not s or not e]
    name = os.path.basename(path)
    print(f"{name}: {len(waits)} waits, {sum(w[3] for w in waits) / 1e6:.1f}"
          f" ms; an end no span meets: {len(unmet)}, "
          f"{sum(u[0][3] for u in unmet) / 1e6:.1f} ms")
    for w, s, e in sorted(unmet, key=lambda u: -u[0][3])[:nlist]:
        print(f"  seq {w[0]}  tid {w[4]}  vm {w[5]}  {w[3] / 1e3:.1f} us"
              f"  start: {'+'.join(s) or 'NONE'}"
              f"  end: {'+'.join(e) or 'NONE'}")
    return len(waits), len(unmet)


def main():
    ap = argparse.ArgumentParser(
        description="Which traced waits for mmu_lock a traced hold can "
        "explain (see the script's header).")
    ap.add_argument("--slack-us", type=float, default=20.0)
    ap.add_argument("--list", type=int, default=5,
                    help="unmet waits listed per DB, longest first")
    ap.add_argument("db", nargs="+")
    a = ap.parse_args()
    total = unmet = 0
    for path in a.db:
        if not os.path.isfile(path):
            print(f"lock-cover.py: {path}: no such file", file=sys.stderr)
            return 2
        try:
            n, u = cover(path, int(a.slack_us * 1000), a.list)
        except sqlite3.DatabaseError as err:
            print(f"lock-cover.py: {path}: {err}", file=sys.stderr)
            return 2
        total += n
        unmet += u
    if len(a.db) > 1:
        print(f"all: {total} waits; an end no span meets: {unmet}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
