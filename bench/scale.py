#!/usr/bin/env python3
"""Scale benchmark on a SYNTHETIC capture (bench/synth): every step of
the pipeline timed in one run beside babeltrace2's own counter.

usage: bench/scale.py [--events N] [--seed S] [--vcpus V] [--work DIR]
                      [--lab-size] [--no-write]

Generates N events (default 10,000,000) with bench/synth, then runs, one
after the other on the same capture: `babeltrace2 -c sink.utils.counter`
(the reference), `mmureplay ingest`, `fidelity`, `replay` (its four
policies in one process) twice (the first stores the replay stream, the
second reads it: the replay's own rate), `summary`, `compare` (the DB
as both sides) and `report`; `ingest --stats` tells how busy its two
threads were.
Prints a table of
each step's wall time and CPU time (user + sys), events/s (trace events
over the step's wall time),
peak RSS (GNU time, the command alone) and bytes on disk, the
ingest/counter ratio, and the machine's load average before and after;
writes it to bench/results/scale-<N>-<date>.txt unless --no-write.

Sizes of 100 M events and more (a lab-like size: hours of disk and CPU)
need --lab-size and are never run by CI; the disk is checked first
(about 90 bytes an event for the trace and the DB together).
"""
import argparse
import datetime
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BUILD = os.environ.get("MMUREPLAY_BUILD", os.path.join(TOP, "build"))
MMR = os.path.join(BUILD, "analyze", "mmureplay")
SYNTH = os.path.join(BUILD, "bench", "synth")
COUNTER = ["babeltrace2", "-c", "sink.utils.counter", "-p", "step=+0"]
LAB_SIZE = 100000000
BYTES_PER_EVENT = 90


def timed(args, stdout=subprocess.DEVNULL):
    """Wall seconds, CPU seconds (user + sys), peak RSS (KiB), stdout and
    stderr of one command.  The files earlier steps wrote are flushed to
    disk first, so that no step pays for another's writeback."""
    os.sync()
    with tempfile.NamedTemporaryFile("r") as tf:
        t0 = time.perf_counter()
        r = subprocess.run(["/usr/bin/time", "-f", "%U %S %M", "-o",
                            tf.name] + args, stdout=stdout,
                           stderr=subprocess.PIPE, text=True)
        dt = time.perf_counter() - t0
        if r.returncode != 0:
            sys.exit("failed (exit %d): %s\n%s" % (r.returncode,
                                                   " ".join(args), r.stderr))
        user, system, rss = tf.read().split()[-3:]
        return (dt, float(user) + float(system), int(rss), r.stdout,
                r.stderr)


def ingest_threads(stderr):
    """`ingest --stats`: (wall, reading CPU, reading wait, writer CPU,
    writer wait) in seconds."""
    m = re.search(r"([0-9.]+) s wall; reading thread ([0-9.]+) s CPU, "
                  r"waited ([0-9.]+) s for the writer; writer thread "
                  r"([0-9.]+) s CPU, waited ([0-9.]+) s for rows", stderr)
    if not m:
        sys.exit("scale: no --stats line from ingest: %s" % stderr)
    return tuple(float(v) for v in m.groups())


def du(path):
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f))
               for d, _, fs in os.walk(path) for f in fs)


