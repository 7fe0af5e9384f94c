"""Ingest one real lab trace and check the DB against the babeltrace2 CLI.

usage: test_ingest_fixture.py MMUREPLAY FIXTURE_DIR WORK_DIR

Checks: exit status; every raw event count equals the CLI's (and the
fixture's recorded event-counts.txt); canonical counts equal the sum of
the raw events mapped to them; every spte_change, fault and notifier row
holds exactly the CLI's field values in the CLI's order (u64 included);
leaf zaps equal what the kernel's SPTE rules give on the CLI's values;
duration and trace metadata match the trace.  Kernel + UST fixtures (the
lab's run.sh --ust: trace/kernel and trace/ust/...): one kernel and one
UST trace, and every mmureplay:latency_sample row holds the CLI's probe,
ns and gfn in the CLI's order.
"""
import os
import re
import sys

from mmrtest import (bt_env, bt_events, check, db_rows, extract_fixture,
                     finish, fresh_dir, slice_only, run, summary_json, u64)

mmr, fixture, work = sys.argv[1:4]
slice_only(fixture)
fresh_dir(work)
trace = extract_fixture(fixture, work)
db = os.path.join(work, "capture.db")

r = run([mmr, "ingest", "--stats", trace, "-o", db])
check(r.returncode == 0, "ingest exit %d: %s" % (r.returncode, r.stderr))
# --stats: per-thread times, each bounded by the run's wall time (a
# thread cannot use more CPU than the time that passed; the process's
# CPU time across both threads could).
m = re.search(r"([0-9.]+) s wall; reading thread ([0-9.]+) s CPU, waited "
              r"([0-9.]+) s for the writer; writer thread ([0-9.]+) s CPU, "
              r"waited ([0-9.]+) s for rows", r.stderr)
check(m is not None, "--stats line: %r" % r.stderr)
if m:
    wall, rcpu, rwait, wcpu, wwait = map(float, m.groups())
    check(wall > 0 and 0 < rcpu <= wall + 0.01 and 0 <= wcpu <= wall + 0.01
          and rwait <= wall and wwait <= wall,
          "--stats times out of bounds: %s" % m.group(0))
check(not [f for f in os.listdir(work) if ".tmp-" in f], "temp file left")

events = list(bt_events(trace))
cli = {}
for _, name, _ in events:
    cli[name] = cli.get(name, 0) + 1
s = summary_json(mmr, db)

# Raw counts: the CLI now, and the CLI when the fixture was recorded.
check(s["raw_event_counts"] == cli,
      "raw counts differ from babeltrace2: %s vs %s"
      % (s["raw_event_counts"], cli))
recorded = {}
with open(os.path.join(fixture, "event-counts.txt")) as f:
    for line in f:
        n, name = line.split()
        recorded[name.rstrip(":")] = int(n)
check(s["raw_event_counts"] == recorded, "raw counts differ from "
      "event-counts.txt")
check(s["events"] == len(events), "events %d != %d" % (s["events"],
                                                       len(events)))

# Canonical counts are the mapped raw counts.
expect = {}
for name, table in s["raw_event_mapping"].items():
    if table:
        expect[table] = expect.get(table, 0) + cli[name]
for table, n in s["canonical_counts"].items():
    check(n == expect.get(table, 0), "canonical %s: %d != %d"
          % (table, n, expect.get(table, 0)))

# Field values, in order, with u64 values intact.
def cli_fields(name, keys):
    return [tuple(f[k] for k in keys) for _, n, f in events if n == name]

check([tuple(u64(v) for v in r) for r in db_rows(
    db, "SELECT gfn, old_spte, new_spte, level, as_id FROM spte_change "
        "ORDER BY seq")] ==
      cli_fields("kvm_tdp_mmu_spte_changed",
                 ("gfn", "old_spte", "new_spte", "level", "as_id")),
      "spte_change rows differ from the CLI")
check([tuple(u64(v) for v in r) for r in db_rows(
    db, "SELECT gpa, error_code, vcpu FROM fault ORDER BY seq")] ==
      cli_fields("kvm_x86_page_fault",
                 ("fault_address", "error_code", "vcpu_id")),
      "fault rows differ from the CLI")
# The lab is SVM: npf_interception() hands KVM the #NPF error code as it
# is, so a fault's decoded access and present are the CLI's PFERR bits.
want = [("fetch" if e & 0x10 else "write" if e & 0x2 else "read", e & 1)
        for (e,) in cli_fields("kvm_x86_page_fault", ("error_code",))]
check([tuple(r) for r in db_rows(
    db, "SELECT access, present FROM fault ORDER BY seq")] == want,
      "fault access/present differ from the CLI's PFERR bits")
