"""A fault's access kind, decoded per exit ISA (issue: Intel VMX/EPT hosts).

usage: test_intel_faults.py MMUREPLAY DATA_DIR WORK_DIR

On VMX, kvm_page_fault traces the EPT-violation exit qualification, not
a PFERR value (handle_ept_violation(), 6.1 and 6.12); the fault table's
access and present columns are decoded by the capture's exit ISA
(analyze/model/fault.h).

Real text first: two posts' Intel trace lines (tests/data/ftrace-intel-
public-samples/README.md names them).  What each fault is comes from
the kernel itself where the post shows it: the 2024 post's
fast_page_fault line prints the PFERR value KVM built from the same
fault's qualification ("F": a fetch of a non-present entry).  Read as
PFERR bits, as the analyzer did before, that qualification (0x184) is a
user-mode read.  The 2019 post's 0x582 is a write of a non-present entry
by the SDM's and handle_ept_violation()'s bit meanings; its kvm_exit is in
trace-cmd's kvm plugin format and its kvm_page_fault in the format of
kernels before vcpu and rip were printed.

Then real SVM: every fault of a stock lab capture (AMD NPT) decodes as
its own PFERR bits, and the capture DB says which ISA it was read by.

Then the order edge cases, on hand-made text (SYNTHETIC, a few lines
each, labelled so below): a fault before the capture's first exit is
decoded at the end of ingest; a capture with no exit takes the ISA from
its manifest's CPU vendor; with neither, the columns stay NULL.

What this cannot catch: Intel hardware behaviour the posts do not show
(no real VMX capture exists to run the model on; the synthetic EPT test
checks the pipeline's consistency only).
"""
import json
import os
import sqlite3
import sys

from mmrtest import check, finish, fresh_dir, ingest_fixture, run

mmr, data, work = sys.argv[1:4]
fresh_dir(work)
samples = os.path.join(data, "ftrace-intel-public-samples")


def ingest(src, db):
    r = run([mmr, "ingest", src, "-o", db])
    check(r.returncode == 0, "ingest %s: exit %d: %s" %
          (src, r.returncode, r.stderr))
    return sqlite3.connect(db)


def faults(con):
    return con.execute("SELECT printf('%x', error_code), access, present "
                       "FROM fault ORDER BY seq").fetchall()


def meta(con, key):
    row = con.execute("SELECT value FROM meta WHERE key = ?",
                      (key,)).fetchone()
    return row[0] if row else None


# 1. The 2024 post (tracefs text, 6.6/6.10 print formats).
con = ingest(os.path.join(samples, "tracefs-6.10-nested-freeze.txt"),
             os.path.join(work, "nested-freeze.db"))
check(faults(con) == [("184", "fetch", 0)],
      "2024 post: fault %r, want 0x184 fetch not present" % faults(con))
fast = con.execute("SELECT error_code FROM fast_fault").fetchall()
# fast_page_fault's "F": PFERR_FETCH alone, the kernel's own decoding.
check(fast == [(0x10,)], "2024 post: fast_page_fault error_code %r, want "
      "0x10 (F)" % fast)
check(con.execute("SELECT exit_reason, isa FROM vcpu_exit").fetchall() ==
      [(48, 1)], "2024 post: kvm_exit is not EPT_VIOLATION on VMX")
check(meta(con, "fault_isa") == "vmx", "2024 post: fault_isa %r" %
      meta(con, "fault_isa"))

# 2. The 2019 post (trace-cmd report: kvm plugin, old kvm_page_fault).
con = ingest(os.path.join(samples, "tracecmd-report-dirty-ring.txt"),
             os.path.join(work, "dirty-ring.db"))
check(faults(con) == [("582", "write", 0)],
      "2019 post: fault %r, want 0x582 write not present" % faults(con))
row = con.execute("SELECT exit_reason, isa, info1, info2, vcpu "
                  "FROM vcpu_exit").fetchall()
check(row == [(48, 1, 0x582, 0, None)], "2019 post: kvm_exit %r" % row)
lossy = meta(con, "source_lossy") or ""
check("kvm plugin" in lossy and "kvm_page_fault" in lossy,
      "2019 post: source_lossy does not say what the text lacks: %r" %
      lossy)

# 3. A real SVM capture: access and present are the PFERR bits.
_, db = ingest_fixture(mmr, os.path.join(
    data, "lttng-kernel-6.1.192-stock-nxrecovery-dirtylog"),
    os.path.join(work, "svm"))
con = sqlite3.connect(db)
bad = con.execute(
    "SELECT count(*) FROM fault WHERE access IS NOT CASE "
    "WHEN error_code & 16 THEN 'fetch' WHEN error_code & 2 THEN 'write' "
    "ELSE 'read' END OR present IS NOT error_code & 1").fetchone()[0]
kinds = dict(con.execute("SELECT access, count(*) FROM fault "
                         "GROUP BY access").fetchall())
check(bad == 0, "svm: %d faults whose access/present are not their "
      "PFERR bits" % bad)
check(kinds.get("fetch", 0) > 0 and kinds.get("read", 0) > 0,
      "svm: the NX capture has no fetch or no read faults: %r" % kinds)
check(meta(con, "fault_isa") == "svm", "svm: fault_isa %r" %
      meta(con, "fault_isa"))

# 4. SYNTHETIC order cases: text made here, not recorded.
HEAD = "# tracer: nop\n#\n"
FAULT = ("            qemu-1 [000] ..... 100.000001: kvm_page_fault: vcpu 0 "
         "rip 0x1000 address 0x00000000020fe612 error_code 0x184\n")
EXIT = ("            qemu-1 [000] d.... 100.000002: kvm_exit: vcpu 0 reason "
        "EPT_VIOLATION rip 0x1000 info1 0x0000000000000184 info2 "
        "0x0000000000000000 intr_info 0x00000000 error_code 0x00000000\n")


def text_capture(name, lines, manifest=None):
    d = fresh_dir(os.path.join(work, name))
    path = os.path.join(d, "trace.txt")
    with open(path, "w") as f:
        f.write(HEAD + "".join(lines))
    if manifest:
        with open(os.path.join(d, "manifest.json"), "w") as f:
            json.dump(manifest, f)
    return ingest(path, os.path.join(work, name + ".db"))


con = text_capture("fault-first", [FAULT, EXIT, FAULT.replace(
    "100.000001", "100.000003")])
check(faults(con) == [("184", "fetch", 0)] * 2,
      "synthetic: a fault before the first exit: %r" % faults(con))
con = text_capture("no-exit-intel", [FAULT], {
    "manifest_version": 1, "cpu": {"vendor": "GenuineIntel"}})
check(faults(con) == [("184", "fetch", 0)],
      "synthetic: no exit, Intel manifest: %r" % faults(con))
con = text_capture("no-exit-amd", [FAULT], {
    "manifest_version": 1, "cpu": {"vendor": "AuthenticAMD"}})
check(faults(con) == [("184", "read", 0)],
      "synthetic: no exit, AMD manifest (PFERR 0x184: user read): %r" %
      faults(con))
con = text_capture("no-isa", [FAULT])
check(faults(con) == [("184", None, None)] and
      meta(con, "fault_isa") is None,
      "synthetic: no ISA anywhere: %r, fault_isa %r" %
      (faults(con), meta(con, "fault_isa")))
finish()
