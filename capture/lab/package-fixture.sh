#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# package-fixture.sh - turn a run.sh output directory into a test fixture.
#
# Usage: capture/lab/package-fixture.sh RUN_OUT_DIR DEST_DIR [README_TEXT_FILE]
#
# DEST_DIR gets: trace.tar.xz (the CTF trace directory, as trace/...),
# event-counts.txt (babeltrace2 CLI counts over the whole trace: kernel
# and, for run.sh --ust runs, UST events; the shared fixtures' format),
# manifest.json (a capture manifest, see lab-manifest.py), console.log (the guest's log, which includes the
# workload's phase markers) and README.md (README_TEXT_FILE if given,
# followed by a generated summary of kernel, knobs and workload; for a
# run.sh multi run, each VM with its pid; the host's memory management
# of run.sh --ksm, --khugepaged, --memcg-limit, --numa-balancing).
# Fails if the trace has discarded events or the tarball exceeds 2 MB.
# A run.sh --trace-cmd run also gives trace.dat.xz (converted to trace-cmd
# file version 6, see below) and ftrace-text.txt.xz (each at most 2 MB), tracecmd-counts.txt (event lines of `trace-cmd
# report` per event) and text-counts.txt (event lines of the text per
# event; syscall lines "sys_X(" / "sys_X ->" as sys_enter_X / sys_exit_X).
# A run.sh --perf run also gives perf-ctf.tar.xz (perf data convert
# --to-ctf of perf.data, as perf-ctf/...) and perf-counts.txt
# (babeltrace2's counts of it).
# A run.sh --memslot-ref run also gives ref/: its ref-trace/ (the CTF
# trace of the session "ref", kvm_memslot_change only) as it is, at most
# 256 KiB; capture/lab/check-statedump.py DEST reads it.

