#!/usr/bin/env python3
"""The fleet on SYNTHETIC captures: mmureplay-fleet on Dask against xargs
-P over `mmureplay analyze`, merge, and what the fleet DB and report
weigh per capture.

usage: bench/fleet.py [--captures N] [--events E] [--workers W]
                      [--work DIR] [--no-write]

bench/synth makes N captures of about E events each (seeds 1..N, so
each is its own capture with its own ID; labelled synthetic in their
manifests and IDs).  Then, each timed alone on the same captures:
  - `xargs -P W` running `mmureplay analyze CAPTURE -o SHARDS` (the
    engine-free contract);
  - `mmureplay-fleet --workers W` (a local Dask cluster of W worker
    processes, one thread each) into other SHARDS, cluster start-up
    included;
  - `mmureplay merge` of the N shards, and `mmureplay fleet-report`.
The Dask run's throughput is given as a share of xargs's (the issue's
bar: >= 90%), merge's time as a share of the analysis (bar: < 10%), and
the fleet DB's and the report's bytes per capture (they should grow with
captures, not events: compare two --events at one N).  The two runs'
fleet DBs must be the same bytes (checked: exit 1 otherwise).

Writes bench/results/fleet-<N>-<date>.txt unless --no-write.
"""
import argparse
import datetime
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale import MMR, SYNTH, TOP, build_config, timed  # noqa: E402

DRIVER = os.path.join(TOP, "fleet", "mmureplay-fleet")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--captures", type=int, default=1000)
    ap.add_argument("--events", type=int, default=5000)
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--work")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="mmr-fleet-bench-")
    caps = os.path.join(work, "caps")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(caps)
    t0 = time.perf_counter()
    for i in range(1, a.captures + 1):
        subprocess.run([SYNTH, "--events", str(a.events), "--seed", str(i),
                        "--out", os.path.join(caps, "synthetic-%05d" % i)],
                       check=True, stdout=subprocess.DEVNULL)
    gen = time.perf_counter() - t0
    listing = sorted(os.path.join(caps, e) for e in os.listdir(caps))
    with open(os.path.join(work, "list"), "w") as f:
        f.write("\n".join(listing) + "\n")

    xshards = os.path.join(work, "xargs-shards")
    x_wall, x_cpu, x_rss, _, _ = timed(
        ["sh", "-c", "xargs -P %d -I{} %s analyze {} -o %s > /dev/null "
         "< %s" % (a.workers, MMR, xshards, os.path.join(work, "list"))])
    dshards = os.path.join(work, "dask-shards")
    d_wall, d_cpu, d_rss, _, _ = timed(
        [DRIVER, "--list", os.path.join(work, "list"), "--shards", dshards,
         "--workers", str(a.workers), "--mmureplay", MMR])
    xdb, ddb = os.path.join(work, "xargs.db"), os.path.join(work, "dask.db")
    m_wall, m_cpu, m_rss, _, _ = timed([MMR, "merge", "-q", xshards, "-o",
                                        xdb])
    timed([MMR, "merge", "-q", dshards, "-o", ddb])
    r_wall, _, r_rss, rep, _ = timed([MMR, "fleet-report", xdb],
                                     stdout=subprocess.PIPE)
    with open(xdb, "rb") as f1, open(ddb, "rb") as f2:
        same = f1.read() == f2.read()
    lines = [
        "mmureplay fleet bench, %s" % datetime.date.today().isoformat(),
        "SYNTHETIC captures (bench/synth): %d of about %d events each "
        "(made in %.1f s)" % (a.captures, a.events, gen),
        "build: %s; %d workers; load average before: %s" % (
            build_config(), a.workers,
            " ".join("%.2f" % v for v in os.getloadavg())),
        "",
        "  step                      wall s     CPU s  peak RSS MiB  "
        "captures/s",
        "  ------------------------ ------- --------- ------------- "
        "-----------",
        "  xargs -P%d analyze        %7.1f %9.1f %13.1f %11.2f" % (
            a.workers, x_wall, x_cpu, x_rss / 1024, a.captures / x_wall),
        "  mmureplay-fleet (Dask)   %7.1f %9.1f %13.1f %11.2f" % (
            d_wall, d_cpu, d_rss / 1024, a.captures / d_wall),
        "  merge                    %7.2f %9.2f %13.1f" % (
            m_wall, m_cpu, m_rss / 1024),
        "  fleet-report             %7.2f %9s %13.1f" % (
            r_wall, "", r_rss / 1024),
        "",
        "Dask throughput / xargs: %.1f%% (bar >= 90%%)" % (
            100.0 * x_wall / d_wall),
        "merge / analysis (xargs): %.1f%% (bar < 10%%)" % (
            100.0 * m_wall / x_wall),
        "fleet DB %d B (%.0f B per capture); report %d B" % (
            os.path.getsize(xdb), os.path.getsize(xdb) / a.captures,
            len(rep)),
        "the two runs' fleet DBs are %s" % ("the same bytes" if same
                                            else "DIFFERENT"),
    ]
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if not a.no_write:
        out = os.path.join(TOP, "bench", "results", "fleet-%d-%s.txt" % (
            a.captures, datetime.date.today().isoformat()))
        with open(out, "w") as f:
            f.write(text)
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
