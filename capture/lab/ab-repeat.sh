#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# ab-repeat.sh - size the run-to-run variance of an A/B lab pair.
#
# Usage: capture/lab/ab-repeat.sh PAIR [options]
#
#   PAIR                  nx-skip-dirty | perm-upgrade | nx-readlock (below)
#   -n N                  runs per side (default 3); the runs alternate
#                         A-1, B-1, A-2, B-2, ...
#   --out OUTDIR          output directory (default ./lab-out/ab-PAIR);
#                         each run in OUTDIR/{A,B}-{i}/ (run.sh output +
#                         capture.db, fidelity.json, replay.json)
#   --mmureplay BIN       the analyzer (default $MMUREPLAY, else
#                         build/analyze/mmureplay of the checkout)
#   --hangs DIR           where the serial.log/console.log of a run whose
#                         workload did not exit cleanly are copied
#                         (default OUTDIR/hangs)
#   --retry N             rerun a side whose workload failed or hung, up
#                         to N times per slot (default 1); the failed
#                         output is kept as OUTDIR/{A,B}-{i}.failed-K/
#   --analyze-only        no lab runs: ingest (if no capture.db yet) and
#                         summarize the run directories already in OUTDIR
#   --fixtures DATA_DIR   also show the pair's recorded fixtures (DATA_DIR/
#                         lttng-kernel-6.1.192-patched-...-{off,on}, e.g.
#                         tests/data) as rows fixture-A / fixture-B, and
#                         the prediction from fixture-A; not in the
#                         statistics
#   -h, --help            this text
#
# Pairs (the arguments of the tests/data A/B fixtures):
#   nx-skip-dirty   nxrecovery --mem 128 --exec 47 --plain 8 --dirty 8,
#                   --kernel patched; A: kvm.nx_huge_pages_recovery_skip_dirty=N,
#                   B: =Y (run.sh adds nx_huge_pages=force, period 1000 ms,
#                   ratio 4); replay policy nx-skip-dirty
#   perm-upgrade    bgsnapshot --access read --mode perpage, --kernel
#                   patched; A: kvm.perm_upgrade_skip_zap=N, B: =Y; replay
#                   policy perm-upgrade
#   nx-readlock     as nx-skip-dirty with
#                   kvm.nx_huge_pages_recovery_read_lock=N / =Y; replay
#                   policy nx-readlock (the fixtures: skip-dirty-off is its
#                   A side, readlock-on its B side; no --fixtures)
#
# Per run: `mmureplay ingest DIR/trace -o DIR/capture.db` (with the
# capture manifest, lab-manifest.py, as DIR/trace/manifest.json), the measured
# counts from `mmureplay fidelity DB --json` ("observed": faults,
# leaf_zaps, flush_contexts; its "ok" must be true), TLB flush events
# (rows of the tlb_flush table, what the what-if's tlb_flushes predicts)
# and the faults before / during / after dirty logging (memslot flag
# changes; nxrecovery only).  For each A run, the what-if of the B policy
# (`mmureplay replay DB --policy POLICY --json`: faults, leaf_zaps,
# tlb_flushes, faults_avoided) against the median of the B runs.
# Writes OUTDIR/summary.txt (fixed-width tables: per side min, median,
# max, spread = (max - min) / median; predictions) and OUTDIR/summary.json
# (every number).  Runs whose workload did not exit cleanly (rc != 0, e.g.
# the exit hang, rc 125) are listed but left out of the statistics.
#
# Lab runs go one at a time under nice -n 10 (capture/lab/run.sh).

set -Eeuo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)

