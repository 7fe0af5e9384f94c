#!/usr/bin/env python3
"""Compare the mmureplay series' new KVM events as ftrace and LTTng recorded
them in the same lab run (capture/lab/run.sh ... --ftrace --out OUTDIR).

usage: tests/lab/ftrace_vs_lttng.py [-v] OUTDIR

OUTDIR holds ftrace.txt (the tracefs `trace` file, TP_printk text),
ftrace-stats.txt (per-CPU ring buffer stats, format files) and trace/ (the
LTTng CTF trace, read with `babeltrace2 --clock-cycles`).  Both tracers are
attached to the same tracepoints, so every hit is in both: for each event
and each CPU the sequence of records must be the same, field by field
(TP_printk output normalized: hex/decimal, symbolic enums back to their
values, flag words back to booleans), plus ftrace's pid against LTTng's tid
context.  If ftrace's ring buffer overwrote events on a CPU, the
overlapping tail is compared and the table says so.

Prints one row per event: records in ftrace and in LTTng, records compared,
fields compared per record, mismatching records; then the fields that
TP_printk cannot show exactly and the first mismatches.  Exit status 0 when
everything matches, 1 on any mismatch or count difference not explained by
an ftrace overflow, 2 on usage or missing input.
"""
import collections
import json
import os
import re
import subprocess
import sys

HEX = r"(?:0x)?[0-9a-fA-F]+"
NUM = r"-?\d+"


def hexv(s):
    return int(s, 16)


def decv(s):
    return int(s, 10)


def flag(s):
    return 1 if s else 0


def sym(table):
    """Inverse of __print_symbolic (it prints 0x%lx for unknown values)."""
    inv = {v: k for k, v in table.items()}

    def conv(s):
        if s in inv:
            return inv[s]
        return int(s, 16)
    return conv


def read_write(s):
    # TP_printk: lock_mode ? "read" : "write" (any nonzero value is "read")
    return 1 if s == "read" else 0


MN_EVENT = {0: "unmap", 1: "clear", 2: "protection_vma", 3: "protection_page",
            4: "soft_dirty", 5: "release", 6: "migrate", 7: "exclusive"}
MR_CHANGE = {0: "create", 1: "delete", 2: "move", 3: "flags_only"}
UNMAP_DECISION = {0: "zap", 1: "skip_perm_upgrade"}
NX_ACTION = {0: "zapped", 1: "skipped_dirty", 2: "raced"}

INVALIDATE = (
    r"hva (?P<hva_start>%s) -- (?P<hva_end>%s) event (?P<event>\S+) "
    r"flags (?P<flags>%s)(?P<blockable> blockable)?(?P<perm_upgrade> perm_upgrade)?$"
    % (HEX, HEX, HEX),
    {"hva_start": hexv, "hva_end": hexv, "event": sym(MN_EVENT),
     "flags": hexv, "blockable": flag, "perm_upgrade": flag})

