#!/usr/bin/env python3
"""A change against its parent: two builds timed side by side on the
same captures in one run.

usage: bench/compare.py BASE [NEW] [--events N] [--runs K]
                        [--trace DIR]... [--work DIR] [--no-write]
       bench/compare.py --build-a DIR --build-b DIR [the same options]

BASE and NEW are git revisions (NEW defaults to HEAD); each is checked
out in a worktree under the work directory and built the way users
build (cmake's default RelWithDebInfo, hot-path checks off).  With
--build-a / --build-b, two build directories already made are taken
instead (the bench.compare_slice test: the same build twice).

The captures: a SYNTHETIC one written by B's bench/synth (--events,
default 2,000,000; no kernel ran) and real ones (--trace, default the
three seed traces bundled in tests/data).  For each capture, K runs
(default 3); in each, both builds one after the other, A first on odd
runs and B first on even ones, so that a drift of the machine falls on
both: ingest --stats, fidelity, replay (the four policies; it stores
the replay stream), replay again (it reads the stream), summary and
report; and babeltrace2's counter once a run, the bar for ingest.
Every step is timed alone (wall and CPU seconds, peak RSS from GNU
time; the files written so far are flushed first, bench/scale.py's
timed()).

Prints, per capture and step, each build's median wall and CPU seconds
(min-max over the runs), events/s and peak RSS, and the ratios B/A of
the median wall and CPU seconds (on a machine that is not quiet the
CPU ratio is the one to read); and each build's ingest against the
counter.  Writes it to
bench/results/compare-A-B-DATE.txt unless --no-write.  A change to
ingest, the model, replay, metrics or report quotes the table in its
commit message or its issue note.

What it cannot tell: a difference inside the runs' own spread (given
as min-max: take more runs), and anything on a machine that is not
quiet (the load averages before and after are printed).
"""
import argparse
import datetime
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile

import scale

TOP = scale.TOP
STEPS = ("ingest", "fidelity", "replay", "replay again", "summary",
         "report")
SEEDS = ("lttng-kernel-6.1-tdp-basic", "lttng-kernel-6.1-bgsnapshot-"
         "perpage-read", "lttng-kernel-6.1-nxrecovery-dirtylog")


def git(*args, cwd=TOP):
    r = subprocess.run(["git"] + list(args), cwd=cwd, capture_output=True,
                       text=True)
    if r.returncode != 0:
        sys.exit("compare: git %s: %s" % (" ".join(args), r.stderr.strip()))
    return r.stdout.strip()


