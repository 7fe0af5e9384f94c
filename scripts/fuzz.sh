#!/bin/sh
# Coverage-guided fuzzing of mmureplay's parsers with libFuzzer (clang),
# under AddressSanitizer and UBSan.
#
#   scripts/fuzz.sh [SECONDS]   each target for SECONDS (default 300);
#                               CI runs 30 (.ci/run)
#
# Targets (tests/fuzz/): metaguard (CTF metadata guard), ftrace_text
# (tracefs text ingest into a real DB), stream (the packed replay stream
# decoder), db (a real capture DB edited at random, then replayed).
# Each starts from a copy of its committed corpus (tests/fuzz/corpus/T),
# so the committed one does not grow.  A crash leaves its input in
# build-fuzz/fuzz/crash-T-*: fix it, then keep the input as a regression
# test in tests/fuzz/regress/T/ (tests/test_fuzz_corpus.py runs it in
# every build).  Prints one line per target: seconds, runs, crashes.
# Targets run as many at once as there are cores.
# Exit status: 0 when no target crashed, 1 otherwise.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
secs=${1:-300}
sh scripts/setup.sh

dir=build-fuzz
# The whole build gets coverage instrumentation; warnings fail it, as in
# every test build.
# ccache where installed, as in scripts/test.sh.
export CCACHE_BASEDIR="$top" CCACHE_NOHASHDIR=1
launcher=""
command -v ccache >/dev/null && launcher="-DCMAKE_C_COMPILER_LAUNCHER=ccache"
# shellcheck disable=SC2086
CC=clang cmake -S . -B "$dir" -DMMUREPLAY_FUZZ=ON -DMMUREPLAY_SANITIZE=ON \
	-DMMUREPLAY_WERROR=ON -DCMAKE_BUILD_TYPE=Debug $launcher >/dev/null
cmake --build "$dir" -j "$(nproc)" --target mmureplay fuzz_metaguard \
	fuzz_ftrace_text fuzz_stream fuzz_db >/dev/null

export LIBBABELTRACE2_NO_DLCLOSE=1
export LSAN_OPTIONS="suppressions=$top/tests/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
out=$dir/fuzz
rm -rf "$out"
mkdir -p "$out"
# The DB target edits a real capture: the thp-split fixture.
tar -xJf tests/data/lttng-kernel-6.1.192-stock-basic-thp-split/trace.tar.xz \
	-C "$out"
"$dir/analyze/mmureplay" ingest -q "$out/trace" -o "$out/fuzz.db"
export MMR_FUZZ_DB="$top/$out/fuzz.db"

# fuzz_one T: T for $secs seconds; its line of the table in $out/T.row.
fuzz_one() {
	mkdir -p "$out/corpus-$1"
	cp "tests/fuzz/corpus/$1"/* "$out/corpus-$1/"
	# -close_fd_mask=3: the targets' own error lines would flood the
	# log; libFuzzer's report of a crash still comes out.
	rc=0
	"$dir/tests/fuzz_$1" -max_total_time="$secs" -close_fd_mask=3 \
		-print_final_stats=1 -artifact_prefix="$out/crash-$1-" \
		"$out/corpus-$1" >"$out/$1.log" 2>&1 || rc=1
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$1.log")
	crashes=$(find "$out" -maxdepth 1 -name "crash-$1-*" | wc -l)
	[ "$crashes" -eq 0 ] || rc=1
	printf '%-12s %8s %10s %8s %s\n' "$1" "$secs" "${runs:-?}" \
		"$crashes" "$rc" >"$out/$1.row"
}

# As many targets at once as there are cores (each is one process), so
# the whole takes SECONDS times targets over cores.
jobs=$(nproc)
set -- metaguard ftrace_text stream db
targets="$*"
while [ $# -gt 0 ]; do
	n=0
	while [ $# -gt 0 ] && [ "$n" -lt "$jobs" ]; do
		fuzz_one "$1" &
		shift
		n=$((n + 1))
	done
	wait
done

status=0
printf '%-12s %8s %10s %8s\n' target seconds runs crashes
for t in $targets; do
	if [ -f "$out/$t.row" ]; then
		read -r name s runs crashes rc <"$out/$t.row"
	else
		name=$t s=$secs runs="?" crashes="?" rc=1
	fi
	[ "$rc" -eq 0 ] || status=1
	printf '%-12s %8s %10s %8s\n' "$name" "$s" "$runs" "$crashes"
done
[ "$status" -eq 0 ] ||
	echo "fuzz: crashes (inputs in $out/crash-*; logs $out/*.log)" >&2
exit "$status"
