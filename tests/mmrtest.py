"""Shared helpers for mmureplay's integration tests.

The babeltrace2 CLI is the oracle: counts and field values that a test
asserts are read from `babeltrace2` text output of the same trace inside
the test, never only typed in.
"""
import collections
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tarfile

LINE = re.compile(r'^\[([0-9.]+)\] \S+ (\S+): (.*)$')
PAIR = re.compile(r'(\w+) = ("(?:[^"\\]|\\.)*"|[-0-9A-Fa-fx]+)')

failures = []
# The work directories fresh_dir() made: finish() removes them when every
# check passed (a suite of ~200 tests would otherwise keep gigabytes of
# extracted traces and DBs); a failed test keeps its own for a look, as
# does any test under MMR_KEEP_WORK=1.
work_dirs = []


def check(cond, what):
    """Record a failed assertion (the test continues to report them all)."""
    if not cond:
        failures.append(what)
        print("FAIL:", what, file=sys.stderr)


def finish():
    if failures:
        print("%d check(s) failed" % len(failures), file=sys.stderr)
        sys.exit(1)
    if not os.environ.get("MMR_KEEP_WORK"):
        for d in work_dirs:
            shutil.rmtree(d, ignore_errors=True)
    print("ok")
    sys.exit(0)


def fresh_dir(path, keep=False):
    """An empty directory at path; finish() removes it after a passing
    test unless keep (what it holds is for people to look at)."""
    shutil.rmtree(path, ignore_errors=True)
    os.makedirs(path)
    if not keep:
        work_dirs.append(path)
    return path


def done_with(path):
    """A loop's sub-directory no later step reads: removed now, unless a
    check has failed so far (it stays beside the failure) or
    MMR_KEEP_WORK=1.  Keeps a sweep's disk use to one fixture's."""
    if not failures and not os.environ.get("MMR_KEEP_WORK"):
        shutil.rmtree(path, ignore_errors=True)


def extract_fixture(fixture_dir, work):
    """Unpack a fixture's trace.tar.xz into work/trace; return that path."""
    dest = os.path.join(work, "trace")
    with tarfile.open(os.path.join(fixture_dir, "trace.tar.xz")) as tf:
        tf.extractall(dest)
    # The capture manifest sits at the root of what was recorded.
    manifest = os.path.join(fixture_dir, "manifest.json")
    if os.path.exists(manifest):
        shutil.copy(manifest, dest)
    return dest


def ingest_fixture(mmr, fixture_dir, work, db_name="capture.db"):
    """Extract a fixture into work and ingest it: (trace dir, DB path).
    A failed ingest is a failed check."""
    trace = extract_fixture(fixture_dir, work)
    db = os.path.join(work, db_name)
    r = run([mmr, "ingest", "-q", trace, "-o", db])
    check(r.returncode == 0, "ingest %s: %s" % (fixture_dir, r.stderr))
    return trace, db


def fixture_step():
    """Of the fixtures, the sweeping and per-fixture tests take every
    step-th: 8 under the sanitizers (scripts/test.sh --sanitize sets
    MMR_SANITIZE), MMR_FIXTURE_STEP where set (CI's regular run sets 2,
    .ci/run), else 1: all, as a developer's run and the README's test
    command take them."""
    if os.environ.get("MMR_SANITIZE"):
        return 8
    step = os.environ.get("MMR_FIXTURE_STEP", "1")
    return int(step) if step.isdigit() and int(step) > 0 else 1


def fixture_offset():
    """The first fixture of the slice: MMR_FIXTURE_OFFSET modulo the
    step (0 where unset).  CI's regular run takes the odd ones, so that
    with the sanitizer run's every eighth from the first, five of every
    eight fixtures run in CI."""
    off = os.environ.get("MMR_FIXTURE_OFFSET", "0")
    return int(off) % fixture_step() if off.isdigit() else 0


def sliced():
    """Whether this run takes a slice of the fixtures (fixture_step())."""
    return fixture_step() > 1


def trace_fixtures(data):
    """The fixtures of data/ that hold a CTF trace, sorted; every
    fixture_step()-th of them: the same code paths in a fraction of the
    time."""
    fixtures = sorted(d for d in os.listdir(data)
                      if os.path.exists(os.path.join(data, d,
                                                     "trace.tar.xz")))
    step, off = fixture_step(), fixture_offset()
    if step > 1:
        print("a slice: %d of %d fixtures (every %dth from #%d)"
              % (len(fixtures[off::step]), len(fixtures), step, off))
        fixtures = fixtures[off::step]
    return fixtures


# ctest's SKIP_RETURN_CODE for the per-fixture tests (tests/CMakeLists.txt).
SKIPPED = 77


def slice_only(fixture_dir):
    """A per-fixture test (one ctest entry per fixture) runs on the
    fixtures trace_fixtures() keeps (every fixture_step()-th: an eighth
    under the sanitizers) and exits SKIPPED (ctest: skipped, not failed)
    on the others, as the sweeping tests.  A developer's run keeps them
    all."""
    step = fixture_step()
    if step == 1:
        return
    fixture_dir = os.path.abspath(fixture_dir)
    data = os.path.dirname(fixture_dir)
    kept = sorted(d for d in os.listdir(data)
                  if os.path.exists(os.path.join(data, d,
                                                 "trace.tar.xz")))[
                                                     fixture_offset()::step]
    if os.path.basename(fixture_dir) not in kept:
        print("skipped in a slice: not one of every %dth fixture" % step)
        sys.exit(SKIPPED)


