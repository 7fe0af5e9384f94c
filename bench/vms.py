#!/usr/bin/env python3
"""Replay cost against the number of VMs, on SYNTHETIC captures of the
same size: 1, 4 and 16 VMs in one run.

usage: bench/vms.py [--events N] [--vms 1,4,16] [--seed S] [--work DIR]
                    [--no-write] [--check]

For each VM count V: bench/synth makes a capture of N/V events (one
guest, as bench/scale does), ingest loads it, and V copies of its events
become V VMs of one DB (below), N events in all.  Then, each timed alone
(wall, CPU, peak RSS): `replay` of the four policies (it stores the
replay stream first, which the others then read), `fidelity` and
`summary`; and, for comparison, `fidelity --vm K` for every VM K, summed
(each narrows the whole capture to its VM: V passes over all events,
the cost replay had before it split the events by VM).  Replaying V VMs reads each VM's events apart (replay/
session.h, replay_vms_open()): the cost should follow the events, not V
times them; memory the guest pages touched, over all VMs.

The copies, made in SQL on the ingested DB (a synthetic layout, labelled
so in the output): copy k's events keep their times and take seq
seq * V + k (so the VMs interleave event by event), its threads tid +
10000 k in a process of pid 4000 + 10000 k (table vm, thread.pid, the
vm column), and its present SPTEs' pfns move up by k << 24 (2^24 pages
= 64 GiB each), as separate guests' memory would.  The NX recovery
worker (a 6.1 kthread, its own process) is in no VM's process: the
replay gives each copy's worker its VM by the leaves it zaps
(replay/vm_attr.h), as on a real host.  Every copy is the same guest, so
each VM's self-check verdict is the one-VM capture's.

Writes bench/results/vms-<N>-<date>.txt unless --no-write.  --check
(the test whatif.vms_slice, a small size) exits 1 unless every VM of every
count passes its self-check.
"""
import argparse
import datetime
import os
import platform
import shutil
import sqlite3
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale import (MMR, SYNTH, TOP, build_config, du, human, label,  # noqa
                   timed)

PFN_SHIFT = 24           # pages between two copies' memory (64 GiB)
TID_STEP = 10000


def canonical_tables(con):
    return [t for (t,) in con.execute(
        "SELECT DISTINCT canonical FROM raw_event WHERE canonical IS NOT "
        "NULL ORDER BY 1")]


def columns(con, table):
    return [r[1] for r in con.execute('PRAGMA table_info("%s")' % table)]


def present(col, k):
    """col with its pfn moved up by k copies when it is a present SPTE
    (bit 0 on NPT, the only layout bench/synth makes by default)."""
    return ("CASE WHEN %s & 1 THEN %s + (%d << %d) ELSE %s END"
            % (col, col, k, PFN_SHIFT + 12, col))


