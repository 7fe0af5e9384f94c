"""The tables of capture/lab/ab-repeat.sh (ab-summary.py) on real lab
captures: the nx-readlock A/B fixtures (knob-off nxrecovery as A-1,
knob-on as B-1) laid out as one repeat, analyzed with --analyze-only.

usage: test_ab_summary.py MMUREPLAY REPO_TOP WORK_DIR

Checks:
1. every line of summary.txt fits 72 columns;
2. the measured columns are the analyzer's own figures, read here from
   `mmureplay fidelity --json` and the capture DB (faults, leaf zaps,
   TLB flush events, traced mmu_lock wait), and the self-check line
   counts the runs that pass;
3. the prediction rows are the what-if `mmureplay replay --policy
   nx-readlock --json` gives from A; faults, leaf zaps and flush
   contexts are marked "=" (equal to A by construction) and do equal
   A's, while TLB flushes and lock waits are modelled and are not
   marked;
4. "in B" and the error in B ranges follow B's min-max: with one B run
   that range is a point, so a prediction is inside only when equal to
   it, and the error in ranges is infinite otherwise;
5. the latency and count table: one row per figure, the what-if's
   values and kind those of the replay's nx-readlock policy from A, B's
   values its trace's (`mmureplay summary`, the DB's probe samples and
   lock waits); "in B" is yes only on B's point, a not-modelled figure
   says so instead, with no probe on either side the probe rows say "no
   probe", and the figures where `mmureplay replay` on B restates its
   recorded policy otherwise than the trace are listed and warned of.
6. a what-if the policy cannot give (nx-skip-dirty on KVM's
   dirty_log_perf_test, which NX-splits nothing: `mmureplay replay`
   says "not applicable") is said with the replay's reason, not taken
   for a withheld one, and the summary is written (it crashed before).
7. on a pair without dirty logging (the perm-upgrade fixtures, 6.1),
   f_again is the count of faults taken again on a page with no SPTE
   change of it since the last, counted here in SQL (A 1,342, B
   1,544: B's 202 more are most of the 205 faults by which the
   what-if falls short of B), and the text still fits 72 columns.
8. on the perm-upgrade pair, the count of lock waits is not_modelled
   (a kept invalidation's short holds make waits at moments of B's own
   run: the fixtures' B waited 466 times where the what-if leaves 575
   of A's) in replay's figure_kind and in the table, while their time
   stays one_sided.
It cannot catch: a wrong median over several runs (one run per side).
"""
import json
import os
import shutil
import sqlite3
import sys

from mmrtest import check, extract_fixture, finish, fresh_dir, run

mmr, top, work = sys.argv[1:4]
fresh_dir(work)
data = os.path.join(top, "tests", "data")
SIDES = {"A-1": "lttng-kernel-6.1.192-patched-nxrecovery-skip-dirty-off",
         "B-1": "lttng-kernel-6.1.192-patched-nxrecovery-readlock-on"}



def lay_out(out, sides):
    """The fixtures as the run directories of one repeat in out."""
    for run_name, fx in sides.items():
        d = fresh_dir(os.path.join(out, run_name))
        extract_fixture(os.path.join(data, fx), d, private=True)
        with open(os.path.join(data, fx, "manifest.json")) as f:
            lab = json.load(f)["lab"]
        with open(os.path.join(d, "manifest.json"), "w") as f:
            json.dump(lab, f)


lay_out(work, SIDES)

r = run([os.path.join(top, "capture", "lab", "ab-repeat.sh"), "nx-readlock",
         "--analyze-only", "--out", work, "--mmureplay", mmr])
check(r.returncode == 0, "ab-repeat.sh --analyze-only: rc %d %s"
      % (r.returncode, r.stderr[-300:]))
check("wider than" not in r.stderr, "ab-summary.py: " + r.stderr.strip())
with open(os.path.join(work, "summary.txt")) as f:
    text = f.read()
with open(os.path.join(work, "summary.json")) as f:
    summary = json.load(f)

# 1. 72 columns.
for ln in text.splitlines():
    check(len(ln) <= 72, "line of %d columns: %r" % (len(ln), ln))

