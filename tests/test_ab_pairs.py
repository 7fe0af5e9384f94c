"""A/B pairs from the lab: one patched kernel, one workload, a policy knob
off (A) and on (B).

usage: test_ab_pairs.py MMUREPLAY DATA_DIR WORK_DIR

For each pair:
1. The traces differ the way the kernel change says they must (B zaps
   and flushes less; the knob's own events say it acted).
2. Each trace passes its self-check under the policy its manifest says
   it was recorded with.
3. The what-if of the knob's policy, replayed from A, predicts B's
   measured counts on every figure the knob changes, with a tolerance
   below the knob's effect |A - B| (so the baseline's answer fails it)
   and closer to B than the baseline: leaf zaps within 5% and within
   half the effect (nx-skip-dirty's whole effect is 0.5%), TLB flushes
   within 10% (or within 0.1% of A's count when B's is near zero),
   faults within 5% for perm-upgrade.  For nx-skip-dirty the faults are compared where the
   knob acts: the faults A took and B did not while dirty logging was on
   (between the memslot flag changes) against the faults the policy
   avoids, within 10%.  Whole-run faults are not compared: the faults
   after dirty logging stops vary from 431 to 1,206 between identical
   knob-off runs (bench/results/ab-variance-nx-skip-dirty.txt; this
   pair's 140-fault gap lies there).
   For nx-readlock: lock waits left after the read lock within 10% of
   A's waits, TLB flushes within 10% (one per page recovered under the
   read lock).  Not predicted: B took 3.7x the NPF faults of A (vCPU
   faults retry while the read-locked worker zaps; 2,005 to 3,731 in eight
   identical knob-on runs, bench/results/ab-variance-nx-readlock.txt);
   the replay says so ("not_modelled").

Also a pair on KVM's own nx_huge_pages_test per kernel (SELFTEST_PAIRS):
the nx-readlock what-if from A gives B's TLB flushes exactly.

The pairs are recorded on 6.1 and on 6.12 (on 6.12 with
nx_huge_pages_recovery_skip_dirty=N where another knob is tested, so that
only that knob departs from the baseline).  On 6.12 two targets do not
hold on the recorded pairs and are not checked (NOT_HELD, with the
figures): they are run-to-run spread, not the knob, on this pair.
"""
import json
import os
import sqlite3
import sys

from mmrtest import check, extract_fixture, finish, fresh_dir, run

mmr, data, work = sys.argv[1:4]
fresh_dir(work)
# The patched kernels the pairs were recorded on (tests/data names).
KERNELS = ["6.1.192", "6.12.117"]
# Targets that do not hold on a kernel's recorded pair, and why.
NOT_HELD = {
    ("6.12.117", "nxrecovery-skip-dirty TLB flushes"):
    "the knob's effect is 5 of 86 flushes (the 64 ranged flushes of "
    "the collapse when dirty logging stops dominate): no tolerance "
    "below it",
    ("6.12.117", "nxrecovery-readlock leaf zaps (unchanged)"):
    "33,970 from A against 33,461 in B (1.5%): the pages mapped at "
    "exit differ run to run (two fresh B runs: 32,950-33,968, "
    "bench/results/ab-variance-nx-readlock-6.12.txt)",
}
KVER = None
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


def not_held(what):
    why = NOT_HELD.get((KVER, what))
    if why:
        print("not checked on %s: %s (%s)" % (KVER, what, why))
    return why is not None


def near(pred, meas, tol, what):
    if not_held(what):
        return
    err = abs(pred - meas) / max(meas, 1)
    check(err <= tol, "%s: predicted %s, measured %s (%.1f%% > %.0f%%)"
          % (what, pred, meas, 100 * err, 100 * tol))


def effect(what, pred, base, meas, tol):
    """pred: the policy's prediction from A; base: the baseline's (A as
    traced); meas: B measured; tol: the absolute tolerance."""
    if not_held(what):
        return
    eff, err = abs(base - meas), abs(pred - meas)
    check(tol < eff, "%s: tolerance %.1f not below the knob's effect %.1f"
          % (what, tol, eff))
    check(err <= tol, "%s: predicted %s, measured %s (off by %.1f > %.1f)"
          % (what, pred, meas, err, tol))
    check(err < eff, "%s: the policy's prediction (%s) is no closer to B "
          "(%s) than the baseline's (%s)" % (what, pred, meas, base))


def effect_range(what, lo, hi, base, meas, tol):
    """effect() for a prediction that is a range [lo, hi]: its error is
    B's distance from the range (0 inside)."""
    pred = min(max(meas, lo), hi)
    print("%s: predicted %.1f-%.1f, measured %.1f, A %.1f"
          % (what, lo, hi, meas, base))
    effect(what, pred, base, meas, tol)


LEAF_ZAPS = ("SELECT count(*) FROM spte_change WHERE (old_spte & 2048) AND "
             "(level = 1 OR (old_spte & 128)) AND NOT (new_spte & 2048)")

