"""The run's shared store (mmrtest.SHARED): each input ingested once.

usage: test_shared_store.py start STORE MMUREPLAY FIXTURE_DIR
       test_shared_store.py check STORE TESTS_DIR DATA_DIR

start (ctest's setup step shared_store_start, before every test that
reads a fixture): empties STORE, then shows on FIXTURE_DIR, a real
capture, what the store relies on: two ingests of one extraction, one
with -q to a.db and one with --stats to another name in another
directory, write the same bytes (a DB depends on its input's bytes and
path: table stream names each stream's file); so a copy of the first DB
stands for any later ingest of the same input.  Then the store's own
answers for three ingests of the run's shared extraction are checked
against a real ingest of it: the same bytes, the same exit status, the
same messages with the caller's names in them.

check (the cleanup step suite.store_check, after them all): reads
STORE/ingest.log and fails where one input was ingested more than once
in the run, by the store or around it (an ingest of a store input with
options the store does not serve is logged as "direct"; a test of
ingest's own output handling, run(..., store=False), as "own", not
counted); fails where a shared extraction's or cut's bytes changed
during the run; and looks in TESTS_DIR's Python tests for a `mmureplay
ingest` run around mmrtest.run() (subprocess with "ingest" in its
arguments), which the log could not see.  It prints how many inputs
were ingested, how many ingests were served from the store, how many
late cuts were made and reused, and how many of DATA_DIR's fixtures
were ingested whole (all of them in a run of the whole suite), and
writes that line to store-count.txt beside STORE, which
scripts/test.sh prints at its end.  On a
pass it removes STORE (several gigabytes for the whole suite: every
fixture unpacked, its cuts, and each input's DB) but for the CLI's
times of each trace's events (stamps/, read by the sanitizer run).

What it cannot catch: an ingest of a test's private copy of a fixture
(extract_fixture(..., private=True), for a test that changes it), and
one made by a program the tests start (mmureplay analyze, the fleet
driver): those read inputs outside the store and are not counted.
"""
import collections
import filecmp
import os
import re
import shutil
import subprocess
import sys

import mmrtest
from mmrtest import check, extract_fixture, finish, fresh_dir, run


def start(store, mmr, fixture):
    shutil.rmtree(store, ignore_errors=True)
    os.makedirs(store)
    work = os.path.join(store, "start")
    os.makedirs(work)
    # A DB depends on its input (bytes and path), not on the output's
    # name, -q or --stats.
    trace = extract_fixture(fixture, work, private=True)
    other = os.path.join(work, "elsewhere")
    os.makedirs(other)
    a = subprocess.run([mmr, "ingest", "-q", trace, "-o",
                        os.path.join(work, "a.db")],
                       capture_output=True, text=True)
    b = subprocess.run([mmr, "ingest", "--stats", trace, "-o",
                        os.path.join(other, "b.db")],
                       capture_output=True, text=True)
    check(a.returncode == 0 and b.returncode == 0,
          "ingest: %s %s" % (a.stderr, b.stderr))
    check(filecmp.cmp(os.path.join(work, "a.db"),
                      os.path.join(other, "b.db"), shallow=False),
          "an ingest's DB depends on -o's name, -q or --stats")
    # The store's answers for the run's shared extraction: the first
    # ingests (and keeps), the others are served; each must be what a
    # real ingest of that trace writes and says.
    shared = extract_fixture(fixture, work)
    real = os.path.join(other, "real.db")
    b = subprocess.run([mmr, "ingest", "--stats", shared, "-o", real],
                       capture_output=True, text=True)
    check(b.returncode == 0, "ingest %s: %s" % (shared, b.stderr))
    for n, argv in enumerate((["--stats", shared], ["-q", shared],
                              [shared])):
        out = os.path.join(work, "s%d.db" % n)
        r = run([mmr, "ingest"] + argv + ["-o", out])
        check(r.returncode == 0, "store ingest %d: %s" % (n, r.stderr))
        check(filecmp.cmp(out, real, shallow=False),
              "store ingest %d: not the real DB's bytes" % n)
        lines = b.stderr.replace(real, out).splitlines(True)
        want = "".join(lines)
        if "-q" in argv:
            want = "".join(lines[:-2])
        elif "--stats" not in argv:
            want = "".join(lines[:-1])
        # --stats' times are the first ingest's own.
        strip = re.compile(r"[0-9]+\.[0-9]+ s")
        check(strip.sub("T", r.stderr) == strip.sub("T", want),
              "store ingest %d says %r, a real one %r"
              % (n, r.stderr, want))
    with open(os.path.join(store, "ingest.log")) as f:
        lines = f.readlines()
    kinds = [line.split()[0] for line in lines]
    check(kinds == ["ingest", "shared", "shared"],
          "the store's log of three ingests of one input: %s" % kinds)
    # The run's one ingest of that input stays in the count; the two
    # answers checked here were this test's.
    with open(os.path.join(store, "ingest.log"), "w") as f:
        f.writelines(lines[:1])
    shutil.rmtree(work)


