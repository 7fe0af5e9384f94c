"""Shared helpers for mmureplay's integration tests.

The babeltrace2 CLI is the oracle: counts and field values that a test
asserts are read from `babeltrace2` text output of the same trace inside
the test, never only typed in.
"""
import array
import collections
import contextlib
import fcntl
import hashlib
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


def extract_fixture(fixture_dir, work, private=False):
    """A fixture's trace.tar.xz unpacked, with its manifest: the path of
    the trace directory.  Where the shared store is on (SHARED), every
    test gets the one extraction of the run (SHARED/traces/FIXTURE/trace),
    which no test may change: the DB records its streams' paths, so only
    one path lets the store serve one DB to all.  private=True (a test
    that edits the trace or puts files beside it, or wants it under
    work) unpacks a copy into work/trace, as without the store."""
    name = os.path.basename(os.path.normpath(fixture_dir))
    if not SHARED or private:
        return _extract(fixture_dir, os.path.join(work, "trace"))
    # work exists afterwards either way: tests write their DB there.
    os.makedirs(work, exist_ok=True)
    top = os.path.join(SHARED, "traces", name)
    dest = os.path.join(top, "trace")
    with _locked("trace-" + name):
        if not os.path.exists(os.path.join(top, "fingerprint")):
            shutil.rmtree(top, ignore_errors=True)
            _extract(fixture_dir, dest)
            with open(os.path.join(top, "label"), "w") as f:
                f.write(name + "\n")
            # What suite.store_check compares at the end of the run: a
            # test that changed the shared trace fails it.
            with open(os.path.join(top, "fingerprint"), "w") as f:
                f.write(_fingerprint(dest) + "\n")
    return dest


def _extract(fixture_dir, dest):
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
    step-th: MMR_FIXTURE_STEP where a developer sets it (a quick look),
    else 1: all, as CI and the README's test command take them."""
    step = os.environ.get("MMR_FIXTURE_STEP", "1")
    return int(step) if step.isdigit() and int(step) > 0 else 1


def fixture_offset():
    """The first fixture of the slice: MMR_FIXTURE_OFFSET modulo the
    step (0 where unset)."""
    off = os.environ.get("MMR_FIXTURE_OFFSET", "0")
    return int(off) % fixture_step() if off.isdigit() else 0


# Under the sanitizers (scripts/test.sh --sanitize sets MMR_SANITIZE)
# the per-fixture tests take every fixture, and a test that sweeps the
# fixtures (browser, JSON schemas, Perfetto export, damage, metadata,
# the time merge) takes these three: a stock 6.1 kernel trace, a patched
# 6.1 kernel + UST capture and a patched 6.12 capture of two VMs, every
# layout of trace the C paths read.  The sweep over the others runs the
# same C paths on other events, which the regular run checks.
SANITIZER_FIXTURES = (
    "lttng-kernel-6.1-bgsnapshot-perpage-read",
    "lttng-kernel-6.1.192-patched-bgsnapshot-latprobe",
    "lttng-kernel-6.12.118-patched-multivm-basic-basic-bgsnapshot-ksm-"
    "khugepaged",
)


def sanitized():
    """Whether this is the sanitizer run (MMR_SANITIZE)."""
    return bool(os.environ.get("MMR_SANITIZE"))


def sliced():
    """Whether this run takes a part of the fixtures (fixture_step(),
    or the sanitizers' three)."""
    return fixture_step() > 1 or sanitized()


