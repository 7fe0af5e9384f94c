"""capture/lab/lock-cover.py on real lab captures: which traced waits
for mmu_lock a traced hold of the lock can explain.

usage: test_lock_cover.py MMUREPLAY REPO_TOP WORK_DIR

Checks:
1. the 6.1 perm-upgrade-on capture: the waits counted are the trace's
   kvm_mmu_fault_lock_wait events (466, as babeltrace2 counts them),
   and every one of them has both ends inside an invalidation or an
   ioctl of the saver's thread: none is listed;
2. the same DB with one wait moved past the capture's last event
   (nothing holds the lock there): that wait, and only it, is listed,
   with NONE at both ends;
3. the 6.12 capture of two VMs under one memcg limit: waits are listed
   that no span meets, and the longest of them is checked in SQL: no
   row of its VM from any other thread lies inside it (its holder is a
   writer the capture does not trace, or the lab host's delay);
4. a missing DB and a file that is not a DB: exit 2 and one line
   naming the file.
It cannot catch: a span taken too long (a holder's next event far
away makes its span cover waits it did not cause).
"""
import os
import shutil
import sqlite3
import sys

from mmrtest import check, finish, fresh_dir, ingest_fixture, run

mmr, top, work = sys.argv[1:4]
fresh_dir(work)
data = os.path.join(top, "tests", "data")
script = os.path.join(top, "capture", "lab", "lock-cover.py")
UPGRADE = "lttng-kernel-6.1.192-patched-bgsnapshot-perm-upgrade-on"
MEMCG = "lttng-kernel-6.12.118-patched-multivm-bgsnapshot-basic-numa-memcg"


def cover(*dbs):
    r = run([sys.executable, script, "--list", "1000"] + list(dbs))
    check(r.returncode == 0, "lock-cover.py %s: %s" % (dbs, r.stderr))
    return r.stdout


def listed(out):
    """{seq: (start kinds, end kinds)} of the waits listed."""
    res = {}
    for line in out.splitlines():
        f = line.split()
        if line.startswith("  seq "):
            res[int(f[1])] = (f[f.index("start:") + 1], f[f.index("end:") + 1])
    return res


# 1. Every wait of the upgrade capture is met.
_, db = ingest_fixture(mmr, os.path.join(data, UPGRADE),
                       fresh_dir(os.path.join(work, "upgrade")))
with sqlite3.connect(db) as c:
    traced = c.execute("SELECT count FROM raw_event WHERE name = "
                       "'kvm_mmu_fault_lock_wait'").fetchone()[0]
    last = c.execute("SELECT max(ts) FROM (SELECT ts FROM notifier UNION "
                     "ALL SELECT ts FROM syscall UNION ALL SELECT ts FROM "
                     "vcpu_entry)").fetchone()[0]
out = cover(db)
check(traced == 466, "the fixture traces 466 waits (%d)" % traced)
check("%d waits" % traced in out and "meets: 0," in out,
      "every wait met, none listed: %s" % out)

# 2. A wait moved to where nothing holds the lock is listed.
moved = os.path.join(work, "moved.db")
shutil.copy(db, moved)
with sqlite3.connect(moved) as c:
    seq = c.execute("SELECT min(seq) FROM lock_wait").fetchone()[0]
    c.execute("UPDATE lock_wait SET ts = ?, wait_ns = 1000 WHERE seq = ?",
              (last + 10**9, seq))
got = listed(cover(moved))
check(got == {seq: ("NONE", "NONE")},
      "the moved wait %d alone listed, NONE at both ends: %s" % (seq, got))

# 3. Under a memcg limit shared by two VMs, waits no traced hold meets.
_, db = ingest_fixture(mmr, os.path.join(data, MEMCG),
                       fresh_dir(os.path.join(work, "memcg")))
got = listed(cover(db))
with sqlite3.connect(db) as c:
    rows = {s: c.execute("SELECT ts - wait_ns, ts, wait_ns, tid, vm FROM "
                         "lock_wait WHERE seq = ?", (s,)).fetchone()
            for s in got}
    check(len(rows) > 1, "waits listed: %s" % rows)
    seq = max(rows, key=lambda s: rows[s][2])
    t0, t1, wait_ns, tid, vm = rows[seq]
    check(wait_ns > 5 * 10**6, "the longest lasted over 5 ms (%d)" % wait_ns)
    inside = sum(c.execute(
        "SELECT count(*) FROM %s WHERE vm = ? AND tid != ? AND ts "
        "BETWEEN ? AND ?" % t, (vm, tid, t0, t1)).fetchone()[0]
        for t in ("notifier", "nx_recovery", "syscall", "vcpu_exit",
                  "vcpu_entry", "spte_change", "tlb_flush"))
    check(vm is not None and inside == 0,
          "no row of VM %s from another thread inside wait %d (%d)" %
          (vm, seq, inside))

# 4. Bad input.
for bad in (os.path.join(work, "missing.db"), script):
    r = run([sys.executable, script, bad])
    check(r.returncode == 2 and bad in r.stderr and
          len(r.stderr.splitlines()) == 1,
          "%s: exit 2, one line naming it: %d %r" % (bad, r.returncode,
                                                      r.stderr))

finish()
