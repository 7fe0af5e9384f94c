"""A policy that cannot act on the recorded host says so, in every output.

usage: test_not_applicable.py MMUREPLAY DATA_DIR WORK_DIR

The NX-only policies (nx-skip-dirty, nx-readlock, nx-ratio=N,
nx-period=MS) change NX huge page recovery batches and nothing else.
On a host whose manifest says kvm.nx_huge_pages=N (the lab's CPU model,
like every AMD CPU, lacks the ITLB multihit bug, so 'auto' leaves the
mitigation off) no exec fault splits a huge page and recovery takes
nothing: their figures would be the recorded run's by construction.
Checked on real captures:
  - stock 6.1 bgsnapshot, kvm.nx_huge_pages=N in its manifest: replay's
    text, JSON (no figures, "applicable": false and the reason), the
    DB's replay_run.not_applicable, the HTML report (a row and a note,
    no chart line), for the NX-only policies and, beside them, 26
    nx-ratio sweeps stored by two replays (more runs than the stored-run
    array first holds: the reasons must survive its growth);
  - the same capture's perm-upgrade what-if is still given (it acts);
  - stock 6.1 nxrecovery (mitigation on, pages split and recovered):
    every NX-only policy is applicable and has figures.
What this cannot catch: a host with the mitigation on whose capture
happens to hold no split (said from the trace, tested only by the
rule's unit of code, engine.c not_applicable()).
"""
import json
import os
import re
import sqlite3
import sys

from mmrtest import check, finish, fresh_dir, ingest_fixture, run

mmr, data, work = sys.argv[1:4]
fresh_dir(work)
NX_ONLY = ("nx-skip-dirty", "nx-readlock")


def ingest(name):
    return ingest_fixture(mmr, os.path.join(data, name),
                          os.path.join(work, name))[1]


def replay_json(db, *policies):
    args = [mmr, "replay", db, "--json"]
    if policies:
        args += ["--policy", ",".join(policies)]
    r = run(args)
    check(r.returncode == 0, "replay %s: exit %d: %s" %
          (db, r.returncode, r.stderr))
    return json.loads(r.stdout) if r.returncode == 0 else {"policies": {}}


# The mitigation off: kvm.nx_huge_pages=N.
db = ingest("lttng-kernel-6.1.192-stock-bgsnapshot-perpage-read")
pols = replay_json(db)["policies"]
for p in NX_ONLY:
    o = pols.get(p, {})
    check(o.get("applicable") is False and
          "kvm.nx_huge_pages=N" in o.get("not_applicable", "") and
          "faults" not in o and "series" not in o,
          "nx off: %s is not said not applicable: %r" % (p, o))
check(pols.get("perm-upgrade", {}).get("applicable") is True and
      pols["perm-upgrade"].get("zaps_kept", 0) > 0,
      "nx off: perm-upgrade's what-if is not given")
check(pols.get("baseline", {}).get("applicable") is True,
      "nx off: baseline is not applicable")

r = run([mmr, "replay", db])
rows = [l for l in r.stdout.splitlines()
        if l.startswith("  nx-") and "does not apply" not in l]
check(len(rows) == 2 and all("not applicable here" in l for l in rows),
      "nx off: text rows %r" % rows)
check(r.stdout.count("does not apply: on this host the NX huge page "
                     "mitigation") == 2, "nx off: text gives no reason")

# 26 sweeps in two replays: the DB holds 30 runs.
for lo in (61, 74):
    sweeps = ["nx-ratio=%d" % k for k in range(lo, lo + 13)]
    pols = replay_json(db, *sweeps)["policies"]
    check(all(pols.get(s, {}).get("applicable") is False for s in sweeps),
          "nx off: a sweep is given figures")
con = sqlite3.connect(db)
na = dict(con.execute("SELECT policy, not_applicable FROM replay_run"))
check(len(na) == 30, "nx off: %d stored runs, want 30" % len(na))
check(sorted(p for p, why in na.items() if why is None) ==
      ["baseline", "perm-upgrade"],
      "nx off: stored applicable runs %r" %
      sorted(p for p, why in na.items() if why is None))
out = os.path.join(work, "report.html")
r = run([mmr, "report", db, "-o", out])
check(r.returncode == 0, "report: %s" % r.stderr)
html = open(out).read() if r.returncode == 0 else ""
check(html.count("not applicable here (below)") == 28 and
      html.count(" does not apply: on this host") == 28,
      "nx off: the report does not mark the 28 runs")
# The per-second charts (a chart per policy and series): baseline and
# perm-upgrade, twice (faults, leaf zaps), never a policy that does not
# apply.
charts = re.findall(r"<figcaption>(.*?)</figcaption>", html)
check(len(charts) == 4 and
      sum("baseline" in c for c in charts) == 2 and
      sum("perm-upgrade" in c for c in charts) == 2 and
      not any("nx-" in c for c in charts),
      "nx off: a what-if chart draws a policy that does not apply: %r" %
      charts)

# The mitigation on, pages split and recovered: all apply.
db = ingest("lttng-kernel-6.1.192-stock-nxrecovery-dirtylog")
pols = replay_json(db)["policies"]
for p in NX_ONLY:
    o = pols.get(p, {})
    check(o.get("applicable") is True and "not_applicable" not in o and
          "faults" in o, "nx on: %s not given: %r" % (p, sorted(o)))
check(pols.get("nx-skip-dirty", {}).get("leaf_zaps") !=
      pols.get("baseline", {}).get("leaf_zaps"),
      "nx on: nx-skip-dirty changes nothing on the NX capture")
finish()
