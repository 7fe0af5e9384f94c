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
finish()