# event -> (TP_printk regex, {field: converter}); the field names are the
# kernel's (TP_STRUCT__entry), which the LTTng probes keep.
EVENTS = {
    "kvm_invalidate_range_start": INVALIDATE,
    "kvm_invalidate_range_end": INVALIDATE,
    "kvm_remote_tlb_flush": (
        r"gfn (?P<start_gfn>%s) pages (?P<pages>\d+) \((?P<ranged>range|full) flush\)$"
        % HEX,
        {"start_gfn": hexv, "pages": decv,
         "ranged": lambda s: 1 if s == "range" else 0}),
    "kvm_memslot_change": (
        r"as id (?P<as_id>\d+) slot (?P<slot>\d+) (?P<change>\S+) "
        r"gfn (?P<base_gfn>%s) npages (?P<npages>\d+) hva (?P<hva>%s) "
        r"flags (?P<old_flags>%s) -> (?P<new_flags>%s)(?P<dirty_logging> dirty_logging)?$"
        % (HEX, HEX, HEX, HEX),
        {"as_id": decv, "slot": decv, "change": sym(MR_CHANGE),
         "base_gfn": hexv, "npages": decv, "hva": hexv, "old_flags": hexv,
         "new_flags": hexv, "dirty_logging": flag}),
    "kvm_mmu_unmap_gfn_range": (
        r"as id (?P<as_id>%s) slot (?P<slot>%s) gfn (?P<start_gfn>%s)-(?P<end_gfn>%s) "
        r"event (?P<event>%s)(?P<perm_upgrade> perm_upgrade)? (?P<decision>\S+)"
        r"(?P<flush> flush)?$" % (NUM, NUM, HEX, HEX, NUM),
        {"as_id": decv, "slot": decv, "start_gfn": hexv, "end_gfn": hexv,
         "event": decv, "perm_upgrade": flag,
         "decision": sym(UNMAP_DECISION), "flush": flag}),
    "kvm_mmu_nx_recovery_begin": (
        r"(?P<lock_mode>read|write) lock pages (?P<pages>\d+) "
        r"to_zap (?P<to_zap>\d+) ratio (?P<ratio>\d+)$",
        {"lock_mode": read_write, "pages": decv, "to_zap": decv,
         "ratio": decv}),
    "kvm_mmu_nx_recovery_end": (
        r"(?P<lock_mode>read|write) lock to_zap (?P<to_zap>\d+) "
        r"zapped (?P<zapped>\d+) skipped_dirty (?P<skipped_dirty>\d+) "
        r"raced (?P<raced>\d+) pages left (?P<pages>\d+)$",
        {"lock_mode": read_write, "to_zap": decv, "zapped": decv,
         "skipped_dirty": decv, "raced": decv, "pages": decv}),
    "kvm_mmu_nx_recover_page": (
        r"as id (?P<as_id>%s) gfn (?P<gfn>%s) level (?P<level>%s)"
        r"(?P<tdp_mmu> tdp_mmu)? (?P<lock_mode>read|write) lock (?P<action>\S+)$"
        % (NUM, HEX, NUM),
        {"as_id": decv, "gfn": hexv, "level": decv, "tdp_mmu": flag,
         "lock_mode": read_write, "action": sym(NX_ACTION)}),
    "kvm_mmu_fault_lock_wait": (
        r"vcpu (?P<vcpu_id>%s) gfn (?P<gfn>%s) ec (?P<error_code>%s) "
        r"waited (?P<wait_ns>\d+) ns for mmu_lock \((?P<lock_mode>read|write)\)$"
        % (NUM, HEX, HEX),
        {"vcpu_id": decv, "gfn": hexv, "error_code": hexv, "wait_ns": decv,
         "lock_mode": read_write}),
}
EVENT_RE = {name: re.compile(rx) for name, (rx, _) in EVENTS.items()}

# What TP_printk loses (the comparison maps it back, but cannot tell these
# values apart): documented in the report.
PRINTK_LOSSY = {
    "lock_mode": "printed as read/write (lock_mode ? \"read\" : \"write\"): "
                 "values > 1 would show as read",
    "blockable": "flag word (present/absent): any nonzero shows as set",
    "perm_upgrade": "flag word (present/absent)",
    "dirty_logging": "flag word (present/absent)",
    "tdp_mmu": "flag word (present/absent)",
    "flush": "flag word (present/absent)",
    "ranged": "printed as range/full flush",
}

# "  comm-pid  [cpu] flags  sec.usec: event: msg"; comm may hold spaces.
FTRACE_LINE = re.compile(
    r"^\s*(?P<comm>.*)-(?P<pid>\d+)\s+\[(?P<cpu>\d+)\]\s+\S+\s+"
    r"(?P<ts>\d+\.\d+): (?P<event>\w+): (?P<msg>.*)$")
LTTNG_LINE = re.compile(
    r"^\[(?P<ts>\d+)\] \S+ (?P<event>\w+): \{ cpu_id = (?P<cpu>\d+) \}, "
    r"\{ tid = (?P<tid>\d+), procname = \"(?P<comm>.*?)\" \}, \{ (?P<payload>.*) \}$")