usage() { sed -n '3,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

[ $# -ge 1 ] || { usage; exit 2; }
case $1 in -h|--help) usage; exit 0 ;; esac
PAIR=$1
shift
N=3 OUT= MMR=${MMUREPLAY:-$TOP/build/analyze/mmureplay} HANGS= RETRY=1 ANALYZE_ONLY=0 FIXTURES=
while [ $# -gt 0 ]; do
	case $1 in
	-n) N=${2:?}; shift 2 ;;
	--out) OUT=${2:?}; shift 2 ;;
	--mmureplay) MMR=${2:?}; shift 2 ;;
	--hangs) HANGS=${2:?}; shift 2 ;;
	--retry) RETRY=${2:?}; shift 2 ;;
	--analyze-only) ANALYZE_ONLY=1; shift ;;
	--fixtures) FIXTURES=${2:?}; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) echo "ab-repeat.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done

case $PAIR in
nx-skip-dirty)
	WORKLOAD=nxrecovery
	WARGS=(--mem 128 --exec 47 --plain 8 --dirty 8)
	KNOB=nx_huge_pages_recovery_skip_dirty
	FIXTURE=lttng-kernel-6.1.192-patched-nxrecovery-skip-dirty
	POLICY=nx-skip-dirty ;;
perm-upgrade)
	WORKLOAD=bgsnapshot
	WARGS=(--access read --mode perpage)
	KNOB=perm_upgrade_skip_zap
	FIXTURE=lttng-kernel-6.1.192-patched-bgsnapshot-perm-upgrade
	POLICY=perm-upgrade ;;
nx-readlock)
	WORKLOAD=nxrecovery
	WARGS=(--mem 128 --exec 47 --plain 8 --dirty 8)
	KNOB=nx_huge_pages_recovery_read_lock
	FIXTURE=lttng-kernel-6.1.192-patched-nxrecovery-readlock
	POLICY=nx-readlock ;;
*) echo "ab-repeat.sh: unknown pair '$PAIR' (nx-skip-dirty, perm-upgrade, nx-readlock)" >&2; exit 2 ;;
esac
[[ $N =~ ^[1-9][0-9]*$ ]] || { echo "ab-repeat.sh: -n wants a positive integer" >&2; exit 2; }
[[ $RETRY =~ ^[0-9]+$ ]] || { echo "ab-repeat.sh: --retry wants an integer >= 0" >&2; exit 2; }
[ -x "$MMR" ] || { echo "ab-repeat.sh: no mmureplay at $MMR (build it, or --mmureplay BIN)" >&2; exit 2; }
OUT=${OUT:-./lab-out/ab-$PAIR}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
HANGS=${HANGS:-$OUT/hangs}

log() { echo "ab-repeat: $*"; }

# rc of the workload from a run.sh manifest ("" if none).
workload_rc() {
	[ -f "$1/manifest.json" ] || return 0
	sed -n 's/^  "workload_rc": \([0-9-]*\),$/\1/p' "$1/manifest.json" | head -n 1
}

# A guest that has not reached its init script (no "LAB:" line on the
# serial console) BOOT_LIMIT seconds after the start of run.sh is stuck in
# early boot (seen once: RCU stall, CPU 0 timer never fires): kill its QEMU
# (the child of run.sh) so that run.sh fails now, not at its own limit.
BOOT_LIMIT=${AB_BOOT_LIMIT:-150}
boot_watchdog() {
	local pid=$1 dir=$2 start=$SECONDS q
	while kill -0 "$pid" 2>/dev/null; do
		if [ $((SECONDS - start)) -ge "$BOOT_LIMIT" ] &&
			! grep -q '^LAB: ' "$dir/serial.log" 2>/dev/null; then
			q=$(pgrep -P "$pid" qemu-system | head -n 1 || true)
			if [ -n "$q" ]; then
				log "$(basename "$dir"): no guest init after ${BOOT_LIMIT}s, killing QEMU $q"
				cp "$dir/serial.log" "$dir.boot-stall.serial.log" 2>/dev/null || true
				kill "$q" 2>/dev/null || true
			fi
			break
		fi
		sleep 2
	done
}

