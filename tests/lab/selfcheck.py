"""The self-check on a fresh stock lab capture: huge pages and scale.

usage: selfcheck.py MMUREPLAY RUN_OUT_DIR

A run.sh output directory recorded on a Debian stock kernel, 6.1 or
6.12 (basic --hugepage: 2 MiB leaves upgraded in place, split,
collapsed, zapped at unaligned window boundaries; bgsnapshot --mem 512:
2.2 M events, where a vCPU's install can race a saver's invalidation;
basic on 6.12).  Checks:

1. nothing discarded (the babeltrace2 CLI prints no warning), and the
   DB's raw counts are the CLI's;
2. `mmureplay fidelity` is ok with no mismatch, and its observed faults
   and leaf zaps are the CLI's (a leaf zap: a present leaf SPTE, 4K or
   with the large bit, traced as non-present);
3. what the trace settled instead of the model (stock windows racing an
   install, fidelity JSON settled_by_trace) is at most 1 in 10,000
   invalidations: the self-check stays a check.
"""
import collections
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))
from mmrtest import bt_events, check, finish, run, summary_json  # noqa

mmr, out = sys.argv[1:3]
trace = os.path.join(out, "trace")
PRESENT, LARGE = 1 << 11, 1 << 7

# 1.
bt = subprocess.run(["babeltrace2", trace], stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE, text=True)
check(bt.returncode == 0 and "discard" not in bt.stderr.lower(),
      "nothing discarded: %s" % bt.stderr[:200])
counts, faults, zaps = collections.Counter(), 0, 0
for _, name, f in bt_events(trace):
    counts[name] += 1
    if name == "kvm_x86_page_fault":
        faults += 1
    elif name == "kvm_tdp_mmu_spte_changed":
        o = f["old_spte"]
        if o & PRESENT and (f["level"] == 1 or o & LARGE) and \
                not f["new_spte"] & PRESENT:
            zaps += 1
db = os.path.join(out, "selfcheck.db")
if os.path.exists(db):
    os.unlink(db)
r = run([mmr, "ingest", trace, "-o", db, "-q"])
check(r.returncode == 0, "ingest: %s" % r.stderr)
s = summary_json(mmr, db)
check(s["raw_event_counts"] == counts, "raw counts equal the CLI's")

# 2.
r = run([mmr, "fidelity", db, "--json"])
fid = json.loads(r.stdout) if r.stdout else {}
check(r.returncode == 0 and fid.get("ok") and
      fid.get("mismatches_total") == 0,
      "self-check ok: %s" % {k: fid.get(k) for k in (
          "predicted", "observed", "mismatches")})
check(fid["observed"]["faults"] == faults and
      fid["observed"]["leaf_zaps"] == zaps,
      "observed faults %d, leaf zaps %d are the CLI's"
      % (faults, zaps))
for m in ("faults", "leaf_zaps"):
    check(fid["predicted"][m] == fid["observed"][m], "%s exact" % m)

# 3.
settled = fid["settled_by_trace"]
windows = counts["kvm_unmap_hva_range"]
check(settled["race_windows"] * 10000 <= max(windows, 1),
      "settled by the trace: %s of %d invalidations" % (settled, windows))
print("selfcheck: %d events, %d faults, %d leaf zaps, %d invalidations, "
      "settled by the trace: %s" % (sum(counts.values()), faults, zaps,
                                    windows, settled))
finish()