def trace_fixtures(data):
    """The fixtures of data/ that hold a CTF trace, sorted; every
    fixture_step()-th of them: the same code paths in a fraction of the
    time."""
    fixtures = sorted(d for d in os.listdir(data)
                      if os.path.exists(os.path.join(data, d,
                                                     "trace.tar.xz")))
    if sanitized():
        kept = [f for f in fixtures if f in SANITIZER_FIXTURES]
        print("under the sanitizers: %d of %d fixtures (%s)"
              % (len(kept), len(fixtures), ", ".join(kept)))
        return kept
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
    fixtures trace_fixtures() keeps (every fixture_step()-th) and exits
    SKIPPED (ctest: skipped, not failed) on the others, as the sweeping
    tests."""
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


# The run's shared store.  ctest sets MMR_SHARED for every test (a
# directory under the build tree that the setup test suite.store_start
# empties first and suite.store_check reads last; tests/CMakeLists.txt).
# extract_fixture() unpacks each fixture once per run into it, and
# late_cut() / cut_at() make each cut once per run into it; an input of
# the store is never changed (suite.store_check compares its
# fingerprint at the end).  The first `mmureplay ingest` of such an
# input, through run(), does the work under a lock; every later one, in
# any test, gets a byte-identical copy of that DB and the same messages
# (a DB depends on its input's bytes and path, the binary and the
# MMUREPLAY_* environment, not on -o's name, -q or --stats:
# test_shared_store.py shows it on a real capture).  Each ingest of a
# store input is a line of ingest.log, which suite.store_check counts:
# one ingested twice fails it.  Not served: an input outside the store
# (a test's private copy, which it may change), an output ingest must
# refuse, other options, and run(..., store=False) (a test of ingest's
# own handling of its output: stale temporaries, a full disk).  Without
# MMR_SHARED (a test run by hand) nothing is shared.
SHARED = os.environ.get("MMR_SHARED")


def _fingerprint(path):
    """sha1 over a directory tree: every file under it (name and
    bytes), and the manifest.json ingest reads from the directory
    above."""
    h = hashlib.sha1()

    def add(f, name):
        h.update(name.encode() + b"\0")
        with open(f, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                h.update(block)
        h.update(b"\0")

    path = os.path.abspath(path)
    for d, dirs, files in os.walk(path):
        dirs.sort()
        for f in sorted(files):
            full = os.path.join(d, f)
            add(full, os.path.relpath(full, path))
    above = os.path.join(os.path.dirname(path), "manifest.json")
    if os.path.isfile(above):
        add(above, "../manifest.json")
    return h.hexdigest()


def _log(kind, key, label):
    with open(os.path.join(SHARED, "ingest.log"), "a") as f:
        f.write("%s %s %s %s\n" % (kind, key, label,
                                  os.path.basename(sys.argv[0])))


@contextlib.contextmanager
def _locked(name):
    """An exclusive lock on SHARED/name.lock, for the first of several
    tests making the same shared item."""
    with open(os.path.join(SHARED, name + ".lock"), "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _store_item(inp):
    """(item directory, label) of the store item (a fixture's
    extraction, a cut) an input lies in, or None: an input outside the
    store."""
    if not SHARED or not os.path.exists(inp):
        return None
    rel = os.path.relpath(os.path.realpath(inp), os.path.realpath(SHARED))
    parts = rel.split(os.sep)
    if len(parts) < 3 or parts[0] not in ("traces", "cuts"):
        return None
    top = os.path.join(SHARED, parts[0], parts[1])
    if not os.path.exists(os.path.join(top, "fingerprint")):
        return None
    with open(os.path.join(top, "label")) as f:
        return top, f.read().strip()


def _item_fingerprint(top):
    """The fingerprint a store item recorded when it was made."""
    with open(os.path.join(top, "fingerprint")) as f:
        return f.read().strip()


def _content_key(path):
    """A key for a directory's bytes: its store item's fingerprint and
    its place in it, or else its own fingerprint."""
    item = _store_item(path)
    if item is None:
        return _fingerprint(path)
    return "%s %s" % (_item_fingerprint(item[0]), os.path.relpath(
        os.path.realpath(path), os.path.realpath(item[0])))


def _parse_ingest(args):
    """`mmureplay ingest` args as (inputs, output, quiet, stats, plain):
    plain where no option but -o, -q and --stats is given."""
    rest = list(args[2:])
    inputs, out, quiet, stats, plain = [], None, False, False, True
    while rest:
        a = rest.pop(0)
        if a in ("-o", "--output") and rest:
            out = rest.pop(0)
        elif a in ("-q", "--quiet"):
            quiet = True
        elif a == "--stats":
            stats = True
        elif a.startswith("-"):
            plain = False
            if a == "--watchdog" and rest:
                rest.pop(0)
        else:
            inputs.append(a)
    return inputs, out, quiet, stats, plain


def _ingest_args(args):
    """(input, output, quiet, stats) of `mmureplay ingest` args that the
    store may serve, or None: one input, -o, and only -q / --stats."""
    inputs, out, quiet, stats, plain = _parse_ingest(args)
    if not plain or len(inputs) != 1 or out is None:
        return None
    # Only where ingest would write its DB: an output it must refuse
    # (no such directory, a device, a directory) is its to say.
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent) or not os.access(parent, os.W_OK) or \
            (os.path.lexists(out) and not os.path.isfile(out)):
        return None
    return inputs[0], out, quiet, stats


def _ingest_key(mmr, kw, inp, top):
    """What an ingest's DB depends on: the binary, the MMUREPLAY_*
    environment, the input's path (table stream holds each stream's)
    and the bytes of the store item it lies in."""
    env = kw.get("env") or os.environ
    knobs = sorted((k, v) for k, v in env.items()
                   if k.startswith("MMUREPLAY_"))
    return hashlib.sha1(json.dumps([
        os.path.realpath(mmr), knobs, os.path.realpath(inp),
        _item_fingerprint(top)]).encode()).hexdigest()


def _shared_ingest(args, kw):
    """run() of an ingest through the store, or None where it cannot
    serve it."""
    parsed = _ingest_args(args)
    item = _store_item(parsed[0]) if parsed else None
    if item is None or set(kw) - {"env", "timeout"}:
        return None
    inp, out, quiet, stats = parsed
    key = _ingest_key(args[0], kw, inp, item[0])
    d = os.path.join(SHARED, "ingest", key)
    with _locked("ingest-" + key):
        if os.path.exists(os.path.join(d, "result.json")):
            kind = "shared"
        else:
            os.makedirs(d, exist_ok=True)
            db = os.path.join(d, "capture.db")
            r = subprocess.run([args[0], "ingest", "--stats", inp, "-o", db],
                               capture_output=True, text=True, **kw)
            if r.returncode != 0:
                # Only what succeeded is kept: the caller's own ingest
                # says the failure.
                shutil.rmtree(d, ignore_errors=True)
                return None
            with open(os.path.join(d, "result.json"), "w") as f:
                json.dump({"stderr": r.stderr, "db": db, "stdout": r.stdout},
                          f)
            kind = "ingest"
        _log(kind, key, item[1])
    with open(os.path.join(d, "result.json")) as f:
        res = json.load(f)
    tmp = out + ".tmp-store"
    shutil.copyfile(res["db"], tmp)
    os.replace(tmp, out)
    # What ingest said as it read (warnings), its closing line, then
    # --stats' line: the first ingest ran without -q and with --stats;
    # the caller's DB name stands in for the store's.
    lines = res["stderr"].replace(res["db"], out).splitlines(True)
    assert len(lines) >= 2, res["stderr"]
    stderr = "".join(lines[:-2])
    if not quiet:
        stderr += lines[-2]
    if stats:
        stderr += lines[-1]
    return subprocess.CompletedProcess(args, 0, res["stdout"], stderr)


def run(args, store=True, **kw):
    """A command's CompletedProcess (text).  `mmureplay ingest` of a
    store input (SHARED, above) this run already ingested is served
    from the store, with the same bytes and messages; store=False runs
    it all the same (logged apart, as the test's own)."""
    if SHARED and len(args) > 2 and args[1] == "ingest":
        r = _shared_ingest(args, kw) if store else None
        if r is not None:
            return r
        r = subprocess.run(args, capture_output=True, text=True, **kw)
        # A store input ingested whole around the store (other options,
        # an output ingest refuses): logged, so that an input ingested
        # again is seen.  Several inputs (kernel + UST traces) are
        # another input.
        inputs = _parse_ingest(args)[0]
        item = _store_item(inputs[0]) if len(inputs) == 1 else None
        if r.returncode == 0 and item:
            _log("direct" if store else "own",
                 _ingest_key(args[0], kw, inputs[0], item[0]), item[1])
        return r
    return subprocess.run(args, capture_output=True, text=True, **kw)


# The babeltrace2 CLI's times of a trace's events (bt_stamps()) depend
# on the trace's bytes alone, not on the build: where ORACLE names
# another build's store (scripts/test.sh --sanitize gives the regular
# build's, whose suite.store_check keeps them), the times it holds of
# the same bytes are read from it (read only) before the CLI runs
# again.
ORACLE = os.environ.get("MMR_ORACLE")


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
    integer nanoseconds since the epoch.  Read once per run and trace
    where the shared store is on (SHARED)."""
    if not SHARED:
        return _bt_stamps(trace_dir)
    fp = hashlib.sha1(_content_key(trace_dir).encode()).hexdigest()
    path = os.path.join(SHARED, "stamps", fp)
    if ORACLE and not os.path.exists(path) and \
            os.path.exists(os.path.join(ORACLE, "stamps", fp)):
        path = os.path.join(ORACLE, "stamps", fp)
    with _locked("stamps-" + fp):
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            a = array.array("q", _bt_stamps(trace_dir))
            with open(path + ".tmp", "wb") as f:
                a.tofile(f)
            os.replace(path + ".tmp", path)
    a = array.array("q")
    with open(path, "rb") as f:
        a.frombytes(f.read())
    return a.tolist()


STAMP = re.compile(rb'^\[(\d+)\.(\d{9})\]', re.M)


def _bt_stamps(trace_dir):
    p = subprocess.run(["babeltrace2", "--clock-seconds", "--no-delta",
                        trace_dir], stdout=subprocess.PIPE)
    # --clock-seconds prints nine digits of fraction.
    stamps = [int(sec + frac) for sec, frac in STAMP.findall(p.stdout)]
    if p.returncode != 0 or not stamps:
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
    cut = trim(trace_dir, begin, out_dir)
    return cut, k, sum(1 for t in stamps if t >= begin)


def trim(trace_dir, begin, out_dir):
    """The trace from time begin (ns) on, by babeltrace2's trimmer, with
    the manifest: the path of the cut.  Where the shared store is on
    (SHARED), the trimmer runs once per run, trace and time, into the
    store, and every test gets that cut (not to be changed: its DB is
    served from the store as a fixture's is); without it, into out_dir."""
    if not SHARED:
        _trim(trace_dir, begin, out_dir)
        return out_dir
    key = hashlib.sha1(("%s %d" % (_content_key(trace_dir), begin))
                       .encode()).hexdigest()
    d = os.path.join(SHARED, "cuts", key, "cut")
    os.makedirs(os.path.dirname(d), exist_ok=True)
    item = _store_item(trace_dir)
    label = item[1] if item else os.path.basename(
        os.path.dirname(os.path.abspath(trace_dir)))
    with _locked("cut-" + key):
        if not os.path.isdir(d):
            _trim(trace_dir, begin, d + ".tmp")
            os.replace(d + ".tmp", d)
            # Named in the log, and checked unchanged at the run's end
            # (shared_store_check), as a shared extraction is.
            top = os.path.dirname(d)
            with open(os.path.join(top, "label"), "w") as f:
                f.write("%s@%d\n" % (label, begin))
            with open(os.path.join(top, "fingerprint"), "w") as f:
                f.write(_fingerprint(d) + "\n")
            _log("cut", key, label)
        else:
            _log("shared-cut", key, label)
    return d


def _trim(trace_dir, begin, out_dir):
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
    return trim(trace_dir, first + int(round(offset_s * 1e9)), out_dir)
