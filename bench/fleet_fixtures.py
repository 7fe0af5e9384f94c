#!/usr/bin/env python3
"""Every real fixture of tests/data as one fleet: mmureplay-fleet over
them (a local Dask cluster), then fleet-report.

usage: bench/fleet_fixtures.py [--workers W] [--work DIR] [--no-write]

Each fixture with a trace.tar.xz is one capture (its manifest beside
the trace, as the lab recorded it; the host is the manifest's, the
fixture's name a label).  The report shows each policy's distribution
over the fixtures' VMs and the captures whose self-check fails or that
cannot be replayed, with the reason: what the fleet report says of
captures whose outcome the tests already know.  Writes
bench/results/fleet-fixtures-<date>.txt (the report, after a header)
unless --no-write.
"""
import argparse
import datetime
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from scale import MMR, TOP  # noqa: E402

DRIVER = os.path.join(TOP, "fleet", "mmureplay-fleet")
DATA = os.path.join(TOP, "tests", "data")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--work")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="mmr-fleet-fixtures-")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    lines = []
    for name in sorted(os.listdir(DATA)):
        tar = os.path.join(DATA, name, "trace.tar.xz")
        if not os.path.exists(tar):
            continue
        dest = os.path.join(work, "caps", name)
        with tarfile.open(tar) as tf:
            tf.extractall(dest)
        man = os.path.join(DATA, name, "manifest.json")
        if os.path.exists(man):
            shutil.copy(man, dest)
        lines.append("%s label.fixture=%s" % (dest, name))
    lst = os.path.join(work, "captures.txt")
    with open(lst, "w") as f:
        f.write("\n".join(lines) + "\n")
    db = os.path.join(work, "fleet.db")
    t0 = time.perf_counter()
    r = subprocess.run([DRIVER, "--list", lst, "--shards",
                        os.path.join(work, "shards"), "-o", db,
                        "--workers", str(a.workers), "--mmureplay", MMR],
                       stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if r.returncode:
        sys.exit("mmureplay-fleet failed (exit %d): %s"
                 % (r.returncode, r.stderr[-2000:]))
    rep = subprocess.run([MMR, "fleet-report", db], capture_output=True,
                         text=True, check=True).stdout
    text = ("mmureplay fleet report over every fixture of tests/data, %s\n"
            "%d captures (real lab recordings), analysed by "
            "mmureplay-fleet with %d local workers in %.0f s\n\n%s"
            % (datetime.date.today().isoformat(), len(lines), a.workers,
               wall, rep.replace(work + "/", "")))
    sys.stdout.write(text)
    if not a.no_write:
        out = os.path.join(TOP, "bench", "results", "fleet-fixtures-%s.txt"
                           % datetime.date.today().isoformat())
        with open(out, "w") as f:
            f.write(text)
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
