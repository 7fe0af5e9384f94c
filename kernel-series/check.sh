#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# check.sh - apply and compile-check the mmureplay kernel series.
#
# Usage: kernel-series/check.sh [--quick | --full] [--kernel VER|all] [--help]
#
#   --kernel VER
#       check only kernel-series/linux-VER/ (e.g. 6.1, 6.12); default:
#       every kernel-series/linux-*/ directory.
#   --quick (default), for each kernel:
#       1. installs Debian's linux-source-VER (apt-get) if missing and
#          downloads the lttng-modules-dkms .deb its series names
#          (apt-get download; from the Debian suite the series names when
#          the host's apt sources do not have that version; the package is
#          never installed: its DKMS hook breaks apt);
#       2. unpacks both into the cache, each as a git repository whose
#          first commit (tag mmureplay-base) is the pristine source;
#       3. applies the patches listed in linux-VER/series, one at a time
#          with git am, on a clean checkout of the base;
#       4. runs scripts/checkpatch.pl --strict on every linux/ patch (cover
#          letter excluded) and requires zero errors and zero warnings.
#   --full
#       --quick, then builds a small KVM-enabled kernel (x86_64_defconfig +
#       kvm_guest.config + kernel-series/kvm-lab.config, KVM_WERROR) out of
#       tree, builds lttng-modules against it, and checks that the KVM
#       modules and the LTTng KVM probe modules (with the new events) exist,
#       and the state dump's memslot event (lttng-probe-statedump.ko) with
#       its lookup of kvm_walk_vm_memslots (lttng-statedump.ko).
#       A kernel whose series has no lttng-modules patches is built
#       without the probes (and says so).
#
# Environment:
#   MMUREPLAY_CACHE   cache root (default: $HOME/.cache/mmureplay); this
#                     script uses $MMUREPLAY_CACHE/ks/VER per kernel and
#                     $MMUREPLAY_CACHE/ks/{ccache,debs,apt}.  Reused between
#                     runs: the second run only re-applies the patches and
#                     rebuilds what they change.
#   MMUREPLAY_MIRROR  Debian mirror for a suite the host does not have
#                     (default: the host's mirror of its Debian release).
#   JOBS              make -j value (default 2); builds run under nice -n 19.
#   CCACHE_DIR        default: $MMUREPLAY_CACHE/ks/ccache (ccache is used if
#                     installed; --full installs it with apt-get if missing).
#
# Prints the elapsed time of each step.  Exits non-zero with a one-line
# message on the first failure; logs are kept in the cache (VER/logs/).

set -Eeuo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
CACHE=${MMUREPLAY_CACHE:-$HOME/.cache/mmureplay}
KS=$CACHE/ks
JOBS=${JOBS:-2}
MODE=quick
KERNEL=all
# No automatic gc: it would repack the kernel tree in the background.
GIT_ID=(-c user.name="mmureplay developers" -c user.email=dev@mmureplay.invalid
	-c advice.detachedHead=false -c init.defaultBranch=work
	-c gc.auto=0 -c maintenance.auto=false)

usage() {
	sed -n '3,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

while [ $# -gt 0 ]; do
	case $1 in
		--quick) MODE=quick ;;
		--full) MODE=full ;;
		--kernel)
			[ $# -ge 2 ] || { echo "check.sh: --kernel needs a version (see --help)" >&2; exit 2; }
			KERNEL=$2
			shift ;;
		-h|--help) usage; exit 0 ;;
		*) echo "check.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
	shift
done

STEP=init
LOGS=$KS/logs
die() {
	echo "check.sh: FAIL [${VER:+$VER }$STEP]: $*" >&2
	exit 1
}
trap 'die "command failed at line $LINENO (see logs in $LOGS)"' ERR

T0=$(date +%s)
step() {
	STEP=$1
	TS=$(date +%s)
	printf '==> %s%s\n' "${VER:+$VER: }" "$STEP"
}
done_step() {
	printf '    %-28s %4ds  %s\n' "$STEP" $(($(date +%s) - TS)) "${1:-ok}"
}

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

