"""A lossy trace.dat with an instance, against trace-cmd report.

The fixture's trace-cmd recording overran its 16 KiB top buffer on
purpose and has an instance (mmrinst: kvm_exit, kvm_entry).  Checked,
with `trace-cmd report` of the same file as the oracle:
  - every event of both buffers is read: per event name, the DB's raw
    counts equal report's lines (both buffers together), and per buffer
    the DB's stream events equal report's lines of that buffer (lines
    of an instance start with its name); an instance's rows carry the
    recording's CPU numbers (before: the instance's CPUs were numbered
    after the top buffer's, and its stream counts stayed 0);
  - every "[EVENTS DROPPED]" marker is a lost range of the DB on the
    same CPU, and the counted ones sum to the same total ("[N EVENTS
    DROPPED]"); a marker without a count is a range of unknown count;
  - the self-check says the capture is damaged (lost events and ranges
    as above) and does not pass for it.

usage: test_tracecmd_lossy.py MMUREPLAY FIXTURE_DIR WORK_DIR
"""
import collections
import json
import lzma
import os
import re
import shutil
import sys

from mmrtest import check, db_rows, finish, fresh_dir, run, summary_json

mmr, fixture, work = sys.argv[1:4]
fresh_dir(work)
dat = os.path.join(work, "trace.dat")
with lzma.open(os.path.join(fixture, "trace.dat.xz")) as src, \
        open(dat, "wb") as dst:
    shutil.copyfileobj(src, dst)
db = os.path.join(work, "tc.db")
r = run([mmr, "ingest", dat, "-o", db])
check(r.returncode == 0, "ingest: %s" % r.stderr)

rep = run(["trace-cmd", "report", "-i", dat])
check(rep.returncode == 0, "trace-cmd report: %s" % rep.stderr[:300])
LINE = re.compile(r"^(?:(\w+):)?\s*.*-\d+\s+\[(\d+)\]\s+(?:\S+\s+)?"
                  r"\d+\.\d+: (\w+):")
DROP = re.compile(r"^\s*CPU:(\d+) \[(?:(\d+) )?EVENTS DROPPED\]")
names = collections.Counter()
per_buffer = collections.Counter()
drops = collections.Counter()
drop_sum = 0
for line in rep.stdout.splitlines():
    m = LINE.match(line)
    if m:
        names[m.group(3)] += 1
        per_buffer[m.group(1) or "top"] += 1
        continue
    m = DROP.match(line)
    if m:
        drops[int(m.group(1))] += 1
        drop_sum += int(m.group(2) or 0)

s = summary_json(mmr, db)
raw = collections.Counter()
for k, v in s["raw_event_counts"].items():
    raw[k.split(":", 1)[-1]] += v
check(dict(raw) == dict(names), "raw counts differ from trace-cmd "
      "report: %s" % {k: (raw[k], names[k]) for k in set(raw) | set(names)
                      if raw[k] != names[k]})
db_buf = dict(db_rows(db, "SELECT t.trace_name, sum(s.events) FROM stream "
                          "s JOIN trace t ON t.id = s.trace_id GROUP BY 1"))
check(db_buf == dict(per_buffer) and per_buffer["mmrinst"] > 0,
      "per buffer: DB %s, report %s" % (db_buf, dict(per_buffer)))

# An instance's rows carry their own CPU (cpus=2 in report's header).
ncpus = int(re.search(r"^cpus=(\d+)", rep.stdout, re.M).group(1))
check(db_rows(db, "SELECT max(cpu) FROM vcpu_exit")[0][0] == ncpus - 1,
      "instance rows on CPUs beyond the recording's %d" % ncpus)

# Lost ranges: one per marker, per CPU; the counted ones sum alike.
lost = db_rows(db, "SELECT s.name, l.count FROM lost l JOIN stream s ON "
                   "s.id = l.stream_id")
by_cpu = collections.Counter()
for name, _ in lost:
    m = re.search(r"(\d+)$", name or "")
    by_cpu[int(m.group(1)) if m else -1] += 1
check(sum(drops.values()) > 0 and dict(by_cpu) == dict(drops),
      "lost ranges per CPU: DB %s, report markers %s"
      % (dict(by_cpu), dict(drops)))
check(sum(c for _, c in lost if c is not None) == drop_sum and
      s["lost"]["events"] == drop_sum,
      "lost events: DB %s, report %d" % (s["lost"]["events"], drop_sum))

r = run([mmr, "fidelity", db, "--json"])
f = json.loads(r.stdout) if r.stdout else {}
dmg = f.get("capture_damage", {})
check(r.returncode == 6 and not f.get("ok") and
      dmg.get("lost_events") == drop_sum and
      dmg.get("lost_ranges") == sum(drops.values()),
      "fidelity: exit %d, damage %s" % (r.returncode, dmg))
check("damaged capture" in r.stderr, "fidelity warns: %s" % r.stderr)
print("trace.dat: %d events in 2 buffers (%s), %d drop markers, %d events "
      "counted lost" % (sum(names.values()), dict(per_buffer),
                        sum(drops.values()), drop_sum))
finish()
