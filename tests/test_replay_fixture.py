"""Replay the real lab traces: the self-check is exact, the what-if of
each reference policy matches what the kernel's rules imply when applied
by hand to the babeltrace2 CLI's events, and the self-check fails when
the trace is damaged.

The first replay derives the replay stream (a packed copy of the events
in the DB); it must hold exactly the tables' events (stream_check), give
the same fidelity as the tables, and go stale when a table is edited.

usage: test_replay_fixture.py MMUREPLAY FIXTURE_DIR WORK_DIR STREAM_CHECK
"""
import json
import os
import shutil
import sqlite3
import sys

from mmrtest import (bt_events, check, damage_leaf_zaps, extract_fixture,
                     finish, fresh_dir, slice_only, run)

mmr, fixture, work, stream_check = sys.argv[1:5]
slice_only(fixture)
name = os.path.basename(fixture)
fresh_dir(work)
trace = extract_fixture(fixture, work)
db = os.path.join(work, "capture.db")
check(run([mmr, "ingest", trace, "-o", db, "-q"]).returncode == 0, "ingest")
events = list(bt_events(trace))

PRESENT, LARGE = 1 << 11, 1 << 7
AD = (1 << 5) | (1 << 6)
# include/uapi/linux/userfaultfd.h: _IOWR(0xAA, 0x06, struct uffdio_writeprotect)
UFFDIO_WRITEPROTECT = 0xc018aa06


def leaf(spte, level):
    return spte & PRESENT and (level == 1 or spte & LARGE)


def leaf_zap(f):
    return leaf(f["old_spte"], f["level"]) and not f["new_spte"] & PRESENT


# 1. Self-check: exact, and the observed side is the trace's.
r = run([mmr, "fidelity", db, "--json"])
fid = json.loads(r.stdout)
check(r.returncode == 0 and fid["ok"], "%s: fidelity %s" % (name, r.stdout))
nfaults = sum(1 for _, n, _ in events if n == "kvm_x86_page_fault")
nzaps = sum(1 for _, n, f in events
            if n == "kvm_tdp_mmu_spte_changed" and leaf_zap(f))
check(fid["observed"]["faults"] == nfaults, "observed faults")
check(fid["observed"]["leaf_zaps"] == nzaps, "observed leaf zaps")
for m in ("faults", "leaf_zaps"):
    check(fid["predicted"][m] == fid["observed"][m] and
          fid["rel_error"][m] == 0, "%s: %s predicted exactly" % (name, m))
check(fid["mismatches_total"] == 0 and fid["mismatches"] == [],
      "no mismatches")
# Every metric says what kind of check it is; faults can only fail one
# way; flush contexts restate the zaps where no flush event was traced.
nflush = sum(1 for _, n, _ in events if n == "kvm_remote_tlb_flush")
check(fid["check_kind"] == {
    "faults": "one_sided", "leaf_zaps": "predicted",
    "flush_contexts": "predicted" if nflush else "restated",
    "nx_recovered": "predicted" if fid["observed_how"]["nx_recovered"] ==
    "measured" else "unchecked"}, "check kinds %s" % fid["check_kind"])
check(set(fid["exempt"]) == {"invalidation_window", "nx_recovery_batch",
                             "set_memory_region", "dirty_log_ioctl",
                             "racing_vcpu", "frozen_entry", "write_gap"} and
      fid["exempt_share"] == sum(fid["exempt"].values()) / max(nfaults, 1)
      and fid["exempt_capped_share"] == (sum(fid["exempt"].values())
                                         - fid["exempt"]["frozen_entry"]
                                         - fid["exempt"]["write_gap"]
                                         - fid["exempt"]["racing_vcpu"])
      / max(nfaults, 1)
      and fid["exempt_capped_share"] <= 0.05 and all(fid["verdict"].values()),
      "exemptions counted and bounded: %s" % fid["exempt"])

