#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
#
# ab-summary.py - the tables of an A/B repeat (capture/lab/ab-repeat.sh).
#
# Usage: ab-summary.py OUTDIR PAIR POLICY WORKLOAD KNOB
#
# Reads the run directories ab-repeat.sh leaves in OUTDIR ({A,B}-i/ and
# fixture-{A,B}/: manifest.json, capture.db, fidelity.json, replay.json
# for A runs) and writes OUTDIR/summary.txt (72 columns) and
# OUTDIR/summary.json (every number), each through a temp name.
#
# Measured figures come from each run's own trace: faults, leaf zaps and
# flush contexts as `mmureplay fidelity` observes them, TLB flush events
# (tlb_flush rows), the mmu_lock wait the patched kernel traced
# (lock_wait rows) and, with dirty logging, the faults before / during /
# after it.  They count every run whose workload exited cleanly and whose
# recorded policy is the side's (a failed self-check does not change a
# count, and is reported in its own table).  Predictions are the what-if
# of POLICY from each A run (`mmureplay replay --policy POLICY`), kept
# only when that A run's self-check passed (otherwise the analyzer
# withholds them).
#
# A prediction marked "=" equals the A run's own figure by construction:
# the policy's replay leaves that quantity alone (BY_CONSTRUCTION below),
# so its place against B says how far A is from B, not how good the model
# is.  The script checks that such a figure does equal A's and says so
# when it does not.

import glob
import json
import os
import re
import sqlite3
import statistics
import sys
import textwrap

WIDTH = 72

# Quantities a policy's replay does not change (analyze/replay/policy_*.c:
# nx-readlock keeps every invalidation and recovery decision, only the
# lock mode changes).
BY_CONSTRUCTION = {
    "nx-readlock": ("faults", "leaf_zaps", "flush_contexts"),
    "nx-skip-dirty": (),
    "perm-upgrade": (),
}

# Per-run columns: key, header, decimals.
RUN_COLS = [("faults", "faults", 0), ("leaf_zaps", "zaps", 0),
            ("flush_contexts", "fl_ctx", 0), ("tlb_flushes", "flushes", 0),
            ("lock_ms", "lock_ms", 1), ("faults_before_dirty", "f_pre", 0),
            ("faults_dirty", "f_dirty", 0),
            ("faults_after_dirty", "f_post", 0)]
# Predicted quantity -> the replay JSON key.
PRED_KEYS = {"faults": "faults", "leaf_zaps": "leaf_zaps",
             "flush_contexts": "flush_contexts",
             "tlb_flushes": "tlb_flushes", "lock_ms": "lock_wait_ms"}
PRED_ORDER = ["faults", "leaf_zaps", "flush_contexts", "tlb_flushes",
              "lock_ms"]