def label(n):
    for div, suf in ((1000000000, "B"), (1000000, "M"), (1000, "k")):
        if n % div == 0:
            return "%d%s" % (n // div, suf)
    return str(n)


def human(n):
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return "%.0f %s" % (n, unit) if unit == "B" else \
                "%.1f %s" % (n, unit)
        n /= 1024.0


def build_config():
    """The build's type and hot-path checks, from its CMake cache."""
    cfg = {}
    try:
        with open(os.path.join(BUILD, "CMakeCache.txt")) as f:
            for ln in f:
                for key in ("CMAKE_BUILD_TYPE", "MMUREPLAY_ASSERT_DBG",
                            "MMUREPLAY_SANITIZE"):
                    if ln.startswith(key + ":"):
                        cfg[key] = ln.split("=", 1)[1].strip()
    except OSError:
        pass
    if not cfg.get("CMAKE_BUILD_TYPE"):
        cfg["CMAKE_BUILD_TYPE"] = "RelWithDebInfo (the default)"
    return ", ".join("%s=%s" % kv for kv in sorted(cfg.items()))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--events", type=int, default=10000000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--vcpus", type=int, default=8)
    ap.add_argument("--work", help="scratch directory (default: a new "
                    "one under $TMPDIR, removed after)")
    ap.add_argument("--lab-size", action="store_true",
                    help="allow 100 M events and more")
    ap.add_argument("--no-write", action="store_true",
                    help="print the table only")
    a = ap.parse_args()
    if a.events >= LAB_SIZE and not a.lab_size:
        sys.exit("scale: %s events is a lab-like size: add --lab-size "
                 "(never in CI)" % "{:,}".format(a.events))
    for tool in (MMR, SYNTH):
        if not os.access(tool, os.X_OK):
            sys.exit("scale: %s: not built (cmake --build build)" % tool)
    work = a.work or tempfile.mkdtemp(prefix="mmureplay-scale-")
    os.makedirs(work, exist_ok=True)
    need = a.events * BYTES_PER_EVENT
    free = shutil.disk_usage(work).free
    if free < need * 1.2:
        sys.exit("scale: %s: %s free, about %s needed" % (work, human(free),
                                                          human(need)))
    cap = os.path.join(work, "synthetic-" + label(a.events))
    trace = os.path.join(cap, "trace", "kernel")
    db = os.path.join(work, "synthetic-%s.db" % label(a.events))
    html = os.path.join(work, "synthetic-%s.html" % label(a.events))
    shutil.rmtree(cap, ignore_errors=True)
    for f in (db, html):
        if os.path.exists(f):
            os.unlink(f)
    load0 = os.getloadavg()
    started = datetime.datetime.now(datetime.timezone.utc)
    rows = []
    try:
        dt, cpu, rss, out, _ = timed([SYNTH, "--events", str(a.events),
                                   "--seed", str(a.seed), "--vcpus",
                                   str(a.vcpus), "--out", cap],
                                  stdout=subprocess.PIPE)
        events = int(out.strip())
        rows.append(("generate (synth)", dt, cpu, rss, du(trace)))
        dt, cpu, rss, out, _ = timed(COUNTER + [trace],
                                     stdout=subprocess.PIPE)
        counted = [int(ln.split()[0]) for ln in out.splitlines()
                   if ln.split()[1:] == ["Event", "messages"]]
        if counted != [events]:
            sys.exit("scale: the counter saw %s events, synth wrote %d"
                     % (counted, events))
        rows.append(("babeltrace2 counter", dt, cpu, rss, du(trace)))
        steps = (("ingest", [MMR, "ingest", cap, "-o", db, "--stats"], db),
                 ("fidelity", [MMR, "fidelity", db], db),
                 ("replay (4 policies)", [MMR, "replay", db], db),
                 ("replay again", [MMR, "replay", db], db),
                 ("summary", [MMR, "summary", db], db),
                 ("compare (A = B)", [MMR, "compare", "--a", db, "--b", db],
                  db),
                 ("report", [MMR, "report", db, "-o", html], html))
        for name, args, out_path in steps:
            dt, cpu, rss, _, err = timed(args)
            rows.append((name, dt, cpu, rss, du(out_path)))
            if name == "ingest":
                threads = ingest_threads(err)
    finally:
        load1 = os.getloadavg()
        if not a.work:
            shutil.rmtree(work, ignore_errors=True)
    secs = dict((r[0], r[1]) for r in rows)
    cpus = dict((r[0], r[2]) for r in rows)
    sizes = dict((r[0], r[4]) for r in rows)
    lines = []
    lines.append("Scale benchmark, SYNTHETIC capture (bench/synth --events "
                 "%d --seed %d --vcpus %d): %s events"
                 % (a.events, a.seed, a.vcpus, "{:,}".format(events)))
    lines.append("%s, %d CPUs, %s; one run, steps one after the other"
                 % (started.strftime("%Y-%m-%d %H:%M UTC"), os.cpu_count(),
                    platform.platform(terse=True)))
    lines.append("build: %s" % build_config())
    lines.append("")
    lines.append("  %-20s %8s %8s %12s %10s %10s"
                 % ("step", "seconds", "CPU s", "events/s", "peak RSS",
                    "on disk"))
    lines.append("  %-20s %8s %8s %12s %10s %10s"
                 % ("-" * 20, "-" * 8, "-" * 8, "-" * 12, "-" * 10, "-" * 10))
    for name, dt, cpu, rss, size in rows:
        lines.append("  %-20s %8.2f %8.2f %12s %10s %10s"
                     % (name, dt, cpu, "{:,}".format(int(events / dt)),
                        human(rss * 1024), human(size)))
    total = sum(secs[k] for k in ("ingest", "fidelity", "replay (4 policies)",
                                  "report"))
    lines.append("")
    lines.append("  ingest / counter: %.2fx (counter time / ingest time; "
                 ">= 1: ingest is faster)"
                 % (secs["babeltrace2 counter"] / secs["ingest"]))
    wall, rcpu, rwait, wcpu, wwait = threads
    floor = (rcpu + wcpu) / os.cpu_count()
    lines.append("  ingest's two threads (--stats): reading %.2f s CPU, "
                 "waited %.2f s for the writer; SQLite writer %.2f s CPU, "
                 "waited %.2f s for rows; %.2f s wall.  On %d CPUs their "
                 "%.2f s of CPU take at least %.2f s: at most %.2fx the "
                 "counter however the decoding is split, unless the CPU "
                 "time falls"
                 % (rcpu, rwait, wcpu, wwait, wall, os.cpu_count(),
                    rcpu + wcpu, floor,
                    secs["babeltrace2 counter"] / floor))
    peak = max(r[3] for r in rows if r[0] in ("ingest", "fidelity",
                                               "replay (4 policies)",
                                               "report"))
    lines.append("  summary / ingest: %.1f%%, report / ingest: %.1f%% "
                 "(budget: each < 10%%); replay: %s events/s a policy "
                 "(four policies in %.2f s, the replay stream stored by "
                 "the first replay; budget >= 10,000,000)"
                 % (100 * secs["summary"] / secs["ingest"],
                    100 * secs["report"] / secs["ingest"],
                    "{:,}".format(int(4 * events / secs["replay again"])),
                    secs["replay again"]))
    cpu_total = sum(cpus[k] for k in ("ingest", "fidelity",
                                      "replay (4 policies)", "report"))
    lines.append("  end to end (ingest + fidelity + replay + report): "
                 "%.1f s, %.1f s CPU, peak RSS %s (budget at 100 M events: "
                 "< 240 s, < 512 MiB)" % (total, cpu_total,
                                          human(peak * 1024)))
    lines.append("  the same in CPU time (user + sys, what load does not "
                 "inflate; ingest's is its two threads'): summary / ingest "
                 "%.1f%%, report / ingest %.1f%%, "
                 "replay %s events/s a policy"
                 % (100 * cpus["summary"] / cpus["ingest"],
                    100 * cpus["report"] / cpus["ingest"],
                    "{:,}".format(int(4 * events / cpus["replay again"]))))
    lines.append("  ingest + fidelity + replay + report: %.1f s; DB %.1f "
                 "B/event after ingest and replay, trace %.1f B/event"
                 % (total, sizes["summary"] / events,
                    sizes["generate (synth)"] / events))
    lines.append("  load average (1, 5, 15 min) before: %.2f %.2f %.2f, "
                 "after: %.2f %.2f %.2f (the machine is shared)"
                 % (load0 + load1))
    lines.append("  the synthetic CTF is written by sink.ctf.fs: 64-bit event "
                 "id and timestamp in every header, procname a string; "
                 "LTTng's kernel traces use a 16-bit id with a compact "
                 "27/32-bit timestamp variant and a 16-byte procname "
                 "array, so the counter's events/s here is not a lab "
                 "trace's")
    lines.append("  not timed: spikes (the synthetic capture has no "
                 "latency probe, so it has no samples to look at)")
    lines.append("  events/s: trace events over the step's wall time "
                 "(replay: four policies in one process, the first replay "
                 "deriving the replay stream, the second reading it); "
                 "fidelity reads a read-only DB's tables once into a "
                 "temporary stream; on disk: the "
                 "trace (generate, counter), the DB (ingest..summary: "
                 "replay adds its packed stream), the HTML (report)")
    text = "\n".join(textwrap.fill(ln, 78, subsequent_indent="    ")
                     if len(ln) > 78 and not ln.startswith("  ---") else ln
                     for ln in lines) + "\n"
    sys.stdout.write(text)
    if not a.no_write:
        path = os.path.join(TOP, "bench", "results", "scale-%s-%s.txt"
                            % (label(a.events), started.strftime("%Y-%m-%d")))
        with open(path + ".tmp", "w") as f:
            f.write(text)
        os.rename(path + ".tmp", path)
        print("written: " + os.path.relpath(path, TOP))


if __name__ == "__main__":
    main()
