#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Check a late session's memslot state dump against the memslot changes
recorded from before the VM existed (run.sh --attach-after S --memslot-ref).

usage: check-statedump.py DIR

DIR is a run.sh output directory (trace/ and ref-trace/) or a fixture made
by package-fixture.sh (trace.tar.xz and ref/).  Reads both with the
babeltrace2 CLI (--clock-cycles: the kernel's monotonic nanoseconds, the
same clock in both sessions).

For each lttng_statedump_kvm_memslot of the trace, the expected memslot is
the one implied by the last kvm_memslot_change of that (as_id, slot) of
the same VM in the reference trace before the state dump event's
timestamp: create, move and flags_only give (base_gfn, npages, hva,
new_flags), delete removes it.  Every listed memslot must equal its
expected one in (as_id, slot, base_gfn, npages, hva, flags), with
dirty_logging = flags & KVM_MEM_LOG_DIRTY_PAGES; every memslot the
reference says exists at that time must be listed, and no other.  A VM is
the reference's `pid` context against the dump's vm_pid (the pid of the
task that created the VM); when neither side has more than one VM they
are paired whatever their pids.

Prints one line per memslot and a PASS/FAIL summary; exits 1 on a
mismatch, 2 when the traces are missing or hold no state dump.
"""
import os
import re
import subprocess
import sys
import tarfile
import tempfile

LINE = re.compile(r'^\[(\d+)\] \([^)]*\) \S+ (\w+): (.*)$')
FIELD = re.compile(r'(\w+) = ("(?:[^"\\]|\\.)*"|[^,}]+)')
CHANGES = {0: "create", 1: "delete", 2: "move", 3: "flags_only"}
LOG_DIRTY = 1               # KVM_MEM_LOG_DIRTY_PAGES
MEMSLOT_INVALID = 1 << 16   # KVM_MEMSLOT_INVALID: a delete or move under way


def value(s):
    s = s.strip()
    if s.startswith('"'):
        return s[1:-1]
    try:
        return int(s, 0)
    except ValueError:
        return s


def events(path, names):
    """(timestamp, name, fields) of the events `names` of the trace at path."""
    p = subprocess.run(["babeltrace2", "--clock-cycles", path],
                       capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit("check-statedump: babeltrace2 %s failed: %s" %
                 (path, p.stderr.strip()[:300]))
    out = []
    for line in p.stdout.splitlines():
        m = LINE.match(line)
        if not m or m.group(2) not in names:
            continue
        f = {k: value(v) for k, v in FIELD.findall(m.group(3))}
        out.append((int(m.group(1)), m.group(2), f))
    out.sort(key=lambda e: e[0])
    return out


def traces(d, tmp):
    """The main trace and the reference trace of a run or fixture dir."""
    if os.path.isdir(os.path.join(d, "trace")):
        main = os.path.join(d, "trace")
    elif os.path.isfile(os.path.join(d, "trace.tar.xz")):
        with tarfile.open(os.path.join(d, "trace.tar.xz")) as t:
            t.extractall(tmp)
        main = os.path.join(tmp, "trace")
    else:
        sys.exit("check-statedump: no trace/ nor trace.tar.xz in %s" % d)
    for r in ("ref-trace", "ref"):
        ref = os.path.join(d, r)
        if os.path.isdir(ref):
            return main, ref
    sys.exit("check-statedump: no ref-trace/ nor ref/ in %s "
             "(record with run.sh --memslot-ref)" % d)


def key(f):
    return (f["as_id"], f["slot"])


def state(f, flags):
    return (f["as_id"], f["slot"], f["base_gfn"], f["npages"], f["hva"], flags)


def fmt(st):
    return ("as_id %d slot %d base_gfn 0x%x npages %d hva 0x%x flags 0x%x" % st)


def main():
    if len(sys.argv) != 2 or sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(sys.argv) == 2 else 2
    with tempfile.TemporaryDirectory() as tmp:
        main_tr, ref_tr = traces(sys.argv[1], tmp)
        dump = events(main_tr, {"lttng_statedump_start", "lttng_statedump_end",
                                "lttng_statedump_kvm_memslot"})
        ref = events(ref_tr, {"kvm_memslot_change"})
    slots = [e for e in dump if e[1] == "lttng_statedump_kvm_memslot"]
    starts = [e[0] for e in dump if e[1] == "lttng_statedump_start"]
    ends = [e[0] for e in dump if e[1] == "lttng_statedump_end"]
    print("trace: %d lttng_statedump_kvm_memslot, state dump %s; "
          "reference: %d kvm_memslot_change" %
          (len(slots),
           "%d ns long (start %d, end %d)" % (ends[0] - starts[0], starts[0], ends[0])
           if starts and ends else "start/end not recorded",
           len(ref)))
    if not slots:
        print("FAIL: the trace has no lttng_statedump_kvm_memslot")
        return 2
    if not ref:
        print("FAIL: the reference trace has no kvm_memslot_change")
        return 2
    bad = 0
    if starts and ends:
        out = [e for e in slots if not starts[0] <= e[0] <= ends[0]]
        if out:
            print("FAIL: %d memslot events outside the state dump's window" % len(out))
            bad += len(out)

    ref_pids = sorted({f.get("pid") for _, _, f in ref})
    dump_pids = sorted({f["vm_pid"] for _, _, f in slots})
    pair = {}
    for vp in dump_pids:
        if vp in ref_pids:
            pair[vp] = vp
        elif len(dump_pids) == 1 and len(ref_pids) == 1:
            pair[vp] = ref_pids[0]
            print("note: vm_pid %s paired with the reference's only VM process, "
                  "pid %s" % (vp, ref_pids[0]))
        else:
            pair[vp] = None
    if len(ref_pids) > len(dump_pids):
        print("note: the reference has memslot changes of %d processes (%s), "
              "the state dump lists VMs of %d (%s): the others' VMs were "
              "gone by then" % (len(ref_pids), ref_pids, len(dump_pids), dump_pids))

    for vp in dump_pids:
        listed = [e for e in slots if e[2]["vm_pid"] == vp]
        t_dump = min(e[0] for e in listed)
        rp = pair[vp]
        if rp is None:
            print("FAIL: VM of pid %s: no memslot change of that process in "
                  "the reference" % vp)
            bad += len(listed)
            continue
        changes = [e for e in ref if e[2].get("pid") == rp]
        print("VM of pid %s: %d memslots listed at %d; %d changes in the "
              "reference, %d of them before" %
              (vp, len(listed), t_dump, len(changes),
               sum(1 for e in changes if e[0] < t_dump)))
        seen = set()
        for ts, _, f in listed:
            k = key(f)
            if k in seen:
                print("  FAIL %s: listed twice" % (k,))
                bad += 1
                continue
            seen.add(k)
            got = state(f, f["flags"])
            last = None
            for cts, _, c in changes:
                if cts >= ts:
                    break
                if key(c) == k:
                    last = (cts, c)
            if f["dirty_logging"] != (f["flags"] & LOG_DIRTY):
                print("  FAIL %s: dirty_logging %d, flags 0x%x" %
                      (fmt(got), f["dirty_logging"], f["flags"]))
                bad += 1
            if last is None:
                print("  FAIL %s: no change of this slot in the reference "
                      "before the dump" % fmt(got))
                bad += 1
                continue
            cts, c = last
            what = "%s %.3f s before" % (CHANGES.get(c["change"], c["change"]),
                                         (ts - cts) / 1e9)
            if c["change"] == 1:
                print("  FAIL %s: deleted before the dump (last change: %s)" %
                      (fmt(got), what))
                bad += 1
                continue
            want = state(c, c["new_flags"])
            if got == want:
                print("  ok   %s dirty_logging %d (last change: %s)" %
                      (fmt(got), f["dirty_logging"], what))
            else:
                why = ""
                if f["flags"] & MEMSLOT_INVALID:
                    why = " (KVM_MEMSLOT_INVALID: a delete or move was under way)"
                print("  FAIL %s, the reference says %s (last change: %s)%s" %
                      (fmt(got), fmt(want), what, why))
                bad += 1
        # Slots alive in the reference at the dump but not listed.
        alive = {}
        for cts, _, c in changes:
            if cts >= t_dump:
                break
            if c["change"] == 1:
                alive.pop(key(c), None)
            else:
                alive[key(c)] = (cts, c)
        deleted = {key(c) for cts, _, c in changes
                   if cts < t_dump and c["change"] == 1}
        for k in sorted(set(alive) - seen):
            cts, c = alive[k]
            print("  FAIL %s: alive in the reference, not listed" %
                  fmt(state(c, c["new_flags"])))
            bad += 1
        for k in sorted(deleted - set(alive)):
            print("  ok   as_id %d slot %d: deleted before the dump, not listed" % k)
    n = len(slots)
    if bad:
        print("FAIL: %d mismatches among %d listed memslots" % (bad, n))
        return 1
    print("PASS: %d listed memslots equal the reference's state at the dump" % n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
