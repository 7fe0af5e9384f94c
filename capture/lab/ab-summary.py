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
# Latency and counts against B: every latency figure the what-if gives
# (NPF service time p50 / p99 / p99.9 / max, the latency probe's p50 /
# p99 / p99.9 / max and its samples >= 1 ms and >= 3 ms) and every count
# (faults, leaf zaps, TLB flushes, lock waits and their time), each
# with the replay's figure kind (predicted, one_sided, restated,
# not_modelled): the what-if's min-median-max over the A runs against
# the B runs' own figures, min-median-max (from the trace:
# `mmureplay summary`'s db-summary.json, the DB's probe samples and
# traced lock waits; a run's recorded-policy figures in its
# replay.json, restated, must equal them and a warning says where they
# do not), and whether the what-if lies inside B's range.  A
# not-modelled figure is no prediction, and says so instead.
#
# A prediction marked "=" equals the A run's own figure by construction:
# the policy's replay leaves that quantity alone (BY_CONSTRUCTION below),
# so its place against B says how far A is from B, not how good the model
# is.  The script checks that such a figure does equal A's and says so
# when it does not.

import glob
import json
import math
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
            ("faults_after_dirty", "f_post", 0),
            ("faults_again", "f_again", 0)]
# Predicted quantity -> the replay JSON key.
PRED_KEYS = {"faults": "faults", "leaf_zaps": "leaf_zaps",
             "flush_contexts": "flush_contexts",
             "tlb_flushes": "tlb_flushes", "lock_ms": "lock_wait_ms"}
PRED_ORDER = ["faults", "leaf_zaps", "flush_contexts", "tlb_flushes",
              "lock_ms"]
HEAD = {k: h for k, h, _ in RUN_COLS}
DEC = {k: d for k, _, d in RUN_COLS}

# The what-if's latency figures and counts held against B's measured
# ones: replay JSON key, row label, its figure_kind key, unit ("us": ns
# shown in microseconds; "ms": milliseconds; "n": a count).
FIGURES = [
    ("npf_service_p50_ns", "npf p50", "npf_service", "us"),
    ("npf_service_p99_ns", "npf p99", "npf_service", "us"),
    ("npf_service_p99.9_ns", "npf p99.9", "npf_service", "us"),
    ("npf_service_max_ns", "npf max", "npf_service", "us"),
    ("probe_p50_ns", "prb p50", "probe", "us"),
    ("probe_p99_ns", "prb p99", "probe", "us"),
    ("probe_p99.9_ns", "prb p99.9", "probe", "us"),
    ("probe_max_ns", "prb max", "probe", "us"),
    ("probe_ge_1ms", "prb >=1ms", "probe", "n"),
    ("probe_ge_3ms", "prb >=3ms", "probe", "n"),
    ("faults", "faults", "faults", "n"),
    ("leaf_zaps", "leaf zaps", "leaf_zaps", "n"),
    ("tlb_flushes", "tlb flush", "tlb_flushes", "n"),
    ("lock_waits", "lock waits", "lock_waits", "n"),
    ("lock_wait_ms", "lock ms", "lock_wait_ms", "ms"),
]
FIG_KEYS = [f[0] for f in FIGURES] + ["probe_samples"]
NBSP = "\u00a0"   # keeps a figure's label on one line when wrapped


def kind_of(run, kkey):
    """The what-if's figure_kind kkey of a run; an analyzer before
    replay schema 11 gave the count of lock waits no kind of its own:
    that of their time."""
    kinds = run["whatif_kind"]
    if kkey == "lock_waits" and kkey not in kinds:
        kkey = "lock_wait_ms"
    return kinds.get(kkey, "?")


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


def probe_figures(con):
    """The latency probe's FIGURES from the DB's samples, every probe
    together, as replay gives them under the recorded policy (nearest
    rank: analyze/util/valcount.c valcount_rank())."""
    v = sorted(row[0] for row in con.execute(
        "SELECT ns FROM latency_sample"))
    n = len(v)

    def nearest(p):
        return v[max(1, math.ceil(p * n - 1e-9)) - 1] if n else 0
    return {"probe_samples": n, "probe_p50_ns": nearest(0.5),
            "probe_p99_ns": nearest(0.99), "probe_p99.9_ns": nearest(0.999),
            "probe_max_ns": v[-1] if n else 0,
            "probe_ge_1ms": sum(1 for x in v if x >= 1000000),
            "probe_ge_3ms": sum(1 for x in v if x >= 3000000)}


