"""SYNTHETIC capture (bench/synth), not a kernel recording: one synthetic
guest written twice, as AMD SVM/NPT and as Intel VMX/EPT would trace it
(synth --isa svm / --isa vmx, same seed), must give the same figures
through the whole pipeline.

usage: test_synthetic_ept.py MMUREPLAY SYNTH WORK_DIR

This is a consistency check of the analyzer's VMX/EPT decoding against
its SVM/NPT decoding (exit reason and ISA, the EPT-violation exit
qualification as kvm_page_fault's error_code, EPT SPTE bits, the SPTE
format chosen by the exit ISA and cpu.vendor), on a guest model that
never ran on any CPU.  It is not evidence about Intel hardware or about
what KVM does on it: both captures come from the same model, and the
vmx encoding is bench/synth_isa.c's reading of the Intel SDM and of KVM.

What it checks, the babeltrace2 CLI as the oracle for the traces:
  - the two traces hold the same events (names, timestamps, counts);
    paired, each vmx fault's qualification (SDM bits: 0 read, 1 write,
    2 fetch, 3-5 the entry's R/W/X) says the access and presence the
    svm fault's PFERR bits say, and each vmx SPTE has the svm one's
    presence, size, pfn, write and execute permissions;
  - ingest: raw counts equal the CLI's; the summary is the same but for
    the SPTE format's name (npt / ept);
  - fidelity: the self-check passes on both, every figure identical;
  - replay: every figure of every policy (the registry's, an NX ratio
    and period sweep, a combination) identical;
  - the fault table's decoded access and present columns, row by row.
What it cannot catch: a decoding error that both ISAs share, or a wrong
idea of the hardware that the generator and the analyzer share.
"""
import json
import os
import sqlite3
import sys

from mmrtest import (bt_env, bt_events, check, finish, fresh_dir, run,
                     summary_json)

mmr, synth, work = sys.argv[1:4]
fresh_dir(work)
SEED, EVENTS, VCPUS = "23", "150000", "4"
ISAS = ("svm", "vmx")
# Figures that name the capture or time the run, not what it holds.
NOT_FIGURES = {"database", "duration_s"}
# A parameterized sweep beside the registry's policies (all by default).
SWEEP = ["nx-ratio=2", "nx-ratio=8", "nx-period=100",
         "perm-upgrade+nx-skip-dirty"]


