#!/bin/sh
# Set up (Debian packages), build and run the test suite.
#   scripts/test.sh              regular build in build/
#   scripts/test.sh --sanitize   AddressSanitizer + UBSan build in build-asan/
# Lab tests (QEMU, kernel builds) carry the label "lab" and are not run
# here; run them with: ctest --test-dir build -L lab.  The kernel series
# apply + checkpatch check (label "kernel") runs in the regular build.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
sh scripts/setup.sh

dir=build
# The hot-path invariant checks stay on in every test build, and a
# compiler warning fails it (packagers leave MMUREPLAY_WERROR off).
flags="-DMMUREPLAY_ASSERT_DBG=ON -DMMUREPLAY_WERROR=ON"
skip="lab"
if [ "${1:-}" = "--sanitize" ]; then
	dir=build-asan
	flags="$flags -DMMUREPLAY_SANITIZE=ON -DCMAKE_BUILD_TYPE=Debug"
	# The kernel series is checked once, in the regular run.
	skip="lab|kernel"
	# Leaks inside libbabeltrace2's plugin loader, a CTF source that fails
	# its initialization, and glib's one-time allocations are not ours;
	# ours are still reported (full stacks, so suppressions can match).
	# Keep plugins mapped so their frames (and the suppressions) resolve.
	export LIBBABELTRACE2_NO_DLCLOSE=1
	export LSAN_OPTIONS="suppressions=$top/tests/lsan.supp:print_suppressions=0"
	# The fixture-sweeping tests take every eighth fixture here, and
	# of the per-fixture ones (ingest_, replay_, late_cut_) those of
	# every eighth run, the others skip (tests/mmrtest.py).
	export MMR_SANITIZE=1
	export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
	export ASAN_OPTIONS="detect_leaks=1:fast_unwind_on_malloc=0"
fi
# shellcheck disable=SC2086
cmake -S . -B "$dir" $flags >/dev/null
cmake --build "$dir" -j "$(nproc)"
# As many tests at once as there are cores: each test is one process
# at a time, and none shares a work directory or an LTTng session with
# another (the lttng-sessiond ctest fixture starts first, stops last).
ctest --test-dir "$dir" --output-on-failure -j "$(nproc)" -LE "$skip"
