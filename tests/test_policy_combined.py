"""A capture recorded with two knobs on, checked under their combination.

The fixture is a patched 6.12 lab run with the read-lock knob on and
nx_huge_pages_recovery_skip_dirty at its default (on: skipping is
6.12's stock behaviour), recorded after the model's rules were written:
what a 6.12 host running the series with one knob turned on records.
Checked:
  - the trace shows both knobs acting: recovery under the read lock,
    and dirty-logged pages skipped;
  - `fidelity` picks the combination nx-skip-dirty+nx-readlock from the
    manifest and passes with every figure exact (before, it refused:
    "several policy knobs were on");
  - under either knob alone the kernel's own decisions fail the check
    (policy_decision);
  - the memslot swap (rule slot_swap): KVM_SET_USER_MEMORY_REGION turning
    dirty logging on enters at seq 21115, its memslot event is traced at
    the commit, seq 29595, after the read-locked batch that held SRCU
    (seq 21128-29594); with the rule off, the exec faults in between
    count as NX splits and the batch sizes fail (recovery_batch);
  - `replay` gives the combination's what-if with the others.

usage: test_policy_combined.py MMUREPLAY FIXTURE_DIR WORK_DIR
"""
import collections
import json
import sys

from mmrtest import check, db_rows, finish, fresh_dir, ingest_fixture, run

COMBO = "nx-skip-dirty+nx-readlock"
SET_REGION = 0x4020ae46

mmr, fixture, work = sys.argv[1:4]
fresh_dir(work)
trace, db = ingest_fixture(mmr, fixture, work)


def fidelity(*args):
    r = run([mmr, "fidelity", db, "--json"] + list(args))
    f = json.loads(r.stdout) if r.stdout else {}
    return r.returncode, f, collections.Counter(
        m["kind"] for m in f.get("mismatches", []))


acts = dict(((m, a), n) for m, a, n in db_rows(
    db, "SELECT lock_mode, action, count(*) FROM nx_recovery WHERE "
        "phase = 2 GROUP BY 1, 2"))
check(acts.get((1, 0), 0) > 0 and acts.get((1, 1), 0) > 0 and
      not any(m == 0 for m, _ in acts),
      "read-locked recovery, some pages zapped, some skipped: %s" % acts)
sr = db_rows(db, "SELECT s.seq, s.tid FROM syscall s JOIN raw_event r ON "
                 "r.id = s.raw_id WHERE r.name = 'syscall_entry_ioctl' AND "
                 "s.a1 = %d ORDER BY s.seq" % SET_REGION)
ms = db_rows(db, "SELECT seq, tid, dirty_logging FROM memslot ORDER BY seq")
check((21115, ms[1][1]) in sr and ms[1][0] == 29595 and ms[1][2] == 1,
      "dirty logging on: ioctl at 21115, memslot event at 29595: %s %s"
      % (sr, ms))
b = db_rows(db, "SELECT min(seq), max(seq) FROM nx_recovery WHERE seq "
                "BETWEEN 21115 AND 29595 AND phase IN (0, 1)")
check(b == [(21128, 29594)], "the batch in between: %s" % b)

rc, f, kinds = fidelity()
check(rc == 0 and f.get("ok") and f.get("policy") == COMBO and not kinds,
      "self-check under %s: exit %d, %s, %s" % (COMBO, rc, f.get("policy"),
                                                dict(kinds)))
check(f.get("observed") == f.get("predicted"),
      "every figure exact: %s vs %s" % (f.get("observed"),
                                        f.get("predicted")))
for alone in ("nx-readlock", "nx-skip-dirty"):
    rc, f, kinds = fidelity("--recorded-policy", alone)
    check(rc == 6 and kinds.get("policy_decision", 0) > 0,
          "%s alone fails on the kernel's decisions: %s" % (alone,
                                                            dict(kinds)))
rc, f, kinds = fidelity("--rule-off", "slot_swap")
check(rc == 6 and kinds.get("recovery_batch", 0) > 0,
      "slot_swap off: the batches fail: %s" % dict(kinds))

r = run([mmr, "replay", db, "--json"])
rep = json.loads(r.stdout) if r.stdout else {}
pols = list(rep.get("policies", {}))
check(r.returncode == 0 and pols[:1] == [COMBO] and "baseline" in pols,
      "replay: the combination first, then the others: %s" % pols)
finish()
