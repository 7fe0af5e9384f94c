"""The lab's verify.sh (capture/lab/verify.sh) on a real capture, without
the lab: a run directory rebuilt from a fixture (its trace, and its
manifest's lab object written as run.sh writes manifest.json), cut by
babeltrace2's trimmer (--end) as a session stopped early would hold it.

The fixture: stock 6.12, nxrecovery (--hugepage-late) and two basic VMs
under khugepaged and compaction.  Cut 1 s in, before the recovery
worker's first event: verify.sh must say the worker's zaps are not
required for a --hugepage-late VM (its RAM was faulted in 4 KiB, so
nothing is NX-split), not fail them; it failed them before (the 6.1
kthread's branch came first).  What this cannot catch: the checks of a
whole run, which the lab's own runs exercise.

usage: test_lab_verify.py SOURCE_DIR DATA_DIR WORK
"""
import json
import os
import shutil
import subprocess
import sys

from mmrtest import bt_stamps, check, extract_fixture, finish, fresh_dir

src, data, work = sys.argv[1:4]
fresh_dir(work)
FX = "lttng-kernel-6.12.118-stock-multivm-nxrecovery-basic-basic-" \
    "khugepaged-compaction-exit"


def run_sh_manifest(lab, path):
    """lab as run.sh lays manifest.json out: a key per line, a VM of
    "vms" per line (verify.sh reads it line by line)."""
    out = ["{"]
    for i, (k, v) in enumerate(lab.items()):
        end = "," if i < len(lab) - 1 else ""
        if k == "vms" and v:
            out.append('  "vms": [')
            out += ["    " + json.dumps(x, ensure_ascii=False) +
                    ("," if j < len(v) - 1 else "") for j, x in enumerate(v)]
            out.append("  ]" + end)
        else:
            out.append("  %s: %s%s" % (json.dumps(k),
                                       json.dumps(v, ensure_ascii=False),
                                       end))
    out.append("}")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")


full = extract_fixture(os.path.join(data, FX), os.path.join(work, "x"))
rundir = fresh_dir(os.path.join(work, "run"))
first = bt_stamps(full)[0] + 10 ** 9
r = subprocess.run(["babeltrace2", full, "--end=%d.%09d" % (
    first // 10 ** 9, first % 10 ** 9), "-o", "ctf", "-w",
    os.path.join(rundir, "trace")], capture_output=True, text=True)
check(r.returncode == 0, "babeltrace2 trimmer: %s" % r.stderr)
shutil.copy(os.path.join(data, FX, "console.log"), rundir)
lab = json.load(open(os.path.join(data, FX, "manifest.json")))["lab"]
run_sh_manifest(lab, os.path.join(rundir, "manifest.json"))
v = subprocess.run(["bash", os.path.join(src, "capture", "lab",
                                         "verify.sh"), rundir],
                   capture_output=True, text=True)
lines = v.stdout.splitlines()
check(not any("worker" in x and x.startswith("FAIL") for x in lines) and
      "  recovery worker zaps: not required (--hugepage-late)" in lines,
      "verify.sh: a --hugepage-late VM whose worker zapped nothing needs "
      "no worker zaps (%s)" % [x for x in lines if "worker" in x])
finish()