# One lab run of SIDE (A|B) into DIR; the wall time goes to DIR/run-time.txt.
lab_run() {
	local side=$1 dir=$2 val t0 t1 rc=0
	val=N
	[ "$side" = A ] || val=Y
	t0=$(date +%s.%N)
	nice -n 10 "$HERE/run.sh" "$WORKLOAD" --kernel patched --knob "$KNOB=$val" \
		--out "$dir" -- "${WARGS[@]}" >"$dir.run.log" 2>&1 &
	boot_watchdog $! "$dir"
	wait $! || rc=$?
	t1=$(date +%s.%N)
	mv "$dir.run.log" "$dir/run.log" 2>/dev/null || true
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", b - a }' >"$dir/run-time.txt"
	echo "$rc" >"$dir/run-rc.txt"
	return "$rc"
}

save_hang() {
	local dir=$1 name=$2
	mkdir -p "$HANGS"
	for f in serial.log console.log workload.log manifest.json; do
		[ ! -f "$dir/$f" ] || cp "$dir/$f" "$HANGS/$PAIR-$name.$f"
	done
}

if [ "$ANALYZE_ONLY" -eq 0 ]; then
	for ((i = 1; i <= N; i++)); do
		for side in A B; do
			dir=$OUT/$side-$i
			for ((try = 0; ; try++)); do
				rm -rf "$dir"
				mkdir -p "$dir"
				log "$side-$i: $WORKLOAD ${WARGS[*]} --knob $KNOB=$([ "$side" = A ] && echo N || echo Y)"
				rrc=0
				lab_run "$side" "$dir" || rrc=$?
				wrc=$(workload_rc "$dir")
				log "$side-$i: run.sh rc=$rrc workload_rc=${wrc:-none} in $(cat "$dir/run-time.txt")s" \
					"($(sed -n 's/^ *guest ran //p' "$dir/run.log" 2>/dev/null))"
				[ "$rrc" -ne 0 ] || [ "${wrc:-x}" != 0 ] || break
				save_hang "$dir" "$side-$i.try$try"
				log "$side-$i: workload did not exit cleanly; logs saved to $HANGS"
				if [ "$try" -ge "$RETRY" ]; then
					log "$side-$i: kept as is (left out of the statistics)"
					break
				fi
				rm -rf "$dir.failed-$try"
				mv "$dir" "$dir.failed-$try"
			done
		done
	done
fi

# The recorded fixtures of the pair, for comparison.
if [ -n "$FIXTURES" ]; then
	for side in A B; do
		fx=$FIXTURES/$FIXTURE-$([ "$side" = A ] && echo off || echo on)
		[ -f "$fx/trace.tar.xz" ] || { echo "ab-repeat.sh: no fixture $fx" >&2; exit 2; }
		dir=$OUT/fixture-$side
		[ ! -f "$dir/capture.db" ] || continue
		rm -rf "$dir"
		mkdir -p "$dir"
		tar -xJf "$fx/trace.tar.xz" -C "$dir"
		cp "$fx/manifest.json" "$dir/trace/manifest.json"
		python3 -c 'import json, sys; json.dump(json.load(open(sys.argv[1]))["lab"], sys.stdout)' \
			"$fx/manifest.json" >"$dir/manifest.json"
	done
fi