def check_log(store, tests_dir, data):
    log = os.path.join(store, "ingest.log")
    rows = []
    if os.path.exists(log):
        with open(log) as f:
            rows = [line.split() for line in f if line.strip()]
    by_key = collections.defaultdict(list)
    kinds = collections.Counter()
    for kind, key, label, script in rows:
        kinds[kind] += 1
        if kind in ("ingest", "direct"):
            by_key[key].append((kind, label, script))
    # A test of ingest's own output handling (run(..., store=False))
    # ingests on purpose; said, not counted.
    again = {k: v for k, v in by_key.items() if len(v) > 1}
    for k, v in sorted(again.items()):
        check(False, "%s ingested %d times in this run: %s"
              % (v[0][1], len(v), ", ".join("%s (%s)" % (s, kd)
                                              for kd, _, s in v)))
    fixtures = set(label for kind, key, label, _ in rows
                   if kind == "ingest")
    want = set(d for d in os.listdir(data) if os.path.exists(
        os.path.join(data, d, "trace.tar.xz")))
    line = ("ingests: %d store inputs ingested (%d of the %d fixtures "
            "whole), %d ingests served from the store, %d around it "
            "(options it does not serve), %d by tests of ingest's own "
            "output handling; late cuts: %d made, %d reused; %d input(s) "
            "ingested more than once"
            % (kinds["ingest"], len(fixtures & want), len(want),
               kinds["shared"], kinds["direct"], kinds["own"],
               kinds["cut"], kinds["shared-cut"], len(again)))
    print(line)
    # Beside the store, for the run's log (scripts/test.sh prints it:
    # ctest shows a passing test's output to no one).
    with open(os.path.join(os.path.dirname(os.path.abspath(store)),
                           "store-count.txt"), "w") as f:
        f.write(line + "\n")
    # An ingest run around mmrtest.run() is invisible to the log.
    call = re.compile(r"subprocess\.(run|Popen|call|check_output)\(\s*"
                      r"\[[^\]]*\"ingest\"", re.S)
    for f in sorted(os.listdir(tests_dir)):
        if f.endswith(".py") and f not in ("mmrtest.py",
                                           os.path.basename(__file__)):
            with open(os.path.join(tests_dir, f)) as fh:
                if call.search(fh.read()):
                    check(False, "%s runs mmureplay ingest around "
                          "mmrtest.run(): the store cannot count it" % f)
    # No test changed a shared extraction (mmrtest.extract_fixture())
    # or a shared cut (mmrtest.trim()).
    for kind, leaf in (("traces", "trace"), ("cuts", "cut")):
        tops = os.path.join(store, kind)
        for d in sorted(os.listdir(tops)) if os.path.isdir(tops) else ():
            top = os.path.join(tops, d)
            if not os.path.exists(os.path.join(top, "fingerprint")):
                continue
            check(mmrtest._fingerprint(os.path.join(top, leaf)) ==
                  mmrtest._item_fingerprint(top),
                  "%s/%s: the shared %s was changed by a test"
                  % (kind, d, leaf))
    if not mmrtest.failures:
        # The CLI's times of each trace stay (a few megabytes): the
        # sanitizer run reads them (mmrtest.ORACLE); the next run's
        # suite.store_start empties the store.
        for d in os.listdir(store):
            if d != "stamps":
                p = os.path.join(store, d)
                if os.path.isdir(p):
                    shutil.rmtree(p, ignore_errors=True)
                else:
                    os.unlink(p)


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "start":
        os.environ["MMR_SHARED"] = sys.argv[2]
        mmrtest.SHARED = sys.argv[2]
        start(sys.argv[2], sys.argv[3], sys.argv[4])
    elif len(sys.argv) == 5 and sys.argv[1] == "check":
        check_log(sys.argv[2], sys.argv[3], sys.argv[4])
    else:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    finish()