set -Eeuo pipefail
[ $# -ge 2 ] || { sed -n '3,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 2; }
SRC=$(cd "$1" && pwd)
DEST=$2
TEXT=${3:-}
MAX=$((2 * 1024 * 1024))

[ -f "$SRC/manifest.json" ] && [ -d "$SRC/trace" ] || { echo "no run output in $SRC" >&2; exit 1; }
mkdir -p "$DEST"
rm -f "$DEST/trace.tar.xz"
XZ_OPT=-9e tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
	-C "$SRC" -cJf "$DEST/trace.tar.xz" trace
size=$(stat -c %s "$DEST/trace.tar.xz")
[ "$size" -le "$MAX" ] || { echo "trace.tar.xz is $size bytes (> 2 MB): shorten the workload" >&2; exit 1; }
# The CLI finds and merges every CTF trace under trace/ (kernel/, ust/...).
babeltrace2 "$SRC/trace" 2>"$DEST/.bt.err" | awk '{ print $4 }' | sort | uniq -c |
	sort -k1,1nr -k2 >"$DEST/event-counts.txt"
if grep -q -i discard "$DEST/.bt.err"; then
	echo "babeltrace2 reports discarded events:" >&2
	cat "$DEST/.bt.err" >&2
	exit 1
fi
rm -f "$DEST/.bt.err"
# The capture manifest (schemas/manifest.schema.json), the lab's own run
# record kept inside it under "lab".
python3 "$(dirname "${BASH_SOURCE[0]}")/lab-manifest.py" "$SRC/manifest.json" \
	>"$DEST/manifest.json"
cp "$SRC/console.log" "$DEST/console.log"
rm -rf "$DEST/ref"
if [ -d "$SRC/ref-trace" ]; then
	cp -r "$SRC/ref-trace" "$DEST/ref"
	rsize=$(du -sk "$DEST/ref" | cut -f1)
	[ "$rsize" -le 256 ] || { echo "ref/ is $rsize KiB (> 256 KiB)" >&2; exit 1; }
fi
rm -f "$DEST/perf-ctf.tar.xz" "$DEST/perf-counts.txt"
if [ -d "$SRC/perf-ctf" ]; then
	XZ_OPT=-9e tar --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
		-C "$SRC" -cJf "$DEST/perf-ctf.tar.xz" perf-ctf
	babeltrace2 "$SRC/perf-ctf" 2>/dev/null | awk '{ sub(/:$/, "", $3); print $3 }' | sort | uniq -c |
		sort -k1,1nr -k2 >"$DEST/perf-counts.txt"
fi
if [ -f "$SRC/trace.dat" ] && [ -f "$SRC/ftrace-text.txt" ]; then
	# trace-cmd 3.1 writes file version 7 with compressed sections,
	# which xz cannot shrink; the fixture keeps the same recording
	# converted to version 6 (uncompressed; what trace-cmd < 3.0 writes).
	trace-cmd convert --file-version 6 -i "$SRC/trace.dat" -o "$DEST/trace.dat" >/dev/null
	xz -9e -f "$DEST/trace.dat"
	xz -9e -c "$SRC/ftrace-text.txt" >"$DEST/ftrace-text.txt.xz"
	for f in trace.dat ftrace-text.txt; do
		fsize=$(stat -c %s "$DEST/$f.xz")
		[ "$fsize" -le "$MAX" ] || { echo "$f.xz is $fsize bytes (> 2 MB): shorten the workload" >&2; exit 1; }
	done
	trace-cmd report -i "$SRC/trace.dat" 2>/dev/null |
		sed -n -E 's/^ *.*-[0-9]+ +\[[0-9]+\] +([^ ]+ +)?[0-9]+\.[0-9]+: ([A-Za-z0-9_]+):.*/\2/p' |
		sort | uniq -c | sort -k1,1nr -k2 >"$DEST/tracecmd-counts.txt"
	grep -v '^#' "$SRC/ftrace-text.txt" |
		sed -n -E 's/^ *.*-[0-9]+ +\[[0-9]+\] +[^ ]+ +[0-9]+\.[0-9]+: ([A-Za-z0-9_]+)(:|\(| -> ).*/\1\2/p' |
		sed -E 's/^sys_(.*)\($/sys_enter_\1/; s/^sys_(.*) -> $/sys_exit_\1/; s/:$//' |
		sort | uniq -c | sort -k1,1nr -k2 >"$DEST/text-counts.txt"
fi

field() { sed -n -E "s/^  \"$1\": \"?([^\"]*[^\",])\"?,?\$/\1/p" "$SRC/manifest.json" | head -n 1; }
field_or_none() { local v; v=$(field "$1"); echo "${v:-none}"; }
{
	[ -z "$TEXT" ] || { cat "$TEXT"; echo; }
	echo "Recorded by capture/lab/run.sh (QEMU TCG lab, kvm_amd npt=Y tdp_mmu=Y)."
	echo
	echo "- kernel: $(field kernel_release) ($(field kernel_flavor))"
	echo "- workload: $(field workload) $(field workload_args)"
	# run.sh multi: one VM (its own process) per workload.
	sed -n -E 's/^    \{"vm": ([0-9]+), "workload": "([^"]*)", "args": "([^"]*)", "pid": ([0-9a-z]+), "start_ns": ([0-9a-z]+), "end_ns": ([0-9a-z]+), "rc": ([0-9a-z]+),.*/  - VM \1: \2 \3 (pid \4, monotonic \5..\6 ns, rc \7)/p' \
		"$SRC/manifest.json"
	echo "- kvm module args: $(field_or_none kvm_module_args)"
	echo "- knobs: $(field_or_none knobs)"
	echo "- lttng-modules: $(field lttng_modules); events: $(field events); syscalls: $(field syscalls)"
	if grep -q '^  "ust": {' "$SRC/manifest.json"; then
		echo "- UST: $(sed -n 's/^  "ust": {.*"events": "\([^"]*\)".*/\1/p' "$SRC/manifest.json")" \
			"from $(field workload_bin) (channel uch0, per-UID buffers, contexts vtid,procname)"
	fi
	# run.sh --ksm, --khugepaged, --memcg-limit, --numa-balancing,
	# --compaction (objects), --madv-collapse (a flag).
	python3 - "$SRC/manifest.json" <<'PY' || true
import json, sys
h = json.load(open(sys.argv[1])).get("host_mm") or {}
for k, v in h.items():
    if isinstance(v, dict):
        print("- host mm, %s: %s" % (k, ", ".join("%s %s" % (a, json.dumps(b))
                                                for a, b in v.items())))
    elif v:
        print("- host mm, %s: %s" % (k, json.dumps(v)))
PY
	echo "- discarded events: $(field discarded_events)"
	if [ -d "$DEST/ref" ]; then
		echo "- ref/: the session \"ref\" (run.sh --memslot-ref): $(babeltrace2 "$DEST/ref" 2>/dev/null |
			grep -c ' kvm_memslot_change: ') kvm_memslot_change from before the workload"
	fi
	echo "- events in trace: $(awk '{ n += $1 } END { print n + 0 }' "$DEST/event-counts.txt")"
	echo
	echo "Phase markers: \`syscall_entry_ioctl\` with fd = 4294967295 (-1, fails with"
	echo "EBADF) and cmd = 0x4d52NNNN (NNNN = phase number; the MARK lines of"
	echo "console.log say which)."
} >"$DEST/README.md"
echo "$DEST: trace.tar.xz $size bytes, $(awk '{ n += $1 } END { print n + 0 }' "$DEST/event-counts.txt") events"
