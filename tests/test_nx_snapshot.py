"""An NX recovery batch sized from a count read before the lock.

The fixture is a fresh knob-off lab capture (recorded after the replay's
rules were written) on which the self-check failed: the batch that
begins at seq 26405 is sized from a count of 4 NX-split pages and
recovers ceil(4 / 4) = 1, while the model held 5.  The kernel reads
nx_lpage_splits before it takes mmu_lock; a vCPU's exec fault made an
L1 table at gfn 0x0 (seq 26398) and accounted it while the worker
waited.  Checked:
  - the trace says so (the rows at those seqs, from the DB): the begin
    event's count, the end event's count (4 left after recovering 1:
    the split was accounted by then), the fault and its table;
  - the self-check passes, with exactly that batch settled by the
    trace and every figure exact;
  - with the nx_snapshot rule off (tests only), that very batch is the
    mismatch.

usage: test_nx_snapshot.py MMUREPLAY FIXTURE_DIR WORK_DIR
"""
import json
import sys

from mmrtest import check, db_rows, finish, fresh_dir, ingest_fixture, run

mmr, fixture, work = sys.argv[1:4]
fresh_dir(work)
trace, db = ingest_fixture(mmr, fixture, work)

b = db_rows(db, "SELECT seq, phase, pages, to_zap, zapped FROM nx_recovery "
                "WHERE seq IN (26405, 26411) ORDER BY seq")
check(b == [(26405, 0, 4, 1, None), (26411, 1, 4, 1, 1)],
      "the batch: begin with 4 pages, 1 to zap; end with 4 left: %s" % b)
f = db_rows(db, "SELECT tid, gpa >> 12, error_code & 0x10 FROM fault "
                "WHERE seq = 26394")
s = db_rows(db, "SELECT tid, gfn, role & 15 FROM sp_alloc WHERE seq = 26398")
check(f and s and f[0][0] == s[0][0] and f[0][1:] == (1, 0x10) and
      s[0][1:] == (0, 1),
      "seq 26394/26398: an exec fault on gfn 1 makes the L1 table at "
      "gfn 0 on the same thread: %s %s" % (f, s))
w = db_rows(db, "SELECT DISTINCT tid FROM nx_recovery")
check(len(w) == 1 and w[0][0] != f[0][0], "the worker is another thread")

r = run([mmr, "fidelity", db, "--json"])
fid = json.loads(r.stdout) if r.stdout else {}
check(r.returncode == 0 and fid.get("ok"), "self-check: %d %s"
      % (r.returncode, r.stderr))
check(fid.get("settled_by_trace", {}).get("recovery_batches") == 1,
      "one batch settled by the trace: %s" % fid.get("settled_by_trace"))
check(fid.get("observed") == fid.get("predicted"),
      "every figure exact: %s vs %s" % (fid.get("observed"),
                                        fid.get("predicted")))

r = run([mmr, "fidelity", db, "--json", "--rule-off", "nx_snapshot"])
off = json.loads(r.stdout) if r.stdout else {}
mm = [(m["kind"], m["seq"], m["predicted"], m["observed"])
      for m in off.get("mismatches", [])]
check(r.returncode == 6 and mm == [("recovery_batch", 26405, 2, 1)],
      "without the rule that very batch fails: %s" % mm)
check(off.get("settled_by_trace", {}).get("recovery_batches") == 0,
      "and nothing is settled")
finish()
