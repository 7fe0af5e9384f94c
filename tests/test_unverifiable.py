"""A recorded policy's claim no event can show is said unverifiable.

usage: test_unverifiable.py MMUREPLAY DATA_DIR WORK_DIR

nx-readlock claims that NX recovery held mmu_lock for read.  The kernel
series' recovery begin event says which lock each batch took, and the
self-check fails a batch that took the other (policy_decision); a stock
kernel traces no such event, so on its capture the claim passed
unremarked.  Checked on real captures:
  - stock 6.1 nxrecovery under --recorded-policy nx-readlock: the verdict
    is what the events show (ok), and "unverifiable" names
    recovery_read_lock, in the JSON and the text;
  - patched 6.1 with the read-lock knob on: nothing unverifiable;
  - the same stock capture under baseline: nothing unverifiable.
"""
import json
import os
import sys

from mmrtest import check, finish, fresh_dir, ingest_fixture, run

mmr, data, work = sys.argv[1:4]
fresh_dir(work)


def fid(name, *args):
    db = ingest_fixture(mmr, os.path.join(data, name),
                        os.path.join(work, name))[1]
    r = run([mmr, "fidelity", db, "--json"] + list(args))
    t = run([mmr, "fidelity", db] + list(args))
    return r.returncode, json.loads(r.stdout), t.stdout


rc, doc, text = fid("lttng-kernel-6.1.192-stock-nxrecovery-dirtylog",
                    "--recorded-policy", "nx-readlock")
check(rc == 0 and doc["ok"] and doc["unverifiable"] ==
      ["recovery_read_lock"], "stock, nx-readlock claimed: exit %d, %s" %
      (rc, doc.get("unverifiable")))
check("recovery under the read lock (the recorded policy's) cannot be "
      "verified here" in text, "the text does not say it")
rc, doc, _ = fid("lttng-kernel-6.1.192-stock-nxrecovery-dirtylog")
check(doc["unverifiable"] == [], "stock, baseline: %s" %
      doc.get("unverifiable"))
rc, doc, _ = fid("lttng-kernel-6.1.192-patched-nxrecovery-readlock-on")
check(rc == 0 and doc["ok"] and doc["unverifiable"] == [],
      "patched read lock: exit %d, %s" % (rc, doc.get("unverifiable")))
finish()
