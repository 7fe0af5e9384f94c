"""capture/mmureplay-capture and kvm-stats-sampler on this host, with a
real lttng-sessiond and the host's real /dev/kvm.

usage: test_capture.py CAPTURE_SCRIPT SAMPLER MMUREPLAY WORK

1. Without a kernel tracer (this host's kernel cannot load lttng-modules)
   a kernel capture is refused: exit 2, one line naming the kernel tracer.
2. --stats without the UST channel is refused; on a host without KVM's
   debugfs the sampler it starts ends at once, which the capture says in
   one line before completing.
3. A UST-only capture of kvm-stats-sampler --own-vm (KVM_GET_STATS_FD on
   a VM it creates): the manifest has the fields of
   schemas/manifest.schema.json, and the DB holds exactly count x stats
   samples, named and valued as the sampler printed them.
"""
import json
import os
import subprocess
import sys

from mmrtest import check, db_rows, finish, fresh_dir, run

capture, sampler, mmr, work = sys.argv[1:5]
fresh_dir(work)
COUNT = 3

has_kernel = run(["lttng", "list", "-k"]).returncode == 0
if not has_kernel:
    out = os.path.join(work, "k")
    r = run([capture, "record", "-o", out, "--", "true"])
    check(r.returncode == 2, "kernel capture refused: exit %d"
          % r.returncode)
    lines = r.stderr.strip().splitlines()
    check(len(lines) == 1 and "kernel tracer" in lines[0],
          "one line naming the kernel tracer: %r" % lines)
    check(not os.path.exists(os.path.join(out, "trace")), "no session left")

# --stats needs the UST channel; without KVM's debugfs the sampler ends
# at once, and the capture says so in one line (and still completes).
r = run([capture, "record", "-o", os.path.join(work, "s0"), "--no-ust",
         "--stats", "--", "true"])
check(r.returncode == 1 and "--stats needs the UST channel" in r.stderr,
      "--stats --no-ust refused: %d %s" % (r.returncode, r.stderr))
if not os.access("/sys/kernel/debug/kvm", os.R_OK):
    out = os.path.join(work, "s")
    r = run([capture, "record", "-o", out, "--no-kernel", "--stats", "--",
             "sleep", "0.5"], env=dict(os.environ, MMUREPLAY_SAMPLER=sampler))
    warn = [l for l in r.stderr.splitlines() if "ended early" in l]
    check(r.returncode == 0 and len(warn) == 1 and
          "/sys/kernel/debug/kvm: not readable" in warn[0] and
          os.path.exists(os.path.join(out, "manifest.json")),
          "sampler without debugfs: one line, capture complete: %d %s"
          % (r.returncode, r.stderr))

if not os.access("/dev/kvm", os.R_OK | os.W_OK):
    print("SKIP: no /dev/kvm")
    finish()
out = os.path.join(work, "u")
r = run([capture, "record", "-o", out, "--no-kernel", "--workload",
         "kvm-stats-sampler --own-vm", "--", sampler, "--own-vm",
         "--count", str(COUNT), "--period-ms", "20"])
check(r.returncode == 0, "UST capture: %s" % r.stderr)
printed = [line.split() for line in r.stdout.splitlines()]
check(len(printed) > 5, "sampler saw statistics: %r" % printed)

with open(os.path.join(out, "manifest.json")) as f:
    m = json.load(f)
with open(os.path.join(os.path.dirname(__file__), "..", "schemas",
                       "manifest.schema.json")) as f:
    schema = json.load(f)
for key in schema["required"]:
    check(key in m, "manifest has %s" % key)
check(m["manifest_version"] == 1, "manifest version")
check(m["cpu"]["vendor"] in schema["properties"]["cpu"]["properties"]
      ["vendor"]["enum"], "cpu vendor")
check(m["kernel_release"] == os.uname().release, "kernel release")
check(all(isinstance(v, str) for v in m["kvm"]["params"].values()) and
      "kvm.tdp_mmu" in m["kvm"]["params"], "kvm params")
check(m["trace"]["ust"] is True and m["trace"]["discarded_events"] == 0,
      "trace section")

db = os.path.join(work, "u.db")
r = run([mmr, "ingest", out, "-o", db])
check(r.returncode == 0, "ingest: %s" % r.stderr)
rows = db_rows(db, "SELECT stat, value FROM stats_sample ORDER BY seq")
check(len(rows) == COUNT * len(printed), "%d samples, want %d x %d"
      % (len(rows), COUNT, len(printed)))
last = dict(rows[-len(printed):])
check(last == {name: int(v) for _, name, v in printed},
      "last sample equals what the sampler printed")
stored = db_rows(db, "SELECT value FROM meta WHERE key = 'manifest'")
check(stored and json.loads(stored[0][0]) == m, "manifest stored in DB")
finish()