# 2. Measured figures against the analyzer and the DB.
runs = {x["run"]: x for x in summary["runs"]}
for name in SIDES:
    d = os.path.join(work, name)
    db = os.path.join(d, "capture.db")
    fr = run([mmr, "fidelity", db, "--json"])
    fid = json.loads(fr.stdout)
    check(fid["ok"] is True, "%s: self-check fails" % name)
    for k in ("faults", "leaf_zaps", "flush_contexts"):
        check(runs[name].get(k) == fid["observed"][k],
              "%s: %s %s, fidelity observes %s"
              % (name, k, runs[name].get(k), fid["observed"][k]))
    con = sqlite3.connect(db)
    flushes = con.execute("SELECT count(*) FROM tlb_flush").fetchone()[0]
    wait = con.execute("SELECT coalesce(sum(wait_ns), 0) FROM lock_wait").fetchone()[0]
    con.close()
    check(runs[name].get("tlb_flushes") == flushes,
          "%s: flushes %s, DB %s" % (name, runs[name].get("tlb_flushes"),
                                     flushes))
    check(abs(runs[name].get("lock_ms", -1) - wait / 1e6) < 1e-9,
          "%s: lock_ms %s, DB %s ns" % (name, runs[name].get("lock_ms"),
                                        wait))
    check(runs[name]["measured_ok"], "%s: left out of the statistics"
          % name)
check(summary["self_check"] == {"pass": 2, "runs": 2},
      "self-check count %s" % summary["self_check"])
check("Fresh runs passing: 2 of 2." in text, "self-check line missing")

# 3. Predictions against the replay's own what-if.
rep = json.loads(run([mmr, "replay", os.path.join(work, "A-1", "capture.db"),
                      "--policy", "nx-readlock", "--json"]).stdout)
pol = rep["policies"]["nx-readlock"]
rows = {x["metric"]: x for x in summary["prediction_table"]}
key = {"faults": "faults", "leaf_zaps": "leaf_zaps",
       "flush_contexts": "flush_contexts", "tlb_flushes": "tlb_flushes",
       "lock_ms": "lock_wait_ms"}
for m, k in key.items():
    check(m in rows, "no prediction row for %s" % m)
    if m not in rows:
        continue
    check(rows[m]["pred_values"] == [pol[k]], "%s: predicted %s, replay %s"
          % (m, rows[m]["pred_values"], pol[k]))
    bycon = m in ("faults", "leaf_zaps", "flush_contexts")
    check(rows[m]["by_construction"] == bycon,
          "%s: by_construction %s" % (m, rows[m]["by_construction"]))
    if bycon:
        check(pol[k] == runs["A-1"][m], "%s: marked = but the what-if "
              "(%s) is not A's (%s)" % (m, pol[k], runs["A-1"][m]))
check("WARNING" not in text, "a by-construction figure differs from A")
# The knob-on run took far more faults than A (vCPUs retry while the
# read-locked worker zaps; not modelled): A's faults cannot be inside.
check(runs["B-1"]["faults"] > 2 * runs["A-1"]["faults"],
      "B faults %s, A %s" % (runs["B-1"]["faults"], runs["A-1"]["faults"]))

# 4. One B run: a point range.
for m, x in rows.items():
    b = runs["B-1"][m]
    inside = 1 if x["pred_values"][0] == b else 0
    check(x["inside_B"] == inside, "%s: in B %s, expected %s (pred %s, B %s)"
          % (m, x["inside_B"], inside, x["pred_values"][0], b))
    if not inside:
        check(x["err_in_B_ranges"] is None, "%s: error in B ranges %s on a "
              "point range" % (m, x["err_in_B_ranges"]))

# 5. The latency and count table against the replay from A and the
# trace of B.
rep_b = json.loads(run([mmr, "replay", os.path.join(work, "B-1", "capture.db"),
                        "--policy", "nx-readlock", "--json"]).stdout)
pol_b = rep_b["policies"]["nx-readlock"]
check(set(pol_b["figure_kind"].values()) == {"restated"},
      "B's recorded-policy figures not restated: %s" % pol_b["figure_kind"])
sum_b = json.loads(run([mmr, "summary", os.path.join(work, "B-1",
                                                     "capture.db"),
                        "--json"]).stdout)
