#!/bin/sh
# The main job on the bundled real trace: set up, build, ingest the lab
# trace of the perm-upgrade mechanism (QEMU background snapshot, per-page
# uffd-wp unprotect, stock 6.1) and write the results to out/:
#   out/capture.db      the capture database
#   out/summary.json    summary as JSON
#   out/summary.txt     summary as text tables
#   out/fidelity.json   self-check: replay under the recorded policy
#   out/replay.json     what-if under every reference policy (and .txt)
#   out/report.html     all of it in one self-contained page
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh scripts/setup.sh
cmake -S . -B build >/dev/null
cmake --build build -j "$(nproc)" --target mmureplay

fixture=tests/data/lttng-kernel-6.1-bgsnapshot-perpage-read
out=${MMUREPLAY_OUT:-out}
mkdir -p "$out"
rm -rf "$out/trace"
mkdir -p "$out/trace"
tar -xJf "$fixture/trace.tar.xz" -C "$out/trace"

mmr=build/analyze/mmureplay
$mmr ingest "$out/trace" -o "$out/capture.db"
$mmr summary "$out/capture.db" --json -o "$out/summary.json"
$mmr summary "$out/capture.db" -o "$out/summary.txt"
$mmr fidelity "$out/capture.db" --json -o "$out/fidelity.json"
$mmr fidelity "$out/capture.db" -o "$out/fidelity.txt"
$mmr replay "$out/capture.db" --json -o "$out/replay.json"
$mmr replay "$out/capture.db" -o "$out/replay.txt"
$mmr report "$out/capture.db" -o "$out/report.html"
cat "$out/summary.txt" "$out/fidelity.txt" "$out/replay.txt"
echo "results in $out/"
