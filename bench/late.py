#!/usr/bin/env python3
"""Late-capture benchmark: replay speed and peak memory of a capture that
began while the VM ran, against the whole capture it was cut from, in
the same run.  Learning what the trace reveals adds no pass over the
trace; this measures what it does add (the known-entry checks, the
revealed counts, the shown-page flags).

usage: bench/late.py [--runs N] [--events N] [--instructions]

Each bundled lab trace, and a SYNTHETIC capture of N events (bench/synth,
default 2,000,000), is cut by babeltrace2's trimmer at the whole second
before half of its events had passed (tests/mmrtest.py late_cut(), as
the tests cut them).  Both are ingested; each is replayed (replay_bench:
one process per replay, the replay stream derived first and timed
apart) under baseline and perm-upgrade.  Events/s counts each event
once per replay.  The ratios are the cut's against the whole's: events/s
(1.0: as fast per event), peak RSS (1.0: as much memory; the cut touches
fewer guest pages, so less is expected).

--instructions adds, per replay, the instructions it ran per event,
counted by valgrind's callgrind inside the replay alone (the first pass
and the policy's pass, replay_session_open() and _run(); one run each):
a count that a loaded machine does not change, where timings on it are
noise.  Instructions are not time (cache misses are not in them), but
a late capture's extra work shows in them.
"""
import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("MMUREPLAY_BUILD", os.path.join(TOP, "build"))
MMR = os.path.join(BUILD, "analyze", "mmureplay")
BENCH = os.path.join(BUILD, "bench", "replay_bench")
SYNTH = os.path.join(BUILD, "bench", "synth")
POLICIES = ["baseline", "perm-upgrade"]
sys.path.insert(0, os.path.join(TOP, "tests"))
from mmrtest import late_cut  # noqa: E402


def replay(db, policy):
    """(events, seconds, peak RSS KiB) of one replay, in a child."""
    out = subprocess.run([BENCH, db, policy], check=True,
                         capture_output=True, text=True).stdout.split()
    return int(out[0]), float(out[1]), int(out[4])


def instructions(db, policy):
    """Instructions of one replay (callgrind's Ir), in a child."""
    r = subprocess.run(["valgrind", "--tool=callgrind",
                        "--toggle-collect=replay_session_open",
                        "--toggle-collect=replay_session_run",
                        "--callgrind-out-file=/dev/null", BENCH, db, policy],
                       check=True, capture_output=True, text=True)
    return int(re.search(r"Collected : (\d+)", r.stderr).group(1))


def ingest(trace, db):
    subprocess.run([MMR, "ingest", trace, "-o", db, "-q"], check=True)


def measure(db, runs, count):
    replay(db, "baseline")     # derives the replay stream, not timed
    res = {}
    for pol in POLICIES:
        r = [replay(db, pol) for _ in range(runs)]
        res[pol] = (r[0][0], statistics.median(x[1] for x in r),
                    max(x[2] for x in r),
                    instructions(db, pol) if count else 0)
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--events", type=int, default=2000000)
    ap.add_argument("--instructions", action="store_true",
                    help="also count instructions per event (callgrind)")
    a = ap.parse_args()
    work = tempfile.mkdtemp(prefix="mmureplay-late-")
    try:
        traces = []
        data = os.path.join(TOP, "tests", "data")
        for d in sorted(os.listdir(data)):
            tar = os.path.join(data, d, "trace.tar.xz")
            if not os.path.exists(tar):
                continue
            dest = os.path.join(work, d)
            with tarfile.open(tar) as tf:
                tf.extractall(dest)
            traces.append((d.replace("lttng-kernel-", ""), dest))
        synth = os.path.join(work, "synthetic")
        subprocess.run([SYNTH, "--events", str(a.events), "--out", synth],
                       check=True, capture_output=True)
        traces.append(("SYNTHETIC %dM events" % (a.events // 1000000),
                       synth))
        fmt = "  %-40s %-12s %10s %10s %11s %11s %7s %7s %6s %6s %6s %6s %6s"
        print(fmt % ("capture", "policy", "events", "cut ev", "ev/s",
                     "cut ev/s", "RSS MiB", "cut", "ev/s x", "RSS x",
                     "Ir/ev", "cut", "Ir x"))
        print(fmt % tuple("-" * w for w in (40, 12, 10, 10, 11, 11, 7, 7,
                                             6, 6, 6, 6, 6)))
        for name, trace in traces:
            whole = os.path.join(work, name.replace(" ", "_") + ".db")
            cutdb = os.path.join(work, name.replace(" ", "_") + "-cut.db")
            cut, _, _ = late_cut(trace, 0.5, trace + "-cut")
            try:
                ingest(trace, whole)
                ingest(cut, cutdb)
                w = measure(whole, a.runs, a.instructions)
                c = measure(cutdb, a.runs, a.instructions)
            except subprocess.CalledProcessError as e:
                print("  %-40s not replayable: %s" % (name, e))
                continue
            for pol in POLICIES:
                we, ws, wr, wi = w[pol]
                ce, cs, cr, ci = c[pol]
                print(fmt % (name[:40], pol, "{:,}".format(we),
                             "{:,}".format(ce), "{:,}".format(int(we / ws)),
                             "{:,}".format(int(ce / cs)),
                             "%.1f" % (wr / 1024), "%.1f" % (cr / 1024),
                             "%.2f" % ((ce / cs) / (we / ws)),
                             "%.2f" % (cr / wr),
                             "%d" % (wi / we) if wi else "-",
                             "%d" % (ci / ce) if ci else "-",
                             "%.3f" % ((ci / ce) / (wi / we)) if wi
                             else "-"))
        print("\n  median of %d runs; %d CPUs, load %.2f"
              % (a.runs, os.cpu_count(), os.getloadavg()[0]))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
