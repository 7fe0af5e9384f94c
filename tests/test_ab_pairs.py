"""A/B pairs from the lab: one patched kernel, one workload, a policy knob
off (A) and on (B).

usage: test_ab_pairs.py MMUREPLAY DATA_DIR WORK_DIR

For each pair:
1. The traces differ the way the kernel change says they must (B zaps
   and flushes less; the knob's own events say it acted).
2. Each trace passes its self-check under the policy its manifest says
   it was recorded with.
3. The what-if of the knob's policy, replayed from A, predicts B's
   measured counts: leaf zaps within 5%, TLB flushes within 10% (or
   within 0.1% of A's count when B's is near zero), faults within 5% for
   perm-upgrade.  For nx-skip-dirty the faults are compared where the
   knob acts: the faults A took and B did not while dirty logging was on
   (between the memslot flag changes) against the faults the policy
   avoids, within 10%.  Whole-run faults are not compared: the faults
   after dirty logging stops vary from 251 to 1,327 between identical
   knob-off runs (bench/results/ab-variance-nx-skip-dirty.txt; this
   pair's 140-fault gap lies there).
   For nx-readlock: lock waits left after the read lock within 10% of
   A's waits, TLB flushes within 10% (one per page recovered under the
   read lock).  Not predicted: B took 3.7x the NPF faults of A (vCPU
   faults retry while the read-locked worker zaps; 975 to 4,140 in three
   identical knob-on runs, bench/results/ab-variance-nx-readlock.txt);
   the replay says so ("not_modelled").
"""
import json
import os
import sqlite3
import sys

from mmrtest import check, extract_fixture, finish, fresh_dir, run

mmr, data, work = sys.argv[1:4]
fresh_dir(work)
PAIRS = [("bgsnapshot-perm-upgrade", "perm-upgrade"),
         ("nxrecovery-skip-dirty", "nx-skip-dirty"),
         ("nxrecovery-readlock", "nx-readlock")]


def ingest(name):
    w = fresh_dir(os.path.join(work, name))
    trace = extract_fixture(os.path.join(data, name), w)
    db = os.path.join(w, "capture.db")
    r = run([mmr, "ingest", trace, "-o", db, "-q"])
    check(r.returncode == 0, "%s: ingest %s" % (name, r.stderr))
    return db


def q(db, sql):
    con = sqlite3.connect(db)
    try:
        return con.execute(sql).fetchone()[0]
    finally:
        con.close()


def near(pred, meas, tol, what):
    err = abs(pred - meas) / max(meas, 1)
    check(err <= tol, "%s: predicted %s, measured %s (%.1f%% > %.0f%%)"
          % (what, pred, meas, 100 * err, 100 * tol))


LEAF_ZAPS = ("SELECT count(*) FROM spte_change WHERE (old_spte & 2048) AND "
             "(level = 1 OR (old_spte & 128)) AND NOT (new_spte & 2048)")

for pair, policy in PAIRS:
    # The read-lock pair shares its A side (every knob off) with the
    # skip-dirty pair: same kernel, workload and arguments.
    a = ingest("lttng-kernel-6.1.192-patched-%s-off" %
               ("nxrecovery-skip-dirty" if policy == "nx-readlock" else pair))
    b = ingest("lttng-kernel-6.1.192-patched-%s-on" % pair)

    # 1. What the knob does shows in the traces themselves.
    za, zb = q(a, LEAF_ZAPS), q(b, LEAF_ZAPS)
    fa, fb = q(a, "SELECT count(*) FROM tlb_flush"), \
        q(b, "SELECT count(*) FROM tlb_flush")
    if policy == "nx-readlock":
        waits = "SELECT coalesce(sum(wait_ns), 0) / 1e6 FROM lock_wait"
        wa, wb = q(a, waits), q(b, waits)
        check(q(a, "SELECT count(*) FROM nx_recovery WHERE lock_mode = 0")
              > 0 and q(b, "SELECT count(*) FROM nx_recovery WHERE "
                        "lock_mode = 0") == 0 and wb < wa,
              "nx-readlock: B recovers under the read lock, waits less "
              "(%.1f < %.1f ms)" % (wb, wa))
    else:
        check(zb < za and fb < fa, "%s: B zaps and flushes less (%d<%d, "
              "%d<%d)" % (pair, zb, za, fb, fa))
    if policy == "nx-readlock":
        pass
    elif policy == "perm-upgrade":
        check(q(a, "SELECT count(*) FROM unmap_decision WHERE decision = 1")
              == 0 and q(b, "SELECT count(*) FROM unmap_decision WHERE "
                         "decision = 1 AND perm_upgrade = 1") > 1000,
              "perm-upgrade: B skips the upgrade unmaps, A none")
    else:
        check(q(a, "SELECT count(*) FROM nx_recovery WHERE action = 1") == 0
              and q(b, "SELECT count(*) FROM nx_recovery WHERE action = 1")
              > 0, "nx-skip-dirty: B skips dirty-logged pages, A none")

    # 2. Self-check under the recorded policy (from the manifests' knobs).
    for db, want in ((a, "baseline"), (b, policy)):
        r = run([mmr, "fidelity", db, "--json"])
        f = json.loads(r.stdout)
        check(r.returncode == 0 and f["ok"] and f["policy"] == want and
              f["mismatches_total"] == 0,
              "%s: self-check under %s: %s" % (db, want, r.stdout[:400]))

    # 3. Prediction from A against B's measurement.
    r = run([mmr, "replay", a, "--json", "--policy", policy])
    check(r.returncode == 0, "%s: replay %s" % (pair, r.stderr))
    p = json.loads(r.stdout)["policies"][policy]
    near(p["leaf_zaps"], zb, 0.05, pair + " leaf zaps")
    if policy == "nx-readlock":
        # Lock waits left after the read lock, against A's total.
        check(abs(p["lock_wait_ms"] - wb) <= 0.10 * wa,
              "nx-readlock waits: predicted %.2f ms, measured %.2f ms (A: "
              "%.2f ms)" % (p["lock_wait_ms"], wb, wa))
        # A flush per page recovered under the read lock (260 vs 244).
        near(p["tlb_flushes"], fb, 0.10, pair + " TLB flushes")
        continue
    if fb < fa / 100:
        check(abs(p["tlb_flushes"] - fb) <= fa / 1000,
              "%s flushes: predicted %s, measured %s" % (pair,
                                                         p["tlb_flushes"], fb))
    else:
        near(p["tlb_flushes"], fb, 0.10, pair + " TLB flushes")
    if policy == "perm-upgrade":
        near(p["faults"], q(b, "SELECT count(*) FROM fault"), 0.05,
             pair + " faults")
    else:
        # The effect where the knob acts: faults taken while dirty
        # logging was on, A minus B, against the faults the policy avoids.
        phase = ("SELECT count(*) FROM fault WHERE seq > (SELECT min(seq) "
                 "FROM memslot WHERE change = 3) AND seq < (SELECT max(seq) "
                 "FROM memslot WHERE change = 3)")
        fa_dirty, fb_dirty = q(a, phase), q(b, phase)
        near(p["faults_avoided"], fa_dirty - fb_dirty, 0.10,
             pair + " faults avoided while dirty logging")
finish()
