"""A source that cannot answer says so: unknown, never 0.

Fixture: a stock-kernel lab run recorded with only the KVM probe Debian's
lttng-modules-dkms builds (run.sh --probes debian): no fault, SPTE change
or VM exit events.  Checked against the babeltrace2 CLI's view of it:
  - ingest keeps every event (raw counts equal the CLI's) and records the
    canonical tables the declared events can fill (meta source_tables);
  - summary: the figures the source cannot give are null / "unknown"
    with the event to record, in JSON, text and HTML; the one it can give
    (notifier invalidations, from kvm_unmap_hva_range) equals the CLI's
    count;
  - fidelity and replay refuse in one line naming the missing event,
    exit 7, and leave the DB as it was;
and, on a capture from the lab's full probe set, every figure is
measured and the self-check runs (the same code says "measured" there).

usage: test_source_coverage.py MMUREPLAY DATA_DIR WORK_DIR
"""
import os
import sys

from mmrtest import (bt_counts, check, db_rows, extract_fixture, finish,
                     fresh_dir, run, summary_json)

mmr, data, work = sys.argv[1:4]
fresh_dir(work)
trace = extract_fixture(
    os.path.join(data, "lttng-kernel-6.1.192-stock-basic-debian-probes"),
    os.path.join(work, "debian"))
db = os.path.join(work, "debian.db")
r = run([mmr, "ingest", trace, "-o", db])
check(r.returncode == 0, "ingest: %s" % r.stderr)

cli = bt_counts(trace)
s = summary_json(mmr, db)
check(s["raw_event_counts"] == cli, "raw counts: %s, CLI %s"
      % (s["raw_event_counts"], cli))
tables = db_rows(db, "SELECT value FROM meta WHERE key = 'source_tables'")
check(tables and set(tables[0][0].split(",")) == {"notifier", "syscall"},
      "source_tables: %s" % tables)

for k in ("npf_faults", "leaf_zaps"):
    check(s["totals"][k] is None and s["rates"][k + "_per_s"] is None,
          "%s: %s, want null" % (k, s["totals"][k]))
    check(s["basis"][k] == "unknown" and k in s["unknown"],
          "%s basis: %s" % (k, s["basis"]))
check("kvm_page_fault" in s["unknown"].get("npf_faults", "") and
      "kvm_tdp_mmu_spte_changed" in s["unknown"].get("leaf_zaps", ""),
      "the unknown figures name the events to record: %s" % s["unknown"])
check(s["basis"]["notifier_invalidations"] == "measured" and
      s["totals"]["notifier_invalidations"] == cli.get("kvm_unmap_hva_range"),
      "invalidations: %s, CLI kvm_unmap_hva_range %s"
      % (s["totals"]["notifier_invalidations"],
         cli.get("kvm_unmap_hva_range")))
r = run([mmr, "summary", db])
check(r.returncode == 0 and "NPF faults" in r.stdout and
      "unknown      unknown" in r.stdout and
      all(len(ln) <= 72 for ln in r.stdout.splitlines()
          if ln.startswith("  unknown") or ln.startswith("    ")),
      "text summary shows unknown, 72 columns:\n%s" % r.stdout)
html = os.path.join(work, "debian.html")
r = run([mmr, "report", db, "-o", html])
with open(html) as f:
    page = f.read()
check(r.returncode == 0 and "<td>unknown</td>" in page and
      "Unknown leaf_zaps" in page, "HTML report shows unknown")

before = db_rows(db, "SELECT count(*) FROM sqlite_master")
for cmd in (["fidelity", db], ["replay", db], ["replay", db, "--json"]):
    r = run([mmr] + cmd)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == 7, "%s: exit %d, want 7" % (cmd, r.returncode))
    check(len(lines) == 1 and db in lines[0] and "cannot replay" in lines[0]
          and "kvm_tdp_mmu_spte_changed" in lines[0],
          "%s: one line naming the event: %r" % (cmd, lines))
    check(r.stdout == "", "%s: nothing on stdout" % cmd)
check(db_rows(db, "SELECT count(*) FROM sqlite_master") == before,
      "a refused replay left the DB as it was")

# The lab's full probe set: everything measured, the self-check runs.
full = extract_fixture(os.path.join(data, "lttng-kernel-6.1.192-stock-basic"),
                       os.path.join(work, "full"))
fdb = os.path.join(work, "full.db")
r = run([mmr, "ingest", full, "-o", fdb])
check(r.returncode == 0, "ingest full: %s" % r.stderr)
fs = summary_json(mmr, fdb)
check(set(fs["basis"].values()) == {"measured"} and fs["unknown"] == {},
      "full probes: %s %s" % (fs["basis"], fs["unknown"]))
r = run([mmr, "fidelity", fdb])
check(r.returncode == 0, "fidelity on full probes: exit %d" % r.returncode)
finish()
