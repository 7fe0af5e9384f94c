"""The damaged-trace matrix: every fixture, every kind of damage.

Post-mortem input is often damaged.  For every fixture's kernel trace,
each case below is made on a fresh copy and ingested (then, when a DB
came out, `fidelity` runs on it):

  cut-header / cut-third / cut-two-thirds  the largest stream file cut
  flip-payload      64 bytes inverted in the middle of the largest stream
  flip-packet-magic the second packet's header magic inverted
  flip-metadata     16 bytes inverted in the middle of the metadata file
  stream-deleted    the smallest stream file removed (its index kept)
  stream-duplicated the largest stream file copied under a new name
  packets-reordered the first two packets of the largest stream swapped
  discarded-records the second packet's events_discarded counter raised
                    (what a tracer writes when its buffer was full)

The index directory is removed where packets moved (babeltrace2 then
scans the packets).  Each case must end within a minute (else a hang),
exit 0, 2 or 3 (else a crash), say what it could not read in one line
naming the trace (2, 3), and on 3 leave a DB marked truncated whose
self-check reports the damage.  A case that exits 0 is "read": it is
"harmless" when the DB equals the undamaged one (the damage hit bytes no
event uses), "caught" when a warning or the self-check flags it, and
"silent" otherwise (CTF has no checksums: a flipped payload value that
still decodes and that no model rule contradicts cannot be seen).

Prints: N cases, hangs, crashes, refused, partial, read (harmless /
caught / silent).  Fails on a hang, a crash, a message that names no
file, or a truncated DB whose self-check does not say so.

usage: test_damage_matrix.py MMUREPLAY DATA_DIR WORK_DIR
"""
import json
import os
import shutil
import subprocess
import sys

from damage import KINDS, damage, kernel_dir
from mmrtest import (check, extract_fixture, finish, fresh_dir, run, sliced,
                     trace_fixtures)

mmr, data, work = sys.argv[1:4]
fresh_dir(work)
HANG_S = 60
stats = dict.fromkeys(("cases", "hangs", "crashes", "refused", "partial",
                       "harmless", "caught", "silent"), 0)
silent_cases = []
per_kind = {}


def summary(db):
    r = run([mmr, "summary", db, "--json"])
    if r.returncode != 0:
        return None
    s = json.loads(r.stdout)
    return (s["events"], s["raw_event_counts"], s["canonical_counts"],
            s["lost"]["events"], s["totals"])


def fidelity(db):
    r = run([mmr, "fidelity", db, "--json"], timeout=HANG_S)
    try:
        return r.returncode, json.loads(r.stdout), r.stderr
    except ValueError:
        return r.returncode, {}, r.stderr


fixtures = trace_fixtures(data)
for fx in fixtures:
    base = fresh_dir(os.path.join(work, fx))
    # The run's one extraction (read only): each case is a copy.
    pristine = extract_fixture(os.path.join(data, fx), base)
    kdir = kernel_dir(pristine)
    rel = os.path.relpath(kdir, pristine)
    good_db = os.path.join(base, "good.db")
    r = run([mmr, "ingest", "-q", kdir, "-o", good_db])
    check(r.returncode == 0, "%s: the undamaged trace: %s" % (fx, r.stderr))
    good = summary(good_db)
    for kind in KINDS:
        case = os.path.join(base, kind)
        shutil.copytree(pristine, case)
        tdir = os.path.join(case, rel)
        if not damage(kind, tdir):
            shutil.rmtree(case)
            continue
        what = "%s: %s" % (fx, kind)
        per_kind[kind] = per_kind.get(kind, 0) + 1
        db = os.path.join(base, kind + ".db")
        stats["cases"] += 1
        try:
            r = run([mmr, "ingest", "-q", tdir, "-o", db], timeout=HANG_S)
        except subprocess.TimeoutExpired:
            stats["hangs"] += 1
            check(False, what + ": ingest hangs")
            continue
        lines = [ln for ln in r.stderr.splitlines() if ln]
        if r.returncode not in (0, 2, 3):
            stats["crashes"] += 1
            check(False, "%s: exit %d: %s" % (what, r.returncode, r.stderr))
            continue
        if r.returncode in (2, 3):
            errs = [ln for ln in lines if "warning" not in ln]
            check(len(errs) == 1 and case in errs[0],
                  "%s: one line naming the trace: %r" % (what, lines))
        if r.returncode == 2:
            stats["refused"] += 1
            check(not os.path.exists(db), what + ": a DB was left")
            continue
        try:
            frc, fid, ferr = fidelity(db)
        except subprocess.TimeoutExpired:
            stats["hangs"] += 1
            check(False, what + ": fidelity hangs")
            continue
        if frc == 7:
            # The source cannot be replayed at all (said in one line):
            # the damage is the summary's to say.
            sj = json.loads(run([mmr, "summary", db, "--json"]).stdout)
            frc, fid = 0, {"capture_damage": {
                "truncated": sj["truncated"],
                "lost_events": sj["lost"]["events"]}}
        if frc == 2 and len(ferr.strip().splitlines()) == 1 and \
                "corrupt" in ferr:
            # The self-check stops at an implausible event: caught.
            stats["caught" if r.returncode == 0 else "partial"] += 1
            os.unlink(db)
            shutil.rmtree(case)
            continue
        if frc not in (0, 6):
            stats["crashes"] += 1
            check(False, "%s: fidelity exit %d: %s" % (what, frc, ferr))
            continue
        damage_seen = fid.get("capture_damage", {})
        if r.returncode == 3:
            stats["partial"] += 1
            check(damage_seen.get("truncated") is True,
                  "%s: truncated DB, fidelity says %s" % (what, damage_seen))
        elif summary(db) == good:
            stats["harmless"] += 1
        elif lines or frc == 6 or damage_seen.get("lost_events") or \
                damage_seen.get("lost_ranges"):
            stats["caught"] += 1
        else:
            stats["silent"] += 1
            silent_cases.append(what)
        os.unlink(db)
        shutil.rmtree(case)
    shutil.rmtree(base)

print("damage matrix: %(cases)d cases, %(hangs)d hangs, %(crashes)d "
      "crashes; %(refused)d refused (exit 2), %(partial)d partial (exit "
      "3), read: %(harmless)d harmless, %(caught)d caught, %(silent)d "
      "silent" % stats)
print("  cases per kind: " + ", ".join("%s %d" % (k, per_kind.get(k, 0))
                                      for k in KINDS))
for c in silent_cases:
    print("  silent:", c)
check(stats["cases"] >= 6 * len(fixtures), "cases: %d" % stats["cases"])
# (Packets exist to reorder only in a few fixtures: a slice of them may
# have none.)
check(sliced() or all(per_kind.get(k) for k in KINDS),
      "every kind of damage ran on some fixture: %s" % per_kind)
check(stats["hangs"] == 0 and stats["crashes"] == 0,
      "no hang and no crash")
finish()
