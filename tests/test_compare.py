"""mmureplay compare on the A/B fixture pairs.

Each pair is one patched kernel recording the same workload with a knob
off (A) and on (B).  Checked against the other commands on the same DBs:
  - every A and B median of a single run equals that DB's summary
    (counts, rates, NPF percentiles) or its table (TLB flushes, lock
    waits), and the change is (B - A) / A;
  - several DBs after one --a / --b, as the usage line reads, are the
    runs of that side;
  - with a run given twice a side, the range is that one value and the
    ranges overlap only where A and B are equal;
  - the what-if is the replay's: predicted faults, leaf zaps, TLB
    flushes and NPF service times equal `mmureplay replay A --policy B`
    (the same model run), and the error is against B's measured figure;
  - the text fits 72 columns and names the differing knob;
  - runs of two VMs (the two-VM A/B pair): per VM, the rows are what
    `compare --vm N` gives for that VM, and the text has a block per VM
    (its process named); runs of one VM have none;
  - refused in one line (exit 2): captures of different workloads, and
    two settings on one side; a source that cannot be replayed: exit 7.

usage: test_compare.py MMUREPLAY DATA_DIR WORK_DIR
"""
import json
import os
import re
import sys

from mmrtest import (check, db_rows, extract_fixture, finish, fresh_dir, run,
                     summary_json)

mmr, data, work = sys.argv[1:4]
fresh_dir(work)
# What each policy's replay leaves as the recorded run's (its "Not
# modelled" in replay --help and the policy's limits).
NOT_MODELLED = {"nx-skip-dirty": ("faults", "npf_service"),
                "nx-readlock": ("faults", "leaf_zaps", "npf_service")}
# compare's what-if rows: (row key, replay figure, its figure_kind, scale).
WHATIF = [("faults", "faults", "faults", 1),
          ("leaf_zaps", "leaf_zaps", "leaf_zaps", 1),
          ("tlb_flushes", "tlb_flushes", "tlb_flushes", 1)] + [
    ("npf_service_%s_us" % k, "npf_service_%s_ns" % f, "npf_service", 1e-3)
    for k, f in (("p50", "p50"), ("p99", "p99"), ("p999", "p99.9"),
                 ("max", "max"))]
PAIRS = [("bgsnapshot-perm-upgrade", "perm-upgrade",
          "perm_upgrade_skip_zap"),
         ("nxrecovery-skip-dirty", "nx-skip-dirty",
          "nx_huge_pages_recovery_skip_dirty")]


def ingest(name):
    fx = os.path.join(data, name)
    d = os.path.join(work, name)
    trace = extract_fixture(fx, d)
    db = os.path.join(d, "capture.db")
    r = run([mmr, "ingest", "-q", trace, "-o", db])
    check(r.returncode == 0, "ingest %s: %s" % (name, r.stderr))
    return db


def rows_of(doc):
    return {r["key"]: r for r in doc["rows"]}


def near(x, y, what, tol=1e-6):
    ok = x is not None and y is not None and abs(x - y) <= tol * max(1, abs(y))
    check(ok, "%s: %s, want %s" % (what, x, y))


