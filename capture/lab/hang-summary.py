#!/usr/bin/env python3
"""hang-summary.py - the table of capture/lab/hang-repeat.sh's runs.tsv.

usage: hang-summary.py RUNS_TSV KERNEL

Per configuration and in all: runs, clean runs (run.sh exit 0), hangs
(exit 5), workload failures (3), verify failures (4), lab failures (1:
boot panics and the like); the hang rate with its exact (Clopper-Pearson)
95% interval, and how likely as few hangs would be if the rate were one
run in 15.  Then one line per hang with hang.txt's reason and the tasks
sysrq-w found blocked.  72 columns, fixed width.  The interval assumes
independent runs with one rate; the configurations are pooled.
"""
import math
import sys


def binom_cdf(k, n, p):
    """P(X <= k) for X ~ Binomial(n, p)."""
    return sum(math.comb(n, i) * p ** i * (1 - p) ** (n - i)
               for i in range(k + 1))


def bisect(f, lo=0.0, hi=1.0):
    """The root of a monotonic f on [lo, hi]."""
    for _ in range(100):
        mid = (lo + hi) / 2
        if (f(lo) < 0) == (f(mid) < 0):
            lo = mid
        else:
            hi = mid
    return (lo + hi) / 2


def clopper_pearson(k, n, alpha=0.05):
    lo = 0.0 if k == 0 else bisect(
        lambda p: (1 - binom_cdf(k - 1, n, p)) - alpha / 2)
    hi = 1.0 if k == n else bisect(
        lambda p: binom_cdf(k, n, p) - alpha / 2)
    return lo, hi


def main():
    tsv, kernel = sys.argv[1:3]
    rows = []
    with open(tsv) as f:
        head = f.readline().rstrip("\n").split("\t")
        for line in f:
            r = dict(zip(head, line.rstrip("\n").split("\t")))
            if len(r) < len(head):
                continue
            rows.append({"run": int(r["run"]), "config": r["config"],
                         "rc": int(r["rc"]), "wrc": r["workload_rc"],
                         "secs": int(r["seconds"]),
                         "det": r["detectors"], "note": r["note"]})
    configs = []
    for r in rows:
        if r["config"] not in configs:
            configs.append(r["config"])

    def counts(rs):
        c = {k: sum(1 for r in rs if r["rc"] == k) for k in (0, 1, 3, 4, 5)}
        return len(rs), c

    out = []
    out.append("Lab hang rate, kernel %s: %d runs" % (kernel, len(rows)))
    out.append("guest kernel with the lockup detectors: %d runs, "
               "without: %d" % (sum(1 for r in rows if r["det"] == "yes"),
                                sum(1 for r in rows if r["det"] == "no")))
    out.append("")
    hdr = "%-14s %5s %5s %5s %8s %7s %6s %8s" % (
        "config", "runs", "clean", "hung", "workload", "verify", "lab",
        "median s")
    out.append(hdr)
    out.append("%-14s %5s %5s %5s %8s %7s %6s %8s" % (
        "-" * 14, "-" * 5, "-" * 5, "-" * 5, "-" * 8, "-" * 7, "-" * 6,
        "-" * 8))
    for name in configs + ["all"]:
        rs = rows if name == "all" else [r for r in rows
                                         if r["config"] == name]
        n, c = counts(rs)
        secs = sorted(r["secs"] for r in rs if r["rc"] == 0)
        med = secs[len(secs) // 2] if secs else 0
        out.append("%-14s %5d %5d %5d %8d %7d %6d %8d" % (
            name, n, c[0], c[5], c[3], c[4], c[1], med))
    n, c = counts(rows)
    k = c[5]
    if n:
        lo, hi = clopper_pearson(k, n)
        out.append("")
        out.append("hang rate: %d of %d runs = %.1f%%, 95%% interval "
                   "%.2f%% .. %.1f%%" % (k, n, 100.0 * k / n, 100 * lo,
                                         100 * hi))
        out.append("(exact binomial, runs independent, configs pooled)")
        out.append("P(<= %d hangs in %d runs | rate 1 in 15) = %.3f" % (
            k, n, binom_cdf(k, n, 1 / 15)))
    bad = [r for r in rows if r["rc"] != 0]
    if bad:
        out.append("")
        out.append("%-4s %-13s %3s %s" % ("run", "config", "rc", "what"))
        out.append("%-4s %-13s %3s %s" % ("-" * 4, "-" * 13, "-" * 3,
                                          "-" * 49))
        for r in bad:
            note = r["note"] or "workload_rc %s" % r["wrc"]
            first = True
            while note:
                cut = note if len(note) <= 49 else note[:note.rfind(" ", 0, 49) + 1 or 49]
                out.append("%-4s %-13s %3s %s" % (
                    r["run"] if first else "", r["config"] if first else "",
                    r["rc"] if first else "", cut.strip()))
                note = note[len(cut):].strip()
                first = False
    print("\n".join(out))


if __name__ == "__main__":
    main()