# -------------------------------------------------- ingest and queries
for dir in "$OUT"/[AB]-[0-9]* "$OUT"/fixture-[AB]; do
	[ -d "$dir/trace" ] || continue
	case $dir in *.failed-*) continue ;; esac
	side=$(basename "$dir")
	side=${side#fixture-}
	side=${side%%-*}
	# The capture manifest beside the CTF dirs: ingest stores it, and the
	# replay reads the recorded policy (the knob) from it.
	if [ ! -f "$dir/trace/manifest.json" ] && [ -f "$dir/manifest.json" ]; then
		python3 "$HERE/lab-manifest.py" "$dir/manifest.json" >"$dir/trace/manifest.json"
		rm -f "$dir/capture.db"
	fi
	if [ ! -f "$dir/capture.db" ]; then
		"$MMR" ingest "$dir/trace" -o "$dir/capture.db" >"$dir/ingest.log" 2>&1 ||
			{ log "$(basename "$dir"): ingest failed rc=$? ($(tail -n 1 "$dir/ingest.log"))"; continue; }
	fi
	frc=0
	"$MMR" fidelity "$dir/capture.db" --json -o "$dir/fidelity.json" 2>"$dir/fidelity.err" || frc=$?
	echo "$frc" >"$dir/fidelity-rc.txt"
	if [ "$side" = A ]; then
		prc=0
		"$MMR" replay "$dir/capture.db" --policy "$POLICY" --json -o "$dir/replay.json" \
			2>"$dir/replay.err" || prc=$?
		echo "$prc" >"$dir/replay-rc.txt"
	fi
done

# ------------------------------------------------------------ summary
python3 - "$OUT" "$PAIR" "$POLICY" "$WORKLOAD ${WARGS[*]}" "$KNOB" <<'EOF'
import glob
import json
import os
import re
import sqlite3
import statistics
import sys

out, pair, policy, workload, knob = sys.argv[1:6]


def read(path, default=None):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def q(con, sql):
    return con.execute(sql).fetchone()[0]


runs = []
dirs = [d for d in glob.glob(os.path.join(out, "[AB]-*"))
        if re.fullmatch(r"[AB]-\d+", os.path.basename(d))]
dirs.sort(key=lambda p: (os.path.basename(p)[0],
                         int(os.path.basename(p)[2:])))
dirs += sorted(glob.glob(os.path.join(out, "fixture-[AB]")))
for d in dirs:
    name = os.path.basename(d)
    if not os.path.isdir(d):
        continue
    fixture = name.startswith("fixture-")
    r = {"run": name, "side": name[-1] if fixture else name[0], "dir": d,
         "fixture": fixture,
         "run_time_s": float(read(os.path.join(d, "run-time.txt"), "nan")),
         "guest_s": None, "workload_rc": None, "usable": False}
    m = re.search(r"guest ran (\d+)s", read(os.path.join(d, "run.log"), ""))
    if m:
        r["guest_s"] = int(m.group(1))
    try:
        with open(os.path.join(d, "manifest.json")) as f:
            man = json.load(f)
        r["workload_rc"] = man.get("workload_rc")
        r["discarded_events"] = man.get("discarded_events")
        r["knobs"] = man.get("knobs")
    except (OSError, ValueError):
        pass
    try:
        with open(os.path.join(d, "fidelity.json")) as f:
            fid = json.load(f)
        r["fidelity_ok"] = fid["ok"]
        r["fidelity_policy"] = fid["policy"]
        r["faults"] = fid["observed"]["faults"]
        r["leaf_zaps"] = fid["observed"]["leaf_zaps"]
        r["flush_contexts"] = fid["observed"]["flush_contexts"]
    except (OSError, ValueError, KeyError):
        r["fidelity_ok"] = None
    db = os.path.join(d, "capture.db")
    if os.path.exists(db):
        con = sqlite3.connect(db)
        r["events"] = q(con, "SELECT coalesce(sum(count), 0) FROM raw_event")
        r["tlb_flushes"] = q(con, "SELECT count(*) FROM tlb_flush")
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
    if r["side"] == "A":
        try:
            with open(os.path.join(d, "replay.json")) as f:
                rep = json.load(f)
            p = rep["policies"][policy]
            r["pred"] = {"faults": p["faults"], "leaf_zaps": p["leaf_zaps"],
                         "tlb_flushes": p["tlb_flushes"],
                         "faults_avoided": p["faults_avoided"],
                         "flush_contexts": p.get("flush_contexts")}
            r["replay_self_check_ok"] = rep.get("self_check", {}).get("ok")
        except (OSError, ValueError, KeyError):
            r["pred"] = None
    r["expected_policy"] = "baseline" if r["side"] == "A" else policy
    r["usable"] = (not fixture and r["workload_rc"] == 0
                   and r.get("fidelity_ok") is True
                   and r.get("fidelity_policy") == r["expected_policy"]
                   and "faults" in r)
    runs.append(r)

METRICS = ["faults", "leaf_zaps", "flush_contexts", "tlb_flushes",
           "faults_before_dirty", "faults_dirty", "faults_after_dirty"]
HEAD = {"faults": "faults", "leaf_zaps": "leaf_zaps",
        "flush_contexts": "flush_ctx", "tlb_flushes": "flushes",
        "faults_before_dirty": "f_pre", "faults_dirty": "f_dirty",
        "faults_after_dirty": "f_post"}
metrics = [m for m in METRICS if any(m in r for r in runs)]


def stats(vals):
    if not vals:
        return None
    med = statistics.median(vals)
    return {"n": len(vals), "min": min(vals), "median": med, "max": max(vals),
            "mean": statistics.mean(vals),
            "stdev": statistics.stdev(vals) if len(vals) > 1 else 0.0,
            "spread": (max(vals) - min(vals)) / med if med else None}


summary = {"pair": pair, "policy": policy, "workload": workload,
           "knob": knob, "runs": runs, "stats": {}, "predictions": []}
for side in "AB":
    summary["stats"][side] = {
        m: stats([r[m] for r in runs if r["side"] == side and r["usable"]
                  and m in r]) for m in metrics}


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, float) and not v.is_integer():
        return "%.1f" % v
    return "%d" % v