def build(rev, work):
    """(worktree, build directory) of revision rev, checked out and
    built under work."""
    sha = git("rev-parse", "--verify", rev + "^{commit}")
    src = os.path.join(work, "src-" + sha[:12])
    out = os.path.join(work, "build-" + sha[:12])
    if not os.path.isdir(src):
        git("worktree", "add", "--detach", src, sha)
    for args in (["cmake", "-S", src, "-B", out],
                 ["cmake", "--build", out, "-j", str(os.cpu_count()),
                  "--target", "mmureplay", "synth"]):
        r = subprocess.run(args, capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("compare: %s: %s" % (" ".join(args),
                                          r.stderr.strip()[-2000:]))
    return src, out


def tools(build_dir):
    mmr = os.path.join(build_dir, "analyze", "mmureplay")
    synth = os.path.join(build_dir, "bench", "synth")
    for t in (mmr, synth):
        if not os.access(t, os.X_OK):
            sys.exit("compare: %s: not built" % t)
    return mmr, synth


def steps(mmr, cap, work):
    """(step, argv) of one build on one capture."""
    db = os.path.join(work, "capture.db")
    html = os.path.join(work, "report.html")
    return (("ingest", [mmr, "ingest", cap, "-o", db, "--stats"]),
            ("fidelity", [mmr, "fidelity", db]),
            ("replay", [mmr, "replay", db]),
            ("replay again", [mmr, "replay", db]),
            ("summary", [mmr, "summary", db]),
            ("report", [mmr, "report", db, "-o", html]))


def events_of(cap):
    """The events babeltrace2's counter counts in cap, and its run."""
    dt, cpu, rss, out, _ = scale.timed(scale.COUNTER + [cap],
                                       stdout=subprocess.PIPE)
    n = sum(int(ln.split()[0]) for ln in out.splitlines()
            if ln.split()[1:] == ["Event", "messages"])
    return n, (dt, cpu, rss)


def spread(vals, fmt):
    m = statistics.median(vals)
    if len(vals) == 1:
        return fmt % m, m
    return "%s (%s-%s)" % (fmt % m, fmt % min(vals), fmt % max(vals)), m


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("base", nargs="?")
    ap.add_argument("new", nargs="?", default="HEAD")
    ap.add_argument("--build-a")
    ap.add_argument("--build-b")
    ap.add_argument("--events", type=int, default=2000000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--trace", action="append")
    ap.add_argument("--work")
    ap.add_argument("--no-write", action="store_true")
    a = ap.parse_args()
    if bool(a.build_a) != bool(a.build_b) or bool(a.base) == bool(a.build_a):
        ap.error("give BASE [NEW], or --build-a and --build-b")
    if a.runs < 1 or a.events < 1000:
        ap.error("--runs at least 1, --events at least 1000")
    if a.events >= scale.LAB_SIZE:
        sys.exit("compare: %s events is a lab-like size (bench/scale.py "
                 "--lab-size)" % "{:,}".format(a.events))
    work = a.work or tempfile.mkdtemp(prefix="mmureplay-compare-")
    os.makedirs(work, exist_ok=True)
    if a.base:
        names = (git("rev-parse", "--short", a.base),
                 git("rev-parse", "--short", a.new))
        made = (build(a.base, work), build(a.new, work))
        builds = tuple(out for _, out in made)
    else:
        names = ("A", "B")
        builds = (os.path.abspath(a.build_a), os.path.abspath(a.build_b))
    mmrs = [tools(b)[0] for b in builds]
    traces = a.trace or [os.path.join(TOP, "tests", "data", s)
                         for s in SEEDS]
    caps = []
    synthetic = os.path.join(work, "synthetic")
    if not os.path.isdir(synthetic):
        r = subprocess.run([tools(builds[1])[1], "--events", str(a.events),
                            "--seed", "1", "--out", synthetic],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit("compare: synth: %s" % r.stderr.strip())
    caps.append(("SYNTHETIC %s" % scale.label(a.events), synthetic))
    for t in traces:
        t = os.path.abspath(t)
        if os.path.exists(os.path.join(t, "trace.tar.xz")):
            dest = os.path.join(work, "trace-" + os.path.basename(t))
            if not os.path.isdir(dest):
                os.makedirs(dest)
                subprocess.run(["tar", "-xJf", os.path.join(t, "trace.tar.xz"),
                                "-C", dest], check=True)
            caps.append((os.path.basename(t), dest))
        elif os.path.isdir(t):
            caps.append((os.path.basename(t), t))
        else:
            sys.exit("compare: %s: not a trace directory or fixture" % t)

    load0 = os.getloadavg()
    started = datetime.datetime.now(datetime.timezone.utc)
    # results[cap][build][step] = [(wall, cpu, rss)], counter[cap] = [...]
    results, counter, nevents = {}, {}, {}
    for cname, cap in caps:
        results[cname] = ({}, {})
        counter[cname] = []
        for run in range(a.runs):
            n, c = events_of(cap)
            nevents[cname] = n
            counter[cname].append(c)
            order = (0, 1) if run % 2 == 0 else (1, 0)
            for b in order:
                d = os.path.join(work, "run-%d" % b)
                os.makedirs(d, exist_ok=True)
                for f in os.listdir(d):
                    os.unlink(os.path.join(d, f))
                for step, argv in steps(mmrs[b], cap, d):
                    dt, cpu, rss, _, _ = scale.timed(argv)
                    results[cname][b].setdefault(step, []).append(
                        (dt, cpu, rss))
    load1 = os.getloadavg()

    lines = ["A change against its parent (bench/compare.py): A = %s, "
             "B = %s" % names,
             "%s, %d CPUs, %s; %d run(s) a capture, builds in turn"
             % (started.strftime("%Y-%m-%d %H:%M UTC"), os.cpu_count(),
                platform.platform(terse=True), a.runs),
             "load average before %.2f, after %.2f" % (load0[0], load1[0]),
             ""]
    hdr = "  %-13s %-27s %-27s %9s %9s %10s %10s %6s %6s"
    for cname, _ in caps:
        n = nevents[cname]
        cw = [c[0] for c in counter[cname]]
        lines.append("%s: %s events; babeltrace2 counter %s s"
                     % (cname, "{:,}".format(n), spread(cw, "%.3f")[0]))
        lines.append(hdr % ("step", "A wall s", "B wall s", "A CPU s",
                            "B CPU s", "B ev/s", "B RSS KiB", "B/A",
                            "CPU"))
        for step in STEPS:
            a_runs, b_runs = (results[cname][0][step],
                              results[cname][1][step])
            aw, am = spread([r[0] for r in a_runs], "%.3f")
            bw, bm = spread([r[0] for r in b_runs], "%.3f")
            ac = statistics.median(r[1] for r in a_runs)
            bc = statistics.median(r[1] for r in b_runs)
            rss = statistics.median(r[2] for r in b_runs)
            lines.append(hdr % (step, aw, bw, "%.2f" % ac, "%.2f" % bc,
                                "%.3g" % (n / bm if bm else 0),
                                "%d" % rss, "%.2f" % (bm / am if am else 0),
                                "%.2f" % (bc / ac if ac else 0)))
        for b in (0, 1):
            iw = statistics.median(r[0] for r in results[cname][b]["ingest"])
            lines.append("  %s ingest: %.2fx the counter (counter wall / "
                         "ingest wall, medians)"
                         % ("AB"[b], statistics.median(cw) / iw))
        lines.append("")
    text = "\n".join(lines)
    print(text)
    if not a.no_write:
        path = os.path.join(TOP, "bench", "results", "compare-%s-%s-%s.txt"
                            % (names[0], names[1],
                               started.strftime("%Y-%m-%d")))
        with open(path, "w") as f:
            f.write(text + "\n")
        print("written: %s" % os.path.relpath(path, TOP))
    if a.base:
        for src, _ in made:
            git("worktree", "remove", "--force", src)
    if not a.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