# Guest RAM on THP (basic --hugepage): the capture must hold what the
# huge-page rules are about, counted on the CLI's events, so that the
# exact self-check above covers them.  Guest RAM is 2 MiB aligned, so an
# hva's alignment is its gpa's.
if "-thp" in name:
    WRITE = 1 << 1
    HUGE = 512 * 4096
    in_place = splits = boundary = untraced_zaps = 0
    installed, window = set(), None
    for _, n, f in events:
        if n == "kvm_unmap_hva_range":
            window = f["start"] % HUGE != 0
        elif n.startswith("syscall_exit_"):
            window = None
        elif n == "kvm_mmu_split_huge_page" and f["errno"] == 0:
            splits += 1
        elif n == "kvm_tdp_mmu_spte_changed":
            o, w, lv = f["old_spte"], f["new_spte"], f["level"]
            if lv == 1 and leaf(w, 1):
                installed.add(f["gfn"])
            if lv == 2 and leaf(o, 2) and leaf(w, 2) and \
                    not o & WRITE and w & WRITE:
                in_place += 1       # kvm_tdp_mmu_map() at goal level 2
            if leaf_zap(f) and lv == 2 and window:
                boundary += 1       # a 2M leaf after an unaligned start
            if leaf_zap(f) and lv == 1 and f["gfn"] not in installed:
                untraced_zaps += 1  # a child an eager split wrote
    check(in_place > 0, "THP: write faults upgrade 2M leaves in place")
    check(boundary > 0, "THP: 2M leaves zapped by an unaligned "
          "invalidation")
    if "nodirtylog" not in name:
        check(splits > 0 and untraced_zaps > 0,
              "THP: eager splits (%d) and zaps of their untraced "
              "children (%d)" % (splits, untraced_zaps))

# 2. What-if against the kernel's rules applied to the CLI's events.
r = run([mmr, "replay", db, "--json"])
check(r.returncode == 0, "replay exit %d %s" % (r.returncode, r.stderr))
rep = json.loads(r.stdout)
pol = rep["policies"]
base = pol["baseline"]
# An NX-only policy cannot act where the manifest says the mitigation is
# off, or where the trace shows no NX split or no recovery batch: it is
# said not applicable, with no figures (they would be baseline's by
# construction).  Which applies follows from the manifest and the CLI's
# events: an NX split is an L1 table linked by an exec fault, seen here
# as the worker's recovery (a batch) on the fixtures that have one.
nx_off = False
if os.path.exists(os.path.join(fixture, "manifest.json")):
    with open(os.path.join(fixture, "manifest.json")) as mf:
        nx_off = json.load(mf).get("kvm", {}).get("params", {}).get(
            "kvm.nx_huge_pages") in ("N", "never")
na = sorted(p for p, v in pol.items() if not v["applicable"])
check(na == (["nx-readlock", "nx-skip-dirty"]
             if nx_off or base["recovery_batches"] == 0 else []),
      "not applicable: %s (nx off %s, %d batches)" %
      (na, nx_off, base["recovery_batches"]))
check(all(pol[p]["not_applicable"] and "faults" not in pol[p]
          for p in na), "a policy that does not apply has no figures")
check(not nx_off or all("kvm.nx_huge_pages=N" in pol[p]["not_applicable"]
                        for p in na), "the manifest's reason is given")
check(base["faults"] == nfaults and base["leaf_zaps"] == nzaps,
      "baseline what-if is the trace")
# A figure the capture leaves open on one side is said to be a bound:
# the faults where more may be avoided (a capture begun mid-run), the
# lock waits where the least left is below the most.
for name_p, p in pol.items():
    if not p["applicable"] or name_p == rep["self_check"]["policy"]:
        continue
    for fig, bound in (("faults", p["faults_undecided"] > 0),
                       ("lock_wait_ms",
                        p["lock_wait_min_ms"] < p["lock_wait_ms"])):
        k = p["figure_kind"][fig]
        check(k in ("not_modelled", "one_sided" if bound else "predicted"),
              "%s: %s is %s (a bound: %s)" % (name_p, fig, k, bound))
rec = pol[rep["self_check"]["policy"]]
check(rec["faults_avoided"] == 0 and rec["faults_added"] == 0,
      "the recorded policy avoids and adds no fault (by construction)")
check(all(p["verified"] for p in pol.values()) and not rep["withheld"] and
      not any(k.startswith(("predicted.", "observed.", "exempt."))
              for p in pol.values() for k in p),
      "what-if figures verified, and apart from the self-check's")
check(rep["self_check"]["observed"] == fid["observed"] and
      rep["self_check"]["check_kind"] == fid["check_kind"],
      "replay's self_check is fidelity's")
