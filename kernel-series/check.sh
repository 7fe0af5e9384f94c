#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check.sh - apply and compile-check the mmureplay kernel series.
#
# Usage: kernel-series/check.sh [--quick | --full] [--help]
#
#   --quick (default)
#       1. installs Debian's linux-source-6.1 (apt-get) if missing and
#          downloads the lttng-modules-dkms .deb (apt-get download; the
#          package is never installed: its DKMS hook breaks apt);
#       2. unpacks both into the cache, each as a git repository whose
#          first commit (tag mmureplay-base) is the pristine source;
#       3. applies the patches listed in kernel-series/series, one at a
#          time with git am, on a clean checkout of the base;
#       4. runs scripts/checkpatch.pl --strict on every linux/ patch (cover
#          letter excluded) and requires zero errors and zero warnings.
#   --full
#       --quick, then builds a small KVM-enabled kernel (x86_64_defconfig +
#       kvm_guest.config + kernel-series/kvm-lab.config, KVM_WERROR) out of
#       tree, builds lttng-modules against it, and checks that the KVM
#       modules and the LTTng KVM probe modules (with the new events) exist.
#
# Environment:
#   MMUREPLAY_CACHE   cache root (default: $HOME/.cache/mmureplay); this
#                     script uses $MMUREPLAY_CACHE/ks.  Reused between runs:
#                     the second run only re-applies the patches and
#                     rebuilds what they change.
#   JOBS              make -j value (default 2); builds run under nice -n 19.
#   CCACHE_DIR        default: $MMUREPLAY_CACHE/ks/ccache (ccache is used if
#                     installed; --full installs it with apt-get if missing).
#
# Prints the elapsed time of each step.  Exits non-zero with a one-line
# message on the first failure; build logs are kept in the cache (logs/).

set -Eeuo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${MMUREPLAY_CACHE:-$HOME/.cache/mmureplay}
KS=$CACHE/ks
JOBS=${JOBS:-2}
MODE=quick
# No automatic gc: it would repack the kernel tree in the background.
GIT_ID=(-c user.name="mmureplay developers" -c user.email=dev@mmureplay.invalid
	-c advice.detachedHead=false -c init.defaultBranch=work
	-c gc.auto=0 -c maintenance.auto=false)

usage() {
	sed -n '3,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

case "${1:-}" in
	""|--quick) MODE=quick ;;
	--full) MODE=full ;;
	-h|--help) usage; exit 0 ;;
	*) echo "check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

STEP=init
die() {
	echo "check.sh: FAIL [$STEP]: $*" >&2
	exit 1
}
trap 'die "command failed at line $LINENO (see logs in $KS/logs)"' ERR

T0=$(date +%s)
step() {
	STEP=$1
	TS=$(date +%s)
	printf '==> %s\n' "$STEP"
}
done_step() {
	printf '    %-28s %4ds  %s\n' "$STEP" $(($(date +%s) - TS)) "${1:-ok}"
}

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

# ---------------------------------------------------------------- series
SERIES=$HERE/series
[ -r "$SERIES" ] || die "no series file at kernel-series/series"
LINUX_BASE=$(awk '$1 == "base" && $2 == "linux" { print $4 }' "$SERIES")
LTTNG_BASE=$(awk '$1 == "base" && $2 == "lttng-modules" { print $4 }' "$SERIES")
mapfile -t LINUX_PATCHES < <(awk '$1 == "patch" && $2 == "linux" { print $3 }' "$SERIES")
mapfile -t LTTNG_PATCHES < <(awk '$1 == "patch" && $2 == "lttng-modules" { print $3 }' "$SERIES")
[ -n "$LINUX_BASE" ] && [ -n "$LTTNG_BASE" ] || die "series: missing base lines"
[ "${#LINUX_PATCHES[@]}" -gt 0 ] || die "series: no linux patches"
for p in "${LINUX_PATCHES[@]}" "${LTTNG_PATCHES[@]}"; do
	[ -r "$HERE/$p" ] || die "series lists $p, which does not exist"
