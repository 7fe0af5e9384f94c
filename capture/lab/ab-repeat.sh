#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# ab-repeat.sh - size the run-to-run variance of an A/B lab pair.
#
# Usage: capture/lab/ab-repeat.sh PAIR [options]
#
#   PAIR                  nx-skip-dirty | perm-upgrade | perm-upgrade-write |
#                         nx-readlock | selftest-nx-readlock |
#                         selftest-nx-skip-dirty
#                         (below)
#   -n N                  runs per side (default 3); the runs alternate
#                         A-1, B-1, A-2, B-2, ...
#   --kernel KERNEL       the patched kernel (run.sh --kernel): patched
#                         (default, 6.1) or VER-patched, e.g. 6.12-patched.
#                         On a kernel other than 6.1 the pairs other than
#                         nx-skip-dirty also set
#                         nx_huge_pages_recovery_skip_dirty=N (6.12 has it
#                         on by default), so that only the pair's knob
#                         departs from the baseline, as in the fixtures
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
#                         lttng-kernel-VER.*-patched-...-{off,on}, e.g.
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
#   perm-upgrade-write
#                   as perm-upgrade with --access write64: the guest
#                   writes, so a page is unprotected (by the saver, or by
#                   the handler its write fault wakes) while the guest
#                   maps it not at all: most upgrades zap nothing and
#                   still walk their range under mmu_lock; no --fixtures
#   nx-readlock     as nx-skip-dirty with
#                   kvm.nx_huge_pages_recovery_read_lock=N / =Y; replay
#                   policy nx-readlock (the fixtures: skip-dirty-off is its
#                   A side, readlock-on its B side; no --fixtures)
#   selftest-nx-readlock
#                   KVM's own selftest x86_64/nx_huge_pages_test
#                   (-t 887563923 -p 100 -r, --hugepages 8, nx_huge_pages=1,
#                   ratio 1, period 100 ms: its wrapper's setup; two VMs,
#                   the first's two split pages recovered) with
#                   kvm.nx_huge_pages_recovery_read_lock=N / =Y; replay
#                   policy nx-readlock.  The test's slot is three huge
#                   pages (HPAGE_SLOT_NPAGES, a constant of the test), so
#                   the recovery takes two pages whatever the setup; no
#                   --fixtures
#   selftest-nx-skip-dirty
#                   KVM's own selftest dirty_log_perf_test (-g -v 2 -b 8M
#                   -i 4 -s anonymous_thp) with nx_huge_pages=force, ratio
#                   1, period 100 ms, so that recovery runs while dirty
#                   logging is on; kvm.nx_huge_pages_recovery_skip_dirty=N
#                   / =Y; replay policy nx-skip-dirty.  The guest executes
#                   only from its code slot, never dirty-logged: no page
#                   is NX-split where the knob acts, a null pair that
#                   shows it; no --fixtures
#
# Per run: `mmureplay ingest DIR/trace -o DIR/capture.db` (with the
# capture manifest, lab-manifest.py, as DIR/trace/manifest.json), the
# self-check and measured counts of `mmureplay fidelity DB --json`
# ("observed": faults, leaf_zaps, flush_contexts; "ok", mismatches by
# rule, exempt share), TLB flush events (tlb_flush rows), the traced
# mmu_lock wait of faults (lock_wait rows) and the faults before /
# during / after dirty logging (memslot flag changes; nxrecovery only).
# For each A run whose self-check passes, the what-if of the B policy
# (`mmureplay replay DB --policy POLICY --json`); for every run
# `mmureplay summary DB --json` (DIR/db-summary.json), its measured
# latency and counts, and for each B run its recorded policy's figures
# (the same replay command: restated, to be checked against the trace),
# so that each latency figure and count the what-if predicts (NPF
# service time and probe percentiles, faults, leaf zaps, TLB flushes,
# lock waits) is held against B's measured range.  ab-summary.py writes
# OUTDIR/summary.txt (72 columns: per side min, median, max, spread =
# (max - min) / median; the self-check of every run; per metric A
# median, B median and min-max, the predictions' median and min-max, how
# many fall inside B's range and the error against B's median and in
# widths of B's range; figures equal to A's by construction marked "=";
# then each latency figure and count with its figure kind, the what-if's
# min-median-max over the A runs, B's measured min-median-max and
# whether the what-if lies inside B's range) and OUTDIR/summary.json
# (every number).  Runs whose workload did not exit cleanly (rc != 0,
# e.g. the exit hang, rc 125) or that were recorded under another
# policy are listed but left out of the statistics; a failed self-check
# leaves the measured counts in and the prediction out.
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
KERNEL=patched
while [ $# -gt 0 ]; do
	case $1 in
	-n) N=${2:?}; shift 2 ;;
	--kernel) KERNEL=${2:?}; shift 2 ;;
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

# RUN: run.sh's words before the options (the workload, or selftest TEST);
# SETUP: the run.sh options the pair's workload needs on both sides.
SETUP=()
case $PAIR in
nx-skip-dirty)
	WORKLOAD=nxrecovery
	WARGS=(--mem 128 --exec 47 --plain 8 --dirty 8)
	KNOB=nx_huge_pages_recovery_skip_dirty
	FIXTURE=nxrecovery-skip-dirty
	POLICY=nx-skip-dirty ;;