check(("nx-readlock" in na or
       "retry" in pol["nx-readlock"].get("not_modelled", "")) and
      "mmu_lock" in pol["perm-upgrade"].get("not_modelled", "") and
      ("nx-skip-dirty" in na or
       "dirty logging" in pol["nx-skip-dirty"].get("not_modelled", "")) and
      "not_modelled" not in pol["baseline"] and
      not any("not_modelled" in pol[p] for p in na),
      "what a policy's replay does not model is said with its figures")
r = run([mmr, "replay", db])
# The notes run to the per-VM table of a capture of several VMs (a table,
# as wide as the main one).
notes = r.stdout[r.stdout.find("  Not modelled"):].split("\n  Per VM")[0]
notes = notes.splitlines()
check(("Not modelled by nx-readlock:" in r.stdout) == ("nx-readlock" not in
                                                       na) and
      all("%s does not apply:" % p in r.stdout for p in na) and
      max(map(len, notes)) <= 72, "text: the limits under the tables, "
      "wrapped as in a mail: %s" % notes)
con = sqlite3.connect(db)
check(con.execute("SELECT count(*) FROM replay_stream").fetchone()[0] > 0,
      "replay derived the replay stream")
con.close()
r = run([mmr, "fidelity", db, "--json"])
check(r.returncode == 0 and json.loads(r.stdout) == fid,
      "fidelity from the stream equals fidelity from the tables")
r = run([stream_check, db])
check(r.returncode == 0, "stream_check: %s %s" % (r.stdout, r.stderr))
con = sqlite3.connect(db)
stored = dict(con.execute(
    "SELECT r.policy, m.value FROM replay_run r JOIN replay_metric m ON "
    "m.run_id = r.id WHERE m.name = 'faults'").fetchall())
check(stored == {p: v.get("faults", base["faults"]) for p, v in pol.items()},
      "results stored in the DB: %s" % stored)
check(con.execute("SELECT count(*) FROM replay_run WHERE self_check_ok = 1"
                  ).fetchone()[0] == 4, "4 runs, self-check ok")
con.close()

# Invalidation windows: a kvm_unmap_hva_range and the leaf zaps its
# thread makes before doing anything else.  A window inside mprotect(2)
# is an upgrade when PROT_WRITE is kept; inside madvise(2) never (it
# unmaps); any other when each leaf it zapped that came back came back
# at the same page with no permission less (write, user, exec; NPT bits
# 1, 2 and NX 63).  Measured on the patched pairs' A sides, where the
# kernel flags every upgrade: 4,141 upgrades and 1 restriction on 6.1
# (which refaults the leaf identical), 7,937 and 1 on 6.12 (which maps
# it writable again once the host page is); "identical" missed all of
# 6.12's.
W, U, NX, PFN = 1 << 1, 1 << 2, 1 << 63, ((1 << 52) - 1) & ~0xfff


def no_less(was, now):
    return (was & PFN == now & PFN and (not was & W or now & W) and
            (not was & U or now & U) and (was & NX or not now & NX))

con = sqlite3.connect(db)
rows = con.execute(
    "SELECT 'n', seq, tid, hva_start, coalesce(event, -1), "
    "coalesce(perm_upgrade, -1), hva_end FROM notifier WHERE phase = 0 "
    "UNION ALL "
    "SELECT 's', seq, tid, gfn, level, old_spte, new_spte FROM spte_change "
    "UNION ALL SELECT 'x', seq, tid, 0, 0, 0, 0 FROM fault UNION ALL "
    "SELECT CASE WHEN r.name = 'syscall_entry_mprotect' THEN 'm' WHEN "
    "r.name = 'syscall_entry_madvise' THEN 'a' WHEN "
    "r.name = 'syscall_entry_ioctl' AND s.a1 = %d THEN 'u' WHEN "
    "r.name LIKE 'syscall_%%_ioctl' THEN 'i' ELSE 'y' "
    "END, s.seq, s.tid, 0, 0, coalesce(s.a2, 0), 0 FROM syscall s "
    "JOIN raw_event r ON "
    "r.id = s.raw_id UNION ALL "
    "SELECT 'x', seq, tid, 0, 0, 0, 0 FROM vcpu_exit UNION ALL "
    "SELECT 'x', seq, tid, 0, 0, 0, 0 FROM vcpu_entry ORDER BY seq"
    % UFFDIO_WRITEPROTECT).fetchall()