def run(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def _value(v):
    if v.startswith('"'):
        return v[1:-1]
    return int(v, 0)


def bt_events(trace_dir, context=False):
    """Yield (seconds, name, fields) for every event, via the CLI: the
    payload's fields, or with context the context's too (procname, tid,
    ...; a payload field wins over a context field of its name)."""
    p = subprocess.Popen(["babeltrace2", "--clock-seconds", "--no-delta",
                          trace_dir], stdout=subprocess.PIPE, text=True)
    for line in p.stdout:
        m = LINE.match(line)
        if not m:
            raise RuntimeError("unparsed babeltrace2 line: " + line)
        body = m.group(3)
        payload = body if context or "}, {" not in body else \
            body.rsplit("}, {", 1)[-1]
        yield (m.group(1), m.group(2),
               {k: _value(v) for k, v in PAIR.findall(payload)})
    if p.wait() != 0:
        raise RuntimeError("babeltrace2 failed on " + trace_dir)


def bt_counts(trace_dir):
    return collections.Counter(name for _, name, _ in bt_events(trace_dir))


def bt_env(trace_dir):
    """The CTF environment of the first trace under trace_dir (CLI dump)."""
    for d, _, files in sorted(os.walk(trace_dir)):
        if "metadata" in files:
            trace_dir = d
            break
    out = run(["babeltrace2", "-o", "ctf-metadata", trace_dir]).stdout
    env = {}
    m = re.search(r'^env \{(.*?)^\};', out, re.S | re.M)
    for k, v in re.findall(r'^\s*(\w+) = (".*?"|\d+);', m.group(1), re.M):
        env[k] = v.strip('"')
    return env


def u64(v):
    """A DB integer back to the unsigned value it stores."""
    return v & 0xFFFFFFFFFFFFFFFF if v is not None else None


def db_rows(db, sql):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def damage_leaf_zaps(src, dst, n=20):
    """Copy the capture DB src to dst and delete n of its leaf zaps (a
    present leaf made not present, level 1), skipping the first ten: the
    synthetic damage of a real capture that a lost-event gap would leave.
    The self-check must fail on it."""
    shutil.copy(src, dst)
    con = sqlite3.connect(dst)
    try:
        con.execute("DELETE FROM spte_change WHERE seq IN (SELECT seq FROM "
                    "spte_change WHERE (old_spte & 2048) AND NOT "
                    "(new_spte & 2048) AND level = 1 ORDER BY seq "
                    "LIMIT ? OFFSET 10)", (n,))
        con.commit()
    finally:
        con.close()
    return dst


def summary_json(mmr, db):
    r = run([mmr, "summary", db, "--json"])
    if r.returncode != 0:
        raise RuntimeError("summary failed: " + r.stderr)
    return json.loads(r.stdout)


def bt_stamps(trace_dir):
    """Every event's time (CLI, --clock-seconds), in trace order, as
    integer nanoseconds since the epoch."""
    p = subprocess.Popen(["babeltrace2", "--clock-seconds", "--no-delta",
                          trace_dir], stdout=subprocess.PIPE, text=True)
    stamps = []
    for line in p.stdout:
        if line.startswith("["):
            sec, frac = line[1:line.index("]")].split(".")
            stamps.append(int(sec) * 10**9 + int(frac.ljust(9, "0")))
    if p.wait() != 0 or not stamps:
        raise RuntimeError("babeltrace2 failed on " + trace_dir)
    return stamps


def late_cut(trace_dir, share, out_dir):
    """A late session, as babeltrace2's own trimmer makes it: the trace
    from a whole second k after its first event, k the last whole second
    before the time by which share of its events had passed (at least 1,
    and short of the last event: the cut holds at least the rest).  Cut at whole seconds, the cut's
    events are exactly those of the whole capture's seconds >= k of its
    per-second series.  The manifest goes with it.  Returns (cut trace
    dir, k, events in the cut as the CLI counts them)."""
    stamps = bt_stamps(trace_dir)
    first, last = stamps[0], stamps[-1]
    at = stamps[min(len(stamps) - 1, int(share * len(stamps)))]
    k = max(1, (at - first) // 10**9)
    k = min(k, max(1, (last - first) // 10**9))
    begin = first + k * 10**9
    trim(trace_dir, begin, out_dir)
    return out_dir, k, sum(1 for t in stamps if t >= begin)


def trim(trace_dir, begin, out_dir):
    """The trace from time begin (ns) on, by babeltrace2's trimmer, into
    out_dir, with the manifest."""
    r = run(["babeltrace2", trace_dir, "--begin=%d.%09d"
             % (begin // 10**9, begin % 10**9), "-o", "ctf", "-w", out_dir])
    if r.returncode != 0:
        raise RuntimeError("babeltrace2 trimmer: " + r.stderr)
    manifest = os.path.join(trace_dir, "manifest.json")
    if os.path.exists(manifest):
        shutil.copy(manifest, out_dir)


def cut_at(trace_dir, offset_s, out_dir):
    """A late session attached offset_s seconds (any fraction) after the
    trace's first event: what capture/lab/cut-sweep.py takes.  Returns
    the cut trace dir."""
    first = bt_stamps(trace_dir)[0]
    trim(trace_dir, first + int(round(offset_s * 1e9)), out_dir)
    return out_dir