con = sqlite3.connect(os.path.join(work, "B-1", "capture.db"))
samples = [x[0] for x in con.execute("SELECT ns FROM latency_sample")]
waits = con.execute("SELECT count(*), coalesce(sum(wait_ns), 0) "
                    "FROM lock_wait").fetchone()
con.close()
npf = sum_b["latency"]["npf_service"]
trace_b = {"npf_service_p50_ns": npf["p50_ns"],
           "npf_service_p99_ns": npf["p99_ns"],
           "npf_service_p99.9_ns": npf["p99.9_ns"],
           "npf_service_max_ns": npf["max_ns"],
           "faults": sum_b["totals"]["npf_faults"],
           "leaf_zaps": sum_b["totals"]["leaf_zaps"],
           "tlb_flushes": sum_b["canonical_counts"]["tlb_flush"],
           "lock_waits": waits[0], "lock_wait_ms": waits[1] / 1e6}
check(not samples, "the fixture has probe samples now: check them too")
trace_b.update({k: 0 for k in ("probe_p50_ns", "probe_p99_ns",
                               "probe_p99.9_ns", "probe_max_ns",
                               "probe_ge_1ms", "probe_ge_3ms")})
FIGS = {"npf_service_p50_ns": "npf_service", "npf_service_p99_ns":
        "npf_service", "npf_service_p99.9_ns": "npf_service",
        "npf_service_max_ns": "npf_service", "probe_p50_ns": "probe",
        "probe_p99_ns": "probe", "probe_p99.9_ns": "probe",
        "probe_max_ns": "probe", "probe_ge_1ms": "probe",
        "probe_ge_3ms": "probe", "faults": "faults",
        "leaf_zaps": "leaf_zaps", "tlb_flushes": "tlb_flushes",
        "lock_waits": "lock_wait_ms", "lock_wait_ms": "lock_wait_ms"}
figs = {x["figure"]: x for x in summary.get("figures_table", [])}
check(set(figs) == set(FIGS), "figure rows %s" % sorted(figs))
check(runs["B-1"].get("figures_from") == "summary",
      "B's figures from %s" % runs["B-1"].get("figures_from"))
no_probe = pol["probe_samples"] == 0 and pol_b["probe_samples"] == 0
for k, kk in FIGS.items():
    x = figs.get(k)
    if not x:
        continue
    check(x["whatif_values"] == [pol[k]], "%s: what-if %s, replay %s"
          % (k, x["whatif_values"], pol[k]))
    check(x["kind"] == pol["figure_kind"][kk], "%s: kind %s, replay %s"
          % (k, x["kind"], pol["figure_kind"][kk]))
    check(len(x["B_values"]) == 1 and
          abs(x["B_values"][0] - trace_b[k]) < 1e-9,
          "%s: B %s, its trace %s" % (k, x["B_values"], trace_b[k]))
    if kk == "probe" and no_probe:
        want = "no probe"
    elif x["kind"] == "not_modelled":
        want = "not modelled"
    else:
        want = ("yes 1/1" if pol[k] == trace_b[k] else "no 0/1")
    check(x["verdict"] == want, "%s: in B %r, expected %r"
          % (k, x["verdict"], want))
    check(any(ln.startswith(x["label"]) and ln.rstrip().endswith(want)
              for ln in text.splitlines()),
          "%s: no row %r ... %r in summary.txt" % (k, x["label"], want))
# Replay's restatement of B's recorded policy against B's trace: every
# figure where they differ is listed, and said in the text.
differs = sorted(k for k in FIGS
                 if abs(pol_b[k] - trace_b[k]) > 1e-6 * max(1, trace_b[k]))
check(sorted(runs["B-1"].get("restated_differs", {})) == differs,
      "restated_differs %s, expected %s"
      % (sorted(runs["B-1"].get("restated_differs", {})), differs))
check(("Restated otherwise than traced" in text) == bool(differs),
      "the restatement warning does not follow %s" % differs)

shutil.rmtree(work, ignore_errors=True)
# 6. A policy that cannot act: its reason, and a summary all the same.
na = os.path.join(work, "not-applicable")
lay_out(na, {"A-1": "lttng-kernel-6.1.192-patched-selftest-dirty-log-perf-g",
             "B-1": "lttng-kernel-6.1.192-patched-nxrecovery-skip-dirty-on"})