dbs = {}
for pair, policy, knob in PAIRS:
    a = dbs[pair + "-off"] = ingest(
        "lttng-kernel-6.1.192-patched-%s-off" % pair)
    b = dbs[pair + "-on"] = ingest(
        "lttng-kernel-6.1.192-patched-%s-on" % pair)
    r = run([mmr, "compare", "--a", a, "--b", b, "--json"])
    check(r.returncode == 0, "%s: compare: %s" % (pair, r.stderr))
    doc = json.loads(r.stdout) if r.returncode == 0 else {"rows": []}
    rows = rows_of(doc)
    check(doc.get("a", {}).get("policy") == "baseline" and
          doc.get("b", {}).get("policy") == policy,
          "%s: sides %s / %s" % (pair, doc.get("a"), doc.get("b")))
    for side, db in (("a", a), ("b", b)):
        s = summary_json(mmr, db)
        t = s["totals"]
        for key, want in (("faults", t["npf_faults"]),
                          ("leaf_zaps", t["leaf_zaps"]),
                          ("faults_per_s", s["rates"]["npf_faults_per_s"]),
                          ("invalidations_per_s",
                           s["rates"]["notifier_invalidations_per_s"]),
                          ("npf_service_p99_us",
                           s["latency"]["npf_service"]["p99_ns"] / 1e3),
                          ("tlb_flushes",
                           db_rows(db, "SELECT count(*) FROM tlb_flush")[0][0]),
                          ("lock_wait_ms", db_rows(
                              db, "SELECT coalesce(sum(wait_ns), 0) / 1e6 "
                              "FROM lock_wait")[0][0])):
            near(rows.get(key, {}).get(side, {}).get("median"), want,
                 "%s %s %s" % (pair, side, key))
    for key, row in rows.items():
        ma, mb = row["a"]["median"], row["b"]["median"]
        if ma and mb is not None:
            near(row["change"], (mb - ma) / ma, "%s change %s" % (pair, key))
        check(row["ranges_overlap"] is None,
              "%s %s: overlap with one run a side" % (pair, key))
    # The what-if is the replay's own figure, where it models one: the
    # figures a policy's replay leaves as A's (its "not modelled") are
    # marked so, with no value.
    r = run([mmr, "replay", a, "--json", "--policy", policy])
    pol = json.loads(r.stdout)["policies"][policy]
    for key, fig, kind, scale in WHATIF:
        w = rows.get(key, {}).get("what_if", {})
        want = ("not_modelled" if kind in NOT_MODELLED.get(policy, ())
                else "predicted")
        check(pol.get("figure_kind", {}).get(kind) == want,
              "%s replay figure_kind %s: %s" %
              (pair, kind, pol.get("figure_kind")))
        if want == "not_modelled":
            check(w == {"kind": "not_modelled"},
                  "%s what-if %s: %s" % (pair, key, w))
            continue
        check(w.get("kind") == "predicted", "%s what-if %s kind: %s" %
              (pair, key, w.get("kind")))
        near(w.get("predicted", {}).get("median"), pol[fig] * scale,
             "%s what-if %s" % (pair, key))
        mb = rows[key]["b"]["median"]
        if mb:
            near(w.get("error"), (pol[fig] * scale - mb) / mb,
                 "%s what-if error %s" % (pair, key))
    # Lock waits: a bound where the trace leaves when each invalidation
    # let mmu_lock go open (the least the policy leaves is below it).
    w = rows.get("lock_wait_ms", {}).get("what_if")
    if w and w["kind"] != "not_modelled":
        bound = pol["lock_wait_min_ms"] < pol["lock_wait_ms"]
        check(w["kind"] == ("one_sided" if bound else "predicted") and
              pol["figure_kind"]["lock_wait_ms"] == w["kind"],
              "%s lock waits: %s (least %.1f, most %.1f)"
              % (pair, w["kind"], pol["lock_wait_min_ms"],
                 pol["lock_wait_ms"]))
    # Text: 72 columns, the knob named.
    r = run([mmr, "compare", "--a", a, "--b", b])
    long_lines = [ln for ln in r.stdout.splitlines() if len(ln) > 72]
    check(r.returncode == 0 and not long_lines,
          "%s: text over 72 columns: %r" % (pair, long_lines))
    check("%s=N: A N, B Y" % knob in r.stdout and "What-if" in r.stdout,
          "%s: text names the knob:\n%s" % (pair, r.stdout[:600]))
    marked = [ln.split()[0] for ln in r.stdout.splitlines()
              if re.search(r"\S\s+not modelled\s+[0-9,.]+\s", ln)]
    want = []
    for k in NOT_MODELLED.get(policy, ()):
        want += {"faults": ["faults"], "leaf_zaps": ["leaf"],
                 "npf_service": ["NPF"] * 4}[k]
    check(sorted(marked) == sorted(want),
          "%s: text marks %s not modelled" % (pair, marked))
    # The HTML page: the same medians, escaped, self-contained.
    page = os.path.join(work, pair + ".html")
    r = run([mmr, "compare", "--a", a, "--b", b, "--html", "-o", page])
    check(r.returncode == 0, "%s: --html: %s" % (pair, r.stderr))
    with open(page) as f:
        html = f.read()
    for key in ("faults", "leaf_zaps"):
        for side in ("a", "b"):
            v = "{:,}".format(int(rows[key][side]["median"]))
            check("<td>%s</td>" % v in html or "<td>%s<br>" % v in html,
                  "%s: --html shows %s %s %s" % (pair, side, key, v))
    check("http" not in html.replace("http-equiv", ""),
          "%s: the page refers to nothing outside" % pair)
    # Two runs a side (the same DB twice): ranges and overlaps.
    r = run([mmr, "compare", "--a", a, "--a", a, "--b", b + "," + b,
             "--json"])
    check(r.returncode == 0, "%s: two runs a side: %s" % (pair, r.stderr))
    for key, row in rows_of(json.loads(r.stdout)).items():
        ca, cb = row["a"], row["b"]
        if ca["runs"] < 2 or cb["runs"] < 2:
            continue
        check(ca["min"] == ca["max"] == ca["median"],
              "%s %s: A range of one value twice" % (pair, key))
        check(row["ranges_overlap"] == (ca["median"] == cb["median"]),
              "%s %s: overlap %s" % (pair, key, row["ranges_overlap"]))
    # Several DBs after one flag, as the usage line reads: the same
    # comparison as the flag repeated.
    r2 = run([mmr, "compare", "--a", a, a, "--b", b, b, "--threshold-ms",
              "1", "3", "--json"])
    check(r2.returncode == 0 and rows_of(json.loads(r2.stdout)) ==
          rows_of(json.loads(r.stdout)),
          "%s: --a A A --b B B is --a A --a A --b B,B (%s)"
          % (pair, r2.stderr.strip()))