perm-upgrade)
	WORKLOAD=bgsnapshot
	WARGS=(--access read --mode perpage)
	KNOB=perm_upgrade_skip_zap
	FIXTURE=bgsnapshot-perm-upgrade
	POLICY=perm-upgrade ;;
perm-upgrade-write)
	WORKLOAD=bgsnapshot
	WARGS=(--access write64 --mode perpage)
	KNOB=perm_upgrade_skip_zap
	FIXTURE=
	POLICY=perm-upgrade ;;
nx-readlock)
	WORKLOAD=nxrecovery
	WARGS=(--mem 128 --exec 47 --plain 8 --dirty 8)
	KNOB=nx_huge_pages_recovery_read_lock
	FIXTURE=nxrecovery-readlock
	POLICY=nx-readlock ;;
selftest-nx-readlock)
	WORKLOAD="selftest x86_64/nx_huge_pages_test"
	WARGS=(-t 887563923 -p 100 -r)
	SETUP=(--hugepages 8 --knob nx_huge_pages=1 --knob nx_huge_pages_recovery_ratio=1
		--knob nx_huge_pages_recovery_period_ms=100)
	KNOB=nx_huge_pages_recovery_read_lock
	FIXTURE=
	POLICY=nx-readlock ;;
selftest-nx-skip-dirty)
	WORKLOAD="selftest dirty_log_perf_test"
	WARGS=(-g -v 2 -b 8M -i 4 -s anonymous_thp)
	SETUP=(--knob nx_huge_pages=force --knob nx_huge_pages_recovery_ratio=1
		--knob nx_huge_pages_recovery_period_ms=100)
	KNOB=nx_huge_pages_recovery_skip_dirty
	FIXTURE=
	POLICY=nx-skip-dirty ;;
*) echo "ab-repeat.sh: unknown pair '$PAIR' (nx-skip-dirty, perm-upgrade, perm-upgrade-write, nx-readlock, selftest-nx-readlock, selftest-nx-skip-dirty)" >&2; exit 2 ;;
esac
read -r -a RUN <<<"$WORKLOAD"
[ -z "$FIXTURES" ] || [ -n "$FIXTURE" ] ||
	{ echo "ab-repeat.sh: $PAIR has no recorded fixtures (no --fixtures)" >&2; exit 2; }
[[ $N =~ ^[1-9][0-9]*$ ]] || { echo "ab-repeat.sh: -n wants a positive integer" >&2; exit 2; }
case $KERNEL in
patched|6.1-patched) KSERIES=6.1 ;;
*-patched) KSERIES=${KERNEL%-patched} ;;
*) echo "ab-repeat.sh: --kernel wants a patched kernel (patched, VER-patched)" >&2; exit 2 ;;
esac
[[ $KSERIES =~ ^[0-9]+\.[0-9]+$ ]] && [ -d "$TOP/kernel-series/linux-$KSERIES" ] ||
	{ echo "ab-repeat.sh: no kernel-series/linux-$KSERIES" >&2; exit 2; }
# Every knob but the pair's at the 6.1 stock setting (off).
OTHER_KNOBS=()
[ "$KSERIES" = 6.1 ] || [ "$KNOB" = nx_huge_pages_recovery_skip_dirty ] ||
	OTHER_KNOBS=(--knob nx_huge_pages_recovery_skip_dirty=N)
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
	nice -n 10 "$HERE/run.sh" "${RUN[@]}" --kernel "$KERNEL" --knob "$KNOB=$val" \
		"${OTHER_KNOBS[@]}" "${SETUP[@]}" \
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
		fx=$(ls -d "$FIXTURES"/lttng-kernel-"$KSERIES".*-patched-"$FIXTURE"-$([ "$side" = A ] && echo off || echo on) 2>/dev/null | head -n 1)
		[ -f "$fx/trace.tar.xz" ] || { echo "ab-repeat.sh: no $KSERIES fixture of $FIXTURE in $FIXTURES" >&2; exit 2; }
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
	# A: the what-if of POLICY (and A's own figures, restated); B: its
	# recorded policy's figures (restated: the trace's, checked).
	prc=0
	"$MMR" replay "$dir/capture.db" --policy "$POLICY" --json -o "$dir/replay.json" \
		2>"$dir/replay.err" || prc=$?
	echo "$prc" >"$dir/replay-rc.txt"
	# The measured latency and counts, whatever the self-check says
	# (replay withholds its figures when it fails).
	"$MMR" summary "$dir/capture.db" --json -o "$dir/db-summary.json" \
		2>"$dir/db-summary.err" || rm -f "$dir/db-summary.json"
done

# ------------------------------------------------------------ summary
python3 "$HERE/ab-summary.py" "$OUT" "$PAIR" "$POLICY" "$WORKLOAD ${WARGS[*]}" "$KNOB"
log "summary in $OUT/summary.txt and $OUT/summary.json"
