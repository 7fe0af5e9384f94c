#!/usr/bin/env python3
"""Replay benchmark: events/s per policy read from the capture DB, and
peak memory, on the bundled lab traces and on SYNTHETIC DBs that show
memory follows the guest pages touched, not the number of events.

usage: bench/replay.py [--runs N]

The synthetic DBs are written here directly in the capture schema: a
32-bit flat guest of P pages, R rounds of (fault + install per page, one
whole-slot invalidation zapping every leaf).  Events/s counts each event
once per replay (the replay reads the events twice: a first pass for
facts that decisions need early, then the model pass).  The replay reads
the DB's replay stream (derived by the first replay of a DB, timed
apart); "tables ev/s" is the same replay reading the canonical tables.
"all, 1 process" runs every policy in one process as `mmureplay replay`
does (the first pass once; events counts each policy's pass).
"""
import argparse
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tarfile
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("MMUREPLAY_BUILD", os.path.join(TOP, "build"))
MMR = os.path.join(BUILD, "analyze", "mmureplay")
BENCH = os.path.join(BUILD, "bench", "replay_bench")
POLICIES = ["baseline", "perm-upgrade", "nx-skip-dirty", "nx-readlock"]
HVA = 0x7F0000000000


def child(args):
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.path.join(tempfile.gettempdir(),
                                  "replay-bench.out"),
                     os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd, 1)
        os.execv(args[0], args)
    _, status = os.waitpid(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit("failed: " + " ".join(args))
    with open(os.path.join(tempfile.gettempdir(), "replay-bench.out")) as f:
        ev, secs, rate, entries, rss, derive, sbytes = f.read().split()
    return int(ev), float(secs), int(entries), int(rss), float(derive), \
        int(sbytes)


def synthetic_db(path, pages, rounds):
    """A capture DB of the schema mmureplay writes (SYNTHETIC events)."""
    con = sqlite3.connect(path)
    with open(os.path.join(TOP, "schemas", "capture.sql")) as f:
        con.executescript(f.read())
    con.executemany("INSERT INTO meta VALUES (?, ?)",
                    [("complete", 1), ("events", 0), ("ts_base_ns", 0),
                     ("last_ts", 0)])
    seq = 0
    spte = lambda p: (0x10000000 + (p << 12)) | 0xE67
    faults, changes, notifs = [], [], []
    for r in range(rounds):
        for p in range(pages):
            faults.append((seq, seq * 100, 0, 1, 0, p << 12,
                           0x100000006))
            changes.append((seq + 1, seq * 100 + 50, 0, 1, 0, p, 1, 0,
                            spte(p)))
            seq += 2
        notifs.append((seq, seq * 100, 0, 2, 0, HVA, HVA + (pages << 12)))
        seq += 1
        for p in range(pages):
            changes.append((seq, seq * 100, 0, 2, 0, p, 1, spte(p), 0))
            seq += 1
    con.executemany("INSERT INTO fault (seq, ts, cpu, tid, vcpu, gpa, "
                    "error_code) VALUES (?,?,?,?,?,?,?)", faults)
    con.executemany("INSERT INTO spte_change (seq, ts, cpu, tid, as_id, "
                    "gfn, level, old_spte, new_spte) VALUES "
                    "(?,?,?,?,?,?,?,?,?)", changes)
    con.executemany("INSERT INTO notifier (seq, ts, cpu, tid, phase, "
                    "hva_start, hva_end) VALUES (?,?,?,?,?,?,?)", notifs)
    con.execute("UPDATE meta SET value = ? WHERE key = 'last_ts'",
                (seq * 100,))
    con.execute("UPDATE meta SET value = ? WHERE key = 'events'", (seq,))
    con.commit()
    con.close()
    return seq


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="mmureplay-rbench-")
    try:
        dbs = []
        data = os.path.join(TOP, "tests", "data")
        for d in sorted(os.listdir(data)):
            dest = os.path.join(work, d)
            with tarfile.open(os.path.join(data, d, "trace.tar.xz")) as tf:
                tf.extractall(dest)
            db = os.path.join(work, d + ".db")
            subprocess.run([MMR, "ingest", dest, "-o", db, "-q"],
                           check=True)
            dbs.append((d.replace("lttng-kernel-", ""), db))
        for pages, rounds in ((16384, 64), (16384, 16), (65536, 16)):
            db = os.path.join(work, "synthetic-%dp-%dr.db" % (pages, rounds))
            synthetic_db(db, pages, rounds)
            dbs.append(("synthetic %dk pages x %d" % (pages // 1024,
                                                      rounds), db))
        hdr = ("capture", "policy", "events", "sec", "events/s",
               "tables ev/s", "tdp ents", "RSS MiB")
        fmt = "  %-44s %-14s %10s %7s %11s %11s %9s %7s"
        print(fmt % hdr)
        widths = (44, 14, 10, 7, 11, 11, 9, 7)
        print(fmt % tuple("-" * w for w in widths))
        notes = []
        for name, db in dbs:
            # The first replay of a DB derives its replay stream; timed
            # apart (it reads the tables once), then every run reads it.
            first = child([BENCH, db, "baseline"])
            notes.append("  %-44s stream derived in %.3f s, %.1f B/event"
                         % (name, first[4], first[5] / first[0]))
            for pol in POLICIES:
                res = [child([BENCH, db, pol]) for _ in range(a.runs)]
                ev = res[0][0]
                secs = statistics.median(r[1] for r in res)
                tab = ""
                if pol == "baseline":
                    t = statistics.median(
                        child([BENCH, db, pol, "tables"])[1]
                        for _ in range(a.runs))
                    tab = "{:,}".format(int(ev / t))
                print("  %-44s %-14s %10s %7.3f %11s %11s %9d %7.1f"
                      % (name, pol, "{:,}".format(ev), secs,
                         "{:,}".format(int(ev / secs)), tab, res[0][2],
                         max(r[3] for r in res) / 1024))
            # As `mmureplay replay` runs them: every policy in one
            # process, the first pass once.
            res = [child([BENCH, db, "all"]) for _ in range(a.runs)]
            secs = statistics.median(r[1] for r in res)
            print("  %-44s %-14s %10s %7.3f %11s %11s %9d %7.1f"
                  % (name, "all, 1 process", "{:,}".format(res[0][0]),
                     secs, "{:,}".format(int(res[0][0] / secs)), "",
                     res[0][2], max(r[3] for r in res) / 1024))
        print()
        print("\n".join(notes))
        print("\n  median of %d runs; %d CPUs, load %.2f"
              % (a.runs, os.cpu_count(), os.getloadavg()[0]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