# Runs of two VMs: per VM, compare --vm N's rows; runs of one VM: none.
mv = "lttng-kernel-6.1.192-patched-multivm-bgsnapshot-nxrecovery-perm-upgrade-"
mva, mvb = ingest(mv + "off"), ingest(mv + "on")
r = run([mmr, "compare", "--a", mva, "--b", mvb, "--json"])
doc = json.loads(r.stdout) if r.returncode == 0 else {}
check([v["vm"] for v in doc.get("vms", [])] == [1, 2] and
      [v["process"] for v in doc["vms"]] == ["bgsnapshot", "nxrecovery"],
      "two VMs: a block each (%s)" % [(v["vm"], v["process"])
                                      for v in doc.get("vms", [])])
for v in doc.get("vms", []):
    one = run([mmr, "compare", "--a", mva, "--b", mvb, "--json", "--vm",
               str(v["vm"])])
    want = rows_of(json.loads(one.stdout))
    check(one.returncode == 0 and rows_of(v) == want and want,
          "VM %d's rows are compare --vm %d's" % (v["vm"], v["vm"]))
    check("vms" not in json.loads(one.stdout),
          "--vm %d: no per-VM blocks" % v["vm"])
text = run([mmr, "compare", "--a", mva, "--b", mvb]).stdout
check("VM 1 (bgsnapshot)" in text and "VM 2 (nxrecovery)" in text and
      max(len(x) for x in text.splitlines()) <= 72,
      "two VMs: the text's blocks, 72 columns (%d)"
      % max(len(x) for x in text.splitlines()))
r = run([mmr, "compare", "--a", dbs["bgsnapshot-perm-upgrade-off"], "--b",
         dbs["bgsnapshot-perm-upgrade-on"], "--json"])
check("vms" not in json.loads(r.stdout), "one VM: no per-VM blocks")

# Refusals.
r = run([mmr, "compare", "--a", dbs["bgsnapshot-perm-upgrade-off"], "--b",
         dbs["bgsnapshot-perm-upgrade-on"], "--json", "--html"])
check(r.returncode == 1, "--json with --html refused: %d" % r.returncode)
pu_a, sd_b = dbs["bgsnapshot-perm-upgrade-off"], dbs["nxrecovery-skip-dirty-on"]
r = run([mmr, "compare", "--a", pu_a, "--b", sd_b])
lines = r.stderr.strip().splitlines()
check(r.returncode == 2 and lines and "different workloads" in lines[-1]
      and "not comparable" in lines[-1],
      "different workloads refused: %d %r" % (r.returncode, lines))
r = run([mmr, "compare", "--a", pu_a + "," + dbs["bgsnapshot-perm-upgrade-on"],
         "--b", dbs["bgsnapshot-perm-upgrade-on"]])
lines = r.stderr.strip().splitlines()
check(r.returncode == 2 and lines and "policy settings within one side"
      in lines[-1], "two settings on side A refused: %r" % lines)
deb = ingest("lttng-kernel-6.1.192-stock-basic-debian-probes")
r = run([mmr, "compare", "--a", deb, "--b", deb])
check(r.returncode == 7 and "cannot replay" in r.stderr,
      "a source that cannot be replayed: %d %s" % (r.returncode, r.stderr))
finish()
