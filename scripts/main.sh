#!/bin/sh
# The main job on the bundled real trace: set up, build, ingest the lab
# trace of the perm-upgrade mechanism (QEMU background snapshot, per-page
# uffd-wp unprotect, stock 6.1) and write the results to out/:
#   out/capture.db      the capture database
#   out/summary.json    summary as JSON
#   out/summary.txt     summary as text tables
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
cat "$out/summary.txt"
echo "results in $out/"
