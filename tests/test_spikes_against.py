"""`mmureplay spikes A --against B`: each workload phase of A set against
the same phase of B, checked against the DB's tables directly.

  - the phases are the workload's marker ioctls (0x4d52NNNN on fd -1) in
    both DBs; per phase, the samples at or above the threshold, the
    phase's nearest-rank p99, the faults and the leaf zaps equal plain
    queries and a plain SPTE decode of each DB;
  - the threshold is --threshold-us, else A's p99 over all its samples;
  - on the perm-upgrade A/B pair (no probe samples), the kernel's rule
    shows: the snapshot phase's unprotects zap leaves in A and none in B
    (perm_upgrade_skip_zap=Y), the other phases alike;
  - its text table fits 72 columns.

usage: test_spikes_against.py MMUREPLAY DATA_DIR WORK_DIR
"""
import json
import math
import os
import sqlite3
import sys

from mmrtest import check, finish, fresh_dir, ingest_fixture, run

mmr, data, work = sys.argv[1:4]
fresh_dir(work)
PRESENT, LARGE = 1 << 11, 1 << 7         # NPT (the lab's SVM)


def ingest(name):
    return ingest_fixture(mmr, os.path.join(data, name),
                          os.path.join(work, name))[1]


def expected(db, thr):
    """{phase: (at_least, p99_ns, faults, leaf_zaps)} from the tables."""
    con = sqlite3.connect(db)
    q = lambda sql, *a: con.execute(sql, a).fetchall()
    last = q("SELECT value FROM meta WHERE key = 'last_ts'")[0][0]
    marks = q("SELECT s.ts, s.a1 & 65535 FROM syscall s JOIN raw_event r "
              "ON r.id = s.raw_id WHERE r.name IN ('syscall_entry_ioctl', "
              "'syscalls:sys_enter_ioctl') AND (s.a0 = 4294967295 OR s.a0 "
              "= -1) AND (s.a1 & 4294901760) = 1297219584 ORDER BY s.seq")
    bounds = [(0, 0)] + [(n, ts) for ts, n in marks]
    out = {}
    for i, (n, lo) in enumerate(bounds):
        hi = bounds[i + 1][1] if i + 1 < len(bounds) else int(last) + 1
        ns = sorted(r[0] for r in q("SELECT ns FROM latency_sample WHERE "
                                    "ts >= ? AND ts < ?", lo, hi))
        p99 = ns[max(1, math.ceil(0.99 * len(ns) - 1e-9)) - 1] if ns else 0
        zaps = 0
        for old, new, lvl in q("SELECT old_spte, new_spte, level FROM "
                               "spte_change WHERE ts >= ? AND ts < ?",
                               lo, hi):
            old &= (1 << 64) - 1
            new &= (1 << 64) - 1
            leaf = lvl == 1 or bool(old & LARGE)
            zaps += bool(old & PRESENT) and leaf and not new & PRESENT
        out[n] = (sum(v >= thr for v in ns), p99,
                  q("SELECT count(*) FROM fault WHERE ts >= ? AND ts < ?",
                    lo, hi)[0][0], zaps)
    con.close()
    return out


def check_against(a, b, thr_us, what):
    args = [mmr, "spikes", a, "--against", b, "--json"]
    if thr_us:
        args += ["--threshold-us", str(thr_us)]
    r = run(args)
    check(r.returncode == 0, "%s: spikes --against: %s" % (what, r.stderr))
    doc = json.loads(r.stdout)["against"]
    thr = doc["threshold_ns"]
    if thr_us:
        check(thr == thr_us * 1000, "%s: threshold %s" % (what, thr))
    else:
        ns = sorted(v for (v,) in sqlite3.connect(a).execute(
            "SELECT ns FROM latency_sample"))
        want = ns[max(1, math.ceil(0.99 * len(ns) - 1e-9)) - 1] if ns else 0
        check(thr == want, "%s: threshold %s, A's p99 %s" % (what, thr,
                                                              want))
    ea, eb = expected(a, thr), expected(b, thr)
    got = {p["phase"]: p for p in doc["phases"]}
    check(sorted(got) == sorted(ea), "%s: phases %s, want %s"
          % (what, sorted(got), sorted(ea)))
    for n, (al, p99, f, z) in ea.items():
        pa, pb = got.get(n, {}).get("a", {}), got.get(n, {}).get("b") or {}
        check((pa.get("at_least"), pa.get("p99_ns"), pa.get("faults"),
               pa.get("leaf_zaps")) == (al, p99, f, z),
              "%s phase %d A: %s, want %s" % (what, n, pa, (al, p99, f, z)))
        if n in eb:
            check((pb.get("at_least"), pb.get("p99_ns"), pb.get("faults"),
                   pb.get("leaf_zaps")) == eb[n],
                  "%s phase %d B: %s, want %s" % (what, n, pb, eb[n]))
    r = run(args[:5] + (["--threshold-us", str(thr_us)] if thr_us else []))
    table = r.stdout.split("\nAgainst ", 1)[-1].splitlines()[1:]
    long_lines = [ln for ln in table if len(ln) > 72]
    check(not long_lines, "%s: text over 72 columns: %r" % (what, long_lines))
    return got


lp = ingest("lttng-kernel-6.1.192-patched-bgsnapshot-latprobe")
check_against(lp, lp, 0, "latprobe against itself")
check_against(lp, lp, 5000, "latprobe, 5 ms")
a = ingest("lttng-kernel-6.1.192-patched-bgsnapshot-perm-upgrade-off")
b = ingest("lttng-kernel-6.1.192-patched-bgsnapshot-perm-upgrade-on")
got = check_against(a, b, 0, "perm-upgrade pair")
# The snapshot phase (its unprotects): A zaps, B skips every upgrade.
snap = [n for n, p in got.items()
        if p["a"]["leaf_zaps"] and p["b"] and p["b"]["leaf_zaps"] == 0]
check(len(snap) == 1, "one phase where A zaps and B does not: %s" % snap)
finish()
