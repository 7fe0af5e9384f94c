"""KVM's own counters against the trace: a lab run recorded with
kvm-stats-sampler --debugfs beside the workload (run.sh --stats).

usage: stats_vs_trace.py MMUREPLAY RUN_OUT_DIR

Over the sampled time (first to last sample of each counter), the
increase of KVM's pf_taken equals the NPF events in the trace, pf_fast
the fast-path faults, remote_tlb_flush_requests the kvm_remote_tlb_flush
events (patched kernel): the trace holds every event KVM counted.  The
summary reports the same check (kvm_counters_vs_trace).
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from mmrtest import check, finish, run  # noqa

mmr, out = sys.argv[1:3]
db = os.path.join(out, "stats.db")
if os.path.exists(db):
    os.unlink(db)
r = run([mmr, "ingest", out, "-o", db, "-q"])
check(r.returncode == 0, "ingest: %s" % r.stderr)
s = json.loads(run([mmr, "summary", db, "--json"]).stdout)
got = {c["counter"]: c for c in s["kvm_counters_vs_trace"]}
check(set(got) == {"pf_taken", "pf_fast", "remote_tlb_flush_requests"},
      "three counters checked: %s" % sorted(got))
for c in got.values():
    check(c["counter_delta"] == c["events"],
          "%s +%d, %s events %d" % (c["counter"], c["counter_delta"],
                                    c["table"], c["events"]))
check(got.get("pf_taken", {}).get("events", 0) > 100,
      "the workload faulted while sampled: %s" % got.get("pf_taken"))
check(s["stats_rates"]["pf_taken_per_s"] is not None, "stats rates")
finish()
