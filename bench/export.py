#!/usr/bin/env python3
"""export --perfetto against ingest on a SYNTHETIC capture, in one run.

usage: bench/export.py [--events N] [--work DIR] [--no-write]

bench/synth makes a capture of N events (default 10 M); ingest and
export --perfetto are timed alone (wall, CPU, peak RSS), and the export
is given as a share of the ingest's time (bar: < 25%) and in bytes per
slice (bar: < 40; counter values and descriptors are in the bytes, so
this is an upper bound).  Writes bench/results/export-<N>-<date>.txt
unless --no-write.
"""
import argparse
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale import MMR, SYNTH, TOP, build_config, label, timed  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=10000000)
    ap.add_argument("--work")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="mmr-export-bench-")
    os.makedirs(work, exist_ok=True)
    trace = os.path.join(work, "trace")
    shutil.rmtree(trace, ignore_errors=True)
    subprocess.run([SYNTH, "--events", str(a.events), "--out", trace],
                   check=True, stdout=subprocess.DEVNULL)
    db = os.path.join(work, "capture.db")
    out = os.path.join(work, "out.pftrace")
    for f in (db, out):
        if os.path.exists(f):
            os.unlink(f)
    i_wall, i_cpu, i_rss, _, _ = timed([MMR, "ingest", "-q", trace, "-o",
                                        db])
    e_wall, e_cpu, e_rss, _, err = timed([MMR, "export", db, "--perfetto",
                                          out])
    m = re.search(r"(\d+) packets, (\d+) tracks, (\d+) slices, (\d+) "
                  r"instants, (\d+) counter values, (\d+) bytes", err)
    if not m:
        sys.exit("no closing line from export: " + err)
    packets, tracks, slices, instants, counters, size = map(int, m.groups())
    lines = [
        "mmureplay export --perfetto, %s" % datetime.date.today().isoformat(),
        "SYNTHETIC capture (bench/synth): %s events" % label(a.events),
        "build: %s; load average before: %s" % (
            build_config(), " ".join("%.2f" % v for v in os.getloadavg())),
        "",
        "  step              wall s     CPU s  peak RSS MiB",
        "  ---------------- ------- --------- -------------",
        "  ingest           %7.2f %9.2f %13.1f" % (i_wall, i_cpu,
                                                  i_rss / 1024),
        "  export           %7.2f %9.2f %13.1f" % (e_wall, e_cpu,
                                                  e_rss / 1024),
        "",
        "export / ingest: %.1f%% of the wall time (bar < 25%%); both use "
        "both cores" % (100.0 * e_wall / i_wall),
        "(ingest: a reader and a writer thread; export: the writer and "
        "a counting thread)",
        "%d packets, %d tracks, %d slices, %d instants, %d counter values"
        % (packets, tracks, slices, instants, counters),
        "%d bytes: %.1f bytes per slice, all bytes counted (bar < 40)"
        % (size, size / max(slices, 1)),
    ]
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if not a.no_write:
        with open(os.path.join(TOP, "bench", "results", "export-%s-%s.txt"
                               % (label(a.events),
                                  datetime.date.today().isoformat())),
                  "w") as f:
            f.write(text)
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