done

mkdir -p "$KS/logs" "$KS/debs"
exec 9>"$KS/.lock"
flock -n 9 || die "another check.sh is running on $KS"

# ------------------------------------------------------------ sources
step "sources"
pkg_version() {
	dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null |
		awk '$3 == "installed" { print $4 }'
}
if [ -z "$(pkg_version linux-source-6.1)" ]; then
	$SUDO apt-get install -y -q linux-source-6.1 >"$KS/logs/apt.log" 2>&1 ||
		die "apt-get install linux-source-6.1 failed (logs/apt.log)"
fi
SRC_VER=$(pkg_version linux-source-6.1)
LINUX_TARBALL=/usr/src/linux-source-6.1.tar.xz
[ -r "$LINUX_TARBALL" ] || die "$LINUX_TARBALL missing"
if ! ls "$KS"/debs/lttng-modules-dkms_*.deb >/dev/null 2>&1; then
	(cd "$KS/debs" && apt-get download lttng-modules-dkms) \
		>"$KS/logs/apt-download.log" 2>&1 ||
		die "apt-get download lttng-modules-dkms failed (logs/apt-download.log)"
fi
LTTNG_DEB=$(ls "$KS"/debs/lttng-modules-dkms_*.deb | sort -V | tail -n 1)
LTTNG_VER=$(dpkg-deb -f "$LTTNG_DEB" Version)
note=
[ "$SRC_VER" = "$LINUX_BASE" ] || note="linux-source-6.1 is $SRC_VER, series made on $LINUX_BASE; "
[ "$LTTNG_VER" = "$LTTNG_BASE" ] || note="${note}lttng-modules-dkms is $LTTNG_VER, series made on $LTTNG_BASE"
[ -z "$note" ] || echo "    warning: $note"
done_step "linux-source-6.1 $SRC_VER, lttng-modules-dkms $LTTNG_VER"

# Make $2 a git repo of the tree produced by command $3.., tagged
# mmureplay-base and remembering $1 as its version; keep it if it exists.
make_repo() {
	local ver=$1 dir=$2
	shift 2
	if [ -d "$dir/.git" ] && [ "$(cat "$dir/.git/mmureplay-version" 2>/dev/null)" = "$ver" ]; then
		return 0
	fi
	rm -rf "$dir" "$dir.apply" "$dir.tmp"
	mkdir -p "$dir.tmp"
	"$@" "$dir.tmp"
	mv "$dir.tmp" "$dir"
	(
		cd "$dir"
		# Debian's linux-source .gitignore ignores /*: add with -f.
		git "${GIT_ID[@]}" init -q .
		git config gc.auto 0
		git config maintenance.auto false
		git add -A -f
		git "${GIT_ID[@]}" commit -q -m "pristine source $ver"
		git tag -f mmureplay-base >/dev/null
		echo "$ver" >.git/mmureplay-version
	)
}
unpack_linux() {
	tar -xf "$LINUX_TARBALL" -C "$1" --strip-components=1
}
unpack_lttng() {
	local x=$1.deb
	rm -rf "$x"
	dpkg-deb -x "$LTTNG_DEB" "$x"
	cp -a "$x"/usr/src/lttng-modules-*/. "$1"/
	rm -rf "$x"
}

step "unpack"
make_repo "$SRC_VER" "$KS/linux" unpack_linux
make_repo "$LTTNG_VER" "$KS/lttng-modules" unpack_lttng
done_step

