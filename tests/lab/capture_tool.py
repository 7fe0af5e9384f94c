"""The product's capture command on a real kernel tracer: a lab run
recorded with capture/mmureplay-capture inside the guest (run.sh
--capture-tool; this host cannot load lttng-modules).

usage: capture_tool.py MMUREPLAY RUN_OUT_DIR [lossy]

1. The tool did not refuse: every stock KVM probe it needs is there;
   the only events it reports absent are the lock:contention ones
   (lttng-modules 2.13.9 has no probe for them).
2. Its manifest has the fields of schemas/manifest.schema.json, the
   guest's kernel and KVM module parameters (the series' knobs
   included), the workload, and 0 discarded events, which the
   babeltrace2 CLI confirms (it prints no discarded-events warning).
3. The trace it recorded ingests with every raw count equal to the
   CLI's, and the replay's self-check is exact on it (the recorded
   policy read from the tool's manifest).
4. Recorded with --stats (the tool ran kvm-stats-sampler): KVM's
   counters over the sampled time equal the trace's events.

"lossy": the run was made with kernel buffers far too small (run.sh
--capture-arg '--subbuf-size 4K --num-subbuf 2').  Then the manifest's
discarded count (the tracer's own, from lttng list) equals the sum of
the babeltrace2 CLI's discarded-events warnings and the DB's lost-event
total, and fidelity and replay say the capture is damaged.
"""
import re
import collections
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from mmrtest import check, finish, run, summary_json  # noqa

mmr, out = sys.argv[1:3]
lossy = sys.argv[3:] == ["lossy"]
with open(os.path.join(out, "manifest.json")) as f:
    m = json.load(f)
with open(os.path.join(out, "lab-manifest.json")) as f:
    lab = json.load(f)
with open(os.path.join(os.path.dirname(__file__), "..", "..", "schemas",
                       "manifest.schema.json")) as f:
    schema = json.load(f)

# 1.
check(lab["capture_tool"] is True and lab["workload_rc"] == 0,
      "recorded with the capture tool, workload ok: rc %s"
      % lab["workload_rc"])
missing = set(m["trace"]["missing_events"])
check(missing <= {"lock:contention_begin", "lock:contention_end"},
      "only the lock events are absent: %s" % sorted(missing))
for e in ("kvm_tdp_mmu_spte_changed", "kvm_x86_page_fault",
          "kvm_invalidate_range_start", "kvm_mmu_unmap_gfn_range",
          "kvm_memslot_change"):
    check(e in m["trace"]["kernel_events"], "%s enabled" % e)

# 2.
for key in schema["required"]:
    check(key in m, "manifest has %s" % key)
check(m["kernel_release"] == lab["kernel_release"], "kernel release %s"
      % m["kernel_release"])
check(m["cpu"]["vendor"] == "AuthenticAMD", "the lab's CPU is AMD (NPT)")
params = m["kvm"]["params"]
check(params.get("kvm.tdp_mmu") == "Y" and
      params.get("kvm.perm_upgrade_skip_zap") == "N" and
      "kvm.nx_huge_pages_recovery_read_lock" in params,
      "kvm params with the series' knobs: %s"
      % {k: v for k, v in params.items() if "skip" in k or "tdp" in k})
check(m["workload"].startswith(lab["workload"]), "workload %r"
      % m["workload"])
trace = os.path.join(out, "trace")
bt = subprocess.run(["babeltrace2", trace], stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, text=True)
# Event names as the CLI prints them (its fourth column, less the colon).
cli_counts = collections.Counter(line.split()[3].rstrip(":")
                                 for line in bt.stdout.splitlines())
cli_discarded = sum(int(n) for n in re.findall(
    r"discarded\s+(\d+)\s+events?\b", bt.stderr))
if lossy:
    check(m["trace"]["discarded_events"] == cli_discarded > 0,
          "the tool's discarded count %s equals the CLI's %d"
          % (m["trace"]["discarded_events"], cli_discarded))
else:
    check(m["trace"]["discarded_events"] == 0 and cli_discarded == 0,
          "nothing discarded: %s %s" % (m["trace"]["discarded_events"],
                                        bt.stderr[:200]))

# 3.
db = os.path.join(out, "capture-tool.db")
if os.path.exists(db):
    os.unlink(db)
r = run([mmr, "ingest", out, "-o", db, "-q"])
check(r.returncode == 0, "ingest: %s" % r.stderr)
s = summary_json(mmr, db)
check(s["raw_event_counts"] == cli_counts, "raw counts equal the CLI's")
check(s["lost"]["events"] == cli_discarded, "DB lost events %s == %d"
      % (s["lost"]["events"], cli_discarded))
r = run([mmr, "fidelity", db, "--json"])
fid = json.loads(r.stdout) if r.stdout else {}
if lossy:
    check(r.returncode in (0, 6) and
          fid["capture_damage"]["lost_events"] == cli_discarded and
          "damaged capture" in r.stderr,
          "fidelity says the capture is damaged: %s" % fid.get(
              "capture_damage"))
    finish()
# Recorded with --stats (mmureplay-capture ran kvm-stats-sampler): KVM's
# counters against the trace.
if lab.get("stats_sampler"):
    got = {c["counter"]: c for c in s["kvm_counters_vs_trace"]}
    check(got.get("pf_taken", {}).get("events", 0) > 100 and
          all(c["counter_delta"] == c["events"] for c in got.values()),
          "KVM counters equal the trace's events: %s" % got)
    html = os.path.join(out, "report.html")
    run([mmr, "report", db, "-o", html])
    with open(html) as f:
        row = "<tr><td>pf_taken / fault</td><td>{0:,}</td><td>{0:,}</td>" \
            .format(got["pf_taken"]["events"])
        check(row in f.read(), "the report shows the check: %s" % row)
check(r.returncode == 0 and fid.get("ok") and
      fid["observed"]["faults"] > 0 and
      fid["predicted"]["leaf_zaps"] == fid["observed"]["leaf_zaps"],
      "self-check exact on the tool's trace: %s" % fid.get("rel_error"))
finish()
