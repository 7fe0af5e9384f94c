#!/usr/bin/env python3
"""Every output of every command on every bundled fixture, into one
directory, so two builds can be compared byte for byte (a refactoring
that must not change behaviour: `diff -r OUT_A OUT_B`).

usage: scripts/outputs.py MMUREPLAY OUT_DIR [FIXTURE...]

For each fixture of tests/data with a trace (all by default): ingest,
then summary, fidelity, replay, spikes (text and --json each) and the
HTML report; and compare on the A/B pairs (knob off / on).  Work files
live under /tmp/mmureplay-outputs (fixed, so the DB paths the outputs
print are the same in every run); only the outputs go to OUT_DIR, with
each command's exit status.  What changes between runs by nature (the
ingest's timing line, the replay's creation time) is not in them.
"""
import os
import shutil
import subprocess
import sys
import tarfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(TOP, "tests", "data")
WORK = "/tmp/mmureplay-outputs"
PAIRS = [("lttng-kernel-6.1.192-patched-bgsnapshot-perm-upgrade-off",
          "lttng-kernel-6.1.192-patched-bgsnapshot-perm-upgrade-on"),
         ("lttng-kernel-6.1.192-patched-nxrecovery-skip-dirty-off",
          "lttng-kernel-6.1.192-patched-nxrecovery-skip-dirty-on")]


def run(mmr, out, name, args):
    r = subprocess.run([mmr] + args, capture_output=True)
    with open(os.path.join(out, name), "wb") as f:
        f.write(r.stdout)
    with open(os.path.join(out, name + ".exit"), "w") as f:
        f.write("%d\n" % r.returncode)


def fixture(mmr, out_dir, name):
    work = os.path.join(WORK, name)
    shutil.rmtree(work, ignore_errors=True)
    trace = os.path.join(work, "trace")
    with tarfile.open(os.path.join(DATA, name, "trace.tar.xz")) as tf:
        tf.extractall(trace)
    manifest = os.path.join(DATA, name, "manifest.json")
    if os.path.exists(manifest):
        shutil.copy(manifest, trace)
    db = os.path.join(work, "capture.db")
    out = os.path.join(out_dir, name)
    os.makedirs(out, exist_ok=True)
    r = subprocess.run([mmr, "ingest", trace, "-o", db],
                       capture_output=True)
    with open(os.path.join(out, "ingest.exit"), "w") as f:
        f.write("%d\n" % r.returncode)
    for cmd in ("summary", "fidelity", "replay", "spikes"):
        run(mmr, out, cmd + ".txt", [cmd, db])
        run(mmr, out, cmd + ".json", [cmd, db, "--json"])
    run(mmr, out, "report.html", ["report", db, "-o", "/dev/stdout"])
    return db


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    mmr, out_dir = os.path.abspath(sys.argv[1]), sys.argv[2]
    names = sys.argv[3:] or sorted(
        d for d in os.listdir(DATA)
        if os.path.exists(os.path.join(DATA, d, "trace.tar.xz")))
    os.makedirs(out_dir, exist_ok=True)
    dbs = {}
    for name in names:
        print(name, file=sys.stderr)
        dbs[name] = fixture(mmr, out_dir, name)
    for a, b in PAIRS:
        if a in dbs and b in dbs:
            out = os.path.join(out_dir, "compare-" + a)
            os.makedirs(out, exist_ok=True)
            run(mmr, out, "compare.txt", ["compare", "--a", dbs[a],
                                          "--b", dbs[b]])
            run(mmr, out, "compare.json", ["compare", "--a", dbs[a],
                                           "--b", dbs[b], "--json"])


if __name__ == "__main__":
    main()