def pair_check(kver, pair, policy):
    # The read-lock pair shares its A side (every knob off) with the
    # skip-dirty pair: same kernel, workload and arguments.
    a = ingest("lttng-kernel-%s-patched-%s-off" %
               (kver, "nxrecovery-skip-dirty" if policy == "nx-readlock"
                else pair))
    b = ingest("lttng-kernel-%s-patched-%s-on" % (kver, pair))

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

    if policy == "perm-upgrade":
        # The stock rule (every zapped leaf refaulted identical) scored
        # against the patched kernel's measured perm-upgrade flag, on the
        # windows that zapped: 4,141 upgrades and 1 restriction in A.
        ui = json.loads(run([mmr, "fidelity", a, "--json"]).stdout)[
            "upgrade_inference"]
        n = sum(ui[k] for k in ("true_positive", "false_positive",
                                "false_negative", "true_negative"))
        check(n > 4000 and ui["true_negative"] >= 1 and
              ui["precision"] == 1.0 and ui["recall"] >= 0.99,
              "stock upgrade inference vs the measured flag: %s" % ui)

    # 2. Self-check under the recorded policy (from the manifests' knobs).
    for db, want in ((a, "baseline"), (b, policy)):
        r = run([mmr, "fidelity", db, "--json"])
        f = json.loads(r.stdout)
        check(r.returncode == 0 and f["ok"] and f["policy"] == want and
              f["mismatches_total"] == 0,
              "%s: self-check under %s: %s" % (db, want, r.stdout[:400]))

    # 2b. A wrong recorded policy is caught for every knob: B replayed
    # as baseline, A as the knob's policy.  nx-readlock and
    # nx-skip-dirty through the patched kernel's own decisions (lock
    # mode, skipped page): policy_decision mismatches.
    for db, wrong in ((b, "baseline"), (a, policy)):
        r = run([mmr, "fidelity", db, "--json", "--recorded-policy", wrong])
        f = json.loads(r.stdout)
        kinds = set(m["kind"] for m in f["mismatches"])
        check(r.returncode == 6 and not f["ok"] and f["mismatches_total"] > 0
              and (policy == "perm-upgrade" or "policy_decision" in kinds
                   or (db == a and policy == "nx-skip-dirty")),
              "%s: under the wrong policy %s the self-check fails (%s)"
              % (os.path.basename(os.path.dirname(db)), wrong, kinds))

    # 3. Prediction from A against B's measurement, on what the knob
    # changes: the error must be smaller than the knob's effect (the
    # tolerance is below |A - B|, so the baseline's answer, A as traced,
    # fails it) and smaller than the baseline's error.
    r = run([mmr, "replay", a, "--json", "--policy", policy])
    check(r.returncode == 0, "%s: replay %s" % (pair, r.stderr))
    rep = json.loads(r.stdout)["policies"]
    p, base = rep[policy], rep["baseline"]
    if policy == "nx-readlock":
        # Not a knob effect: read-locked recovery zaps the same leaves.
        near(p["leaf_zaps"], zb, 0.01, pair + " leaf zaps (unchanged)")
        # Lock waits left after the read lock (A: 14.3 ms, B: 0).
        effect(pair + " lock wait ms", p["lock_wait_ms"],
               base["lock_wait_ms"], wb, 0.10 * wa)
        # A flush per page recovered under the read lock (260 vs 244;
        # A flushes once per lock hold: 175).
        effect(pair + " TLB flushes", p["tlb_flushes"], base["tlb_flushes"],
               fb, 0.10 * fb)
        return
    # nx-skip-dirty keeps 40 of 8,492 leaf zaps: 5% would pass anything.
    effect(pair + " leaf zaps", p["leaf_zaps"], base["leaf_zaps"], zb,
           min(0.05 * zb, 0.5 * abs(za - zb)))
    if fb < fa / 100:
        effect(pair + " TLB flushes", p["tlb_flushes"], base["tlb_flushes"],
               fb, fa / 1000)
    else:
        effect(pair + " TLB flushes", p["tlb_flushes"], base["tlb_flushes"],
               fb, 0.10 * fb)
    waits = "SELECT coalesce(sum(wait_ns), 0) / 1e6 FROM lock_wait"
    if policy == "perm-upgrade":
        nb = q(b, "SELECT count(*) FROM fault")
        effect(pair + " faults", p["faults"], base["faults"], nb, 0.05 * nb)
        # mmu_lock waits: the kept invalidations no longer hold the
        # write lock to zap and flush, only to decide.  When an
        # invalidation let the lock go no event says (after its flush's
        # IPIs, before its thread's next event), nor when a recorded
        # walk would have decided, so the prediction is a range: 6.1 A
        # 33.1 ms, B 8.9 ms, predicted 0.3-2.4 ms; 6.12 A 574.2 ms, B
        # 15.4 ms, predicted 22.6-74.5 ms.  The tolerance is a quarter
        # of A's: B's own waits vary by more than that run to run (6.1
        # run sets: 20.5-147.6 ms, bench/results/ab-lock-holds-
        # 2026-12-05.txt), and 6.8 ms of the 6.1 fixture B's are 10
        # waits that overlap no traced invalidation.
        effect_range(pair + " lock wait ms", p["lock_wait_min_ms"],
                     p["lock_wait_ms"], base["lock_wait_ms"], q(b, waits),
                     0.25 * q(a, waits))
    else:
        # The effect where the knob acts: faults taken while dirty
        # logging was on, A minus B, against the faults the policy avoids
        # (the baseline avoids none).
        phase = ("SELECT count(*) FROM fault WHERE seq > (SELECT min(seq) "
                 "FROM memslot WHERE change = 3) AND seq < (SELECT max(seq) "
                 "FROM memslot WHERE change = 3)")
        fa_dirty, fb_dirty = q(a, phase), q(b, phase)
        effect(pair + " faults avoided while dirty logging",
               p["faults_avoided"], base["faults_avoided"],
               fa_dirty - fb_dirty, 0.10 * (fa_dirty - fb_dirty))
        # mmu_lock waits where the knob acts (every wait it removes is
        # in the dirty-logging window): A 5.1 ms, B 0, predicted 0.2 ms.
        # Before dirty logging, where no policy differs, the pair's
        # waits differ 9.1 vs 3.7 ms: run-to-run spread, not the knob.
        dirty = waits + (" WHERE seq > (SELECT min(seq) FROM memslot WHERE "
                         "change = 3) AND seq < (SELECT max(seq) FROM "
                         "memslot WHERE change = 3)")
        wa_dirty, wb_dirty = q(a, dirty), q(b, dirty)
        effect(pair + " lock wait ms while dirty logging",
               wa_dirty - p["lock_wait_removed_ms"], wa_dirty, wb_dirty,
               0.10 * wa_dirty)


