#!/bin/sh
# Set up (Debian packages), build and run the test suite; prints its
# time at the end.
#   scripts/test.sh              regular build in build/, every test but
#                                those labelled slow
#   scripts/test.sh --sanitize   AddressSanitizer + UBSan build in
#                                build-asan/, the tests labelled asan
# The slow tests (label "slow": the QEMU lab and kernel builds, also
# labelled "lab"; the 100 M-event benchmark; fuzzing for minutes) run on
# request: ctest --test-dir build -L slow (or -L lab).  The kernel
# series apply + checkpatch check (label "kernel") runs in the regular
# build.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
start=$(date +%s)
sh scripts/setup.sh

dir=build
# The hot-path invariant checks stay on in every test build, and a
# compiler warning fails it (packagers leave MMUREPLAY_WERROR off).
flags="-DMMUREPLAY_ASSERT_DBG=ON -DMMUREPLAY_WERROR=ON"
# ccache (scripts/setup.sh installs it) gives back what an earlier build
# of the same sources, flags and compiler made: a clean clone's build
# then takes seconds.  Paths under the checkout are hashed relative to
# it, so a clone elsewhere (CI's) finds the same entries.
export CCACHE_BASEDIR="$top" CCACHE_NOHASHDIR=1
command -v ccache >/dev/null &&
	flags="$flags -DCMAKE_C_COMPILER_LAUNCHER=ccache"
# Everything but what is labelled slow (the lab, the 100 M-event bench,
# minutes of fuzzing: run on request, tests/README.md).
select="-LE slow"
if [ "${1:-}" = "--sanitize" ]; then
	dir=build-asan
	flags="$flags -DMMUREPLAY_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug"
	# The tests labelled asan: the C unit tests, the rule scenarios,
	# the ingest, replay and late cuts of every fixture and the C paths
	# of bad input; the rest re-run those paths to check outputs
	# (tests/README.md, "Under the sanitizers").
	select="-L asan -LE slow"
	# Leaks inside libbabeltrace2's plugin loader, a CTF source that fails
	# its initialization, and glib's one-time allocations are not ours;
	# ours are still reported (full stacks, so suppressions can match).
	# Keep plugins mapped so their frames (and the suppressions) resolve.
	export LIBBABELTRACE2_NO_DLCLOSE=1
	export LSAN_OPTIONS="suppressions=$top/tests/lsan.supp:print_suppressions=0"
	# Per-fixture tests take the middle late cut only (tests/mmrtest.py).
	export MMR_SANITIZE=1
	# The babeltrace2 CLI's times of the fixtures' events (the tests'
	# oracle, the same for every build) are read from the regular
	# build's store where a run left them (tests/mmrtest.py, ORACLE).
	[ -d build/tests/shared ] && export MMR_ORACLE="$top/build/tests/shared"
	export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
	export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0"
fi
# shellcheck disable=SC2086
cmake -S . -B "$dir" $flags >/dev/null
cmake --build "$dir" -j "$(nproc)"
# As many tests at once as there are cores: each test is one process
# at a time, and none shares a work directory or an LTTng session with
# another (the lttng-sessiond ctest fixture starts first, stops last).
rc=0
rm -f "$dir/tests/store-count.txt"
ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" $select || rc=$?
# The run's count of ingests (suite.store_check, tests/README.md).
cat "$dir/tests/store-count.txt" 2>/dev/null || true
echo "scripts/test.sh${1:+ $1}: $(($(date +%s) - start)) s (setup, build and tests)"
exit $rc
