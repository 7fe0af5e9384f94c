"""`mmureplay spikes` against a plain re-implementation over the DB's
canonical tables (themselves checked against the babeltrace2 CLI by the
ingest tests) on a real kernel + UST capture.

usage: test_spikes.py MMUREPLAY FIXTURE_DIR WORK_DIR

The re-implementation follows the definitions of metrics/spikes.h with
linear scans instead of the tool's seq bisection: thresholds = each
probe phase's nearest-rank p99; a window = [sample ts - latency - 200 us,
the sample); activities as named there; every k-th non-spike sample
(k = samples // 1000 + 1) as the baseline.  Every count and the largest
spikes (seq, latency, activities) must be equal, in the JSON, and the
text table must show the same percentages.  A --threshold-us run is
checked the same way.  A capture without samples says so (exit 0).
"""
import bisect
import json
import math
import os
import sqlite3
import sys

from mmrtest import check, extract_fixture, finish, fresh_dir, run

mmr, fixture, work = sys.argv[1:4]
fresh_dir(work)
trace = extract_fixture(fixture, work)
db = os.path.join(work, "capture.db")
check(run([mmr, "ingest", trace, "-o", db, "-q"]).returncode == 0,
      "ingest")
con = sqlite3.connect(db)
q = lambda sql: con.execute(sql).fetchall()
PRESENT, LARGE = 1 << 11, 1 << 7         # NPT, the lab's SVM
SLACK = 200000
NAMES = ["npf_page", "zap_page", "invalidate", "nx_recovery", "lock_wait",
         "tlb_flush"]

samples = q("SELECT seq, ts, probe, ns, gfn FROM latency_sample ORDER BY seq")
if not samples:         # a kernel-only capture: said, not an error
    r = run([mmr, "spikes", db])
    check(r.returncode == 0 and "No mmureplay:latency_sample events" in
          r.stdout, "no samples: %d %s" % (r.returncode, r.stdout))
    r = run([mmr, "spikes", db, "--json"])
    check(json.loads(r.stdout)["spikes"] == 0, "no spikes in JSON")
    finish()
workers = {t for (t,) in q("SELECT tid FROM thread WHERE procname LIKE "
                           "'kvm-nx-lpage%' UNION SELECT tid FROM "
                           "nx_recovery WHERE tid IS NOT NULL")}
tables = {
    "fault": q("SELECT seq, ts, gpa >> 12 FROM fault ORDER BY seq"),
    "spte": q("SELECT seq, ts, gfn, level, old_spte, new_spte FROM "
              "spte_change ORDER BY seq"),
    "notifier": q("SELECT seq, ts FROM notifier WHERE phase = 0 ORDER BY "
                  "seq"),
    "nx": q("SELECT seq, ts FROM nx_recovery ORDER BY seq"),
    "spfree": q("SELECT seq, ts, tid FROM sp_free ORDER BY seq"),
    "lock": q("SELECT seq, ts FROM lock_wait ORDER BY seq"),
    "flush": q("SELECT seq, ts FROM tlb_flush ORDER BY seq"),
}
ts_of = {k: [r[1] for r in v] for k, v in tables.items()}


def rows(name, t0, seq1):
    i = bisect.bisect_left(ts_of[name], t0)
    return [r for r in tables[name][i:] if r[0] < seq1]


def u64(v):
    return v & (1 << 64) - 1


def activity(ts, ns, seq, gfn):
    t0 = ts - ns - SLACK
    a = set()
    if any(r[2] == gfn for r in rows("fault", t0, seq)):
        a.add("npf_page")
    for _, _, g, lvl, old, new in rows("spte", t0, seq):
        span = 512 ** (lvl - 1)
        if lvl <= 3 and g == gfn - gfn % span and u64(old) & PRESENT and \
                (lvl == 1 or u64(old) & LARGE) and not u64(new) & PRESENT:
            a.add("zap_page")
    if rows("notifier", t0, seq):
        a.add("invalidate")
    if rows("nx", t0, seq) or any(r[2] in workers
                                  for r in rows("spfree", t0, seq)):
        a.add("nx_recovery")
    if rows("lock", t0, seq):
        a.add("lock_wait")
    if rows("flush", t0, seq):
        a.add("tlb_flush")
    return a


def expect(threshold_ns, top):
    by_probe = {}
    for s in samples:
        by_probe.setdefault(s[2], []).append(s[3])
    p99 = {}
    for p, v in by_probe.items():
        v.sort()
        p99[p] = v[max(1, math.ceil(0.99 * len(v) - 1e-9)) - 1]
    stride = len(samples) // 1000 + 1
    spk = {"n": 0, "none": 0, **{n: 0 for n in NAMES}}
    oth = {"n": 0, "none": 0, **{n: 0 for n in NAMES}}
    big, others = [], 0
    for seq, ts, probe, ns, gfn in samples:
        thr = threshold_ns or p99[probe]
        if ns < thr:
            others += 1
            if (others - 1) % stride:
                continue
            d = oth
        else:
            d = spk
        a = activity(ts, ns, seq, gfn)
        d["n"] += 1
        d["none"] += not a
        for n in a:
            d[n] += 1
        if d is spk:
            big.append((-ns, seq, sorted(a, key=NAMES.index)))
    big.sort()
    return spk, oth, [(seq, -n, a) for n, seq, a in big[:top]]


for args, thr in (([], 0), (["--threshold-us", "5000"], 5000000)):
    r = run([mmr, "spikes", db, "--json", "--top", "20"] + args)
    check(r.returncode == 0, "spikes %s: %s" % (args, r.stderr))
    got = json.loads(r.stdout)
    spk, oth, top = expect(thr, 20)
    check(got["samples"] == len(samples) and got["spikes"] == spk["n"] > 0,
          "%s: %d spikes of %d, want %d" % (args, got["spikes"],
                                             got["samples"], spk["n"]))
    check(got["spike_activity"] == spk, "%s: spike activity %s, want %s"
          % (args, got["spike_activity"], spk))
    check(got["other_activity"] == oth, "%s: other activity %s, want %s"
          % (args, got["other_activity"], oth))
    check([(t["seq"], t["ns"], t["activity"]) for t in got["top"]] == top,
          "%s: largest spikes differ" % args)

text = run([mmr, "spikes", db]).stdout
spk, oth, _ = expect(0, 10)
row = "  %-26s %8.1f%% %8.1f%%" % ("npf_page", 100.0 * spk["npf_page"] /
                                   spk["n"], 100.0 * oth["npf_page"] /
                                   oth["n"])
check(row in text.splitlines(), "text row %r in\n%s" % (row, text))
check(any(spk[n] for n in NAMES), "the spikes saw some MMU activity")
finish()
