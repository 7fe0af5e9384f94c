#!/usr/bin/env python3
"""Ingest benchmark: mmureplay ingest beside `babeltrace2 -c
sink.utils.counter` on the same trace, in the same run.

usage: bench/ingest.py [--runs N] [--ust-events N] [--baseline MMUREPLAY]
                       [TRACE_OR_FIXTURE...]

With no TRACE, benchmarks the bundled lab fixtures and a SYNTHETIC UST
trace of --ust-events events (default 5,000,000) recorded here by
tests/ust/ust_gen through a real lttng-sessiond (blocking channel, so
nothing is lost).  A fixture directory (holding trace.tar.xz) is
unpacked first.  Prints, per trace: events, median wall time of each tool
over --runs runs (alternating), events/s, the ratio mmureplay/counter,
peak RSS, and DB bytes per event; under each, the median CPU seconds
(user + system, every thread) and their ratio.  --baseline adds a second mmureplay
binary (an earlier build, for a before/after) timed in the same rounds:
counter, baseline, this build, each round; its row is marked "(base)".
"""
import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("MMUREPLAY_BUILD", os.path.join(TOP, "build"))
MMR = os.path.join(BUILD, "analyze", "mmureplay")
GEN = os.path.join(BUILD, "tests", "ust_gen")
SESSIOND = os.path.join(TOP, "tests", "lttng_sessiond.sh")
# The counter as fast as it goes: no periodic printing.
COUNTER = ["babeltrace2", "-c", "sink.utils.counter", "-p", "step=+0"]
# CPU seconds of every run, per program (a loaded machine stretches the
# wall times; the CPU times move less).
TIMES = {}


def timed(args):
    """Wall seconds, peak RSS (KiB) and CPU seconds (user + system, all
    threads) of one command.  GNU time reports the RSS of the command
    alone (a fork of this Python would count the interpreter's pages
    too)."""
    with tempfile.NamedTemporaryFile("r") as out:
        t0 = time.perf_counter()
        r = subprocess.run(["/usr/bin/time", "-f", "%M %U %S", "-o",
                            out.name] + args, stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        dt = time.perf_counter() - t0
        if r.returncode != 0:
            sys.exit("failed: " + " ".join(args))
        rss, user, system = out.read().split()[-3:]
        TIMES.setdefault(args[0], []).append(float(user) + float(system))
        return dt, int(rss)


def count_events(trace):
    out = subprocess.run(COUNTER + [trace], capture_output=True, text=True,
                         check=True).stdout
    for line in out.splitlines():
        if line.split()[1:] == ["Event", "messages"]:
            return int(line.split()[0])
    sys.exit("no event count from sink.utils.counter")


def bench(name, trace, runs, work, baseline=None):
    events = count_events(trace)
    db = os.path.join(work, "bench.db")
    tools = ([("%s (base)" % name, baseline)] if baseline else []) + \
        [(name, MMR)]
    tc, rc = [], []
    tm = {label: [] for label, _ in tools}
    rm = {label: [] for label, _ in tools}
    size = {}
    for _ in range(runs):
        t, r = timed(COUNTER + [trace])
        tc.append(t)
        rc.append(r)
        for label, tool in tools:
            if os.path.exists(db):
                os.unlink(db)
            t, r = timed([tool, "ingest", trace, "-o", db, "-q"])
            tm[label].append(t)
            rm[label].append(r)
            size[label] = os.path.getsize(db)
    c = statistics.median(tc)
    cpu_c = statistics.median(TIMES.pop(COUNTER[0]))
    for label, tool in tools:
        m = statistics.median(tm[label])
        print("  %-40s %10s %7.2f s %9s/s %7.2f s %9s/s %6.2fx %6d %6d %5.1f"
              % (label, "{:,}".format(events), c,
                 "{:,}".format(int(events / c)), m,
                 "{:,}".format(int(events / m)), c / m, max(rc) // 1024,
                 max(rm[label]) // 1024, size[label] / events))
        print("  %-40s %10s %7.2f s CPU       %7.2f s CPU       %6.2fx"
              % ("", "", cpu_c, statistics.median(TIMES[tool]),
                 cpu_c / statistics.median(TIMES.pop(tool))))
    return c / statistics.median(tm[name])


def ust_trace(n, work):
    out = os.path.join(work, "ust-synthetic")
    state = os.path.join(work, "sessiond")
    subprocess.run([SESSIOND, "start", state], check=True,
                   stdout=subprocess.DEVNULL)
    sess = "mmrbench-%d" % os.getpid()
    try:
        for args in (["create", sess, "--output=" + out],
                     ["enable-channel", "-u", "-s", sess, "ch",
                      "--blocking-timeout=inf", "--subbuf-size=1M",
                      "--num-subbuf=8"],
                     ["enable-event", "-u", "-s", sess, "-c", "ch",
                      "mmureplay:*"],
                     ["add-context", "-u", "-s", sess, "-c", "ch", "-t",
                      "vtid", "-t", "procname"],
                     ["start", sess]):
            subprocess.run(["lttng"] + args, check=True,
                           stdout=subprocess.DEVNULL)
        env = dict(os.environ, LTTNG_UST_ALLOW_BLOCKING="1")
        subprocess.run([GEN, str(n), "0"], env=env, check=True)
        subprocess.run(["lttng", "stop", sess], check=True,
                       stdout=subprocess.DEVNULL)
        subprocess.run(["lttng", "destroy", sess], check=True,
                       stdout=subprocess.DEVNULL)
    finally:
        subprocess.run([SESSIOND, "stop", state], stdout=subprocess.DEVNULL)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ust-events", type=int, default=5000000)
    ap.add_argument("--baseline", metavar="MMUREPLAY",
                    help="an earlier mmureplay binary, timed in the same "
                    "rounds")
    ap.add_argument("traces", nargs="*")
    a = ap.parse_args()
    load0 = os.getloadavg()
    work = tempfile.mkdtemp(prefix="mmureplay-bench-")
    try:
        targets = []
        paths = a.traces or sorted(
            os.path.join(TOP, "tests", "data", d)
            for d in os.listdir(os.path.join(TOP, "tests", "data")))
        for p in paths:
            if os.path.exists(os.path.join(p, "trace.tar.xz")):
                dest = os.path.join(work, os.path.basename(p))
                with tarfile.open(os.path.join(p, "trace.tar.xz")) as tf:
                    tf.extractall(dest)
                targets.append((os.path.basename(p), dest))
            else:
                targets.append((p, p))
        if not a.traces and a.ust_events > 0:
            targets.append(("ust-synthetic-%d" % a.ust_events,
                            ust_trace(a.ust_events, work)))
        print("  %-40s %10s %9s %11s %9s %11s %7s %6s %6s %5s"
              % ("trace", "events", "counter", "counter", "ingest",
                 "ingest", "ratio", "c MiB", "i MiB", "B/ev"))
        print("  %-40s %10s %9s %11s %9s %11s %7s %6s %6s %5s"
              % ("-" * 40, "-" * 10, "-" * 9, "-" * 11, "-" * 9, "-" * 11,
                 "-" * 7, "-" * 6, "-" * 6, "-" * 5))
        for name, t in targets:
            bench(name, t, a.runs, work, a.baseline)
        print("\n  ratio = counter time / ingest time (>= 1: ingest is "
              "faster); %d runs, median; %d CPUs, load %.2f %.2f %.2f "
              "(1, 5, 15 min) at the end, %.2f %.2f %.2f at the start"
              % ((a.runs, os.cpu_count()) + os.getloadavg() + load0))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