con.close()
windows, cur, pending, prot, uffd = [], {}, {}, {}, {}
for kind, seq, tid, gfn, level, old, new in rows:
    old &= (1 << 64) - 1
    new &= (1 << 64) - 1
    if kind == "n":
        # A patched kernel traces the stock and its own start event of one
        # invalidation back to back: one window, measured.
        w = cur.get(tid)
        if w and w["range"] == (gfn, new) and w["zaps"] == 0:
            if level >= 0:
                w["measured"] = level == 2 and old == 1
            continue
        cur[tid] = {"tid": tid, "zaps": 0, "same": 0, "differ": 0,
                    "range": (gfn, new),
                    "mprotect": prot.get(tid), "uffd": uffd.get(tid),
                    "measured": (level == 2 and old == 1) if level >= 0
                    else None}
        windows.append(cur[tid])
        continue
    elif kind in "xmayui":
        cur.pop(tid, None)
        if kind == "m":
            prot[tid] = old
        elif kind == "a":
            prot[tid] = 0           # unmaps: never an upgrade
        else:
            if kind != "x":
                prot.pop(tid, None)
            if kind in "ui":
                uffd[tid] = kind == "u"
    elif leaf(old, level) and not new & PRESENT and tid in cur:
        cur[tid]["zaps"] += 1
        pending[(level, gfn)] = (cur[tid], old & ~AD)
    elif not leaf(old, level) and leaf(new, level) and \
            (level, gfn) in pending:
        w, was = pending.pop((level, gfn))
        w["same" if no_less(was, new) else "differ"] += 1
for w in windows:
    if w["measured"] is not None:
        w["upgrade"] = w["measured"]
    elif w["mprotect"] is not None:
        w["upgrade"] = w["mprotect"] & 2 != 0
    else:
        # Rule upgrade_cause: identical refaults make an upgrade only
        # inside UFFDIO_WRITEPROTECT on the invalidating thread (ksmd,
        # khugepaged, reclaim leave pages in place that refault
        # identical too).
        w["upgrade"] = bool(w["uffd"]) and w["same"] > 0 and \
            w["differ"] == 0
upgrades = [w for w in windows if w["upgrade"]]
kept = sum(w["zaps"] for w in upgrades)
pu = pol["perm-upgrade"]
check(pu["upgrade_invalidations"] == len(upgrades),
      "upgrade windows %d != %d" % (pu["upgrade_invalidations"],
                                    len(upgrades)))
check(pu["zaps_kept"] == kept, "perm-upgrade keeps %d != %d"
      % (pu["zaps_kept"], kept))
check(pu["leaf_zaps"] == base["leaf_zaps"] - kept, "perm-upgrade zaps")
# The sources it touches: the threads whose upgrade windows held them.
by_tid = {}
for w in upgrades:
    if w["zaps"]:
        by_tid[w["tid"]] = by_tid.get(w["tid"], 0) + w["zaps"]
got = dict((t["tid"], t["zaps"]) for t in pu["zaps_kept_by_thread"])
check(got == by_tid and pu["zaps_kept_by_other_threads"] == 0,
      "perm-upgrade keeps the zaps of threads %s, the CLI's windows %s"
      % (got, by_tid))
same = sum(w["same"] for w in upgrades)
check(pu["faults_avoided"] >= same and
      pu["faults"] == base["faults"] - pu["faults_avoided"],
      "perm-upgrade avoids the identical refaults (%d, %d)"
      % (pu["faults_avoided"], same))
flushing_upgrades = sum(1 for w in upgrades if w["zaps"])
check(pu["tlb_flushes"] == base["tlb_flushes"] - flushing_upgrades,
      "no flush for a kept invalidation")
if name.endswith("bgsnapshot-perpage-read"):
    # The mechanism of the perm-upgrade mail must show here.
    check(len(upgrades) > 100 and pu["faults"] < base["faults"] and
          pu["tlb_flushes_per_s"] < base["tlb_flushes_per_s"] / 100,
          "bgsnapshot: perm-upgrade removes the per-page zaps")