if [ "$KERNEL" = all ]; then
	mapfile -t KERNELS < <(cd "$HERE" && ls -d linux-*/ 2>/dev/null |
		sed 's,^linux-,,; s,/$,,' | sort -V)
	[ "${#KERNELS[@]}" -gt 0 ] || die "no kernel-series/linux-*/ directory"
else
	[ -d "$HERE/linux-$KERNEL" ] ||
		die "no series for kernel $KERNEL (kernel-series/linux-$KERNEL/)"
	KERNELS=("$KERNEL")
fi

pkg_version() {
	dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null |
		awk '$3 == "installed" { print $4 }'
}

# The URIs of the host's apt sources that serve suite $1 (deb822 and
# one-line formats).
# shellcheck source=scripts/apt-mirror.sh
. "$HERE/../scripts/apt-mirror.sh"

# Download Debian package $1 version $2 into $KS/debs and print the path
# of the .deb.  $3 is the Debian suite to fetch it from if the host's apt
# sources do not offer that version; it gets an apt configuration of its
# own under $KS/apt/$3 (the host's apt setup is not touched).  If the
# archive no longer has version $2, the suite's current version is used
# and a warning says so.
fetch_deb() {
	local pkg=$1 ver=$2 suite=${3:-} deb dir mirror opts=()
	deb=$(ls "$KS/debs/${pkg}_${ver}"_*.deb 2>/dev/null | head -n 1 || true)
	if [ -n "$deb" ]; then
		echo "$deb"
		return 0
	fi
	if [ -n "$suite" ] && ! apt-cache madison "$pkg" 2>/dev/null |
		awk -F' [|] ' -v v="$ver" '$2 == v { f = 1 } END { exit !f }'; then
		dir=$KS/apt/$suite
		mirror=${MMUREPLAY_MIRROR:-$(apt_uri_for "$(. /etc/os-release && echo "$VERSION_CODENAME")" | sed -n 1p)}
		[ -n "$mirror" ] || die "no Debian mirror in the host's apt sources (set MMUREPLAY_MIRROR)"
		mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial" "$dir/parts" "$dir/prefs"
		echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $suite main" \
			>"$dir/sources.list"
		opts=(-o Dir::Etc::SourceList="$dir/sources.list"
			-o Dir::Etc::SourceParts="$dir/parts"
			-o Dir::Etc::PreferencesParts="$dir/prefs"
			-o Dir::Etc::Preferences="$dir/prefs/none"
			-o Dir::State::Lists="$dir/lists"
			-o Dir::Cache="$dir/cache"
			-o Dir::State::status=/dev/null)
		apt-get "${opts[@]}" update >"$LOGS/apt-$suite.log" 2>&1 ||
			die "apt-get update for $suite failed (logs/apt-$suite.log)"
	fi
	(cd "$KS/debs" && { apt-get "${opts[@]}" download "$pkg=$ver" ||
		apt-get "${opts[@]}" download "$pkg"; }) >"$LOGS/apt-download.log" 2>&1 ||
		die "apt-get download $pkg${suite:+ ($suite)} failed (logs/apt-download.log)"
	deb=$(ls "$KS/debs/${pkg}_${ver}"_*.deb 2>/dev/null | head -n 1 || true)
	if [ -z "$deb" ]; then
		ver=$(apt-cache "${opts[@]}" policy "$pkg" | awk '$1 == "Candidate:" { print $2 }')
		deb=$(ls "$KS/debs/${pkg}_${ver}"_*.deb 2>/dev/null | head -n 1 || true)
	fi
	[ -n "$deb" ] || die "apt-get download $pkg gave no .deb (logs/apt-download.log)"
	echo "$deb"
}

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

# Apply patches $3.. (relative to the kernel's series directory) one at a
# time on a clean checkout of mmureplay-base in the worktree $1.apply, then
# move the tree $1 to the result: only files whose content changed are
# rewritten, so builds in $1 stay incremental.  $2 names the series in
# messages.
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
			"$SDIR/$p" >"$LOGS/am.log" 2>&1; then
			git -C "$wt" am --abort >/dev/null 2>&1 || true
			die "$name: $p does not apply (logs/am.log)"
		fi
	done
	head=$(git -C "$wt" rev-parse HEAD)
	git -C "$dir" "${GIT_ID[@]}" checkout -q -f --detach "$head"
	echo "$# patches"
}