def summary_figures(s):
    """The NPF service time and counts a run measured, from `mmureplay
    summary --json`: the recorded policy's own (what replay restates),
    without the self-check."""
    lat = s.get("latency", {})
    npf = lat.get("npf_service", {})
    fig = {"npf_service_p50_ns": npf.get("p50_ns"),
           "npf_service_p99_ns": npf.get("p99_ns"),
           "npf_service_p99.9_ns": npf.get("p99.9_ns"),
           "npf_service_max_ns": npf.get("max_ns"),
           "faults": s.get("totals", {}).get("npf_faults"),
           "leaf_zaps": s.get("totals", {}).get("leaf_zaps"),
           "tlb_flushes": s.get("canonical_counts", {}).get("tlb_flush"),
           "lock_waits": s.get("canonical_counts", {}).get("lock_wait")}
    return {k: v for k, v in fig.items() if v is not None}


def measured_figures(d, r, rep):
    """The run's own FIGURES, from its trace: `mmureplay summary`'s
    (db-summary.json) with the DB's probe samples and traced lock
    waits; without it, its recorded policy's in replay.json (restated,
    once the self-check held).  r["restated_differs"]: the figures
    where replay's restatement is not the trace's."""
    pol = (rep or {}).get("policies", {}).get(r.get("fidelity_policy"))
    if not (pol and pol.get("verified") is True and "faults" in pol):
        pol = None
    s = load_json(os.path.join(d, "db-summary.json"))
    if s:
        r["figures_from"] = "summary"
        fig = summary_figures(s)
        fig.update(r.get("probe_db") or {})
        if r.get("lock_ms") is not None:     # the traced waits
            fig["lock_wait_ms"] = r["lock_ms"]
        r["restated_differs"] = {
            k: [fig[k], pol[k]] for k in FIG_KEYS
            if pol and k in pol and k in fig
            and abs(fig[k] - pol[k]) > 1e-6 * max(1, abs(fig[k]))}
        return fig
    if pol:
        r["figures_from"] = "replay"
        return {k: pol[k] for k in FIG_KEYS if k in pol}
    r["figures_from"] = None
    return {}


def faults_again(con):
    """Faults taken again on a gfn with no SPTE change covering it since
    the last: the kernel retried them (mmu_invalidate_retry_hva() saw an
    invalidation in progress over the page or mmu_invalidate_seq moved,
    kept invalidations included), or the SPTE was already fixed.  No
    replay predicts them: they follow the run's own timing."""
    pending, again = {}, 0
    rows = con.execute(
        "SELECT seq, 0, gpa >> 12, 1 FROM fault UNION ALL "
        "SELECT seq, 1, gfn, level FROM spte_change ORDER BY 1")
    for _, kind, gfn, level in rows:
        if kind == 0:
            again += gfn in pending
            pending[gfn] = 1
            continue
        span = 512 ** (level - 1)
        if span == 1:
            pending.pop(gfn, None)
        else:
            for g in [g for g in pending if gfn <= g < gfn + span]:
                del pending[g]
    return again


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
        r["probe_db"] = probe_figures(con)
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
        else:
            # Eight columns fit 72: the dirty-logging phases or this.
            r["faults_again"] = faults_again(con)
        con.close()
    r["pred"] = None
    rep = load_json(os.path.join(d, "replay.json"))
    r["replay_rc"] = read(os.path.join(d, "replay-rc.txt"))
    r["figures"] = measured_figures(d, r, rep)
    if side == "A":
        p = (rep or {}).get("policies", {}).get(policy)
        if p and p.get("applicable") is False:
            # The what-if is A's own run by construction: nothing to
            # hold against B (mmureplay replay says why).
            r["not_applicable"] = p.get("not_applicable") or "not applicable"
        elif p and p.get("verified") is True:
            r["pred"] = {k: p[j] for k, j in PRED_KEYS.items() if j in p}
            r["pred"]["faults_avoided"] = p.get("faults_avoided")
            r["pred"]["faults_added"] = p.get("faults_added")
            r["not_modelled"] = p.get("not_modelled")
            r["whatif"] = {k: p[k] for k in FIG_KEYS if k in p}
            r["whatif_kind"] = p.get("figure_kind", {})
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
    na = [r for r in runs if r["side"] == "A" and r.get("not_applicable")]
    if na:
        lines.extend(wrap(
            "No what-if (the policy is not applicable, its figures A's own "
            "by construction): %s: %s." % (", ".join(r["run"] for r in na),
                                          na[0]["not_applicable"]), "  "))
    miss = [r["run"] for r in runs if r["side"] == "A" and not r["pred"]
            and not r["fixture"] and not r.get("not_applicable")]
    if miss:
        lines.extend(wrap("No what-if (self-check failed, withheld): %s."
                          % ", ".join(miss), "  "))
    lines.append("")


