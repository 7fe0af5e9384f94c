#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# hang-repeat.sh - measure how often lab runs hang: N runs of the patched
# kernel's nxrecovery and bgsnapshot workloads, round robin over the A/B
# settings of capture/lab/ab-repeat.sh, each a plain capture/lab/run.sh.
#
# Usage: capture/lab/hang-repeat.sh -n N --out DIR [--kernel K]
#            [--hang-after S] [--configs LIST] [--summary-only]
#
#   -n N             runs in all (default 50)
#   --out DIR        DIR/NNN-CONFIG/ per run (run.sh's output + run.log),
#                    DIR/runs.tsv one line per run, DIR/summary.txt
#   --kernel K       run.sh --kernel (default patched)
#   --hang-after S   run.sh --hang-after (default: run.sh's)
#   --configs LIST   comma list of the configurations to cycle through
#                    (default all of them, in this order):
#                      nx           nxrecovery, every knob off
#                      nx-skipdirty nxrecovery, nx_huge_pages_recovery_skip_dirty=Y
#                      nx-readlock  nxrecovery, nx_huge_pages_recovery_read_lock=Y
#                      bg           bgsnapshot read/perpage, perm_upgrade_skip_zap=N
#                      bg-skipzap   bgsnapshot read/perpage, perm_upgrade_skip_zap=Y
#                    (nxrecovery: --mem 128 --exec 47 --plain 8 --dirty 8,
#                    the fixtures' arguments)
#   --summary-only   only rewrite DIR/summary.txt from DIR/runs.tsv
#
# A run starts only when no QEMU is running on the machine (the lab is
# shared: it waits, 20 s at a time), and not while DIR/pause exists (to
# restage the kernel between two runs); it is retried when build.sh
# holds the lab.  runs.tsv: index, config, run.sh's exit status (0 ok, 3
# workload failed, 4 verify failed, 5 hung, 1 lab failure), workload_rc,
# seconds, whether the guest kernel had the soft-lockup detector (from
# guest-init's "lockup detectors" line: yes, no, - when it never got
# there), and a note: the hang's reason and blocked tasks from hang.txt,
# "boot panic" for a guest that panicked before its init.
# summary.txt: capture/lab/hang-summary.py (hang rate, 95% interval).

set -Euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
N=50 OUT='' KERNEL=patched HANG_AFTER='' CONFIGS=nx,nx-skipdirty,nx-readlock,bg,bg-skipzap
SUMMARY_ONLY=0
usage() { sed -n '3,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
while [ $# -gt 0 ]; do
	case $1 in
	-n) N=${2:?}; shift 2 ;;
	--out) OUT=${2:?}; shift 2 ;;
	--kernel) KERNEL=${2:?}; shift 2 ;;
	--hang-after) HANG_AFTER=${2:?}; shift 2 ;;
	--configs) CONFIGS=${2:?}; shift 2 ;;
	--summary-only) SUMMARY_ONLY=1; shift ;;
	-h|--help) usage; exit 0 ;;
	*) echo "hang-repeat.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
[ -n "$OUT" ] || { echo "hang-repeat.sh: --out DIR is needed" >&2; exit 2; }
[[ $N =~ ^[1-9][0-9]*$ ]] || { echo "hang-repeat.sh: -n wants a positive integer" >&2; exit 2; }
IFS=, read -r -a CFG <<<"$CONFIGS"
for c in "${CFG[@]}"; do
	case $c in nx|nx-skipdirty|nx-readlock|bg|bg-skipzap) ;;
	*) echo "hang-repeat.sh: unknown config '$c' (see --help)" >&2; exit 2 ;;
	esac
done
mkdir -p "$OUT"
TSV=$OUT/runs.tsv

summary() {
	python3 "$HERE/hang-summary.py" "$TSV" "$KERNEL" >"$OUT/summary.txt.tmp" &&
		mv "$OUT/summary.txt.tmp" "$OUT/summary.txt"
}
if [ "$SUMMARY_ONLY" -eq 1 ]; then
	summary
	exit
fi

