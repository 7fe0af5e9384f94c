"""Every mismatch is kept, counted per kind, and a cut list says so.

usage: test_mismatch_list.py MMUREPLAY DATA_DIR WORK_DIR

A real capture (stock 6.1 bgsnapshot, per-page unprotects) with 300 of
its leaf zaps deleted (the damage a lost-event gap leaves; see
mmrtest.damage_leaf_zaps) fails its self-check with far more than 64
mismatches.  Checked:
  - fidelity --json: mismatches_total equals the sum of
    mismatches_by_kind, the list holds the first 64 in trace order, and
    mismatches_cut says the list is cut;
  - fidelity's text gives every kind's count and says how many of how
    many it lists;
  - replay (exit 6, the failed self-check stored), its what-if withheld,
    still gives the trace's length (it said 0.000 s), and keeps every mismatch
    in table replay_mismatch: as many per kind as the JSON counts, the
    first 64 equal to the JSON's list.
The lists used to stop at 64 in the JSON and the DB with no count per
kind beyond them.
"""
import collections
import json
import os
import re
import sqlite3
import sys

from mmrtest import (check, damage_leaf_zaps, finish, fresh_dir,
                     ingest_fixture, run)

mmr, data, work = sys.argv[1:4]
fresh_dir(work)
db = ingest_fixture(mmr, os.path.join(
    data, "lttng-kernel-6.1.192-stock-bgsnapshot-perpage-read"), work)[1]
bad = damage_leaf_zaps(db, os.path.join(work, "damaged.db"), n=300)

r = run([mmr, "fidelity", bad, "--json"])
check(r.returncode == 6, "fidelity on the damaged DB: exit %d" %
      r.returncode)
fid = json.loads(r.stdout)
total = fid["mismatches_total"]
by_kind = {k: n for k, n in fid["mismatches_by_kind"].items() if n}
listed = fid["mismatches"]
check(total > 64 and sum(by_kind.values()) == total,
      "mismatches %d, by kind %s" % (total, by_kind))
check(len(listed) == 64 and fid["mismatches_cut"] is True,
      "the JSON lists %d, cut %s" % (len(listed), fid["mismatches_cut"]))
check([m["seq"] for m in listed] == sorted(m["seq"] for m in listed),
      "the list is in trace order")

r = run([mmr, "fidelity", bad])
line = re.search(r"^  mismatches: (\d+) \((.*)\)$", r.stdout, re.M)
check(line is not None and int(line.group(1)) == total and
      dict((k, int(v)) for k, v in (p.split(" ")
                                    for p in line.group(2).split(", ")))
      == by_kind, "text: %r" % (line.group(0) if line else r.stdout[-400:]))
check("(the first 10 of %d;" % total in r.stdout,
      "text does not say the list is cut")

r = run([mmr, "replay", bad])
check(r.returncode == 6, "replay on the damaged DB: exit %d" %
      r.returncode)
# Withheld, the text still says how long the capture is (its last
# event's time, meta last_ts).
last = sqlite3.connect(bad).execute(
    "SELECT value FROM meta WHERE key = 'last_ts'").fetchone()[0]
check(r.stdout.startswith("Replay of %s (%.3f s of trace)" %
                          (bad, last / 1e9)) and last > 0,
      "withheld replay: %r" % r.stdout.splitlines()[:1])
con = sqlite3.connect(bad)
rows = con.execute("SELECT m.kind, m.seq, m.ts, m.gfn, m.predicted, "
                   "m.observed FROM replay_mismatch m JOIN replay_run r "
                   "ON r.id = m.run_id ORDER BY m.seq").fetchall()
stored = collections.Counter(k for k, *_ in rows)
check(len(rows) == total and dict(stored) == by_kind,
      "replay_mismatch holds %d (%s), want %d (%s)" %
      (len(rows), dict(stored), total, by_kind))
check([(m["kind"], m["seq"], m["ts_ns"], m["gfn"], m["predicted"],
        m["observed"]) for m in listed] == [tuple(x) for x in rows[:64]],
      "the stored first 64 differ from the JSON's list")
finish()