# nx-readlock changes only lock waits; nx-skip-dirty only recovery zaps
# (where they apply).
rl = pol["nx-readlock"] if "nx-readlock" not in na else base
# Waits that overlap a write-locked recovery batch go; others (measured
# waits for other holders) stay.
check(rl["faults"] == base["faults"] and rl["leaf_zaps"] ==
      base["leaf_zaps"] and
      abs(rl["lock_wait_ms"] + rl["lock_wait_removed_ms"] -
          base["lock_wait_ms"]) < 1e-6 and
      (base["lock_wait_ms"] == 0 or base["recovery_batches"] == 0 or
       rl["lock_wait_removed_ms"] > 0) and
      (base["recovery_batches"] > 0 or rl["lock_wait_removed_ms"] == 0),
      "nx-readlock removes the recovery lock waits")
sd = pol["nx-skip-dirty"] if "nx-skip-dirty" not in na else dict(
    base, zaps_kept=0)
check(sd["leaf_zaps.notifier"] == base["leaf_zaps.notifier"] and
      sd["leaf_zaps"] == base["leaf_zaps"] - sd["zaps_kept"],
      "nx-skip-dirty only keeps recovery zaps")
if name.endswith("nxrecovery-dirtylog"):
    # Recovery zaps made by the worker while dirty logging was on (the
    # phase between the 2nd and 3rd KVM_SET_USER_MEMORY_REGION).
    con = sqlite3.connect(db)
    ioctls = [s for (s,) in con.execute(
        "SELECT seq FROM syscall WHERE a1 = %d AND raw_id = (SELECT id "
        "FROM raw_event WHERE name = 'syscall_entry_ioctl') ORDER BY seq"
        % 0x4020ae46)]
    worker = [t for (t,) in con.execute(
        "SELECT tid FROM thread WHERE procname LIKE 'kvm-nx-lpage%'")]
    dirty_zaps = con.execute(
        "SELECT count(*) FROM spte_change WHERE tid IN (%s) AND seq > ? "
        "AND seq < ? AND level = 1 AND (old_spte & 2048) AND NOT "
        "(new_spte & 2048)" % ",".join(map(str, worker)),
        (ioctls[1], ioctls[2])).fetchone()[0]
    con.close()
    check(len(ioctls) == 3, "three memory-region ioctls: %s" % ioctls)
    check(sd["zaps_kept"] == dirty_zaps,
          "nx-skip-dirty keeps the %d dirty-phase recovery zaps (%d)"
          % (dirty_zaps, sd["zaps_kept"]))
    # ... all of them the worker's: the one source the policy touches.
    check(sum(t["zaps"] for t in sd.get("zaps_kept_by_thread", [])
              if t["tid"] in worker) == sd["zaps_kept"],
          "nx-skip-dirty keeps only the worker's zaps: %s"
          % sd.get("zaps_kept_by_thread"))
    # Which recovery the capture's kernel ran: 6.1 zaps dirty-logged NX
    # pages, so the policy has zaps to keep and refaults to avoid; stock
    # 6.12 already drops them from its list unzapped
    # (kvm_recover_nx_huge_pages()): none in the trace, none to keep.
    # (The first lab's seed traces have no manifest: 6.1.)
    series = "6.1"
    if os.path.exists(os.path.join(fixture, "manifest.json")):
        with open(os.path.join(fixture, "manifest.json")) as mf:
            series = json.load(mf).get("lab", {}).get("kernel_series",
                                                      "6.1")
    if series == "6.1":
        check(dirty_zaps > 0 and 0 < sd["faults_avoided"] <= dirty_zaps and
              sd["leaf_zaps.nx_recovery"] < base["leaf_zaps.nx_recovery"],
              "nx-skip-dirty avoids their refaults")
    else:
        check(dirty_zaps == 0 and sd["faults_avoided"] == 0 and
              sd["leaf_zaps.nx_recovery"] == base["leaf_zaps.nx_recovery"],
              "%s skips dirty-logged pages itself: nothing for "
              "nx-skip-dirty to change" % series)
    check(base["lock_wait_ms"] > 0, "recovery overlaps NPF handling")
    # The trace ran with nx_huge_pages_recovery_ratio=4 (its README):
    # every batch takes ceil(NX-split pages / 4), the split pages being
    # the model's count; with a wrong ratio the self-check fails.
    r = run([mmr, "fidelity", db, "--json", "--nx-ratio", "4"])
    nf = json.loads(r.stdout)
    # Recovery runs while the VM does; the VM's zap at exit comes after
    # its last vCPU exit (on 6.12 the worker, a vhost task of the VM
    # process, may run that zap too).
    con = sqlite3.connect(db)
    worker_frees = con.execute(
        "SELECT count(*) FROM sp_free WHERE tid IN (%s) AND (role & 15) = 1"
        " AND seq < (SELECT max(seq) FROM vcpu_exit)"
        % ",".join(map(str, worker))).fetchone()[0]
    con.close()
    check(r.returncode == 0 and nf["ok"] and
          nf["observed"]["nx_recovered"] == worker_frees and
          nf["predicted"]["nx_recovered"] == worker_frees,
          "recovery batches follow the ratio: %s, %d worker frees"
          % (nf["predicted"], worker_frees))
    # Ratio sweeps: the recorded ratio reproduces baseline; larger ones
    # recover fewer pages per batch, so fewer recovery zaps and faults.
    r = run([mmr, "replay", db, "--json", "--nx-ratio", "4", "--policy",
             "nx-ratio=4,nx-ratio=8,nx-ratio=16"])
    sw = json.loads(r.stdout)["policies"]
    keys = ("faults", "leaf_zaps", "leaf_zaps.nx_recovery", "tlb_flushes")
    check(r.returncode == 0 and all(sw["nx-ratio=4"][k] == sw["baseline"][k]
                                    for k in keys),
          "nx-ratio=4 (recorded) is baseline")
    check(sw["baseline"]["leaf_zaps.nx_recovery"] >
          sw["nx-ratio=8"]["leaf_zaps.nx_recovery"] >=
          sw["nx-ratio=16"]["leaf_zaps.nx_recovery"] > 0 and
          sw["baseline"]["faults"] >= sw["nx-ratio=8"]["faults"] >=
          sw["nx-ratio=16"]["faults"], "larger ratios recover less: %s"
          % {p: sw[p]["leaf_zaps.nx_recovery"] for p in sw})
    # Period sweeps (the README: period 1000 ms): the recorded period is
    # baseline; twice it runs every other batch, counted by wake-ups
    # between the traced batches (the CLI's batch starts, 1 s apart), so
    # fewer recovery zaps, faults and lock waits; 1500 ms is refused.
    r = run([mmr, "replay", db, "--json", "--nx-ratio", "4", "--nx-period",
             "1000", "--policy", "nx-period=1000,nx-period=2000"])
    sw = json.loads(r.stdout)["policies"]
    check(r.returncode == 0 and all(sw["nx-period=1000"][k] ==
                                    sw["baseline"][k] for k in keys),
          "nx-period=1000 (recorded) is baseline")
    begins = [float(ts) for ts, n, f in events
              if n == "kvm_mmu_nx_recovery_begin"]
    if begins:
        wakes = [0]
        for a, b in zip(begins, begins[1:]):
            wakes.append(wakes[-1] + max(1, round(b - a)))
        want = sum(1 for w in wakes if w % 2 == 0)
        check(sw["nx-period=2000"]["recovery_batches_run"] == want and
              sw["baseline"]["recovery_batches_run"] == len(begins),
              "nx-period=2000 runs the even wake-ups: %d of %d (%s)"
              % (want, len(begins), sw["nx-period=2000"]))
    p2 = sw["nx-period=2000"]
    check(0 < p2["leaf_zaps.nx_recovery"] <
          sw["baseline"]["leaf_zaps.nx_recovery"] and
          p2["faults"] <= sw["baseline"]["faults"] and
          p2["lock_wait_ms"] <= sw["baseline"]["lock_wait_ms"],
          "a slower worker recovers less: %s" % p2)
    r = run([mmr, "replay", db, "--nx-period", "1000", "--policy",
             "nx-period=1500"])
    check(r.returncode == 1 and "multiple" in r.stderr and
          len(r.stderr.strip().splitlines()) == 1,
          "nx-period=1500: refused in one line (%d %s)"
          % (r.returncode, r.stderr))
    r = run([mmr, "fidelity", db, "--json", "--nx-ratio", "5"])
    nf = json.loads(r.stdout)
    check(r.returncode == 6 and any(m["kind"] == "recovery_batch"
                                    for m in nf["mismatches"]),
          "a wrong ratio fails the self-check")