LTTNG_FIELD = re.compile(r"(\w+) = (\S+?)(?:,|$)")


class Rec:
    __slots__ = ("ts_ns", "pid", "cpu", "fields", "line")

    def __init__(self, ts_ns, pid, cpu, fields, line):
        self.ts_ns, self.pid, self.cpu = ts_ns, pid, cpu
        self.fields, self.line = fields, line


def parse_ftrace(path, problems):
    recs = collections.defaultdict(list)
    header = {}
    cpu_restart = set()
    with open(path, errors="replace") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if line.startswith("#"):
                m = re.search(r"entries-in-buffer/entries-written: (\d+)/(\d+)", line)
                if m:
                    header["in_buffer"], header["written"] = map(int, m.groups())
                m = re.match(r"##### CPU (\d+) buffer started ####", line)
                if m:
                    cpu_restart.add(int(m.group(1)))
                continue
            if not line.strip():
                continue
            m = FTRACE_LINE.match(line)
            if not m:
                problems.append("ftrace.txt:%d: unparsed line: %s" % (n, line))
                continue
            ev = m.group("event")
            if ev not in EVENTS:
                continue
            mm = EVENT_RE[ev].match(m.group("msg"))
            if not mm:
                problems.append("ftrace.txt:%d: %s: TP_printk text not understood: %s"
                                % (n, ev, m.group("msg")))
                continue
            conv = EVENTS[ev][1]
            try:
                fields = {k: conv[k](v) for k, v in mm.groupdict().items()}
            except ValueError as e:
                problems.append("ftrace.txt:%d: %s: %s" % (n, ev, e))
                continue
            sec, usec = m.group("ts").split(".")
            ts_ns = int(sec) * 1000000000 + int(usec.ljust(9, "0")[:9])
            recs[ev].append(Rec(ts_ns, int(m.group("pid")), int(m.group("cpu")),
                                fields, "ftrace.txt:%d" % n))
    return recs, header, cpu_restart


def parse_ftrace_stats(path):
    """per-CPU overrun counts and the format files' field lists."""
    overrun, formats = {}, {}
    if not os.path.exists(path):
        return overrun, formats
    cur = None
    with open(path, errors="replace") as f:
        for line in f:
            m = re.match(r".*/per_cpu/cpu(\d+)/stats:overrun: (\d+)", line)
            if m:
                overrun[int(m.group(1))] = int(m.group(2))
                continue
            m = re.match(r"== format \S+/(\w+)", line)
            if m:
                cur = formats.setdefault(m.group(1), [])
                continue
            m = re.match(r"\s+field:.*?(\w+)(?:\[\d*\])?;\s+offset:", line)
            if m and cur is not None and not m.group(1).startswith("common_"):
                cur.append(m.group(1))
    return overrun, formats


def find_ctf(outdir):
    for root, _dirs, files in os.walk(os.path.join(outdir, "trace")):
        if "metadata" in files:
            return root
    return None


def parse_lttng(ctf, problems):
    recs = collections.defaultdict(list)
    names = collections.defaultdict(list)
    proc = subprocess.Popen(["babeltrace2", "--clock-cycles", "--no-delta", ctf],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            universal_newlines=True, errors="replace")
    n = 0
    for line in proc.stdout:
        n += 1
        ev_start = line.find("] ")
        if ev_start < 0:
            continue
        # cheap filter before the regex: the event name follows the hostname
        rest = line[ev_start + 2:]
        ev = rest.split(" ", 2)[1].rstrip(":") if rest.count(" ") >= 2 else ""
        if ev not in EVENTS:
            continue
        m = LTTNG_LINE.match(line.rstrip("\n"))
        if not m:
            problems.append("babeltrace2 line %d: unparsed: %s" % (n, line.rstrip()))
            continue
        fields = {}
        order = []
        for k, v in LTTNG_FIELD.findall(m.group("payload")):
            fields[k] = int(v, 0)
            order.append(k)
        if not names[ev]:
            names[ev] = order
        recs[ev].append(Rec(int(m.group("ts")), int(m.group("tid")), int(m.group("cpu")),
                            fields, "babeltrace2 line %d" % n))
    err = proc.stderr.read()
    if proc.wait() != 0:
        problems.append("babeltrace2 failed: %s" % err.strip()[:500])
    return recs, names


