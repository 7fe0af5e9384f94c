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
Per VM (a capture of several VMs, each sample's VM that of its
thread's process in table vm): each VM's samples, spikes, nearest-rank
p99 and maximum, the rows summing to the host's, each top spike's VM,
the text's row per VM, and --vm N giving that VM's row alone.  On a
capture of run.sh multi the lab's record says each VM's pid: the samples
of each VM's row are babeltrace2's mmureplay:latency_sample events of
that process's threads (their vtid; the kernel trace names each
thread's process).
"""
import bisect
import collections
import json
import math
import os
import sqlite3
import sys

from mmrtest import bt_events, check, extract_fixture, finish, fresh_dir, run

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
# A sample's VM: that of its thread's process (table thread's pid, table
# vm's pid; a process with one VM here), not the row's own vm column.
vm_of_pid = {}
for vid, pid in q("SELECT id, pid FROM vm"):
    vm_of_pid.setdefault(pid, []).append(vid)
pid_of = dict(q("SELECT tid, pid FROM thread WHERE pid IS NOT NULL"))
tid_of = dict(q("SELECT seq, tid FROM latency_sample"))


def sample_vm(seq):
    vms = vm_of_pid.get(pid_of.get(tid_of[seq]), [])
    return vms[0] if len(vms) == 1 else None
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
# Each row's VM last (its vm column: the activity a sample of a VM sees
# is its VM's and that of no VM's threads).
tables = {
    "fault": q("SELECT seq, ts, gpa >> 12, vm FROM fault ORDER BY seq"),
    "spte": q("SELECT seq, ts, gfn, level, old_spte, new_spte, vm FROM "
              "spte_change ORDER BY seq"),
    "notifier": q("SELECT seq, ts, vm FROM notifier WHERE phase = 0 ORDER "
                  "BY seq"),
    "nx": q("SELECT seq, ts, vm FROM nx_recovery ORDER BY seq"),
    "spfree": q("SELECT seq, ts, tid, vm FROM sp_free ORDER BY seq"),
    "lock": q("SELECT seq, ts, vm FROM lock_wait ORDER BY seq"),
    "flush": q("SELECT seq, ts, vm FROM tlb_flush ORDER BY seq"),
}
ts_of = {k: [r[1] for r in v] for k, v in tables.items()}


def rows(name, t0, seq1, vm=None):
    i = bisect.bisect_left(ts_of[name], t0)
    return [r for r in tables[name][i:] if r[0] < seq1 and
            (vm is None or r[-1] in (vm, None))]


def u64(v):
    return v & (1 << 64) - 1


def activity(ts, ns, seq, gfn):
    t0 = ts - ns - SLACK
    a = set()
    vm = sample_vm(seq)

    def of_vm(name, t0, seq1):
        return rows(name, t0, seq1, vm)
    if any(r[2] == gfn for r in of_vm("fault", t0, seq)):
        a.add("npf_page")
    for _, _, g, lvl, old, new, _ in of_vm("spte", t0, seq):
        span = 512 ** (lvl - 1)
        if lvl <= 3 and g == gfn - gfn % span and u64(old) & PRESENT and \
                (lvl == 1 or u64(old) & LARGE) and not u64(new) & PRESENT:
            a.add("zap_page")
    if of_vm("notifier", t0, seq):
        a.add("invalidate")
    if of_vm("nx", t0, seq) or any(r[2] in workers
                                  for r in of_vm("spfree", t0, seq)):
        a.add("nx_recovery")
    if of_vm("lock", t0, seq):
        a.add("lock_wait")
    if of_vm("flush", t0, seq):
        a.add("tlb_flush")
    return a


def nearest_rank(v, p):
    """The nearest-rank percentile p of the sorted list v."""
    return v[max(1, math.ceil(p * len(v) - 1e-9)) - 1]


def probe_p99():
    """Each probe phase's nearest-rank p99: its spike threshold."""
    by_probe = {}
    for s in samples:
        by_probe.setdefault(s[2], []).append(s[3])
    return {p: nearest_rank(sorted(v), 0.99) for p, v in by_probe.items()}


def expect(threshold_ns, top):
    p99 = probe_p99()
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


def expect_vms(threshold_ns):
    """Per VM: [vm, samples, spikes, p99_ns, max_ns], no VM's first (if
    any), then every VM of table vm."""
    p99 = probe_p99()
    per = {}
    for seq, ts, probe, ns, gfn in samples:
        d = per.setdefault(sample_vm(seq), [[], 0])
        d[0].append(ns)
        d[1] += ns >= (threshold_ns or p99[probe])
    rows = []
    ids = [vid for (vid,) in q("SELECT id FROM vm ORDER BY id")]
    for vm in ([None] if None in per else []) + ids:
        v, n = per.get(vm, [[], 0])
        v.sort()
        rows.append({"vm": vm, "samples": len(v), "spikes": n,
                     "p99_ns": nearest_rank(v, 0.99) if v else 0,
                     "max_ns": v[-1] if v else 0})
    return rows


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
    check(got["vms"] == expect_vms(thr), "%s: per VM %s, want %s"
          % (args, got["vms"], expect_vms(thr)))
    check(sum(v["samples"] for v in got["vms"]) == got["samples"] and
          sum(v["spikes"] for v in got["vms"]) == got["spikes"],
          "%s: the VMs' rows sum to the host's" % args)
    check(all(t["vm"] == sample_vm(t["seq"]) for t in got["top"]),
          "%s: a top spike's VM" % args)

text = run([mmr, "spikes", db]).stdout
spk, oth, _ = expect(0, 10)
row = "  %-26s %8.1f%% %8.1f%%" % ("npf_page", 100.0 * spk["npf_page"] /
                                   spk["n"], 100.0 * oth["npf_page"] /
                                   oth["n"])
check(row in text.splitlines(), "text row %r in\n%s" % (row, text))
check(any(spk[n] for n in NAMES), "the spikes saw some MMU activity")
vms = expect_vms(0)
if len(q("SELECT id FROM vm")) >= 1:
    for v in vms:
        row = "  %-6s %10s %9s" % (v["vm"] or "-", "{:,}".format(
            v["samples"]), "{:,}".format(v["spikes"]))
        check(any(ln.startswith(row) for ln in text.splitlines()),
              "text row %r in\n%s" % (row, text))
    lab = json.load(open(os.path.join(fixture, "manifest.json"))).get(
        "lab", {}).get("vms") or []
    if lab:
        per_vtid = collections.Counter(
            f["vtid"] for _, name, f in bt_events(os.path.join(trace, "ust")
                                                  if os.path.isdir(
                                                      os.path.join(trace,
                                                                   "ust"))
                                                  else trace, context=True)
            if name == "mmureplay:latency_sample")
        vm_of = dict((pid, vid) for vid, pid in q("SELECT id, pid FROM vm"))
        got = json.loads(run([mmr, "spikes", db, "--json"]).stdout)["vms"]
        for v in lab:
            want = sum(n for vtid, n in per_vtid.items()
                       if pid_of.get(vtid) == v["pid"])
            row = [g for g in got if g["vm"] == vm_of.get(v["pid"])]
            check(row and row[0]["samples"] == want,
                  "lab VM %d (pid %d): %s samples, babeltrace2 %d"
                  % (v["vm"], v["pid"], row and row[0]["samples"], want))
    with_probe = [v for v in vms if v["vm"] and v["samples"]]
    check(with_probe, "a VM with probe samples")
    v = with_probe[-1]
    got = json.loads(run([mmr, "spikes", db, "--json", "--vm",
                          str(v["vm"])]).stdout)
    want = [w for w in vms if w["vm"] is None] + [v]
    # The threshold is the narrowed samples' own p99 there: samples only.
    check([(w["vm"], w["samples"]) for w in got["vms"]] ==
          [(w["vm"], w["samples"]) for w in want] and
          got["samples"] == sum(w["samples"] for w in want),
          "--vm %d: rows %s, want %s" % (v["vm"], got["vms"], want))
finish()