# KVM's own selftest nx_huge_pages_test with its wrapper's setup (three
# huge pages, two NX-split then recovered, period 100 ms), A/B on the
# read-lock knob, recorded after the model (capture/lab/ab-repeat.sh
# selftest-nx-readlock).  The vCPU sleeps while the worker recovers, so
# the knob changes only the flushes: one per recovered page under the
# read lock, one per lock hold under the write lock.  The what-if from A
# must give B's traced flush count exactly (5 of 5 what-ifs on each
# kernel did, bench/results/ab-selftest-nx-readlock-2026-12-03.txt).
SELFTEST_PAIRS = [
    ("lttng-kernel-6.1.192-patched-selftest-nx-huge-pages",
     "lttng-kernel-6.1.192-patched-selftest-nx-huge-pages-readlock-on"),
    ("lttng-kernel-6.12.118-patched-selftest-nx-huge-pages-readlock-off",
     "lttng-kernel-6.12.118-patched-selftest-nx-huge-pages-readlock-on")]


def selftest_pair(an, bn):
    a, b = ingest(an), ingest(bn)
    check(q(a, "SELECT count(*) FROM nx_recovery WHERE lock_mode = 0") > 0
          and q(b, "SELECT count(*) FROM nx_recovery WHERE lock_mode = 0")
          == 0 and q(b, "SELECT count(*) FROM nx_recovery WHERE phase = 2")
          == 2, "%s: B recovers its two pages under the read lock" % bn)
    for db, want in ((a, "baseline"), (b, "nx-readlock")):
        r = run([mmr, "fidelity", db, "--json"])
        f = json.loads(r.stdout)
        check(r.returncode == 0 and f["ok"] and f["policy"] == want,
              "%s: self-check under %s" % (db, want))
    fa = q(a, "SELECT count(*) FROM tlb_flush")
    fb = q(b, "SELECT count(*) FROM tlb_flush")
    r = run([mmr, "replay", a, "--json", "--policy", "nx-readlock"])
    check(r.returncode == 0, "%s: replay %s" % (an, r.stderr))
    rep = json.loads(r.stdout)["policies"]
    p, base = rep["nx-readlock"], rep["baseline"]
    check(base["tlb_flushes"] == fa and fa < fb and p["tlb_flushes"] == fb,
          "%s: flushes A %d, B %d, predicted %d from A's %d"
          % (bn, fa, fb, p["tlb_flushes"], base["tlb_flushes"]))
    check(p["leaf_zaps"] == base["leaf_zaps"] ==
          q(b, LEAF_ZAPS) == q(a, LEAF_ZAPS),
          "%s: the same leaf zaps on both sides and in the what-if" % bn)


for kver in KERNELS:
    KVER = kver
    for pair, policy in PAIRS:
        pair_check(kver, pair, policy)
for an, bn in SELFTEST_PAIRS:
    selftest_pair(an, bn)
finish()