def compare(ev, frecs, lrecs, overflow_cpus, lttng_lost, examples, field_mm):
    """-> (compared, mismatching records, count problem or None, note)."""
    fby = collections.defaultdict(list)
    lby = collections.defaultdict(list)
    for r in frecs:
        fby[r.cpu].append(r)
    for r in lrecs:
        lby[r.cpu].append(r)
    compared = bad = 0
    notes, count_problems = [], []
    fields = sorted(EVENTS[ev][1])
    for cpu in sorted(set(fby) | set(lby)):
        fs, ls = fby[cpu], lby[cpu]
        if len(fs) != len(ls):
            if cpu in overflow_cpus and len(fs) < len(ls):
                notes.append("cpu%d: ftrace overwrote %d, tail of %d compared"
                             % (cpu, len(ls) - len(fs), len(fs)))
                ls = ls[len(ls) - len(fs):]
            elif lttng_lost and len(ls) < len(fs):
                notes.append("cpu%d: LTTng discarded %d" % (cpu, len(fs) - len(ls)))
                count_problems.append("cpu%d ftrace %d lttng %d" % (cpu, len(fs), len(ls)))
                fs = fs[:len(ls)]
            else:
                count_problems.append("cpu%d ftrace %d lttng %d" % (cpu, len(fs), len(ls)))
                k = min(len(fs), len(ls))
                fs, ls = fs[:k], ls[:k]
        for fr, lr in zip(fs, ls):
            compared += 1
            diffs = []
            for k in fields:
                if fr.fields.get(k) != lr.fields.get(k):
                    diffs.append((k, fr.fields.get(k), lr.fields.get(k)))
            if fr.pid != lr.pid:
                diffs.append(("pid/tid", fr.pid, lr.pid))
            if diffs:
                bad += 1
                for k, a, b in diffs:
                    field_mm[(ev, k)] += 1
                    if len(examples[(ev, k)]) < 3:
                        examples[(ev, k)].append((fr.line, a, lr.line, b))
    return compared, bad, count_problems, notes


def global_order_same(frecs, lrecs):
    """Same records in the same order when each tracer's records are sorted
    by its own timestamps (informational: cross-CPU near-ties may flip)."""
    if len(frecs) != len(lrecs):
        return None
    key = lambda r: (r.cpu, r.pid, tuple(sorted(r.fields.items())))  # noqa: E731
    return [key(r) for r in frecs] == [key(r) for r in lrecs]