def differences(a, b, path=""):
    """Paths where two JSON documents differ, NOT_FIGURES left out."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b)):
            if k in NOT_FIGURES:
                continue
            if k not in a or k not in b:
                out.append("%s/%s: on one side only" % (path, k))
            else:
                out += differences(a[k], b[k], "%s/%s" % (path, k))
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        out = []
        for i, (x, y) in enumerate(zip(a, b)):
            out += differences(x, y, "%s[%d]" % (path, i))
        return out
    return [] if a == b else ["%s: %r vs %r" % (path, a, b)]


def same_json(what, a, b):
    d = differences(a, b)
    check(not d, "%s: svm and vmx differ in %d place(s): %s"
          % (what, len(d), d[:5]))


def run_json(args):
    r = run([mmr] + args + ["--json"])
    check(r.returncode == 0, "%s exit %d: %s" % (" ".join(args[:2]),
                                                 r.returncode, r.stderr))
    return json.loads(r.stdout or "{}")


# --- The two captures: same guest, two encodings. ----------------------
out, total, events = {}, {}, {}
for isa in ISAS:
    out[isa] = os.path.join(work, isa)
    r = run([synth, "--events", EVENTS, "--seed", SEED, "--vcpus", VCPUS,
             "--isa", isa, "--out", out[isa]])
    check(r.returncode == 0, "synth --isa %s exit %d: %s"
          % (isa, r.returncode, r.stderr))
    total[isa] = int(r.stdout.strip() or 0)
    trace = os.path.join(out[isa], "trace", "kernel")
    env = bt_env(trace)
    check(env.get("synthetic") == "1" and
          env.get("tracer_name") == "mmureplay-synth",
          "%s: not named synthetic: %s" % (isa, env))
    with open(os.path.join(out[isa], "manifest.json")) as f:
        man = json.load(f)
    check(man["cpu"]["vendor"] == {"svm": "AuthenticAMD",
                                   "vmx": "GenuineIntel"}[isa] and
          man["cpu"]["model"] == "synthetic" and
          man["synthetic"]["seed"] == int(SEED),
          "%s manifest cpu %s, synthetic %s" % (isa, man["cpu"],
                                                man["synthetic"]))
    events[isa] = list(bt_events(trace))
check(total["svm"] == total["vmx"] == len(events["svm"]) ==
      len(events["vmx"]), "events: svm %d (CLI %d), vmx %d (CLI %d)"
      % (total["svm"], len(events["svm"]), total["vmx"],
         len(events["vmx"])))
cli = {}
for _, name, _ in events["svm"]:
    cli[name] = cli.get(name, 0) + 1
check([e[:2] for e in events["svm"]] == [e[:2] for e in events["vmx"]],
      "the CLI's (timestamp, event) sequences differ")

# --- Paired, the encodings say the same thing (the CLI's values). ------
PFERR_PRESENT, PFERR_WRITE, PFERR_FETCH = 1, 2, 0x10
QUAL_READ, QUAL_WRITE, QUAL_FETCH, QUAL_RWX = 1, 2, 4, 7 << 3
MMU_PRESENT, LARGE, PFN = 1 << 11, 1 << 7, ((1 << 52) - 1) & ~0xfff
SPTE_FIELDS = ("old_spte", "new_spte", "spte")


def svm_fault(e):
    kind = ("fetch" if e & PFERR_FETCH else
            "write" if e & PFERR_WRITE else "read")
    return kind, bool(e & PFERR_PRESENT)


def vmx_fault(q):
    acc = [k for bit, k in ((QUAL_READ, "read"), (QUAL_WRITE, "write"),
                            (QUAL_FETCH, "fetch")) if q & bit]
    return "+".join(acc), bool(q & QUAL_RWX)


def npt_bits(s):
    return (bool(s & MMU_PRESENT), bool(s & LARGE), s & PFN,
            bool(s & 2), not s >> 63) if s & MMU_PRESENT else s


def ept_bits(s):
    return (bool(s & MMU_PRESENT), bool(s & LARGE), s & PFN,
            bool(s & 2), bool(s & 4)) if s & MMU_PRESENT else s


bad, exits, faults = [], {}, {}
for (_, name, a), (_, _, b) in zip(events["svm"], events["vmx"]):
    if name == "kvm_x86_page_fault":
        k = svm_fault(a["error_code"])
        faults[k] = faults.get(k, 0) + 1
        if k != vmx_fault(b["error_code"]):
            bad.append("fault %#x / %#x" % (a["error_code"],
                                            b["error_code"]))
    elif name == "kvm_x86_exit":
        k = (a["isa"], a["exit_reason"], b["isa"], b["exit_reason"])
        exits[k] = exits.get(k, 0) + 1
    for f in SPTE_FIELDS:
        if f in a and npt_bits(a[f]) != ept_bits(b[f]):
            bad.append("%s %s %#x / %#x" % (name, f, a[f], b[f]))
check(not bad, "%d event(s) encode different things: %s"
      % (len(bad), bad[:5]))
check(set(exits) == {(2, 0x400, 1, 48), (2, 0x60, 1, 1)},
      "exits (svm isa, reason, vmx isa, reason): %s" % exits)
for k in (("read", False), ("write", False), ("write", True),
          ("fetch", False), ("fetch", True)):
    check(faults.get(k, 0) > 0, "no %s fault (present %s): not exercised"
          % k)

# --- Ingest and summary. -----------------------------------------------
db, summ = {}, {}
for isa in ISAS:
    db[isa] = os.path.join(work, isa + ".db")
    r = run([mmr, "ingest", "-q", out[isa], "-o", db[isa]])
    check(r.returncode == 0, "ingest %s exit %d: %s"
          % (isa, r.returncode, r.stderr))
    summ[isa] = summary_json(mmr, db[isa])
    check(summ[isa]["raw_event_counts"] == cli, "%s raw counts differ "
          "from the CLI's" % isa)
check(summ["svm"]["spte_format"]["name"] == "npt" and
      summ["vmx"]["spte_format"]["name"] == "ept",
      "SPTE formats %s / %s" % (summ["svm"]["spte_format"],
                                summ["vmx"]["spte_format"]))
for isa in ISAS:
    summ[isa]["spte_format"].pop("name", None)
same_json("summary", summ["svm"], summ["vmx"])
npf = summ["svm"]["latency"].get("npf_service") or {}
check(npf.get("n") == cli["kvm_x86_page_fault"],
      "NPF service times %s for %d faults" % (npf.get("n"),
                                              cli["kvm_x86_page_fault"]))

# --- The fault table's decoded columns, row by row. ---------------------
rows = {}
for isa in ISAS:
    con = sqlite3.connect(db[isa])
    try:
        cols = [c[1] for c in con.execute("PRAGMA table_info(fault)")]
        if "access" in cols and "present" in cols:
            rows[isa] = con.execute(
                "SELECT ts, vcpu, gpa, access, present FROM fault "
                "ORDER BY seq").fetchall()
    finally:
        con.close()
check(len(rows) == 2, "fault.access / fault.present: not in the DB "
      "schema (columns %s)" % cols)
if len(rows) == 2:
    check(len(rows["svm"]) == cli["kvm_x86_page_fault"] and
          rows["svm"] == rows["vmx"],
          "fault table: %d svm rows, %d vmx rows, %d differ"
          % (len(rows["svm"]), len(rows["vmx"]),
             sum(1 for x, y in zip(rows["svm"], rows["vmx"]) if x != y)))
    decoded = {}
    for r in rows["svm"]:
        k = (r[3], bool(r[4]))
        decoded[k] = decoded.get(k, 0) + 1
    check(decoded == faults, "decoded access/present %s != the CLI's %s"
          % (decoded, faults))

# --- Fidelity: passes on both, every figure identical. -----------------
fid = {isa: run_json(["fidelity", db[isa]]) for isa in ISAS}
for isa in ISAS:
    check(fid[isa].get("ok") is True and
          fid[isa].get("mismatches_total") == 0,
          "%s self-check: %s, %s mismatches: %s"
          % (isa, fid[isa].get("verdict"), fid[isa].get("mismatches_total"),
             fid[isa].get("mismatches", [])[:3]))
check(fid["svm"].get("observed", {}).get("faults") ==
      cli["kvm_x86_page_fault"], "fidelity observed faults %s, CLI %d"
      % (fid["svm"].get("observed", {}).get("faults"),
         cli["kvm_x86_page_fault"]))
same_json("fidelity", fid["svm"], fid["vmx"])

# --- Replay: every figure of every policy identical. -------------------
rep = {}
for isa in ISAS:
    rep[isa] = run_json(["replay", db[isa]])
    sweep = run_json(["replay", db[isa]] +
                     [a for p in SWEEP for a in ("-p", p)])
    rep[isa].setdefault("policies", {}).update(sweep.get("policies", {}))
pols = rep["svm"].get("policies", {})
for p in ["baseline", "perm-upgrade", "nx-skip-dirty", "nx-readlock"] + \
        SWEEP:
    check(p in pols and pols[p].get("verified") is True,
          "policy %s: %s" % (p, "verified %s" % pols[p].get("verified")
                             if p in pols else "not replayed"))
same_json("replay", rep["svm"], rep["vmx"])

# The key figures, for the log.
for isa in ISAS:
    b = rep[isa].get("policies", {}).get("baseline", {})
    print("%s: %d events, faults %s (read/write/fetch, present: %s), "
          "self-check %s (faults %s, leaf zaps %s, NX recovered %s), "
          "baseline faults %s, %d policies" % (
              isa, total[isa], fid[isa].get("observed", {}).get("faults"),
              {"%s%s" % (k[0], "+p" if k[1] else ""): v
               for k, v in sorted(faults.items())},
              "ok" if fid[isa].get("ok") else "FAILED",
              fid[isa].get("observed", {}).get("faults"),
              fid[isa].get("observed", {}).get("leaf_zaps"),
              fid[isa].get("observed", {}).get("nx_recovered"),
              b.get("faults"), len(rep[isa].get("policies", {}))))
finish()
