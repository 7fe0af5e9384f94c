#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# cut-sweep.py - a capture cut late at many points, each self-checked
# with every rule on and with one rule off.
#
# Usage: cut-sweep.py FIXTURE_OR_RUN_DIR WORK RULE [--step S] [--mmureplay M]
#
# A session attached while the VM runs begins anywhere: the suite's late
# cuts (tests/mmrtest.py late_cut()) take whole seconds at three shares
# of the events; this takes a cut every S seconds (default 0.05) from
# 0.3 s after the first event to 0.3 s before the last, by babeltrace2's
# own trimmer (--begin), with the capture's manifest, and runs `mmureplay
# fidelity` on each with every rule on and with `--rule-off RULE`.  It
# prints each cut where either fails (the first mismatch line of each)
# and the counts: cuts, replayable cuts (a cut with no fault cannot be
# replayed: exit 7), failures on and off.  A rule written to pass late
# cuts is validated by a capture recorded after it: its cuts pass with
# the rule on and some fail with it off.  FIXTURE_OR_RUN_DIR holds
# trace.tar.xz (a fixture, capture/lab/package-fixture.sh) and
# manifest.json.
import argparse
import json
import os
import shutil
import subprocess
import sys
import tarfile

TOP = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))


def stamps(trace):
    """Every event's time (ns), as the babeltrace2 CLI gives it."""
    p = subprocess.run(["babeltrace2", "--clock-seconds", "--no-delta",
                        trace], capture_output=True, text=True, check=True)
    out = []
    for line in p.stdout.splitlines():
        if line.startswith("["):
            s, ns = line[1:line.index("]")].split(".")
            out.append(int(s) * 10**9 + int(ns.ljust(9, "0")[:9]))
    return sorted(out)


def first_mismatch(text):
    for line in text.splitlines():
        if line.strip().startswith("mismatches:"):
            return line.strip()
    return ""


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("fixture")
    ap.add_argument("work")
    ap.add_argument("rule")
    ap.add_argument("--step", type=float, default=0.05)
    ap.add_argument("--mmureplay", default=os.path.join(
        TOP, "build", "analyze", "mmureplay"))
    a = ap.parse_args()
    shutil.rmtree(a.work, ignore_errors=True)
    trace = os.path.join(a.work, "trace")
    os.makedirs(trace)
    with tarfile.open(os.path.join(a.fixture, "trace.tar.xz")) as tf:
        tf.extractall(trace)
    manifest = os.path.join(a.fixture, "manifest.json")
    st = stamps(trace)
    first, last = st[0], st[-1]
    n = replayable = fail_on = fail_off = 0
    at = first + int(0.3e9)
    while at < last - int(0.3e9):
        cut = os.path.join(a.work, "cut")
        db = os.path.join(a.work, "cut.db")
        shutil.rmtree(cut, ignore_errors=True)
        if os.path.exists(db):
            os.unlink(db)
        subprocess.run(["babeltrace2", trace, "--begin=%d.%09d"
                        % (at // 10**9, at % 10**9), "-o", "ctf", "-w", cut],
                       check=True, capture_output=True)
        if os.path.exists(manifest):
            shutil.copy(manifest, cut)
        subprocess.run([a.mmureplay, "ingest", "-q", cut, "-o", db],
                       check=True)
        on = subprocess.run([a.mmureplay, "fidelity", db],
                            capture_output=True, text=True)
        off = subprocess.run([a.mmureplay, "fidelity", db, "--rule-off",
                              a.rule], capture_output=True, text=True)
        n += 1
        if on.returncode != 7:
            replayable += 1
            fail_on += on.returncode != 0
            fail_off += off.returncode != 0
            if on.returncode or off.returncode:
                print("cut at %.2f s: on exit %d %s; %s off exit %d %s"
                      % ((at - first) / 1e9, on.returncode,
                         first_mismatch(on.stdout), a.rule,
                         off.returncode, first_mismatch(off.stdout)))
        at += int(a.step * 1e9)
    print(json.dumps({"cuts": n, "replayable": replayable,
                      "failed_rule_on": fail_on, "failed_rule_off": fail_off,
                      "rule": a.rule, "step_s": a.step}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