log() { echo "[$(date -u +%T)] $*"; }
config_args() {
	local nx=(nxrecovery --kernel "$KERNEL") bg=(bgsnapshot --kernel "$KERNEL")
	local nxa=(-- --mem 128 --exec 47 --plain 8 --dirty 8) bga=(-- --access read --mode perpage)
	case $1 in
	nx) ARGS=("${nx[@]}" "${nxa[@]}") ;;
	nx-skipdirty) ARGS=("${nx[@]}" --knob nx_huge_pages_recovery_skip_dirty=Y "${nxa[@]}") ;;
	nx-readlock) ARGS=("${nx[@]}" --knob nx_huge_pages_recovery_read_lock=Y "${nxa[@]}") ;;
	bg) ARGS=("${bg[@]}" --knob perm_upgrade_skip_zap=N "${bga[@]}") ;;
	bg-skipzap) ARGS=("${bg[@]}" --knob perm_upgrade_skip_zap=Y "${bga[@]}") ;;
	esac
}

# Runs already in runs.tsv are kept: the loop resumes after them.
[ -f "$TSV" ] || printf 'run\tconfig\trc\tworkload_rc\tseconds\tdetectors\tnote\n' >"$TSV"
i=$(($(wc -l <"$TSV") - 1))
while [ "$i" -lt "$N" ]; do
	i=$((i + 1))
	cfg=${CFG[$(((i - 1) % ${#CFG[@]}))]}
	config_args "$cfg"
	dir=$OUT/$(printf '%03d' "$i")-$cfg
	while :; do
		while pgrep -x qemu-system-x86 >/dev/null || [ -e "$OUT/pause" ]; do
			sleep 20
		done
		t0=$(date +%s)
		rc=0
		mkdir -p "$dir"
		"$HERE/run.sh" "${ARGS[0]}" --out "$dir" ${HANG_AFTER:+--hang-after "$HANG_AFTER"} \
			"${ARGS[@]:1}" >"$dir/run.log" 2>&1 || rc=$?
		if [ "$rc" -eq 1 ] && grep -q 'build.sh is updating' "$dir/run.log"; then
			log "$i $cfg: the lab is being built, retrying in 20 s"
			sleep 20
			continue
		fi
		break
	done
	secs=$(($(date +%s) - t0))
	wrc=$(sed -n 's/^  "workload_rc": \([0-9-]*\),$/\1/p' "$dir/manifest.json" 2>/dev/null)
	det=-
	if grep -q 'lockup detectors: .*soft_watchdog=1' "$dir/serial.log" 2>/dev/null; then
		det=yes
	elif grep -q 'lockup detectors: ' "$dir/serial.log" 2>/dev/null; then
		det=no
	fi
	note=
	if [ "$rc" -eq 5 ]; then
		note=$(head -n 1 "$dir/hang.txt" | sed 's/^guest hung: //')
		d=$(sed -n '/^== blocked tasks/,/^$/p' "$dir/hang.txt" |
			sed -n 's/^task:\([^ ]*\) .*/\1/p' | sort | uniq -c |
			awk '{ printf "%s%s x%d", (NR > 1 ? ", " : ""), $2, $1 }')
		note="$note; D state: ${d:-none}"
	elif [ "$rc" -eq 1 ] && grep -q 'Kernel panic' "$dir/serial.log" 2>/dev/null; then
		note="boot panic: $(grep -m1 -o 'Kernel panic.*' "$dir/serial.log" | cut -c1-80)"
	elif [ "$rc" -ne 0 ]; then
		note=$(grep -m1 -E 'FAIL' "$dir/run.log" | cut -c1-100)
	fi
	printf '%d\t%s\t%d\t%s\t%d\t%s\t%s\n' "$i" "$cfg" "$rc" "${wrc:--}" "$secs" "$det" "$note" >>"$TSV"
	log "$i/$N $cfg: run.sh rc=$rc workload_rc=${wrc:--} ${secs}s${note:+ ($note)}"
	summary || log "hang-summary.py failed"
done
log "done: $OUT/summary.txt"
