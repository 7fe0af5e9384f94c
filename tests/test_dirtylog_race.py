"""A write fault raced by KVM_GET_DIRTY_LOG's write-protection.

The fixture is a fresh knob-off lab capture (recorded after the replay's
rules were written) on which the self-check failed: at seq 31542 a vCPU
write-faults on gfn 0x0 whose leaf the trace still shows writable; the
VMM thread is inside KVM_GET_DIRTY_LOG (entered at seq 31538) and its
write-protection of gfn 0x0 is traced at seq 31545.  Checked:
  - the trace says so (the rows at those seqs, from the DB);
  - the self-check passes, with exactly that fault explained by the
    dirty_log_ioctl exemption and every figure exact;
  - with the late-change rule off (tests only), that very fault is the
    mismatch: the exemption is what explains it.

usage: test_dirtylog_race.py MMUREPLAY FIXTURE_DIR WORK_DIR
"""
import json
import sys

from mmrtest import check, db_rows, finish, fresh_dir, ingest_fixture, run

mmr, fixture, work = sys.argv[1:4]
fresh_dir(work)
trace, db = ingest_fixture(mmr, fixture, work)

GET_DIRTY_LOG = 0x4010ae42
rows = db_rows(db, "SELECT s.seq, r.name, s.a1 FROM syscall s JOIN raw_event "
                   "r ON r.id = s.raw_id WHERE s.seq = 31538")
check(rows and rows[0][1] == "syscall_entry_ioctl" and
      rows[0][2] == GET_DIRTY_LOG, "seq 31538: KVM_GET_DIRTY_LOG: %s" % rows)
f = db_rows(db, "SELECT gpa >> 12, error_code & 2 FROM fault "
                "WHERE seq = 31542")
check(f == [(0, 2)], "seq 31542: a write fault on gfn 0: %s" % f)
z = db_rows(db, "SELECT gfn FROM spte_change WHERE seq = 31545")
check(z == [(0,)], "seq 31545: gfn 0 changed: %s" % z)

r = run([mmr, "fidelity", db, "--json"])
fid = json.loads(r.stdout) if r.stdout else {}
check(r.returncode == 0 and fid.get("ok"), "self-check: %d %s"
      % (r.returncode, r.stderr))
check(fid.get("exempt", {}).get("dirty_log_ioctl") == 1 and
      sum(fid.get("exempt", {}).values()) == 1,
      "one fault explained, by the dirty-log ioctl: %s" % fid.get("exempt"))
check(fid.get("observed") == fid.get("predicted"),
      "every figure exact: %s vs %s" % (fid.get("observed"),
                                        fid.get("predicted")))

r = run([mmr, "fidelity", db, "--json", "--rule-off", "late_change"])
off = json.loads(r.stdout) if r.stdout else {}
mm = [(m["kind"], m["seq"]) for m in off.get("mismatches", [])]
check(r.returncode == 6 and ("fault_not_required", 31542) in mm,
      "without the rule that very fault fails: %s" % mm)
finish()
