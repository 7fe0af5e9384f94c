"""Latency distributions of `mmureplay summary` against the babeltrace2
CLI's own events on a real capture.

usage: test_latency.py MMUREPLAY FIXTURE_DIR WORK_DIR

For each probe phase of mmureplay:latency_sample (kernel + UST fixtures)
and for the NPF service time (a vCPU thread's NPF exit, kvm_x86_exit
with exit_reason 0x400 on the lab's SVM, to that thread's next
kvm_x86_entry): the sample count, the nearest-rank p50 / p99 / p99.9
(the value at rank ceil(p * n) of the sorted samples) and the maximum
equal what this test computes from the CLI's text, in the text table
and the JSON.

The latency what-if (`mmureplay replay --json`): replayed under the
recorded policy, its NPF service and probe figures (every probe
together, and the samples of 1 and 3 ms or more) are the CLI's; under
every other policy the exits it leaves are the traced ones less those it
removes plus the faults it adds, it keeps every probe sample, and none
of the probe's figures grows (a sample only loses the time given back).
"""
from decimal import Decimal
import json
import math
import os
import re
import subprocess
import sys

from mmrtest import check, extract_fixture, finish, fresh_dir, run

mmr, fixture, work = sys.argv[1:4]
fresh_dir(work)
trace = extract_fixture(fixture, work)
db = os.path.join(work, "capture.db")
check(run([mmr, "ingest", trace, "-o", db, "-q"]).returncode == 0,
      "ingest")

NPF_SVM = 0x400
TS = re.compile(r"^\[([0-9.]+)\] \S+ (\S+): ")
TID = re.compile(r"\btid = (\d+)")
FIELD = re.compile(r"\b(probe|ns|exit_reason) = (\d+)")

probes = {}
npf = []
last = {}               # tid -> ("exit", reason, ts) or ("entry",)
p = subprocess.Popen(["babeltrace2", "--clock-seconds", "--no-delta",
                      trace], stdout=subprocess.PIPE, text=True)
for line in p.stdout:
    m = TS.match(line)
    name = m.group(2)
    ts = int(Decimal(m.group(1)) * 1000000000)
    if name == "mmureplay:latency_sample":
        f = dict(FIELD.findall(line))
        probes.setdefault(int(f["probe"]), []).append(int(f["ns"]))
    elif name in ("kvm_x86_exit", "kvm_x86_entry"):
        tid = int(TID.search(line).group(1))
        if name == "kvm_x86_exit":
            last[tid] = ("exit", int(dict(FIELD.findall(line))
                                     ["exit_reason"]), ts)
        else:
            prev = last.get(tid)
            if prev and prev[0] == "exit" and prev[1] == NPF_SVM:
                npf.append(ts - prev[2])
            last[tid] = ("entry",)
check(p.wait() == 0, "babeltrace2")


def dist(values):
    v = sorted(values)
    rank = lambda q: max(1, math.ceil(q * len(v) - 1e-9))
    return {"n": len(v), "p50_ns": v[rank(0.5) - 1],
            "p99_ns": v[rank(0.99) - 1], "p99.9_ns": v[rank(0.999) - 1],
            "max_ns": v[-1]}


r = run([mmr, "summary", db, "--json"])
s = json.loads(r.stdout)
lat = s["latency"]
check(len(npf) > 100, "the trace has NPF exits: %d" % len(npf))
check(lat["npf_service"] == dist(npf), "NPF service: %s vs CLI %s"
      % (lat["npf_service"], dist(npf)))
check(set(lat["probes"]) == {str(k) for k in probes},
      "probe phases %s vs CLI %s" % (sorted(lat["probes"]), sorted(probes)))
for k, v in probes.items():
    check(lat["probes"][str(k)] == dist(v), "probe %d: %s vs CLI %s"
          % (k, lat["probes"][str(k)], dist(v)))

text = run([mmr, "summary", db]).stdout
d = dist(npf)
row = "  %-26s %12s %9.1f %9.1f %9.1f %9.1f" % (
    "NPF exit -> entry", "{:,}".format(d["n"]), d["p50_ns"] / 1e3,
    d["p99_ns"] / 1e3, d["p99.9_ns"] / 1e3, d["max_ns"] / 1e3)
check(row in text.splitlines(), "text row %r" % row)

r = run([mmr, "replay", db, "--json"])
check(r.returncode == 0, "replay: %s" % r.stderr)
pols = json.loads(r.stdout)["policies"]
recorded = next(iter(pols))
samples = [x for v in probes.values() for x in v]
FIGS = ("p50_ns", "p99_ns", "p99.9_ns", "max_ns")
rec = pols[recorded]
check(rec["figure_kind"]["npf_service"] == "restated", "recorded: restated")
check(rec["npf_exits"] == len(npf) and rec["npf_exits_removed"] == 0,
      "recorded: %d exits vs CLI %d" % (rec["npf_exits"], len(npf)))
for f in FIGS:
    check(rec["npf_service_" + f] == d[f], "recorded npf %s: %d vs CLI %d"
          % (f, rec["npf_service_" + f], d[f]))
check(rec["probe_samples"] == len(samples), "recorded probe samples")
if samples:
    a = dist(samples)
    for f in FIGS:
        check(rec["probe_" + f] == a[f], "recorded probe %s: %d vs CLI %d"
              % (f, rec["probe_" + f], a[f]))
for ms in (1, 3):
    n = sum(1 for x in samples if x >= ms * 1000000)
    check(rec["probe_ge_%dms" % ms] == n, "recorded probe >= %d ms: %d vs "
          "CLI %d" % (ms, rec["probe_ge_%dms" % ms], n))
for name, p in pols.items():
    if name == recorded or not p["applicable"]:
        continue
    check(p["npf_exits"] == len(npf) - p["npf_exits_removed"]
          + p["faults_added"], "%s: exits left" % name)
    check(p["probe_samples"] == len(samples), "%s: probe samples" % name)
    for f in FIGS + ("ge_1ms", "ge_3ms"):
        check(p["probe_" + f] <= rec["probe_" + f], "%s: probe %s %d above "
              "the recorded %d" % (name, f, p["probe_" + f],
                                   rec["probe_" + f]))
finish()
