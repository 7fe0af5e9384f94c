"""Captures the model does not reproduce yet still fail as said.

usage: test_pending.py MMUREPLAY PENDING_DIR WORK

Each capture under tests/data/pending/ (README.md there) is a real lab
capture the self-check fails on a kernel behaviour the model lacks.
Checked per capture: ingest succeeds, and the self-check fails (exit 6)
with exactly the mismatch kinds listed below; for a capture listed in
CUTS the whole capture passes and its late cut (mmrtest.late_cut(), as
test_late_cut makes it) fails so.  A capture that passes, or fails
another way, fails this test: then move it to tests/data/ (it passes)
or say what changed.
What this cannot catch: whether the mismatches are the ones the README
explains (their count and places may move).
"""
import json
import os
import sys

from mmrtest import check, finish, fresh_dir, ingest_fixture, late_cut, run

mmr, pending, work = sys.argv[1:4]
fresh_dir(work)
KINDS = {
}
# Whole captures that pass, whose late cut at share fails: (share,
# mismatch kinds).
CUTS = {
}
present = sorted(d for d in os.listdir(pending)
                 if os.path.exists(os.path.join(pending, d, "trace.tar.xz")))
check(present == sorted(set(KINDS) | set(CUTS)),
      "pending captures %s, listed %s" % (present,
                                          sorted(set(KINDS) | set(CUTS))))
for name in present:
    if name in CUTS:
        continue
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
for name in sorted(CUTS):
    if name not in present:
        continue
    share, want = CUTS[name]
    w = fresh_dir(os.path.join(work, name))
    trace, db = ingest_fixture(mmr, os.path.join(pending, name), w)
    r = run([mmr, "fidelity", db, "--json"])
    check(r.returncode == 0 and json.loads(r.stdout)["ok"],
          "%s: the whole capture passes (exit %d)" % (name, r.returncode))
    cut, k, n = late_cut(trace, share, os.path.join(w, "cut"))
    cdb = os.path.join(w, "cut.db")
    check(run([mmr, "ingest", "-q", cut, "-o", cdb]).returncode == 0,
          "%s: ingest the cut at %d s" % (name, k))
    r = run([mmr, "fidelity", cdb, "--json"])
    f = json.loads(r.stdout) if r.stdout else {"mismatches_by_kind": {}}
    kinds = {x for x, c in f["mismatches_by_kind"].items() if c}
    check(r.returncode == 6 and kinds == want,
          "%s: the cut at %d s still fails with %s (exit %d, kinds %s)"
          % (name, k, sorted(want), r.returncode, sorted(kinds)))
    print("%s: the cut at %d s fails as said: %s" % (name, k, {
        x: c for x, c in f["mismatches_by_kind"].items() if c}))
finish()