HEAD = {k: h for k, h, _ in RUN_COLS}
DEC = {k: d for k, _, d in RUN_COLS}


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def load_json(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def q(con, sql):
    return con.execute(sql).fetchone()[0]


def fmt(v, dec=0):
    if v is None:
        return "-"
    if dec == 0 and float(v).is_integer():
        return "%d" % v
    return "%.*f" % (max(dec, 1), v)


def pct(v):
    """A relative error; two decimals below 1%, where the knobs act."""
    if v is None:
        return "-"
    return "%+.*f%%" % (2 if abs(v) < 0.01 else 1, 100 * v)


def stats(vals):
    if not vals:
        return None
    med = statistics.median(vals)
    return {"n": len(vals), "min": min(vals), "median": med,
            "max": max(vals), "mean": statistics.mean(vals),
            "stdev": statistics.stdev(vals) if len(vals) > 1 else 0.0,
            "spread": (max(vals) - min(vals)) / med if med else None}


def run_dirs(out):
    dirs = [d for d in glob.glob(os.path.join(out, "[AB]-*"))
            if re.fullmatch(r"[AB]-\d+", os.path.basename(d))]
    dirs.sort(key=lambda p: (os.path.basename(p)[0],
                             int(os.path.basename(p)[2:])))
    return dirs + sorted(glob.glob(os.path.join(out, "fixture-[AB]")))


def load_run(d, policy):
    name = os.path.basename(d)
    fixture = name.startswith("fixture-")
    side = name[-1] if fixture else name[0]
    r = {"run": name, "side": side, "fixture": fixture,
         "label": ("fx-" + side) if fixture else name,
         "run_time_s": float(read(os.path.join(d, "run-time.txt"), "nan")),
         "workload_rc": None,
         "expected_policy": "baseline" if side == "A" else policy}
    man = load_json(os.path.join(d, "manifest.json")) or {}
    r["workload_rc"] = man.get("workload_rc")
    r["discarded_events"] = man.get("discarded_events")
    r["kernel"] = man.get("kernel_release") or man.get("kernel")
    fid = load_json(os.path.join(d, "fidelity.json"))
    r["fidelity_rc"] = read(os.path.join(d, "fidelity-rc.txt"))
    if fid:
        r["fidelity_ok"] = fid.get("ok")
        r["fidelity_policy"] = fid.get("policy")
        obs = fid.get("observed", {})
        for k in ("faults", "leaf_zaps", "flush_contexts"):
            if k in obs:
                r[k] = obs[k]
        r["failed_metrics"] = sorted(
            k for k, v in fid.get("metric_ok", {}).items() if not v)
        kinds = {}
        for m in fid.get("mismatches", []):
            kinds[m.get("kind", "?")] = kinds.get(m.get("kind", "?"), 0) + 1
        r["mismatch_kinds"] = kinds
        r["mismatches_total"] = fid.get("mismatches_total", 0)
        r["exempt"] = fid.get("exempt")
        r["exempt_share"] = fid.get("exempt_share")
        r["verdict"] = fid.get("verdict")
    else:
        r["fidelity_ok"] = None
    db = os.path.join(d, "capture.db")
    if os.path.exists(db):
        con = sqlite3.connect(db)
        r["events"] = q(con, "SELECT coalesce(sum(count), 0) FROM raw_event")
        r["tlb_flushes"] = q(con, "SELECT count(*) FROM tlb_flush")
        r["lock_ms"] = q(con, "SELECT coalesce(sum(wait_ns), 0) "
                         "FROM lock_wait") / 1e6
        # Dirty logging on/off: memslot flag changes (change = 3).
        lo = q(con, "SELECT min(seq) FROM memslot WHERE change = 3")
        hi = q(con, "SELECT max(seq) FROM memslot WHERE change = 3")
        if lo is not None and hi is not None and lo != hi:
            r["faults_before_dirty"] = q(
                con, "SELECT count(*) FROM fault WHERE seq < %d" % lo)
            r["faults_dirty"] = q(
                con, "SELECT count(*) FROM fault WHERE seq > %d AND seq < %d"
                % (lo, hi))
            r["faults_after_dirty"] = q(
                con, "SELECT count(*) FROM fault WHERE seq > %d" % hi)
        con.close()
    r["pred"] = None
    if side == "A":
        rep = load_json(os.path.join(d, "replay.json"))
        r["replay_rc"] = read(os.path.join(d, "replay-rc.txt"))
        p = (rep or {}).get("policies", {}).get(policy)
        if p and p.get("verified") is True:
            r["pred"] = {k: p[j] for k, j in PRED_KEYS.items() if j in p}
            r["pred"]["faults_avoided"] = p.get("faults_avoided")
            r["pred"]["faults_added"] = p.get("faults_added")
            r["not_modelled"] = p.get("not_modelled")
    r["measured_ok"] = (not fixture and r["workload_rc"] == 0
                        and r.get("fidelity_policy") == r["expected_policy"]
                        and "faults" in r)
    r["predicts"] = r["measured_ok"] and r["pred"] is not None
    return r


def wrap(text, indent=""):
    return textwrap.wrap(text, WIDTH, initial_indent=indent,
                         subsequent_indent=indent)


def side_table(lines, runs, side, label, cols, summary):
    lines.append(label)
    lines.append("%-8s" % "run" + "".join("%8s" % HEAD[c] for c in cols))
    notes = []
    for r in runs:
        if r["side"] != side:
            continue
        lines.append("%-8s" % r["label"] + "".join(
            "%8s" % fmt(r.get(c), DEC[c]) for c in cols))
        if r["fixture"]:
            notes.append("%s: the tests/data fixture, not in the "
                         "statistics" % r["label"])
        elif not r["measured_ok"]:
            why = []
            if r["workload_rc"] != 0:
                why.append("workload rc %s" % r["workload_rc"])
            if r.get("fidelity_policy") != r["expected_policy"]:
                why.append("recorded policy %s" % r.get("fidelity_policy"))
            notes.append("%s: %s, excluded" % (r["run"], ", ".join(why)))
    st = summary["stats"][side]
    for k in ("min", "median", "max"):
        lines.append("%-8s" % k + "".join(
            "%8s" % (fmt(st[c][k], DEC[c]) if st[c] else "-")
            for c in cols))
    lines.append("%-8s" % "spread" + "".join(
        "%8s" % ("-" if not st[c] or st[c]["spread"] is None
                 else "%.1f%%" % (100 * st[c]["spread"])) for c in cols))
    for n in notes:
        lines.extend(wrap(n, "  "))
    lines.append("")


def self_check_table(lines, runs):
    lines.append("Self-check (mmureplay fidelity under the recorded policy)")
    lines.append("%-8s%-15s%-5s%8s  %s" % ("run", "policy", "ok", "exempt",
                                            "mismatches (rule: count)"))
    for r in runs:
        ok = {True: "yes", False: "NO", None: "-"}[r.get("fidelity_ok")]
        share = r.get("exempt_share")
        mis = ", ".join("%s: %d" % kv for kv in sorted(
            r.get("mismatch_kinds", {}).items())) or "none"
        if r.get("failed_metrics"):
            mis += "; metrics off: " + ", ".join(r["failed_metrics"])
        row = "%-8s%-15s%-5s%8s  " % (
            r["label"], r.get("fidelity_policy") or "-", ok,
            "-" if share is None else "%.2f%%" % (100 * share))
        for i, ln in enumerate(textwrap.wrap(mis, WIDTH - len(row))):
            lines.append((row if i == 0 else " " * len(row)) + ln)
    fresh = [r for r in runs if not r["fixture"]]
    npass = sum(1 for r in fresh if r.get("fidelity_ok") is True)
    lines.append("")
    lines.extend(wrap(
        "Fresh runs passing: %d of %d.  exempt = share of traced faults "
        "resting on an exemption (the check fails above 5%%)."
        % (npass, len(fresh))))
    lines.append("")
    return npass, len(fresh)


def in_range(v, lo, hi):
    return lo <= v <= hi


def prediction_table(lines, runs, summary, policy):
    A, B = summary["stats"]["A"], summary["stats"]["B"]
    preds = [r for r in runs if r["predicts"]]
    bycon = BY_CONSTRUCTION.get(policy, ())
    rows = []
    lines.extend(wrap("Prediction of B: mmureplay replay --policy %s, from "
                      "each A run" % policy))
    lines.append("%-8s%9s%9s%14s%9s%14s" % (
        "metric", "A med", "B med", "B min-max", "pred", "pred min-max"))
    second = ["%-8s%8s%14s%18s" % ("metric", "in B", "err vs B med",
                                   "err in B ranges")]
    broken = []
    for m in PRED_ORDER:
        b = B.get(m)
        vals = [r["pred"][m] for r in preds if m in r["pred"]]
        if not b or not vals:
            continue
        d = DEC[m]
        pmed = statistics.median(vals)
        inside = sum(1 for v in vals if in_range(v, b["min"], b["max"]))
        err = (pmed - b["median"]) / b["median"] if b["median"] else None
        rng = b["max"] - b["min"]
        if rng:
            erng = (pmed - b["median"]) / rng
        else:
            erng = 0.0 if pmed == b["median"] else None
        con = m in bycon
        if con:
            broken += [r["run"] for r in preds
                       if r["pred"].get(m) != r.get(m)]
        rec = {"metric": m, "A_median": A[m]["median"] if A.get(m) else None,
               "B": b, "pred": stats(vals), "pred_values": vals,
               "inside_B": inside, "n_pred": len(vals),
               "median_inside_B": in_range(pmed, b["min"], b["max"]),
               "err_vs_B_median": err, "err_in_B_ranges": erng,
               "by_construction": con}
        rows.append(rec)
        lines.append("%-8s%9s%9s%14s%9s%14s" % (
            HEAD[m], fmt(rec["A_median"], d), fmt(b["median"], d),
            "%s-%s" % (fmt(b["min"], d), fmt(b["max"], d)),
            fmt(pmed, d) + ("=" if con else ""),
            "%s-%s" % (fmt(min(vals), d), fmt(max(vals), d))))
        second.append("%-8s%8s%14s%18s" % (
            HEAD[m], "%d/%d" % (inside, len(vals)), pct(err),
            "inf" if erng is None else "%+.1f" % erng))
    summary["prediction_table"] = rows
    lines.append("")
    lines.extend(second)
    lines.append("")
    lines.extend(wrap(
        "pred = median of the what-ifs from the A runs; in B = how many "
        "of them fall inside B's min-max; err vs B med = (pred - B med) / "
        "B med; err in B ranges = (pred - B med) / (B max - B min), the "
        "error in widths of B's own run-to-run range (inf: B did not "
        "vary).  lock_ms = mmu_lock wait of vCPU faults, traced "
        "(kvm_mmu_fault_lock_wait)."))
    if bycon:
        lines.extend(wrap(
            "= : equal to the A run's own figure by construction (%s "
            "changes no invalidation or recovery decision): its place "
            "against B measures A against B, not the model."
            % policy))
    if broken:
        lines.extend(wrap("WARNING: a figure marked = differs from A's "
                          "own in %s." % ", ".join(sorted(set(broken)))))
    for con, what in ((False, "modelled"), (True, "equal to A's by "
                                              "construction")):
        out = ["%s %d of %d" % (HEAD[r["metric"]],
                                r["n_pred"] - r["inside_B"], r["n_pred"])
               for r in rows if r["by_construction"] == con
               and r["inside_B"] < r["n_pred"]]
        if out:
            lines.extend(wrap("Predictions outside B's range (%s): %s."
                              % (what, ", ".join(out))))
    nm = next((r.get("not_modelled") for r in preds
               if r.get("not_modelled")), None)
    if nm:
        lines.extend(wrap("Not modelled by %s (the analyzer's own words): "
                          "%s." % (policy, nm)))
    lines.append("")
    return rows


def per_run_predictions(lines, runs):
    cols = ["faults", "leaf_zaps", "flush_contexts", "tlb_flushes",
            "lock_ms"]
    lines.append("What-if from each A run")
    lines.append("%-8s" % "from" + "".join("%8s" % HEAD[c] for c in cols)
                 + "%8s%8s" % ("avoided", "added"))
    for r in runs:
        if r["side"] != "A" or not r["pred"]:
            continue
        p = r["pred"]
        lines.append("%-8s" % r["label"] + "".join(
            "%8s" % fmt(p.get(c), DEC[c]) for c in cols)
            + "%8s%8s" % (fmt(p.get("faults_avoided")),
                          fmt(p.get("faults_added"))))
    miss = [r["run"] for r in runs if r["side"] == "A" and not r["pred"]
            and not r["fixture"]]
    if miss:
        lines.extend(wrap("No what-if (self-check failed, withheld): %s."
                          % ", ".join(miss), "  "))
    lines.append("")


def dirty_phase(lines, runs, summary):
    sa, sb = summary["stats"]["A"], summary["stats"]["B"]
    good = [r for r in runs if r["predicts"]]
    if not (good and sa.get("faults_dirty") and sb.get("faults_dirty")):
        return
    av = statistics.median(r["pred"]["faults_avoided"] for r in good)
    ad = statistics.median(r["pred"]["faults_added"] for r in good)
    dd = sa["faults_dirty"]["median"] - sb["faults_dirty"]["median"]
    dp = sa["faults_after_dirty"]["median"] - \
        sb["faults_after_dirty"]["median"]
    summary["dirty_phase"] = {"avoided_predicted_median": av,
                              "added_predicted_median": ad,
                              "measured_A_minus_B_dirty": dd,
                              "measured_A_minus_B_after": dp}
    lines.extend(wrap(
        "By phase: the what-if avoids %s faults (median) and adds %s; "
        "measured A - B medians: %s faults while dirty logging is on "
        "(f_dirty), %s after it (f_post)." % (fmt(av), fmt(ad), fmt(dd),
                                               fmt(dp))))
    lines.append("")


def main():
    out, pair, policy, workload, knob = sys.argv[1:6]
    runs = [load_run(d, policy) for d in run_dirs(out)
            if os.path.isdir(d)]
    cols = [c for c, _, _ in RUN_COLS if any(c in r for r in runs)]
    summary = {"pair": pair, "policy": policy, "workload": workload,
               "knob": knob, "runs": runs, "stats": {}}
    for side in "AB":
        summary["stats"][side] = {
            c: stats([r[c] for r in runs if r["side"] == side
                      and r["measured_ok"] and r.get(c) is not None])
            for c in cols}
    lines = []
    side_table(lines, runs, "A", "A: %s=N (baseline)" % knob, cols,
               summary)
    side_table(lines, runs, "B", "B: %s=Y (policy %s)" % (knob, policy),
               cols, summary)
    npass, nfresh = self_check_table(lines, runs)
    summary["self_check"] = {"pass": npass, "runs": nfresh}
    prediction_table(lines, runs, summary, policy)
    per_run_predictions(lines, runs)
    dirty_phase(lines, runs, summary)
    text = ("Measured columns: faults, zaps, fl_ctx = mmureplay fidelity "
            "\"observed\"; flushes = TLB flush events (tlb_flush rows); "
            "lock_ms = traced mmu_lock waits of faults")
    if "faults_dirty" in cols:
        text += ("; f_pre / f_dirty / f_post = faults before, during and "
                 "after dirty logging (memslot flag changes)")
    text += "; spread = (max - min) / median."
    lines.extend(wrap(text))
    t = [r["run_time_s"] for r in runs if r["run_time_s"] == r["run_time_s"]]
    if t:
        lines.extend(wrap(
            "Lab run time (run.sh wall): min %.1f s, median %.1f s, max "
            "%.1f s over %d runs." % (min(t), statistics.median(t), max(t),
                                      len(t))))
    long_lines = [ln for ln in lines if len(ln) > WIDTH]
    if long_lines:
        sys.stderr.write("ab-summary.py: %d lines wider than %d columns\n"
                         % (len(long_lines), WIDTH))
    tmp = os.path.join(out, "summary.json.tmp")
    with open(tmp, "w") as f:
        json.dump(summary, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, os.path.join(out, "summary.json"))
    text = "\n".join(lines) + "\n"
    tmp = os.path.join(out, "summary.txt.tmp")
    with open(tmp, "w") as f:
        f.write(text)
    os.replace(tmp, os.path.join(out, "summary.txt"))
    sys.stdout.write(text)


if __name__ == "__main__":
    main()
