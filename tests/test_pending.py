"""Captures the model does not reproduce yet still fail as said.

usage: test_pending.py MMUREPLAY PENDING_DIR WORK

Each capture under tests/data/pending/ (README.md there) is a real lab
capture the self-check fails on a kernel behaviour the model lacks.
Checked per capture: ingest succeeds, and the self-check fails (exit 6)
with exactly the mismatch kinds listed below.  A capture that passes, or
fails another way, fails this test: then move it to tests/data/ (it
passes) or say what changed.
What this cannot catch: whether the mismatches are the ones the README
explains (their count and places may move).
"""
import json
import os
import sys

from mmrtest import check, finish, fresh_dir, ingest_fixture, run

mmr, pending, work = sys.argv[1:4]
fresh_dir(work)
KINDS = {
}
present = sorted(d for d in os.listdir(pending)
                 if os.path.exists(os.path.join(pending, d, "trace.tar.xz")))
check(present == sorted(KINDS), "pending captures %s, listed %s"
      % (present, sorted(KINDS)))
for name in present:
    w = fresh_dir(os.path.join(work, name))
    _, db = ingest_fixture(mmr, os.path.join(pending, name), w)
    r = run([mmr, "fidelity", db, "--json"])
    f = json.loads(r.stdout)
    kinds = {k for k, n in f["mismatches_by_kind"].items() if n}
    check(r.returncode == 6 and not f["ok"] and kinds == KINDS[name],
          "%s: still fails with %s (exit %d, kinds %s)"
          % (name, sorted(KINDS[name]), r.returncode, sorted(kinds)))
    print("%s: fails as said: %s" % (name, {k: n for k, n in
          f["mismatches_by_kind"].items() if n}))
finish()
