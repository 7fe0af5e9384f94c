"""The suite's disk use: a passing test removes its work directory, a
failing one keeps it (tests/mmrtest.py finish()).

usage: test_work_cleanup.py WORK_DIR

Two child tests, one passing and one failing, each extract the bundled
fixture's trace into a work directory of their own; after them the
passing one's is gone and the failing one's is there with the trace.
(Before, every test kept its work: about a gigabyte a suite run, which
filled a CI disk.)  What this cannot catch: a test that writes outside
the directories fresh_dir() made.
"""
import os
import subprocess
import sys

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, here)
from mmrtest import check, finish, fresh_dir  # noqa: E402

work = sys.argv[1]
fresh_dir(work)
fixture = os.path.join(here, "data", "lttng-kernel-6.1-tdp-basic")
CHILD = """
import sys
sys.path.insert(0, %r)
from mmrtest import check, extract_fixture, finish, fresh_dir
w = fresh_dir(sys.argv[1])
extract_fixture(%r, w, private=True)
check(sys.argv[2] == "pass", "the child was told to fail")
finish()
""" % (here, fixture)
env = dict(os.environ)
env.pop("MMR_KEEP_WORK", None)
for outcome in ("pass", "fail"):
    d = os.path.join(work, outcome)
    r = subprocess.run([sys.executable, "-c", CHILD, d, outcome], env=env,
                       capture_output=True, text=True)
    check(r.returncode == (outcome == "fail"),
          "%s: exit %d: %s" % (outcome, r.returncode, r.stderr))
    kept = os.path.isdir(os.path.join(d, "trace"))
    check(kept == (outcome == "fail"),
          "a %sing test %s its work directory" %
          (outcome, "keeps" if kept else "removes"))
finish()