# Apply patches $3.. (relative to kernel-series/) one at a time on a clean
# checkout of mmureplay-base in the worktree $1.apply, then move the tree
# $1 to the result: only files whose content changed are rewritten, so
# builds in $1 stay incremental.  $2 names the series in messages.
apply_series() {
	local dir=$1 name=$2 wt=$1.apply p head
	shift 2
	if [ ! -d "$wt" ]; then
		git -C "$dir" "${GIT_ID[@]}" worktree prune
		git -C "$dir" "${GIT_ID[@]}" worktree add -q --detach "$wt" mmureplay-base
	fi
	git -C "$wt" am --abort >/dev/null 2>&1 || true
	git -C "$wt" "${GIT_ID[@]}" checkout -q -f --detach mmureplay-base
	git -C "$wt" clean -q -f -d -x
	for p in "$@"; do
		if ! git -C "$wt" "${GIT_ID[@]}" am -q --committer-date-is-author-date \
			"$HERE/$p" >"$KS/logs/am.log" 2>&1; then
			git -C "$wt" am --abort >/dev/null 2>&1 || true
			die "$name: $p does not apply (logs/am.log)"
		fi
	done
	head=$(git -C "$wt" rev-parse HEAD)
	git -C "$dir" "${GIT_ID[@]}" checkout -q -f --detach "$head"
	echo "$# patches"
}

step "apply linux"
res=$(apply_series "$KS/linux" linux "${LINUX_PATCHES[@]}") || exit 1
done_step "$res"

step "checkpatch"
CP=$KS/linux.apply/scripts/checkpatch.pl
errs=0 warns=0 checks=0
for p in "${LINUX_PATCHES[@]}"; do
	out=$(perl "$CP" --strict --no-tree --show-types "$HERE/$p" 2>&1 || true)
	total=$(printf '%s\n' "$out" | grep '^total:' || echo "total: 1 errors, 0 warnings, 0 checks (checkpatch did not run)")
	e=$(echo "$total" | sed -n 's/^total: \([0-9]*\) errors.*/\1/p')
	w=$(echo "$total" | sed -n 's/.* \([0-9]*\) warnings.*/\1/p')
	c=$(echo "$total" | sed -n 's/.* \([0-9]*\) checks.*/\1/p')
	printf '    %-70s %s\n' "$(basename "$p")" "${total#total: }"
	if [ "${e:-1}" != 0 ] || [ "${w:-1}" != 0 ]; then
		printf '%s\n' "$out" >"$KS/logs/checkpatch-$(basename "$p" .patch).log"
	fi
	errs=$((errs + ${e:-1})) warns=$((warns + ${w:-1})) checks=$((checks + ${c:-0}))
done
[ "$errs" -eq 0 ] && [ "$warns" -eq 0 ] ||
	die "checkpatch: $errs errors, $warns warnings (logs/checkpatch-*.log)"
done_step "0 errors, 0 warnings, $checks checks"

step "apply lttng-modules"
res=$(apply_series "$KS/lttng-modules" lttng-modules "${LTTNG_PATCHES[@]}") || exit 1
done_step "$res"

if [ "$MODE" = quick ]; then
	echo "check.sh: quick check passed in $(($(date +%s) - T0))s"
	exit 0
fi

# ---------------------------------------------------------------- full
step "build deps"
missing=
for pkg in build-essential bc flex bison libelf-dev libssl-dev ccache; do
	[ -n "$(pkg_version "$pkg")" ] || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
	# shellcheck disable=SC2086
	$SUDO apt-get install -y -q $missing >"$KS/logs/apt-build.log" 2>&1 ||
		die "apt-get install$missing failed (logs/apt-build.log)"
fi
done_step "${missing:- none missing}"

BUILD=$KS/build
CC_ARG=(CC=gcc)
if command -v ccache >/dev/null; then
	export CCACHE_DIR=${CCACHE_DIR:-$KS/ccache}
	CC_ARG=(CC="ccache gcc")
fi
KMAKE=(nice -n 19 make -C "$KS/linux" O="$BUILD" "${CC_ARG[@]}" -j"$JOBS")

