#!/usr/bin/env python3
"""trace.dat ingest benchmark: `mmureplay ingest FILE` beside `trace-cmd
report -i FILE > /dev/null` on the same file, in the same run.

usage: bench/tracecmd.py [--runs N] [TRACE_DAT_OR_FIXTURE...]

With no argument, the bundled fixture
tests/data/tracecmd-lttng-kernel-6.1.192-stock-nxrecovery: its trace.dat
(file version 6) and the same recording converted to version 7 with
compressed sections (trace-cmd convert), the form trace-cmd 3.x writes.
A fixture directory (holding trace.dat.xz) is unpacked first.  Prints,
per file: events, median wall time of each tool over --runs runs
(alternating), events/s, and the ratio report/ingest (>= 1: ingest is
faster).  Both parse the same headers (kallsyms, printk formats and
event formats: most of the time of a small file) and then every record;
report formats text, ingest writes a SQLite DB.
"""
import argparse
import lzma
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("MMUREPLAY_BUILD", os.path.join(TOP, "build"))
MMR = os.path.join(BUILD, "analyze", "mmureplay")
FIXTURE = os.path.join(TOP, "tests", "data",
                       "tracecmd-lttng-kernel-6.1.192-stock-nxrecovery")


def timed(args):
    t0 = time.perf_counter()
    r = subprocess.run(args, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        sys.exit("failed: " + " ".join(args))
    return dt


def bench(name, dat, runs, work):
    db = os.path.join(work, "bench.db")
    tr, ti = [], []
    for _ in range(runs):
        tr.append(timed(["trace-cmd", "report", "-i", dat]))
        if os.path.exists(db):
            os.unlink(db)
        ti.append(timed([MMR, "ingest", dat, "-o", db, "-q"]))
    con = sqlite3.connect(db)
    events = con.execute("SELECT value FROM meta WHERE key = "
                         "'events'").fetchone()[0]
    con.close()
    r, i = statistics.median(tr), statistics.median(ti)
    print("  %-28s %9s %7.3f s %10s/s %7.3f s %10s/s %6.2fx"
          % (name, "{:,}".format(events), r, "{:,}".format(int(events / r)),
             i, "{:,}".format(int(events / i)), r / i))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("files", nargs="*")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="mmureplay-bench-")
    try:
        targets = []
        for p in a.files or [FIXTURE]:
            if os.path.isdir(p):
                dat = os.path.join(work, "trace.dat")
                with lzma.open(os.path.join(p, "trace.dat.xz")) as src, \
                        open(dat, "wb") as dst:
                    shutil.copyfileobj(src, dst)
                targets.append(("trace.dat (version 6)", dat))
                v7 = os.path.join(work, "trace-v7.dat")
                subprocess.run(["trace-cmd", "convert", "--file-version",
                                "7", "--compression", "any", "-i", dat,
                                "-o", v7], check=True,
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
                targets.append(("trace.dat (version 7, zstd)", v7))
            else:
                targets.append((os.path.basename(p), p))
        print("  %-28s %9s %9s %12s %9s %12s %7s"
              % ("file", "events", "report", "report", "ingest", "ingest",
                 "ratio"))
        for name, dat in targets:
            bench(name, dat, a.runs, work)
        print("\n  ratio = report time / ingest time (>= 1: ingest is "
              "faster); %d runs, median; %d CPUs, load %.2f"
              % (a.runs, os.cpu_count(), os.getloadavg()[0]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