def pct(v):
    return "-" if v is None else "%.1f%%" % (100 * v)


lines = []
w = [10] + [10] * len(metrics)
hdr = "%-10s" % "run" + "".join("%10s" % HEAD[m] for m in metrics)
for side, label in (("A", "A: %s=N (baseline)" % knob),
                    ("B", "B: %s=Y (policy %s)" % (knob, policy))):
    lines.append(label)
    lines.append(hdr)
    for r in runs:
        if r["side"] != side:
            continue
        row = "%-10s" % r["run"] + "".join(
            "%10s" % fmt(r.get(m)) for m in metrics)
        notes = []
        if r["fixture"]:
            notes.append("fixture")
        if r["workload_rc"] != 0:
            notes.append("workload rc %s, excluded" % r["workload_rc"])
        if r.get("fidelity_ok") is not True:
            notes.append("self-check %s, excluded" % r.get("fidelity_ok"))
        elif r.get("fidelity_policy") != r["expected_policy"]:
            notes.append("self-check under %s, excluded"
                         % r.get("fidelity_policy"))
        lines.append(row + ("  (" + "; ".join(notes) + ")" if notes else ""))
    st = summary["stats"][side]
    for k in ("min", "median", "max"):
        lines.append("%-10s" % k + "".join(
            "%10s" % (fmt(st[m][k]) if st[m] else "-") for m in metrics))
    lines.append("%-10s" % "spread" + "".join(
        "%10s" % (pct(st[m]["spread"]) if st[m] else "-") for m in metrics))
    lines.append("")

bmed = {m: (summary["stats"]["B"][m] or {}).get("median") for m in metrics}
lines.append("Prediction of B from each A run (mmureplay replay --policy %s)"
             % policy)
lines.append("against the median of the B runs; err = (pred - B median) / "
             "B median")
pm = ["faults", "leaf_zaps", "tlb_flushes"]
lines.append("(pair: the B run of the same slot, B-i for A-i, fixture-B "
             "for fixture-A)")
lines.append("%-10s" % "from" + "".join(
    "%10s%8s" % (HEAD[m], "err") for m in pm) + "%10s%10s" % ("avoided",
                                                              "pair err"))
