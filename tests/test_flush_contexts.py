"""Flush contexts judged context by context, not by their total only.

usage: test_flush_contexts.py MMUREPLAY DATA_DIR WORK_DIR

On a patched 6.1 capture (NX recovery with the skip-dirty knob off; the
kernel series traces every remote TLB flush), the self-check passes.
Then the flushes are moved, keeping their total: the flushes of ten
recovery batches are deleted, and a flush is added to ten faults that
zapped nothing (each right after its fault, on its thread; the DB's
seqs are doubled first to make room, which keeps every order).  The
flush_contexts total is what it was, within its 10% tolerance, so the
old check passed this; now each such context is a flush_context
mismatch (a zap without its flush, a flush without a zap), twenty in
all, and the verdict fails.  What this cannot catch: a flush moved
between two contexts that both zap.

A recovery batch that zapped only tables NUMA hinting had emptied (patched
6.12 under NUMA balancing): the kernel flushes for every table it zaps
(kvm_tdp_mmu_zap_sp() returns true), so the batch's flush is predicted,
not a flush without a zap.
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


def fidelity(path):
    r = run([mmr, "fidelity", path, "--json"])
    return r.returncode, json.loads(r.stdout)


rc, fid = fidelity(db)
check(rc == 0 and fid["ok"] and fid["mismatches_total"] == 0,
      "the capture's own self-check: exit %d" % rc)
total = fid["observed"]["flush_contexts"]

moved = os.path.join(work, "moved.db")
shutil.copy(db, moved)
con = sqlite3.connect(moved)
tables = [t for (t,) in con.execute(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND sql LIKE "
    "'%seq INTEGER PRIMARY KEY%'")]
for t in tables:
    con.execute("UPDATE %s SET seq = -seq" % t)
    con.execute("UPDATE %s SET seq = -seq * 2" % t)
con.execute("UPDATE thread SET first_seq = first_seq * 2")

# Ten recovery batches that flushed: their flushes go.
batches = con.execute(
    "SELECT b.tid, b.seq, (SELECT min(e.seq) FROM nx_recovery e WHERE "
    "e.tid = b.tid AND e.phase = 1 AND e.seq > b.seq) FROM nx_recovery b "
    "WHERE b.phase = 0 ORDER BY b.seq").fetchall()
gone = 0
for tid, begin, end in batches:
    n = con.execute("SELECT count(*) FROM tlb_flush WHERE tid = ? AND "
                    "seq > ? AND seq < ?", (tid, begin, end)).fetchone()[0]
    if n and gone < 10:
        con.execute("DELETE FROM tlb_flush WHERE tid = ? AND seq > ? AND "
                    "seq < ?", (tid, begin, end))
        gone += 1
check(gone == 10, "batches with flushes: %d" % gone)

# Ten faults that zapped nothing (their next SPTE change on the thread
# installs) get a flush right after them.
added = 0
for seq, ts, cpu, tid in con.execute(
        "SELECT seq, ts, cpu, tid FROM fault ORDER BY seq").fetchall():
    nxt = con.execute(
        "SELECT old_spte & 2048, new_spte & 2048 FROM spte_change WHERE "
        "tid = ? AND seq > ? ORDER BY seq LIMIT 1", (tid, seq)).fetchone()
    if nxt and not nxt[0] and nxt[1] and added < 10:
        con.execute("INSERT INTO tlb_flush (seq, ts, cpu, tid, gfn_start, "
                    "pages, ranged) VALUES (?, ?, ?, ?, NULL, 0, 0)",
                    (seq + 1, ts, cpu, tid))
        added += 1
con.commit()
con.close()
check(added == 10, "faults given a flush: %d" % added)

rc, fid = fidelity(moved)
check(fid["observed"]["flush_contexts"] == total,
      "the total moved: %d, was %d" % (fid["observed"]["flush_contexts"],
                                       total))
check(fid["metric_ok"]["flush_contexts"],
      "the total is off its tolerance: the test would not show the "
      "per-context check")
check(rc == 6 and not fid["ok"] and
      fid.get("mismatches_by_kind", {}).get("flush_context") == 20,
      "moved flushes: exit %d, mismatches %s" %
      (rc, fid.get("mismatches_by_kind")))
kinds = {(m["predicted"], m["observed"]) for m in fid["mismatches"]
         if m["kind"] == "flush_context"}
check(kinds == {(1, 0), (0, 1)}, "both ways: %s" % kinds)

numa = ingest_fixture(mmr, os.path.join(
    data, "lttng-kernel-6.12.118-patched-nxrecovery-numa-balancing"),
    fresh_dir(os.path.join(work, "numa")))[1]
con = sqlite3.connect(numa)
empty = []
for tid, begin, end in con.execute(
        "SELECT b.tid, b.seq, (SELECT min(e.seq) FROM nx_recovery e WHERE "
        "e.tid = b.tid AND e.phase = 1 AND e.seq > b.seq) FROM nx_recovery b "
        "WHERE b.phase = 0 ORDER BY b.seq").fetchall():
    leaves, tables, flushes = con.execute(
        "SELECT (SELECT count(*) FROM spte_change WHERE tid = ?1 AND seq > ?2 "
        "AND seq < ?3 AND level = 1), (SELECT count(*) FROM spte_change "
        "WHERE tid = ?1 AND seq > ?2 AND seq < ?3 AND level = 2), "
        "(SELECT count(*) FROM tlb_flush WHERE tid = ?1 AND seq > ?2 AND "
        "seq < ?3)", (tid, begin, end)).fetchone()
    if tables and not leaves and flushes:
        empty.append(begin)
con.close()
check(empty, "a batch zapped only emptied tables, and flushed")
rc, fid = fidelity(numa)
check(rc == 0 and fid["ok"] and fid["mismatches_total"] == 0,
      "emptied tables' batches (seq %s): their flushes predicted (exit %d, "
      "%s)" % (empty, rc, fid.get("mismatches_by_kind")))
finish()
