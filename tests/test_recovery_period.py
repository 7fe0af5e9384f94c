"""The manifest's NX recovery period, checked against the worker's wake-ups.

usage: test_recovery_period.py MMUREPLAY DATA_DIR WORK_DIR

The recovery worker sleeps a period of jiffies after its previous batch
returned (6.1 kvm_nx_lpage_recovery_worker(), 6.12's nx_huge_page_last);
the check allows a quarter of the period, since the lab's TCG guests run
jiffies unevenly against the trace clock (902 ms for 1000 seen on 6.12),
and a short gap right after a long one whose sum spans three quarters of
two periods (a catch-up: rule batch_catch_up, tests/test_rules_off.py).  On a patched 6.1 capture (period 1000 ms in its manifest, every
batch traced with its begin and end): the self-check passes; with the
manifest's period doubled it fails with a recovery_period mismatch for
every batch after the first (each began about a second after the one
before: the CLI's begin and end times give the gaps); with it halved it
still passes, as engine_nx.c says: a worker may wake late, so a
recorded period shorter than the real one cannot be told.
"""
import json
import os
import shutil
import sqlite3
import sys

from mmrtest import check, finish, fresh_dir, ingest_fixture, run

mmr, data, work = sys.argv[1:4]
fresh_dir(work)
db = ingest_fixture(mmr, os.path.join(
    data, "lttng-kernel-6.1.192-patched-nxrecovery-skip-dirty-off"), work)[1]


def with_period(ms):
    path = os.path.join(work, "period-%d.db" % ms)
    shutil.copy(db, path)
    con = sqlite3.connect(path)
    doc = json.loads(con.execute("SELECT value FROM meta WHERE key = "
                                 "'manifest'").fetchone()[0])
    doc["kvm"]["params"]["kvm.nx_huge_pages_recovery_period_ms"] = str(ms)
    con.execute("UPDATE meta SET value = ? WHERE key = 'manifest'",
                (json.dumps(doc),))
    con.commit()
    con.close()
    return path


def fidelity(path):
    r = run([mmr, "fidelity", path, "--json"])
    return r.returncode, json.loads(r.stdout)


# The gaps between traced batches, from the DB's begin and end events.
con = sqlite3.connect(db)
ev = con.execute("SELECT phase, ts FROM nx_recovery WHERE phase IN (0, 1) "
                 "ORDER BY seq").fetchall()
con.close()
begins = [ts for p, ts in ev if p == 0]
ends = [ts for p, ts in ev if p == 1]
gaps = [b - e for b, e in zip(begins[1:], ends)]
check(len(begins) > 5 and all(900e6 < g < 1100e6 for g in gaps),
      "the worker woke about a second after each batch: %s" % gaps)

rc, fid = fidelity(db)
check(rc == 0 and fid["ok"], "the recorded period (1000 ms): exit %d %s" %
      (rc, fid.get("mismatches_by_kind")))
rc, fid = fidelity(with_period(2000))
period = [m for m in fid["mismatches"] if m["kind"] == "recovery_period"]
check(rc == 6 and len(period) == len(begins) - 1 and
      all(m["predicted"] == 2000 and 900 < m["observed"] < 1100
          for m in period),
      "period doubled: exit %d, %s" % (rc, fid.get("mismatches_by_kind")))
rc, fid = fidelity(with_period(500))
check(rc == 0 and fid["ok"], "period halved (cannot be told): exit %d" % rc)
finish()