def fig_fmt(v, unit):
    """A FIGURES value: ns as microseconds (one decimal below 1 ms), or
    a count."""
    if v is None:
        return "-"
    if unit == "us":
        us = v / 1000.0
        return "%.1f" % us if us < 1000 else "%d" % round(us)
    if unit == "ms":
        return "%.1f" % v
    return fmt(v)


def fig_range(st, unit):
    if not st:
        return "-"
    return "-".join(fig_fmt(st[k], unit) for k in ("min", "median", "max"))


def figures_table(lines, runs, summary, policy):
    """Each latency figure and count of the what-if against B's own."""
    preds = [r for r in runs if r["predicts"] and r.get("whatif")]
    bs = [r for r in runs if r["side"] == "B" and r["measured_ok"]
          and r.get("figures")]
    if not preds and not bs:
        return
    # No probe on either side: its figures are all 0, nothing to judge.
    no_probe = all(r["whatif"].get("probe_samples", 0) == 0 for r in preds) \
        and all(r["figures"].get("probe_samples", 0) == 0 for r in bs)
    lines.extend(wrap("Latency and counts: the what-if of %s from each A "
                      "run against B measured" % policy))
    lines.append(("%-11s%-13s%17s %17s %-12s" % (
        "figure", "kind", "what-if", "B measured", "in B")).rstrip())
    lines.append("%-24s%17s %17s" % ("", "min-med-max", "min-med-max"))
    rows, outside, bounds, mixed = [], [], [], {}
    for key, label, kkey, unit in FIGURES:
        vals = [r["whatif"][key] for r in preds if key in r["whatif"]]
        bvals = [r["figures"][key] for r in bs if key in r["figures"]]
        kinds = sorted(set(kind_of(r, kkey) for r in preds
                           if key in r["whatif"]))
        kind = kinds[0] if len(kinds) == 1 else ("mixed" if kinds else "-")
        if len(kinds) > 1:
            how = ", ".join("%s%sin%s%d" % (k, NBSP, NBSP, sum(
                1 for r in preds if key in r["whatif"]
                and kind_of(r, kkey) == k)) for k in kinds)
            mixed.setdefault(how, []).append(label.replace(" ", NBSP))
        w, b = stats(vals), stats(bvals)
        inside = sum(1 for v in vals if b and in_range(v, b["min"], b["max"]))
        rec = {"figure": key, "label": label, "unit": unit, "kind": kind,
               "kinds": kinds, "whatif": w, "whatif_values": vals,
               "B": b, "B_values": bvals, "inside_B": inside,
               "n_whatif": len(vals), "median_inside_B": None}
        if kkey == "probe" and no_probe:
            verdict = "no probe"
        elif "not_modelled" in kinds:
            verdict = "not modelled"
        elif not w or not b:
            verdict = "-"
        else:
            rec["median_inside_B"] = in_range(w["median"], b["min"],
                                              b["max"])
            verdict = "%s %d/%d" % ("yes" if rec["median_inside_B"]
                                    else "no", inside, len(vals))
            if not rec["median_inside_B"]:
                outside.append("%s (%s)" % (label.replace(" ", NBSP), kind))
            if kind == "one_sided":
                rec["bound_holds"] = b["median"] <= w["median"]
                bounds.append("%s %s" % (
                    label.replace(" ", NBSP),
                    "holds" if rec["bound_holds"] else "broken"))
        rec["verdict"] = verdict
        rows.append(rec)
        wr, br = fig_range(w, unit), fig_range(b, unit)
        if verdict == "no probe":
            wr = br = "-"
        row = "%-11s%-13s%17s %17s %-12s" % (label, kind, wr, br, verdict)
        if len(row.rstrip()) > WIDTH:
            lines.append("%-11s%-13s%s" % (label, kind, wr))
            row = "%-24s%17s %17s %-12s" % ("", "", br, verdict)
        lines.append(row.rstrip())
    summary["figures_table"] = rows
    lines.append("")
    src = sorted(set(r.get("figures_from") or "none" for r in bs))
    lines.extend(wrap(
        "what-if = mmureplay replay --policy %s from each A run whose "
        "self-check passed (%d); B measured = the B runs' own figures "
        "(%d; from %s); in B = whether the what-if's median lies inside "
        "B's min-max, and how many single what-ifs do.  npf and prb "
        "times in microseconds, lock ms in milliseconds: npf = NPF "
        "service time (exit to the thread's next entry), prb = the "
        "latency probe's samples (>=1ms, >=3ms: how many).  kind = "
        "replay's figure_kind: predicted; one_sided = predicted as a "
        "bound, at most; restated = A's own figure; "
        "not_modelled = the replay misses part of what the policy does "
        "to it, so no prediction.  lock waits = vCPU waits for "
        "mmu_lock, lock ms their time."
        % (policy, len(preds), len(bs), " and ".join(
            {"summary": "the trace: mmureplay summary, the probe's "
                        "samples and the traced lock waits",
             "replay": "replay's recorded-policy figures, restated, "
                       "where no summary was found",
             "none": "none found"}[s] for s in src))))
    if no_probe:
        lines.extend(wrap("no probe: these runs have no latency probe "
                          "(probe_samples 0 on both sides)."))
    # Replay's recorded-policy figures are the trace's by construction
    # (figure kind restated): say where they are not.
    diff = {}
    for r in runs:
        for k in r.get("restated_differs") or {}:
            diff.setdefault(k, []).append(r["label"])
    if diff:
        lab = {f[0]: f[1] for f in FIGURES}
        lab["probe_samples"] = "prb samples"
        summary["restated_differs"] = diff
        lines.extend(ln.replace(NBSP, " ") for ln in wrap(
            "Restated otherwise than traced (replay's recorded-policy "
            "figures, kind restated, against the trace): %s." % "; ".join(
                "%s in %s" % (lab[k].replace(" ", NBSP), ", ".join(v))
                for k, v in diff.items())))
    if mixed:
        lines.extend(ln.replace(NBSP, " ") for ln in wrap(
            "mixed: the kind differs between A runs: %s." % "; ".join(
                "%s: %s" % (", ".join(v), k)
                for k, v in mixed.items())))
    if bounds:
        lines.extend(ln.replace(NBSP, " ") for ln in wrap(
            "one_sided bounds against B's median: %s." % ", ".join(bounds)))
    lines.extend(ln.replace(NBSP, " ") for ln in wrap(
        "What-if outside B's range: %s."
        % (", ".join(outside) if outside else "none")))
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
    figures_table(lines, runs, summary, policy)
    text = ("Measured columns: faults, zaps, fl_ctx = mmureplay fidelity "
            "\"observed\"; flushes = TLB flush events (tlb_flush rows); "
            "lock_ms = traced mmu_lock waits of faults")
    if "faults_dirty" in cols:
        text += ("; f_pre / f_dirty / f_post = faults before, during and "
                 "after dirty logging (memslot flag changes)")
    if "faults_again" in cols:
        text += ("; f_again = faults taken again on a page with no SPTE "
                 "change of it since the last (retried: an invalidation, "
                 "kept or not, was in progress or ended meanwhile); no "
                 "replay predicts them")
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