# Apply, checkpatch and (--full) build the series of kernel $VER.
check_kernel() {
	local series p out total e w c errs warns checks res

	# ------------------------------------------------------------ series
	SDIR=$HERE/linux-$VER
	series=$SDIR/series
	[ -r "$series" ] || die "no series file at kernel-series/linux-$VER/series"
	LINUX_PKG='' LINUX_BASE='' LTTNG_PKG='' LTTNG_BASE='' LTTNG_SUITE=''
	read -r LINUX_PKG LINUX_BASE < <(awk '$1 == "base" && $2 == "linux" { print $3, $4 }' "$series") || true
	read -r LTTNG_PKG LTTNG_BASE LTTNG_SUITE < <(awk '$1 == "base" && $2 == "lttng-modules" { print $3, $4, $5 }' "$series") || true
	mapfile -t LINUX_PATCHES < <(awk '$1 == "patch" && $2 == "linux" { print $3 }' "$series")
	mapfile -t LTTNG_PATCHES < <(awk '$1 == "patch" && $2 == "lttng-modules" { print $3 }' "$series")
	[ -n "$LINUX_BASE" ] && [ -n "$LTTNG_BASE" ] || die "series: missing base lines"
	[ "${#LINUX_PATCHES[@]}" -gt 0 ] || die "series: no linux patches"
	for p in "${LINUX_PATCHES[@]}" "${LTTNG_PATCHES[@]}"; do
		[ -r "$SDIR/$p" ] || die "series lists $p, which does not exist"
	done

	D=$KS/$VER
	LOGS=$D/logs
	mkdir -p "$LOGS" "$KS/debs"
	exec 9>"$D/.lock"
	# A --quick run (CI) waits for a --full build of the same kernel to
	# end rather than failing; two builds at once are refused.
	if ! flock -n 9; then
		[ "$MODE" = quick ] || die "another check.sh is running on $D"
		echo "    waiting for another check.sh on $D (up to 1 h)"
		flock -w 3600 9 || die "another check.sh held $D for 1 h"
	fi

	# ----------------------------------------------------------- sources
	step "sources"
	if [ -z "$(pkg_version "$LINUX_PKG")" ]; then
		$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q "$LINUX_PKG" >"$LOGS/apt.log" 2>&1 ||
			die "apt-get install $LINUX_PKG failed (logs/apt.log)"
	fi
	SRC_VER=$(pkg_version "$LINUX_PKG")
	LINUX_TARBALL=/usr/src/$LINUX_PKG.tar.xz
	[ -r "$LINUX_TARBALL" ] || die "$LINUX_TARBALL missing"
	LTTNG_DEB=$(fetch_deb "$LTTNG_PKG" "$LTTNG_BASE" "$LTTNG_SUITE") || exit 1
	LTTNG_VER=$(dpkg-deb -f "$LTTNG_DEB" Version)
	local note=
	[ "$SRC_VER" = "$LINUX_BASE" ] || note="$LINUX_PKG is $SRC_VER, series made on $LINUX_BASE; "
	[ "$LTTNG_VER" = "$LTTNG_BASE" ] || note="${note}$LTTNG_PKG is $LTTNG_VER, series made on $LTTNG_BASE"
	[ -z "$note" ] || echo "    warning: $note"
	done_step "$LINUX_PKG $SRC_VER, $LTTNG_PKG $LTTNG_VER"

	step "unpack"
	make_repo "$SRC_VER" "$D/linux" unpack_linux
	make_repo "$LTTNG_VER" "$D/lttng-modules" unpack_lttng
	done_step

	step "apply linux"
	res=$(apply_series "$D/linux" linux "${LINUX_PATCHES[@]}") || exit 1
	done_step "$res"

	step "checkpatch"
	CP=$D/linux.apply/scripts/checkpatch.pl
	errs=0 warns=0 checks=0
	for p in "${LINUX_PATCHES[@]}"; do
		out=$(perl "$CP" --strict --no-tree --show-types "$SDIR/$p" 2>&1 || true)
		total=$(printf '%s\n' "$out" | grep '^total:' || echo "total: 1 errors, 0 warnings, 0 checks (checkpatch did not run)")
		e=$(echo "$total" | sed -n 's/^total: \([0-9]*\) errors.*/\1/p')
		w=$(echo "$total" | sed -n 's/.* \([0-9]*\) warnings.*/\1/p')
		c=$(echo "$total" | sed -n 's/.* \([0-9]*\) checks.*/\1/p')
		printf '    %-70s %s\n' "$(basename "$p")" "${total#total: }"
		if [ "${e:-1}" != 0 ] || [ "${w:-1}" != 0 ]; then
			printf '%s\n' "$out" >"$LOGS/checkpatch-$(basename "$p" .patch).log"
		fi
		errs=$((errs + ${e:-1})) warns=$((warns + ${w:-1})) checks=$((checks + ${c:-0}))
	done
	[ "$errs" -eq 0 ] && [ "$warns" -eq 0 ] ||
		die "checkpatch: $errs errors, $warns warnings (logs/checkpatch-*.log)"
	done_step "0 errors, 0 warnings, $checks checks"

	step "apply lttng-modules"
	res=$(apply_series "$D/lttng-modules" lttng-modules "${LTTNG_PATCHES[@]}") || exit 1
	done_step "$res"

	[ "$MODE" = full ] || return 0
	build_kernel
}