byname = {r["run"]: r for r in runs}
for r in runs:
    if r["side"] != "A" or not r.get("pred"):
        continue
    p = r["pred"]
    row = "%-10s" % r["run"]
    rec = {"from": r["run"], "usable": r["usable"]}
    mate = byname.get("B" + r["run"][1:] if not r["fixture"]
                      else "fixture-B")
    for m in pm:
        e = ((p[m] - bmed[m]) / bmed[m]) if bmed.get(m) else None
        rec[m] = p[m]
        rec[m + "_err_vs_B_median"] = e
        row += "%10s%8s" % (fmt(p[m]), "-" if e is None else "%+.1f%%"
                            % (100 * e))
    rec["faults_avoided"] = p["faults_avoided"]
    rec["flush_contexts"] = p["flush_contexts"]
    row += "%10s" % fmt(p["faults_avoided"])
    pe = None
    if mate and mate.get("faults"):
        pe = (p["faults"] - mate["faults"]) / mate["faults"]
        rec["pair"] = mate["run"]
        rec["pair_faults"] = mate["faults"]
        rec["faults_err_vs_pair"] = pe
    row += "%10s" % ("-" if pe is None else "%+.1f%%" % (100 * pe))
    if r["fixture"]:
        row += "  (fixture)"
    elif not r["usable"]:
        row += "  (A run excluded)"
    summary["predictions"].append(rec)
    lines.append(row)
good = [x for x in summary["predictions"] if x["usable"]]
if good:
    row = "%-10s" % "median"
    for m in pm:
        v = statistics.median(x[m] for x in good)
        e = (v - bmed[m]) / bmed[m] if bmed.get(m) else None
        row += "%10s%8s" % (fmt(v), "-" if e is None else "%+.1f%%"
                            % (100 * e))
    row += "%10s" % fmt(statistics.median(x["faults_avoided"] for x in good))
    lines.append(row)
lines.append("%-10s" % "B median" + "".join(
    "%10s%8s" % (fmt(bmed.get(m)), "") for m in pm))
lines.append("")
# Where nx-skip-dirty acts: faults while dirty logging is on.
sa, sb = summary["stats"]["A"], summary["stats"]["B"]
if good and sa.get("faults_dirty") and sb.get("faults_dirty"):
    av = statistics.median(x["faults_avoided"] for x in good)
    d = sa["faults_dirty"]["median"] - sb["faults_dirty"]["median"]
    summary["dirty_phase"] = {"avoided_predicted_median": av,
                              "measured_A_minus_B_median": d}
    lines.append("While dirty logging is on: faults avoided, predicted "
                 "(median) %s; measured A - B" % fmt(av))
    lines.append("(medians of f_dirty) %s." % fmt(d))
    lines.append("")
lines.append("Columns: faults, leaf_zaps, flush_ctx = mmureplay fidelity "
             "\"observed\" (self-check")
lines.append("ok on every run kept); flushes = TLB flush events (tlb_flush "
             "rows), the")
if "faults_dirty" in metrics:
    lines.append("count the what-if's tlb_flushes predicts; f_pre/f_dirty/"
                 "f_post = faults before,")
    lines.append("during and after dirty logging (memslot flag changes); "
                 "spread = (max - min) / median.")
else:
    lines.append("count the what-if's tlb_flushes predicts; spread = "
                 "(max - min) / median.")
t = [r["run_time_s"] for r in runs if r["run_time_s"] == r["run_time_s"]]
if t:
    lines.append("Lab run time (run.sh wall): min %.1f s, median %.1f s, "
                 "max %.1f s over %d runs." % (min(t), statistics.median(t),
                                               max(t), len(t)))
bad = [r["run"] for r in runs if not r["usable"] and not r["fixture"]]
lines.append("Runs excluded: %s." % (", ".join(bad) if bad else "none"))
if any(r["fixture"] for r in runs):
    lines.append("fixture-A/B: the tests/data fixtures of the pair, shown "
                 "for comparison only.")
for r in runs:
    r.pop("dir", None)
with open(os.path.join(out, "summary.json.tmp"), "w") as f:
    json.dump(summary, f, indent=1, sort_keys=True)
    f.write("\n")
os.replace(os.path.join(out, "summary.json.tmp"),
           os.path.join(out, "summary.json"))
text = "\n".join(lines) + "\n"
with open(os.path.join(out, "summary.txt.tmp"), "w") as f:
    f.write(text)
os.replace(os.path.join(out, "summary.txt.tmp"),
           os.path.join(out, "summary.txt"))
sys.stdout.write(text)
EOF
log "summary in $OUT/summary.txt and $OUT/summary.json"
