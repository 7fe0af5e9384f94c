"""The replay's stored runs: what lands in the DB and what reads it back.

usage: test_replay_store.py MMUREPLAY DATA_DIR WORK_DIR

On a real capture (stock 6.1 nxrecovery, ratio 60 in its manifest):
  - every figure of a run is stored under its name, once (the figures are
    one typed list: metrics/replay_metrics.h REPLAY_METRIC_LIST), and
    the JSON shows the what-if ones, the stored values equal;
  - a replay asked for more policies than one run holds (16, the
    recorded one included) is refused with exit 1 and one line, where
    it used to drop the 17th silently;
  - a stored figure this build has no name for (a newer mmureplay's, or
    an edited DB) is said once on stderr and left out; the report still
    runs;
  - runs accumulate over replays: 28 stored, more than the loader's
    first allocation, and the report names every one.
"""
import json
import os
import sqlite3
import sys

from mmrtest import check, finish, fresh_dir, ingest_fixture, run

mmr, data, work = sys.argv[1:4]
fresh_dir(work)
db = ingest_fixture(mmr, os.path.join(
    data, "lttng-kernel-6.1.192-stock-nxrecovery-dirtylog"), work)[1]

r = run([mmr, "replay", db, "--json", "--policy", "perm-upgrade"])
check(r.returncode == 0, "replay: %s" % r.stderr)
doc = json.loads(r.stdout) if r.returncode == 0 else {"policies": {}}
con = sqlite3.connect(db)
stored = con.execute(
    "SELECT m.name, m.value FROM replay_metric m JOIN replay_run r ON "
    "r.id = m.run_id WHERE r.policy = 'perm-upgrade'"
).fetchall()
names = [n for n, _ in stored]
check(len(names) == len(set(names)), "a figure stored twice: %r" % names)
pol = doc["policies"].get("perm-upgrade", {})
shown = [k for k in pol if k not in ("verified", "duration_s",
                                     "figure_kind", "applicable",
                                     "not_modelled", "series",
                                     "zaps_kept_by_thread")]
check(shown and all(k in names for k in shown),
      "JSON figures missing from the DB: %r" %
      [k for k in shown if k not in names])
check(all(pol[k] == v for k, v in stored if k in pol),
      "stored values differ from the JSON's")
check([n for n in names if n.startswith(("observed.", "predicted.",
                                         "exempt."))] and
      not [k for k in shown if k.startswith(("observed.", "predicted.",
                                             "exempt."))],
      "self-check figures: stored %r, shown %r" % (names, shown))

# The threads whose zaps a policy keeps: table replay_kept, as the JSON
# (nx-skip-dirty keeps the NX worker's while dirty logging is on).
r = run([mmr, "replay", db, "--json", "--policy", "nx-skip-dirty"])
sd = json.loads(r.stdout)["policies"]["nx-skip-dirty"] if \
    r.returncode == 0 else {}
kept = con.execute(
    "SELECT k.tid, k.thread, k.zaps FROM replay_kept k JOIN replay_run r "
    "ON r.id = k.run_id WHERE r.policy = 'nx-skip-dirty' ORDER BY "
    "k.zaps DESC, k.tid").fetchall()
want = [(t["tid"], t["thread"], t["zaps"])
        for t in sd.get("zaps_kept_by_thread", [])]
check(kept == want and want and
      sum(z for _, _, z in want) + sd["zaps_kept_by_other_threads"] ==
      sd["zaps_kept"],
      "replay_kept %s, JSON %s" % (kept, want))

too_many = ["nx-ratio=%d" % k for k in range(61, 78)]
r = run([mmr, "replay", db, "--policy", ",".join(too_many)])
check(r.returncode == 1 and "at most 16 policies" in r.stderr and
      len(r.stderr.strip().splitlines()) == 1,
      "17 policies: exit %d: %s" % (r.returncode, r.stderr))

for lo in (61, 74):
    r = run([mmr, "replay", db, "--policy",
             ",".join("nx-ratio=%d" % k for k in range(lo, lo + 13))])
    check(r.returncode == 0, "sweep replay: %s" % r.stderr)
runs = [p for (p,) in con.execute("SELECT policy FROM replay_run")]
check(len(runs) == 29, "%d stored runs, want 29 (baseline, perm-upgrade, "
      "nx-skip-dirty, 26 ratios)" % len(runs))

con.execute("INSERT INTO replay_metric SELECT id, 'from_a_newer_build', 1 "
            "FROM replay_run")
con.commit()
out = os.path.join(work, "report.html")
r = run([mmr, "report", db, "-o", out])
check(r.returncode == 0, "report with an unknown figure: %s" % r.stderr)
check(r.stderr.count("'from_a_newer_build' is unknown") == 1,
      "unknown figure not said once: %r" % r.stderr)
html = open(out).read() if r.returncode == 0 else ""
check(all(">%s</td>" % p in html for p in runs),
      "the report misses a stored run")
finish()