def make_vms(db, nvms):
    """The events of db as nvms VMs, copy k the events again with the
    changes the module docstring lists."""
    con = sqlite3.connect(db)
    worker = set(t for (t,) in con.execute(
        "SELECT tid FROM thread WHERE procname LIKE 'kvm-nx-lpage%'"))
    wl = ",".join(str(t) for t in worker) or "-1"
    for t in canonical_tables(con):
        cols = columns(con, t)
        con.execute('CREATE TEMP TABLE base AS SELECT * FROM "%s"' % t)
        con.execute('DELETE FROM "%s"' % t)
        for k in range(nvms):
            sel = []
            for c in cols:
                if c == "seq":
                    sel.append("seq * %d + %d" % (nvms, k))
                elif c == "tid":
                    sel.append("tid + %d" % (TID_STEP * k))
                elif c == "vm":
                    sel.append("CASE WHEN tid IN (%s) THEN NULL ELSE %d "
                               "END" % (wl, k + 1))
                elif c in ("old_spte", "new_spte", "spte"):
                    sel.append(present(c, k))
                elif c == "pfn":
                    sel.append("%s + (%d << %d)" % (c, k, PFN_SHIFT))
                else:
                    sel.append(c)
            con.execute('INSERT INTO "%s" SELECT %s FROM base'
                        % (t, ", ".join(sel)))
        con.execute("DROP TABLE base")
    con.execute("CREATE TEMP TABLE base AS SELECT * FROM thread")
    con.execute("DELETE FROM thread")
    for k in range(nvms):
        con.execute("INSERT INTO thread SELECT tid + ?1, procname, "
                    "first_seq * ?2 + ?3, CASE WHEN tid IN (%s) THEN tid + "
                    "?1 ELSE ?4 END FROM base" % wl,
                    (TID_STEP * k, nvms, k, 4000 + TID_STEP * k))
        con.execute("INSERT INTO vm (id, pid, procname) VALUES (?, ?, ?)",
                    (k + 1, 4000 + TID_STEP * k, "synth-vm%d" % (k + 1)))
    con.execute("DROP TABLE base")
    events = con.execute("SELECT value FROM meta WHERE key = 'events'"
                         ).fetchone()[0]
    con.execute("UPDATE meta SET value = ? WHERE key = 'events'",
                (events * nvms,))
    con.execute("UPDATE meta SET value = 'pid' WHERE key = "
                "'vm_attribution'")
    con.commit()
    con.close()
    return events * nvms


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=1600000)
    ap.add_argument("--vms", default="1,4,16")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--work")
    ap.add_argument("--no-write", action="store_true")
    ap.add_argument("--check", action="store_true")
    a = ap.parse_args()
    counts = [int(v) for v in a.vms.split(",")]
    for tool in (MMR, SYNTH):
        if not os.access(tool, os.X_OK):
            sys.exit("vms: %s: not built (cmake --build build)" % tool)
    work = a.work or tempfile.mkdtemp(prefix="mmureplay-vms-")
    os.makedirs(work, exist_ok=True)
    started = datetime.datetime.now(datetime.timezone.utc)
    rows, verdicts = [], {}
    for v in counts:
        cap = os.path.join(work, "synthetic-%dvm" % v)
        db = cap + ".db"
        # This script's own names, from an earlier run in the same
        # --work: made again.
        shutil.rmtree(cap, ignore_errors=True)
        if os.path.exists(db):
            os.remove(db)
        timed([SYNTH, "--events", str(a.events // v), "--seed",
               str(a.seed), "--out", cap])
        timed([MMR, "ingest", "-q", cap, "-o", db])
        events = make_vms(db, v)
        # replay first: it stores the replay stream the others then
        # read (fidelity alone would spool the tables each time).
        for name, args in (
                ("replay (4 policies)", [MMR, "replay", db, "--json"]),
                ("fidelity", [MMR, "fidelity", db, "--json"]),
                ("summary", [MMR, "summary", db, "--json"])):
            dt, cpu, rss, out, _ = timed(args, stdout=-1)
            rows.append((v, events, name, dt, cpu, rss))
            if name == "fidelity":
                import json
                f = json.loads(out)
                verdicts[v] = (f["ok"], sum(x["ok"] for x in
                                            f.get("vms", [])) or int(f["ok"]))
        if v > 1:
            # Each VM narrowed from the whole capture, as replay did
            # before it split the events: V passes over all of them.
            dt = cpu = rss = 0
            for k in range(1, v + 1):
                t = timed([MMR, "fidelity", db, "--json", "--vm", str(k)],
                          stdout=-1)
                dt, cpu, rss = dt + t[0], cpu + t[1], max(rss, t[2])
            rows.append((v, events, "fidelity --vm, each", dt, cpu, rss))
        rows.append((v, events, "DB on disk", 0, 0, du(db) // 1024))
    lines = ["Replay against the number of VMs, SYNTHETIC captures "
             "(bench/vms.py --events %s)" % label(a.events),
             "%s, %d cores, %s; build: %s" % (
                 started.strftime("%Y-%m-%d %H:%M UTC"), os.cpu_count(),
                 platform.machine(), build_config()),
             "Each VM a copy of one synthetic guest (bench/synth, N/V "
             "events each); the same total events.", ""]
    lines.append("  %4s %10s %-20s %8s %8s %12s %10s" % (
        "VMs", "events", "step", "wall s", "CPU s", "events/s",
        "peak RSS"))
    lines.append("  %4s %10s %-20s %8s %8s %12s %10s" % (
        "----", "----------", "--------------------", "--------",
        "--------", "------------", "----------"))
    for v, events, name, dt, cpu, rss in rows:
        if name == "DB on disk":
            lines.append("  %4d %10s %-20s %8s %8s %12s %10s" % (
                v, "{:,}".format(events), name, "", "", "",
                human(rss * 1024)))
            continue
        lines.append("  %4d %10s %-20s %8.2f %8.2f %12s %10s" % (
            v, "{:,}".format(events), name, dt, cpu,
            "{:,}".format(int(events / dt)) if dt else "-",
            human(rss * 1024)))
    lines.append("")
    lines.append("  self-check: " + ", ".join(
        "%d VM%s %s (%d passing alone)" % (v, "s" if v > 1 else "",
                                           "ok" if ok else "FAILED", n)
        for v, (ok, n) in sorted(verdicts.items())))
    text = "\n".join(lines) + "\n"
    print(text, end="")
    if not a.no_write:
        out = os.path.join(TOP, "bench", "results", "vms-%s-%s.txt" % (
            label(a.events), started.strftime("%Y-%m-%d")))
        with open(out, "w") as f:
            f.write(text)
        print("written to %s" % os.path.relpath(out, TOP))
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    if a.check and not all(ok and n == v for v, (ok, n) in
                           verdicts.items()):
        sys.exit("vms: a self-check failed: %s" % verdicts)


if __name__ == "__main__":
    main()