# The HTML report is self-contained and shows the stored figures.
html = os.path.join(work, "report.html")
r = run([mmr, "report", db, "-o", html])
check(r.returncode == 0, "report: %s" % r.stderr)
with open(html) as f:
    page = f.read()
# Self-contained: nothing to fetch (the one script, the timeline's zoom,
# is inline).
for bad in ("<link", "src=", "http://", "https://", "<script src"):
    check(bad not in page, "report is self-contained (%s)" % bad)
for p, v in pol.items():
    check(("<td>%s</td><td>%s</td>" % (p, "{:,}".format(int(v["faults"])))
           if p not in na else "<td>%s</td><td colspan=\"8\">not "
           "applicable here" % p) in page, "report row for %s" % p)
check("NPF faults per second" in page and "Leaf zaps per second" in page
      and "class=\"ok\"" in page, "charts, ok")
check(("Not modelled by nx-readlock: the faults vCPUs retry" in page) ==
      ("nx-readlock" not in na) and
      all("%s does not apply: " % p in page for p in na),
      "report: the limits under the what-if table")

# The recorded policy comes from the manifest's knobs: this trace was
# recorded on a stock kernel, so a manifest claiming the perm-upgrade
# knob was on must make the self-check fail where upgrades zapped.
if pu["upgrade_invalidations"] and pu["zaps_kept"]:
    fake = os.path.join(work, "knob.db")
    shutil.copy(db, fake)
    con = sqlite3.connect(fake)
    con.execute("INSERT OR REPLACE INTO meta VALUES ('manifest', ?)",
                (json.dumps({"manifest_version": 1, "cpu": {
                    "vendor": "AuthenticAMD"}, "kvm": {"params": {
                        "kvm.perm_upgrade_skip_zap": "Y"}}}),))
    con.commit()
    con.close()
    r = run([mmr, "fidelity", fake, "--json"])
    kf = json.loads(r.stdout)
    # Each context whose zaps the knob would have kept: zap_count, and,
    # on patched kernels, flush_context (it flushed what it zapped).
    check(r.returncode == 6 and kf["policy"] == "perm-upgrade" and
          not kf["ok"] and kf["mismatches_by_kind"]["zap_count"] > 0 and
          set(m["kind"] for m in kf["mismatches"]) <=
          {"zap_count", "flush_context"},
          "manifest knob selects the recorded policy (%d %s)"
          % (r.returncode, kf.get("policy")))
    r = run([mmr, "fidelity", fake, "--recorded-policy", "baseline"])
    check(r.returncode == 0, "--recorded-policy overrides the manifest")