r = run([os.path.join(top, "capture", "lab", "ab-repeat.sh"), "nx-skip-dirty",
         "--analyze-only", "--out", na, "--mmureplay", mmr])
check(r.returncode == 0, "not applicable: ab-repeat.sh rc %d %s"
      % (r.returncode, r.stderr[-300:]))
with open(os.path.join(na, "summary.json")) as f:
    a1 = [x for x in json.load(f)["runs"] if x["run"] == "A-1"][0]
with open(os.path.join(na, "summary.txt")) as f:
    text = f.read()
why = json.loads(run([mmr, "replay", os.path.join(na, "A-1", "capture.db"),
                      "--policy", "nx-skip-dirty", "--json"]).stdout)[
    "policies"]["nx-skip-dirty"]["not_applicable"]
check(a1.get("not_applicable") == why and a1["pred"] is None and
      "the policy is not applicable" in text and "withheld" not in text,
      "not applicable: %s" % a1.get("not_applicable"))

# 7. Faults taken again, on a pair without dirty logging.
pu = os.path.join(work, "perm-upgrade")
lay_out(pu, {"A-1": "lttng-kernel-6.1.192-patched-bgsnapshot-perm-upgrade-off",
             "B-1": "lttng-kernel-6.1.192-patched-bgsnapshot-perm-upgrade-on"})
r = run([os.path.join(top, "capture", "lab", "ab-repeat.sh"), "perm-upgrade",
         "--analyze-only", "--out", pu, "--mmureplay", mmr])
check(r.returncode == 0 and "wider than" not in r.stderr,
      "perm-upgrade: ab-repeat.sh rc %d %s" % (r.returncode, r.stderr[-300:]))
with open(os.path.join(pu, "summary.json")) as f:
    runs = {x["run"]: x for x in json.load(f)["runs"]}
AGAIN = """
WITH ev AS (
  SELECT seq, gpa >> 12 AS lo, (gpa >> 12) + 1 AS hi, 1 AS fault
  FROM fault
  UNION ALL
  SELECT seq, gfn, gfn + (1 << (9 * (level - 1))), 0 FROM spte_change),
f AS (
  SELECT seq, lo AS gfn,
         lag(seq) OVER (PARTITION BY lo ORDER BY seq) AS prev
  FROM ev WHERE fault)
SELECT count(*) FROM f
WHERE prev IS NOT NULL AND NOT EXISTS (
  SELECT 1 FROM ev c WHERE NOT c.fault AND c.seq > f.prev
  AND c.seq < f.seq AND c.lo <= f.gfn AND f.gfn < c.hi)"""
want = {"A-1": 1342, "B-1": 1544}
for name in want:
    con = sqlite3.connect(os.path.join(pu, name, "capture.db"))
    n = con.execute(AGAIN).fetchone()[0]
    con.close()
    check(runs[name].get("faults_again") == n == want[name],
          "%s: f_again %s, SQL %s, expected %s"
          % (name, runs[name].get("faults_again"), n, want[name]))
with open(os.path.join(pu, "summary.txt")) as f:
    text = f.read()
check(all(len(ln) <= 72 for ln in text.splitlines()) and
      "f_again" in text, "perm-upgrade: f_again column or width")

# 8. The count of lock waits under perm-upgrade is not modelled.
with open(os.path.join(pu, "A-1", "replay.json")) as f:
    kinds = json.load(f)["policies"]["perm-upgrade"]["figure_kind"]
with open(os.path.join(pu, "summary.json")) as f:
    rows = {x["figure"]: x for x in json.load(f)["figures_table"]}
check(kinds.get("lock_waits") == "not_modelled" and
      kinds.get("lock_wait_ms") == "one_sided" and
      rows["lock_waits"]["kind"] == "not_modelled" and
      rows["lock_wait_ms"]["kind"] == "one_sided",
      "perm-upgrade: lock waits not_modelled, lock ms one_sided: %s, "
      "rows %s %s" % (kinds, rows["lock_waits"]["kind"],
                      rows["lock_wait_ms"]["kind"]))
finish()