def main(argv):
    verbose = "-v" in argv
    args = [a for a in argv[1:] if a != "-v"]
    if len(args) != 1 or args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if args and args[0] in ("-h", "--help") else 2
    outdir = args[0]
    ftxt = os.path.join(outdir, "ftrace.txt")
    ctf = find_ctf(outdir)
    if not os.path.exists(ftxt):
        print("ftrace_vs_lttng: no %s (run.sh --ftrace)" % ftxt, file=sys.stderr)
        return 2
    if not ctf:
        print("ftrace_vs_lttng: no CTF trace under %s/trace" % outdir, file=sys.stderr)
        return 2

    problems = []
    frecs, header, cpu_restart = parse_ftrace(ftxt, problems)
    overrun, formats = parse_ftrace_stats(os.path.join(outdir, "ftrace-stats.txt"))
    lrecs, lnames = parse_lttng(ctf, problems)
    lttng_lost = None
    try:
        with open(os.path.join(outdir, "manifest.json")) as f:
            man = json.load(f)
        lttng_lost = man.get("discarded_events")
        desc = "%s %s knobs='%s'" % (man.get("workload", ""), man.get("workload_args", ""),
                                     man.get("knobs", ""))
    except (OSError, ValueError):
        desc = ""

    overflow_cpus = {c for c, n in overrun.items() if n > 0} | cpu_restart
    written, in_buf = header.get("written"), header.get("in_buffer")
    print("run: %s %s" % (outdir, desc))
    print("ftrace: %s entries in buffer / %s written; overrun per cpu: %s%s"
          % (in_buf, written,
             ", ".join("cpu%d=%d" % kv for kv in sorted(overrun.items())) or "?",
             "  (OVERFLOW: tails compared)" if overflow_cpus else " (no overflow)"))
    print("lttng: discarded events: %s" % lttng_lost)

    examples = collections.defaultdict(list)
    field_mm = collections.Counter()
    rows, failed, notes_all = [], False, []
    for ev in EVENTS:
        f, l_ = frecs.get(ev, []), lrecs.get(ev, [])
        compared, bad, cprob, notes = compare(ev, f, l_, overflow_cpus, lttng_lost,
                                              examples, field_mm)
        nfields = len(EVENTS[ev][1])
        status = "ok" if not bad and not cprob else "MISMATCH"
        if cprob:
            notes.append("count differs: " + "; ".join(cprob))
        if not f and not l_:
            status = "absent"
        elif status == "ok" and any("overwrote" in n for n in notes):
            status = "ok (tail)"
        if bad or cprob:
            failed = True
        same = global_order_same(f, l_)
        if same is False:
            notes.append("global order differs (per-CPU order used)")
        # LTTng's field names against the kernel's struct fields
        kfields = set(EVENTS[ev][1])
        if ev in lnames and set(lnames[ev]) != kfields:
            notes.append("LTTng fields %s != TP_printk fields %s"
                         % (sorted(lnames[ev]), sorted(kfields)))
            failed = True
        if ev in formats and formats[ev] and set(formats[ev]) != kfields:
            notes.append("format file fields %s not all shown by TP_printk"
                         % sorted(set(formats[ev]) - kfields))
            failed = True
        dts = sorted(lr.ts_ns - fr.ts_ns for fr, lr in zip(
            sorted(f, key=lambda r: (r.cpu, r.ts_ns)),
            sorted(l_, key=lambda r: (r.cpu, r.ts_ns)))) if len(f) == len(l_) else []
        if dts:
            notes.append("ts lttng-ftrace median %+.1f us (min %+.1f, max %+.1f)"
                         % (dts[len(dts) // 2] / 1e3, dts[0] / 1e3, dts[-1] / 1e3))
        rows.append((ev, len(f), len(l_), compared, "%d+pid" % nfields, bad, status))
        notes_all.append((ev, notes))

    w = max(len(r[0]) for r in rows)
    print()
    print("%-*s %8s %8s %8s %8s %10s  %s" % (w, "event", "ftrace", "lttng", "compared",
                                             "fields", "mismatch", "status"))
    for r in rows:
        print("%-*s %8d %8d %8d %8s %10d  %s" % ((w,) + r))
    print()
    for ev, notes in notes_all:
        for n in notes:
            print("  %s: %s" % (ev, n))
    if field_mm:
        print("\nfield mismatches (field: count; first examples ftrace vs lttng):")
        for (ev, k), n in sorted(field_mm.items()):
            print("  %s.%s: %d" % (ev, k, n))
            for fl, a, ll, b in examples[(ev, k)]:
                ishex = EVENTS[ev][1].get(k) is hexv
                fa = hex(a) if ishex and isinstance(a, int) else a
                fb = hex(b) if ishex and isinstance(b, int) else b
                print("    %s %s  vs  %s %s" % (fl, fa, ll, fb))
    if verbose:
        print("\nTP_printk fields with a lossy rendering (mapped back before comparing):")
        for k, why in PRINTK_LOSSY.items():
            print("  %s: %s" % (k, why))
    if problems:
        failed = True
        print("\nparse problems (%d):" % len(problems))
        for p in problems[:20]:
            print("  " + p)
    if not any(frecs.values()) and not any(lrecs.values()):
        print("\nno new events in either trace")
        failed = True
    print("\nresult: %s" % ("MISMATCH" if failed else "all fields of all new events match"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