# ---------------------------------------------------------------- full
build_deps() {
	local missing='' pkg
	step "build deps"
	for pkg in build-essential bc flex bison libelf-dev libssl-dev ccache; do
		[ -n "$(pkg_version "$pkg")" ] || missing="$missing $pkg"
	done
	if [ -n "$missing" ]; then
		# shellcheck disable=SC2086
		$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -q $missing >"$LOGS/apt-build.log" 2>&1 ||
			die "apt-get install$missing failed (logs/apt-build.log)"
	fi
	done_step "${missing:- none missing}"
}

build_kernel() {
	local build=$D/build cc_arg=(CC=gcc) kmake frag stamp opt val ko
	local line events ev n probes

	build_deps
	if command -v ccache >/dev/null; then
		export CCACHE_DIR=${CCACHE_DIR:-$KS/ccache}
		cc_arg=(CC="ccache gcc")
	fi
	kmake=(nice -n 19 make -C "$D/linux" O="$build" "${cc_arg[@]}" -j"$JOBS")

	step "config"
	frag=$HERE/kvm-lab.config
	stamp="$SRC_VER $(sha1sum "$frag" | cut -d' ' -f1)"
	if [ ! -f "$build/.config" ] || [ "$(cat "$build/.mmureplay-config" 2>/dev/null)" != "$stamp" ]; then
		mkdir -p "$build"
		"${kmake[@]}" x86_64_defconfig kvm_guest.config >"$LOGS/config.log" 2>&1
		while IFS='=' read -r opt val; do
			case $val in
				y) set -- --enable "$opt" ;;
				m) set -- --module "$opt" ;;
				n) set -- --disable "$opt" ;;
				[0-9]*|-[0-9]*) set -- --set-val "$opt" "$val" ;;
				\"*\") val=${val#\"}; set -- --set-str "$opt" "${val%\"}" ;;
				*) die "kvm-lab.config: bad value for $opt: $val" ;;
			esac
			"$D/linux/scripts/config" --file "$build/.config" "$@"
		done < <(grep -v '^#' "$frag" | grep '=')
		"${kmake[@]}" olddefconfig >>"$LOGS/config.log" 2>&1
		echo "$stamp" >"$build/.mmureplay-config"
	fi
	# Every option of the fragment must have survived olddefconfig.
	while IFS='=' read -r opt val; do
		if [ "$val" = n ]; then
			if grep -q "^CONFIG_$opt=[ym]" "$build/.config"; then
				die "CONFIG_$opt is set, kvm-lab.config wants it off"
			fi
		elif ! grep -q -x -F "CONFIG_$opt=$val" "$build/.config"; then
			die "CONFIG_$opt is not $val after olddefconfig"
		fi
	done < <(grep -v '^#' "$frag" | grep '=')
	done_step

	step "kernel build"
	"${kmake[@]}" bzImage modules >"$LOGS/kernel-build.log" 2>&1 ||
		die "kernel build failed: $(grep -m1 -E 'error:|Error [0-9]' "$LOGS/kernel-build.log" || echo 'see logs/kernel-build.log')"
	for ko in arch/x86/kvm/kvm.ko arch/x86/kvm/kvm-amd.ko arch/x86/kvm/kvm-intel.ko; do
		[ -f "$build/$ko" ] || die "$ko was not built"
	done
	done_step "$(make -s -C "$D/linux" O="$build" kernelrelease 2>/dev/null)"

	step "lttng-modules build"
	if [ "${#LTTNG_PATCHES[@]}" -eq 0 ]; then
		done_step "skipped: no lttng-modules patches in linux-$VER/series"
		return 0
	fi
	# As dkms.conf does: the modules are only built with CONFIG_LTTNG=m.
	nice -n 19 make -C "$build" M="$D/lttng-modules" "${cc_arg[@]}" -j"$JOBS" \
		CONFIG_LTTNG=m modules \
		>"$LOGS/lttng-build.log" 2>&1 ||
		die "lttng-modules build failed: $(grep -m1 -E 'error:|Error [0-9]' "$LOGS/lttng-build.log" || echo 'see logs/lttng-build.log')"
	probes=$D/lttng-modules/src/probes
	# module: events it must carry
	local expect=(
		"lttng-probe-timer.ko timer_hrtimer_start"
		"lttng-probe-kvm.ko kvm_unmap_hva_range kvm_invalidate_range_start kvm_invalidate_range_end kvm_remote_tlb_flush kvm_memslot_change kvm_vm_create kvm_vm_destroy"
		"lttng-probe-kvm-x86.ko kvm_x86_entry kvm_x86_page_fault kvm_x86_exit"
		"lttng-probe-kvm-x86-mmu.ko kvm_mmu_set_spte kvm_mmu_spte_requested kvm_mmu_split_huge_page kvm_mmu_unmap_gfn_range kvm_mmu_nx_recovery_begin kvm_mmu_nx_recovery_end kvm_mmu_nx_recover_page kvm_mmu_fault_lock_wait"
		"lttng-probe-kvm-x86-tdp-mmu.ko kvm_tdp_mmu_spte_changed"
		"lttng-probe-statedump.ko lttng_statedump_kvm_memslot"
	)
	n=0
	for line in "${expect[@]}"; do
		read -r ko events <<<"$line"
		[ -f "$probes/$ko" ] || die "$ko was not built"
		for ev in $events; do
			grep -q -a -F -x "$ev" <(tr -c '[:print:]' '\n' <"$probes/$ko") ||
				die "$ko has no event $ev"
			n=$((n + 1))
		done
	done
	# The state dump looks the kernel's memslot walk up by name.
	grep -q -a -F -x kvm_walk_vm_memslots <(tr -c '[:print:]' '\n' <"$D/lttng-modules/src/lttng-statedump.ko") ||
		die "lttng-statedump.ko does not look up kvm_walk_vm_memslots"
	# The probes record the VM (field kvm) only where the Kbuild found the
	# series' prototypes that pass it (Linux patch 14).
	grep -q LTTNG_KVM_INVALIDATE_NAMES_VM "$probes/.lttng-probe-kvm.o.cmd" &&
		grep -q LTTNG_KVM_NX_RECOVERY_NAMES_VM "$probes/.lttng-probe-kvm-x86-mmu.o.cmd" ||
		die "the probes were built without the VM field: the Kbuild did not find patch 14's prototypes"
	if grep -q 'is disabled' "$LOGS/lttng-build.log"; then
		die "lttng-modules build skipped probes: $(grep -m1 'is disabled' "$LOGS/lttng-build.log")"
	fi
	done_step "${#expect[@]} probe modules, $n events present"
}

mkdir -p "$LOGS"
for VER in "${KERNELS[@]}"; do
	check_kernel
done
VER=
echo "check.sh: $MODE check of ${KERNELS[*]} passed in $(($(date +%s) - T0))s"