check(s["fault_access"] == {
    "read": sum(a == "read" for a, _ in want),
    "write": sum(a == "write" for a, _ in want),
    "fetch": sum(a == "fetch" for a, _ in want),
    "present": sum(p for _, p in want)},
      "summary fault_access %s" % s["fault_access"])
check([tuple(u64(v) for v in r) for r in db_rows(
    db, "SELECT hva_start, hva_end FROM notifier WHERE event IS NULL "
        "ORDER BY seq")] ==
      cli_fields("kvm_unmap_hva_range", ("start", "end")),
      "stock notifier rows differ from the CLI")
# Patched kernels: the invalidate start events, every field.
check([tuple(u64(v) for v in r) for r in db_rows(
    db, "SELECT hva_start, hva_end, event, flags, blockable, perm_upgrade "
        "FROM notifier WHERE event IS NOT NULL AND phase = 0 ORDER BY seq")]
      == cli_fields("kvm_invalidate_range_start",
                    ("hva_start", "hva_end", "event", "flags", "blockable",
                     "perm_upgrade")),
      "patched notifier rows differ from the CLI")
check([tuple(u64(v) for v in r) for r in db_rows(
    db, "SELECT gfn_start, gfn_end, decision, perm_upgrade FROM "
        "unmap_decision ORDER BY seq")] ==
      cli_fields("kvm_mmu_unmap_gfn_range",
                 ("start_gfn", "end_gfn", "decision", "perm_upgrade")),
      "unmap decision rows differ from the CLI")

# Leaf zaps by the kernel's rules (6.1 spte.h): present = bit 11,
# leaf = level 1 or bit 7; a zap takes a present leaf to non-present.
zaps = 0
for gfn, old, new, level, as_id in cli_fields(
        "kvm_tdp_mmu_spte_changed",
        ("gfn", "old_spte", "new_spte", "level", "as_id")):
    if old & (1 << 11) and (level == 1 or old & (1 << 7)) and \
            not new & (1 << 11):
        zaps += 1
check(s["totals"]["leaf_zaps"] == zaps, "leaf zaps %d != %d"
      % (s["totals"]["leaf_zaps"], zaps))
check(s["totals"]["npf_faults"] == cli.get("kvm_x86_page_fault", 0),
      "npf faults")
check(s["spte_format"] == {"name": "npt", "detected": True,
                           "source": "exits"},
      "the lab is AMD NPT: %s" % s["spte_format"])

# Duration from the first to the last event's timestamp.
dur = float(events[-1][0]) - float(events[0][0])
check(abs(s["duration_s"] - dur) < 1e-6, "duration %f != %f"
      % (s["duration_s"], dur))
rate = s["rates"]["npf_faults_per_s"]
check(abs(rate - s["totals"]["npf_faults"] / dur) < 1e-6 * rate + 1e-9,
      "npf rate")

env = bt_env(trace)
# UST traces of the capture (run.sh --ust): trace/ust/uid/UID/64-bit.
ust_dirs = [d for d, _, files in os.walk(trace)
            if "metadata" in files and os.sep + "ust" + os.sep in d]
t = s["traces"]
tk = [x for x in t if x["domain"] == "kernel"]
check(len(t) == 1 + len(ust_dirs) and len(tk) == 1 and
      len([x for x in t if x["domain"] == "ust"]) == len(ust_dirs) and
      tk[0]["kernel_release"] == env["kernel_release"] and
      tk[0]["hostname"] == env["hostname"]
      and tk[0]["tracer_version"] == "%s.%s.%s" % (
          env["tracer_major"], env["tracer_minor"], env["tracer_patchlevel"]),
      "trace metadata %s vs %s" % (t, env))
# UST latency samples: count and values as the CLI prints them, in order.
check([(p, n, u64(g)) for p, n, g in db_rows(
    db, "SELECT probe, ns, gfn FROM latency_sample ORDER BY seq")] ==
      cli_fields("mmureplay:latency_sample", ("probe", "ns", "gfn")),
      "latency_sample rows differ from the CLI")
check(s["canonical_counts"].get("latency_sample", 0) ==
      cli.get("mmureplay:latency_sample", 0), "latency_sample count")
check(not ust_dirs or cli.get("mmureplay:latency_sample", 0) > 0,
      "a UST trace without latency samples")
check(s["lost"]["events"] == 0 and not s["truncated"], "lost/truncated")

# The text form names the same figures.
r = run([mmr, "summary", db])
check(r.returncode == 0 and "NPF faults" in r.stdout, "text summary")
finish()
