"""perf's CTF with its side-band records, against LTTng of the same run.

The fixture is one stock-kernel lab run recorded by LTTng and by
`perf record -a -k mono`, converted by `perf data convert --to-ctf --all`
(the side-band records perf_comm, perf_fork, perf_exit, perf_mmap[2]
name the threads).  Checked:
  - perf's raw counts equal babeltrace2's of the same CTF, now and when
    recorded (perf-counts.txt), side-band records included; the DB's
    events are the CLI's minus the side-band records, which have no place
    in the time line (the synthesized ones carry time 0) and so do not
    stretch the capture to the epoch;
  - perf_comm names the NX recovery worker with the thread id LTTng's
    procname context gives it;
  - the summary's totals equal LTTng's (perf's window is longer, so the
    rates are not compared);
  - the self-check passes on both and observes the same, NX recovery
    included (measured on both: the worker is known).

usage: test_perf_inputs.py MMUREPLAY FIXTURE_DIR WORK_DIR
"""
import collections
import json
import os
import shutil
import sys
import tarfile

from mmrtest import check, db_rows, finish, fresh_dir, run, summary_json

mmr, fixture, work = sys.argv[1:4]
fresh_dir(work)
cap = os.path.join(work, "capture")
os.makedirs(cap)
for tarball in ("trace.tar.xz", "perf-ctf.tar.xz"):
    with tarfile.open(os.path.join(fixture, tarball)) as tf:
        tf.extractall(cap)
shutil.copy(os.path.join(fixture, "manifest.json"), cap)
SIDEBAND = {"perf_comm", "perf_fork", "perf_exit", "perf_mmap", "perf_mmap2"}

dbs = {"lttng": os.path.join(work, "lttng.db"),
       "perf": os.path.join(work, "perf.db")}
for name, src in (("lttng", "trace"), ("perf", "perf-ctf")):
    r = run([mmr, "ingest", os.path.join(cap, src), "-o", dbs[name]])
    check(r.returncode == 0, "ingest %s: %s" % (src, r.stderr))
sums = {k: summary_json(mmr, v) for k, v in dbs.items()}

# babeltrace2's counts of perf's CTF: "[TS] (+DELTA) NAME: {...}".
bt = run(["babeltrace2", os.path.join(cap, "perf-ctf")])
check(bt.returncode == 0, "babeltrace2: %s" % bt.stderr[:300])
cli = collections.Counter(line.split()[2].rstrip(":")
                          for line in bt.stdout.splitlines() if line)
recorded = {}
with open(os.path.join(fixture, "perf-counts.txt")) as f:
    for line in f:
        n, name = line.split()
        recorded[name] = int(n)
check(dict(cli) == recorded, "CLI counts differ from perf-counts.txt")
check(sums["perf"]["raw_event_counts"] == dict(cli),
      "raw counts differ from babeltrace2's: %s vs %s"
      % (sums["perf"]["raw_event_counts"], dict(cli)))
side = sum(n for k, n in cli.items() if k in SIDEBAND)
check(side > 0 and cli["perf_comm"] > 0, "side-band records in the CTF")
check(sums["perf"]["events"] == sum(cli.values()) - side,
      "events: %d, want the CLI's %d minus %d side-band"
      % (sums["perf"]["events"], sum(cli.values()), side))
check(sums["perf"]["duration_s"] < 3600,
      "time-0 side-band records stretch the capture: %.0f s"
      % sums["perf"]["duration_s"])

# The worker thread, named by perf_comm and by LTTng's procname.
q = "SELECT tid FROM thread WHERE procname LIKE 'kvm-nx-lpage%'"
lw = {r[0] for r in db_rows(dbs["lttng"], q)}
pw = {r[0] for r in db_rows(dbs["perf"], q)}
check(lw and lw == pw, "NX worker tid: LTTng %s, perf %s" % (lw, pw))

for k in ("npf_faults", "leaf_zaps", "notifier_invalidations"):
    vals = {s: sums[s]["totals"].get(k) for s in dbs}
    check(len(set(vals.values())) == 1 and vals["lttng"],
          "summary %s differs: %s" % (k, vals))


def fidelity(db):
    r = run([mmr, "fidelity", db, "--json"])
    check(r.returncode == 0 and r.stdout, "fidelity on %s: exit %d: %s"
          % (db, r.returncode, r.stderr))
    try:
        return json.loads(r.stdout)
    except ValueError:
        return {}


fl, fp = fidelity(dbs["lttng"]), fidelity(dbs["perf"])
check(fl.get("ok") and fp.get("ok"), "self-check: LTTng %s, perf %s"
      % (fl.get("ok"), fp.get("ok")))
check(fl.get("observed") == fp.get("observed"),
      "observed: LTTng %s, perf %s" % (fl.get("observed"), fp.get("observed")))
nx = fp.get("observed", {}).get("nx_recovered", 0)
check(fp.get("check_kind", {}).get("nx_recovered") == "predicted" and nx > 0,
      "perf: NX recovery measured and checked: %s, %s"
      % (nx, fp.get("check_kind")))
print("perf: %d events (+%d side-band), NX recovered %s, self-check %s"
      % (sums["perf"]["events"], side, nx, fp.get("ok")))
finish()