step "config"
FRAG=$HERE/kvm-lab.config
stamp="$SRC_VER $(sha1sum "$FRAG" | cut -d' ' -f1)"
if [ ! -f "$BUILD/.config" ] || [ "$(cat "$BUILD/.mmureplay-config" 2>/dev/null)" != "$stamp" ]; then
	mkdir -p "$BUILD"
	"${KMAKE[@]}" x86_64_defconfig kvm_guest.config >"$KS/logs/config.log" 2>&1
	while IFS='=' read -r opt val; do
		case $val in
			y) flag=--enable ;; m) flag=--module ;; n) flag=--disable ;;
			*) die "kvm-lab.config: bad value for $opt" ;;
		esac
		"$KS/linux/scripts/config" --file "$BUILD/.config" $flag "$opt"
	done < <(grep -v '^#' "$FRAG" | grep '=')
	"${KMAKE[@]}" olddefconfig >>"$KS/logs/config.log" 2>&1
	echo "$stamp" >"$BUILD/.mmureplay-config"
fi
# Every option of the fragment must have survived olddefconfig.
while IFS='=' read -r opt val; do
	if [ "$val" = n ]; then
		if grep -q "^CONFIG_$opt=[ym]" "$BUILD/.config"; then
			die "CONFIG_$opt is set, kvm-lab.config wants it off"
		fi
	elif ! grep -q "^CONFIG_$opt=$val\$" "$BUILD/.config"; then
		die "CONFIG_$opt is not $val after olddefconfig"
	fi
done < <(grep -v '^#' "$FRAG" | grep '=')
done_step

step "kernel build"
"${KMAKE[@]}" bzImage modules >"$KS/logs/kernel-build.log" 2>&1 ||
	die "kernel build failed: $(grep -m1 -E 'error:|Error [0-9]' "$KS/logs/kernel-build.log" || echo 'see logs/kernel-build.log')"
for ko in arch/x86/kvm/kvm.ko arch/x86/kvm/kvm-amd.ko arch/x86/kvm/kvm-intel.ko; do
	[ -f "$BUILD/$ko" ] || die "$ko was not built"
done
done_step "$(make -s -C "$KS/linux" O="$BUILD" kernelrelease 2>/dev/null)"

step "lttng-modules build"
# As dkms.conf does: the modules are only built with CONFIG_LTTNG=m.
nice -n 19 make -C "$BUILD" M="$KS/lttng-modules" "${CC_ARG[@]}" -j"$JOBS" \
	CONFIG_LTTNG=m modules \
	>"$KS/logs/lttng-build.log" 2>&1 ||
	die "lttng-modules build failed: $(grep -m1 -E 'error:|Error [0-9]' "$KS/logs/lttng-build.log" || echo 'see logs/lttng-build.log')"
P=$KS/lttng-modules/src/probes
# module: events it must carry
expect=(
	"lttng-probe-timer.ko timer_hrtimer_start"
	"lttng-probe-kvm.ko kvm_unmap_hva_range kvm_invalidate_range_start kvm_invalidate_range_end kvm_remote_tlb_flush kvm_memslot_change"
	"lttng-probe-kvm-x86.ko kvm_x86_entry kvm_x86_page_fault kvm_x86_exit"
	"lttng-probe-kvm-x86-mmu.ko kvm_mmu_set_spte kvm_mmu_spte_requested kvm_mmu_split_huge_page kvm_mmu_unmap_gfn_range kvm_mmu_nx_recovery_begin kvm_mmu_nx_recovery_end kvm_mmu_nx_recover_page kvm_mmu_fault_lock_wait"
	"lttng-probe-kvm-x86-tdp-mmu.ko kvm_tdp_mmu_spte_changed"
)
n=0
for line in "${expect[@]}"; do
	read -r ko events <<<"$line"
	[ -f "$P/$ko" ] || die "$ko was not built"
	for ev in $events; do
		grep -q -a -F -x "$ev" <(tr -c '[:print:]' '\n' <"$P/$ko") ||
			die "$ko has no event $ev"
		n=$((n + 1))
	done
done
if grep -q 'is disabled' "$KS/logs/lttng-build.log"; then
	die "lttng-modules build skipped probes: $(grep -m1 'is disabled' "$KS/logs/lttng-build.log")"
fi
done_step "5 probe modules, $n events present"

echo "check.sh: full check passed in $(($(date +%s) - T0))s"