# 3. A damaged trace fails the self-check: 20 leaf zaps go missing, as
# in a lost-event gap.
bad = damage_leaf_zaps(db, os.path.join(work, "damaged.db"))
con = sqlite3.connect(bad)
check(con.execute("SELECT count(*) FROM meta WHERE key = "
                  "'replay_stream_format'").fetchone()[0] == 0,
      "damaged: the edit made the replay stream stale")
con.close()
r = run([mmr, "fidelity", bad, "--json"])
dfid = json.loads(r.stdout)
check(r.returncode == 6 and not dfid["ok"] and dfid["mismatches"],
      "damaged: self-check fails (exit %d)" % r.returncode)
r = run([mmr, "replay", bad])
check(r.returncode == 6 and "withheld" in r.stdout,
      "damaged: what-if withheld")
r = run([mmr, "replay", bad, "--json"])
drep = json.loads(r.stdout)
con = sqlite3.connect(bad)
runs = con.execute("SELECT policy, self_check_ok FROM replay_run").fetchall()
con.close()
check(r.returncode == 6 and drep["withheld"] and drep["policies"] == {} and
      not drep["self_check"]["ok"] and
      runs == [(drep["self_check"]["policy"], 0)],
      "damaged: JSON and DB withhold the what-if (%s)" % runs)
r = run([mmr, "replay", bad, "--json", "--force"])
drep = json.loads(r.stdout)
con = sqlite3.connect(bad)
runs = con.execute("SELECT count(*), max(self_check_ok) FROM replay_run"
                   ).fetchone()
con.close()
check(r.returncode == 6 and not drep["withheld"] and
      len(drep["policies"]) == 4 and
      not any(p["verified"] for p in drep["policies"].values()) and
      runs == (4, 0), "damaged: --force gives them unverified (%s)" % (runs,))
r = run([mmr, "replay", bad, "--force"])
check(r.returncode == 6 and "UNVERIFIED" in r.stdout,
      "damaged: forced text says unverified")
finish()
