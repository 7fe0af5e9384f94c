#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# build.sh - build the mmureplay QEMU TCG lab (unattended, cached).
#
# Usage: capture/lab/build.sh [--kernel KERNEL[,KERNEL...]] [--rebuild] [--help]
#
#   --kernel stock    Linux 6.1: Debian 12 rootfs + Debian's own 6.1 kernel
#                     (linux-image-amd64 from bookworm-security, same
#                     version as the host's linux-source-6.1) +
#                     lttng-modules built against it.  Also spelled 6.1.
#   --kernel patched  Linux 6.1: the rootfs, plus the patched kernel from
#                     $MMUREPLAY_CACHE/ks/6.1/build (kernel-series/check.sh
#                     --full --kernel 6.1): bzImage, its modules and its
#                     lttng-modules, staged for run.sh (booted with -kernel,
#                     no initrd, modules on a second disk).  Also spelled
#                     6.1-patched.
#   --kernel 6.12     Linux 6.12: Debian 12's 6.12 image and headers
#                     (linux-image-6.12-amd64, linux-headers-6.12-amd64
#                     from bookworm-security, same version as the host's
#                     linux-source-6.12) installed into the same rootfs,
#                     and lttng-modules 2.13.18 (the version
#                     kernel-series/linux-6.12/series names; Debian 12's
#                     2.13.9 does not build against 6.12) built against it.
#   --kernel 6.12-patched
#                     Linux 6.12: the patched build of
#                     $MMUREPLAY_CACHE/ks/6.12 (check.sh --full --kernel
#                     6.12), staged like the 6.1 one.
#   --kernel auto     (default) stock 6.1; stock 6.12 once the rootfs holds
#                     it; every patched build that exists.
#   --kernel all      stock and patched, every kernel; fails if a patched
#                     build is missing.
#   --rebuild         forget the cached rootfs and rebuild everything.
#
# Everything lives outside the checkout in ${MMUREPLAY_CACHE:-$HOME/.cache/mmureplay}/lab:
#   rootfs/            debootstrap tree (minbase, kmod, lttng-tools, babeltrace2,
#                      liblttng-ust1, trace-cmd, linux-perf, linux-image-amd64, headers and
#                      lttng-modules for it; with 6.12, Debian's 6.12 image and
#                      headers and lttng-modules for it too)
#   rootfs.ext4        the guest root image (run.sh boots it with snapshot=on)
#   stock/             vmlinuz, initrd.img, kernel.release of the stock 6.1 kernel
#   patched/           bzImage, kernel.release, System.map, config,
#                      root/lib/modules/<release>/ (kernel + lttng-modules,
#                      depmod'ed) of the patched 6.1 kernel
#   stock-6.12/, patched-6.12/   the same for Linux 6.12
#   src/               lttng-modules-dkms .debs and the patched source trees;
#                      selftests-VER/: the KVM selftests' build (below)
#   logs/              one log per step
#
# KVM's selftests: for each kernel series built (stock or patched) whose
# source tree kernel-series/check.sh unpacked ($MMUREPLAY_CACHE/ks/VER/linux),
# tools/testing/selftests/kvm is built on the host, statically linked,
# make -k, and installed stripped into the rootfs as
# /opt/kvm-selftests/VER/ with BUILD-STATUS (what built, the first error of
# what did not); run.sh selftest TEST runs one.
#
# lttng-modules: Debian's lttng-modules-dkms source, the version the
# kernel's series names (apt-get download + dpkg -x, or the .deb that
# kernel-series/check.sh fetched into $MMUREPLAY_CACHE/ks/debs; never
# apt-get install it: its DKMS hook breaks dpkg on 6.1.1xx), with the
# lttng-modules patches listed in kernel-series/linux-VER/series
# (hrtimer_start and kvm_entry/kvm_page_fault prototype fixes, the x86 KVM
# probes in dkms.conf/Kbuild, probes for the TDP MMU and hva-unmap
# tracepoints and for the mmureplay tracepoints).  For a stock kernel,
# KVM's private headers (arch/x86/kvm, virt/kvm) are copied from the
# host's linux-source-VER of the same version into the guest's headers
# tree, or the x86 KVM probes would be skipped silently.
#
# Environment: MMUREPLAY_CACHE, MMUREPLAY_MIRROR (Debian mirror URL; default:
# the host's apt sources), MMUREPLAY_SECURITY_MIRROR, JOBS (default 2).
# Heavy steps run under nice -n 10.  Prints the elapsed time of each step.

set -Eeuo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
CACHE=${MMUREPLAY_CACHE:-$HOME/.cache/mmureplay}
LAB=$CACHE/lab
JOBS=${JOBS:-2}
SUITE=bookworm
NICE=(nice -n 10)
KERNEL=auto
REBUILD=0

# The kernels the lab boots, each with its series (kernel-series/linux-VER)
# and check.sh's cache of its patched build ($CACHE/ks/VER).  STOCK_PKGS:
# Debian's image and headers of that kernel for the rootfs (6.1's come
# with the rootfs itself); STOCK_SRC: the host package whose tarball
# gives KVM's private headers.  Adding a kernel: one entry in each.
KVERS=(6.1 6.12)
declare -A STOCK_PKGS=([6.1]="" [6.12]="linux-image-6.12-amd64 linux-headers-6.12-amd64")
declare -A STOCK_SRC=([6.1]=linux-source-6.1 [6.12]=linux-source-6.12)

usage() { sed -n '3,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

while [ $# -gt 0 ]; do
	case $1 in
	--kernel) KERNEL=${2:?--kernel needs a value}; shift 2 ;;
	--kernel=*) KERNEL=${1#*=}; shift ;;
	--rebuild) REBUILD=1; shift ;;
	-h|--help) usage; exit 0 ;;
	*) echo "build.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done
# WANT_STOCK[VER], WANT_PATCHED[VER]: what to build; auto and all are
# resolved once the rootfs and the patched builds are known.
declare -A WANT_STOCK=() WANT_PATCHED=()
AUTO=0 ALL=0
known_kver() { local v; for v in "${KVERS[@]}"; do [ "$v" = "$1" ] && return 0; done; return 1; }
for k in ${KERNEL//,/ }; do
	case $k in
	stock) WANT_STOCK[6.1]=1 ;;
	patched) WANT_PATCHED[6.1]=1 ;;
	auto) AUTO=1 ;;
	all) ALL=1 ;;
	*-patched) known_kver "${k%-patched}" || k=bad; [ "$k" = bad ] || WANT_PATCHED[${k%-patched}]=1 ;;
	*) known_kver "$k" || k=bad; [ "$k" = bad ] || WANT_STOCK[$k]=1 ;;
	esac
	if [ "$k" = bad ] || [ -z "$k" ]; then
		echo "build.sh: --kernel stock|patched|auto|all|VER|VER-patched (VER: ${KVERS[*]}), comma-separated" >&2
		exit 2
	fi
done
[ "$(id -u)" -eq 0 ] || { echo "build.sh: must run as root (debootstrap, chroot)" >&2; exit 1; }

mkdir -p "$LAB/logs" "$LAB/src"
exec 9>"$LAB/.lock"
flock -n 9 || { echo "build.sh: another build.sh or run.sh holds $LAB/.lock" >&2; exit 1; }

STEP=init
die() { echo "build.sh: FAIL [$STEP]: $*" >&2; exit 1; }
trap 'die "command failed at line $LINENO (logs in $LAB/logs)"' ERR
T0=$(date +%s)
step() { STEP=$1; TS=$(date +%s); printf '==> %s\n' "$STEP"; }
done_step() { printf '    %-28s %5ds  %s\n' "$STEP" $(($(date +%s) - TS)) "${1:-ok}"; }

pkg_version() {
	dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null |
		awk '$3 == "installed" { print $4 }'
}

ROOT=$LAB/rootfs
# Where run.sh finds a kernel: 6.1 keeps the lab's first names.
stage_dir() { if [ "$2" = 6.1 ]; then echo "$LAB/$1"; else echo "$LAB/$1-$2"; fi; }
# A patched build of kernel $1 that check.sh --full finished.
patched_built() {
	local ks=$CACHE/ks/$1
	[ -f "$ks/build/arch/x86/boot/bzImage" ] && [ -f "$ks/build/arch/x86/kvm/kvm.ko" ] &&
		[ -f "$ks/lttng-modules/src/probes/lttng-probe-kvm-x86-tdp-mmu.ko" ]
}
[ "$REBUILD" -eq 0 ] || rm -rf "$ROOT" "$LAB/rootfs.ext4" "$LAB"/stock "$LAB"/stock-* "$LAB"/patched "$LAB"/patched-*
if [ "$AUTO" -eq 1 ] || [ "$ALL" -eq 1 ]; then
	WANT_STOCK[6.1]=1
	for v in "${KVERS[@]}"; do
		if [ "$ALL" -eq 1 ]; then
			WANT_STOCK[$v]=1 WANT_PATCHED[$v]=1
		else
			# Keep what the rootfs already has up to date.
			[ -z "${STOCK_PKGS[$v]}" ] || [ ! -f "$ROOT/.kernel-$v-stamp" ] || WANT_STOCK[$v]=1
			! patched_built "$v" || WANT_PATCHED[$v]=1
		fi
	done
fi
for v in "${!WANT_PATCHED[@]}"; do
	patched_built "$v" ||
		die "no patched kernel build in $CACHE/ks/$v/build (run kernel-series/check.sh --full --kernel $v first)"
done

CHROOT_MOUNTS=()
umount_chroot() {
	local m i
	for ((i = ${#CHROOT_MOUNTS[@]} - 1; i >= 0; i--)); do
		m=${CHROOT_MOUNTS[i]}
		umount -l "$m" 2>/dev/null || true
	done
	CHROOT_MOUNTS=()
}
trap umount_chroot EXIT
mount_chroot() {
	local d
	for d in proc sys dev; do
		mountpoint -q "$ROOT/$d" && continue
		case $d in
		proc) mount -t proc proc "$ROOT/proc" ;;
		sys) mount -t sysfs sysfs "$ROOT/sys" ;;
		dev) mount --bind /dev "$ROOT/dev" ;;
		esac
		CHROOT_MOUNTS+=("$ROOT/$d")
	done
}
in_chroot() {
	"${NICE[@]}" chroot "$ROOT" /usr/bin/env -i HOME=/root TERM=dumb \
		PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive "$@"
}

# Debian mirror URLs from the host's apt configuration (never hard-coded).
# shellcheck source=scripts/apt-mirror.sh
. "$TOP/scripts/apt-mirror.sh"

# ------------------------------------------------------------- host
step "host packages"
# rsync for the kernels' headers_install (the KVM selftests' build),
# kmod for depmod of a patched kernel's modules tree, linux-source-6.1
# for the stock 6.1 probes, and the source of every other stock kernel
# asked for.
HOST_PKGS="qemu-system-x86 debootstrap e2fsprogs xz-utils rsync kmod linux-source-6.1 babeltrace2"
for v in "${!WANT_STOCK[@]}"; do
	[[ " $HOST_PKGS " == *" ${STOCK_SRC[$v]} "* ]] || HOST_PKGS="$HOST_PKGS ${STOCK_SRC[$v]}"
done
missing=
for p in $HOST_PKGS; do
	[ -n "$(pkg_version "$p")" ] || missing="$missing $p"
done
if [ -n "$missing" ]; then
	# shellcheck disable=SC2086
	"${NICE[@]}" apt-get -o DPkg::Lock::Timeout=600 install -y -q --no-install-recommends $missing \
		>"$LAB/logs/apt-host.log" 2>&1 || die "apt-get install$missing failed (logs/apt-host.log)"
fi
done_step "${missing:- none missing}; $(for p in $HOST_PKGS; do
	case $p in linux-source-*) printf '%s %s ' "$p" "$(pkg_version "$p")" ;; esac; done)"

MIRROR=${MMUREPLAY_MIRROR:-$(apt_uri_for $SUITE | sed -n 1p)}
SEC_MIRROR=${MMUREPLAY_SECURITY_MIRROR:-$(apt_uri_for $SUITE-security | sed -n 1p)}
[ -n "$MIRROR" ] || die "no Debian mirror for $SUITE in the host's apt sources (set MMUREPLAY_MIRROR)"

# ------------------------------------------------------ lttng-modules
# The lttng-modules-dkms .deb of kernel $1's series (its "base
# lttng-modules" line: version, and the Debian suite when the host's
# release does not have it): from check.sh's download cache, the lab's,
# or apt-get download (host suite only; check.sh fetches a foreign
# suite's).  Prints its path.
lttng_deb() {
	local v=$1 ver= suite= deb
	read -r ver suite < <(awk '$1 == "base" && $2 == "lttng-modules" { print $4, $5 }' \
		"$TOP/kernel-series/linux-$v/series") || true
	[ -n "$ver" ] || die "no 'base lttng-modules' line in kernel-series/linux-$v/series"
	deb=$(ls "$CACHE/ks/debs/lttng-modules-dkms_${ver}"_*.deb "$LAB/src/debs/lttng-modules-dkms_${ver}"_*.deb \
		2>/dev/null | head -n 1 || true)
	if [ -z "$deb" ]; then
		[ -z "$suite" ] || die "no lttng-modules-dkms $ver (Debian $suite): kernel-series/check.sh --quick --kernel $v downloads it"
		(cd "$LAB/src/debs" && { apt-get download "lttng-modules-dkms=$ver" ||
			apt-get download lttng-modules-dkms; }) >"$LAB/logs/apt-download.log" 2>&1 ||
			die "apt-get download lttng-modules-dkms failed (logs/apt-download.log)"
		deb=$(ls "$LAB/src/debs"/lttng-modules-dkms_*.deb | sort -V | tail -n 1)
	fi
	echo "$deb"
}

# The patched lttng-modules source for kernel $1 in
# $LAB/src/lttng-modules-$1-SUM (SUM: of the version and the patches);
# sets LTTNG_SRC and PATCH_SUM.
lttng_source() {
	local v=$1 deb ver series=$TOP/kernel-series/linux-$1 p patches
	deb=$(lttng_deb "$v")
	ver=$(dpkg-deb -f "$deb" Version)
	mapfile -t patches < <(awk '$1 == "patch" && $2 == "lttng-modules" { print $3 }' \
		"$series/series" 2>/dev/null)
	[ "${#patches[@]}" -gt 0 ] ||
		die "no lttng-modules patches in kernel-series/linux-$v/series (the lab needs the TDP MMU probes)"
	PATCH_SUM=$( (echo "$ver"; for p in "${patches[@]}"; do cat "$series/$p"; done) |
		sha1sum | cut -c1-12)
	LTTNG_SRC=$LAB/src/lttng-modules-$v-$PATCH_SUM
	if [ ! -f "$LTTNG_SRC/.patched" ]; then
		# This kernel's older trees (and the unversioned names of the
		# 6.1-only lab).
		rm -rf "$LAB"/src/lttng-modules-"$v"-* "$LAB/src/x"
		find "$LAB/src" -maxdepth 1 -regex '.*/lttng-modules-[0-9a-f]+' -exec rm -rf {} +
		dpkg-deb -x "$deb" "$LAB/src/x"
		mkdir -p "$LTTNG_SRC"
		cp -a "$LAB"/src/x/usr/src/lttng-modules-*/. "$LTTNG_SRC"/
		rm -rf "$LAB/src/x"
		for p in "${patches[@]}"; do
			patch -d "$LTTNG_SRC" -p1 -s --no-backup-if-mismatch <"$series/$p" \
				>>"$LAB/logs/lttng-patch-$v.log" 2>&1 || die "$p does not apply (logs/lttng-patch-$v.log)"
		done
		touch "$LTTNG_SRC/.patched"
	fi
	LTTNG_DESC="$ver + ${#patches[@]} patches ($PATCH_SUM)"
}
mkdir -p "$LAB/src/debs"

# ------------------------------------------------------------ rootfs
GUEST_PKGS=linux-image-amd64,linux-headers-amd64,kmod,lttng-tools,babeltrace2,procps,make,xz-utils

step "debootstrap"
if [ ! -f "$ROOT/.debootstrap-done" ]; then
	rm -rf "$ROOT"
	# minbase first, everything else from apt with bookworm-security enabled
	# so that the kernel matches the host's linux-source-6.1.
	"${NICE[@]}" debootstrap --variant=minbase --include=kmod,procps "$SUITE" "$ROOT" "$MIRROR" \
		>"$LAB/logs/debootstrap.log" 2>&1 || die "debootstrap failed (logs/debootstrap.log)"
	touch "$ROOT/.debootstrap-done"
fi
done_step "$MIRROR"

step "guest packages"
if [ ! -f "$ROOT/.packages-done" ]; then
	{
		echo "deb $MIRROR $SUITE main"
		echo "deb $MIRROR $SUITE-updates main"
		[ -z "$SEC_MIRROR" ] || echo "deb $SEC_MIRROR $SUITE-security main"
	} >"$ROOT/etc/apt/sources.list"
	echo lab >"$ROOT/etc/hostname"
	mount_chroot
	in_chroot apt-get update -q >"$LAB/logs/apt-guest.log" 2>&1 ||
		die "apt-get update in the rootfs failed (logs/apt-guest.log)"
	# shellcheck disable=SC2046
	in_chroot apt-get install -y -q --no-install-recommends $(echo "$GUEST_PKGS" | tr , ' ') \
		>>"$LAB/logs/apt-guest.log" 2>&1 ||
		die "apt-get install in the rootfs failed (logs/apt-guest.log)"
	in_chroot apt-get clean
	umount_chroot
	touch "$ROOT/.packages-done"
fi
# The newest Debian release of kernel $1 in the rootfs (6.1.0-N-amd64,
# 6.12.N+debNN-amd64), empty if none.
guest_kver() {
	find "$ROOT/lib/modules" -mindepth 1 -maxdepth 1 -printf '%f\n' |
		grep -E "^${1//./\\.}\\.[0-9].*-amd64\$" | sort -V | tail -n 1 || true
}
# The version of the Debian package of kernel release $1 in the rootfs.
guest_kver_pkg() { chroot "$ROOT" dpkg-query -W -f='${Version}' "linux-image-$1"; }
KVER=$(guest_kver 6.1)
[ -n "$KVER" ] || die "no 6.1 kernel in $ROOT/lib/modules"
done_step "kernel $KVER ($(guest_kver_pkg "$KVER"))"

# Install Debian packages $2 (a list) into the rootfs as a step of its own,
# remembered in stamp $ROOT/.$1-stamp (log logs/apt-guest-$1.log), so an
# existing rootfs gets them without a rebuild; only rootfs.ext4 is made
# again.
guest_pkgs() {
	local tag=$1 pkgs=$2 need= p
	[ "$(cat "$ROOT/.$tag-stamp" 2>/dev/null)" != "$pkgs" ] || return 0
	for p in $pkgs; do
		chroot "$ROOT" dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
			grep -q '^install ok installed$' || need="$need $p"
	done
	if [ -n "$need" ]; then
		mount_chroot
		in_chroot apt-get update -q >"$LAB/logs/apt-guest-$tag.log" 2>&1 ||
			die "apt-get update in the rootfs failed (logs/apt-guest-$tag.log)"
		# shellcheck disable=SC2086
		in_chroot apt-get install -y -q --no-install-recommends $need \
			>>"$LAB/logs/apt-guest-$tag.log" 2>&1 ||
			die "apt-get install$need in the rootfs failed (logs/apt-guest-$tag.log)"
		in_chroot apt-get clean
		umount_chroot
	fi
	echo "$pkgs" >"$ROOT/.$tag-stamp"
	rm -f "$LAB/rootfs.ext4"
}

# LTTng-UST for the dynamically linked UST workloads (run.sh --ust).
step "guest UST library"
UST_PKGS="liblttng-ust1"
guest_pkgs ust "$UST_PKGS"
[ -e "$ROOT/usr/lib/x86_64-linux-gnu/liblttng-ust.so.1" ] ||
	die "no liblttng-ust.so.1 in the rootfs after installing $UST_PKGS"
done_step "$UST_PKGS $(chroot "$ROOT" dpkg-query -W -f='${Version}' liblttng-ust1)"

# trace-cmd and perf for the stock-host recordings (run.sh --trace-cmd,
# --perf).
step "guest ftrace tools"
TC_PKGS="trace-cmd linux-perf"
guest_pkgs tracecmd "$TC_PKGS"
[ -x "$ROOT/usr/bin/trace-cmd" ] && [ -x "$ROOT/usr/bin/perf" ] ||
	die "no trace-cmd or perf in the rootfs after installing $TC_PKGS"
done_step "$TC_PKGS $(chroot "$ROOT" dpkg-query -W -f='${Version} ' trace-cmd linux-perf)"

# Debian's image and headers of the other stock kernels, beside 6.1 in
# the same rootfs (the stub init and the packages serve both).
for v in "${KVERS[@]}"; do
	[ -n "${WANT_STOCK[$v]:-}" ] && [ -n "${STOCK_PKGS[$v]}" ] || continue
	step "guest kernel $v"
	guest_pkgs "kernel-$v" "${STOCK_PKGS[$v]}"
	kv=$(guest_kver "$v")
	[ -n "$kv" ] && [ -f "$ROOT/boot/vmlinuz-$kv" ] && [ -f "$ROOT/boot/initrd.img-$kv" ] ||
		die "no $v kernel (vmlinuz, initrd) in the rootfs after installing ${STOCK_PKGS[$v]}"
	done_step "$kv ($(guest_kver_pkg "$kv"))"
done

# ------------------------------------------- lttng-modules, stock kernels
# Build the patched lttng-modules of kernel series $1 against Debian's
# headers of release $2 in the rootfs, into /lib/modules/$2/updates/lttng
# (stamp $3: the release and the source's sum).
lttng_stock() {
	local v=$1 kv=$2 stamp=$3 common src=/usr/src/lttng-modules-lab log ko
	[ "$v" = 6.1 ] || src=$src-$v
	log=$LAB/logs/lttng-stock-$v.log
	lttng_source "$v"
	if [ "$(cat "$ROOT/$stamp" 2>/dev/null)" != "$kv $PATCH_SUM" ]; then
		# KVM's private headers of the same version, where the Kbuild looks
		# for them ($(srctree) of Debian's headers is the -common tree).
		common=$(readlink -f "$ROOT/usr/src/linux-headers-${kv%-amd64}-common")
		[ -d "$common" ] || die "no headers tree $common"
		tar -xJf "/usr/src/${STOCK_SRC[$v]}.tar.xz" -C "$common" --strip-components=1 \
			--wildcards "${STOCK_SRC[$v]}/arch/x86/kvm/*.h" \
			"${STOCK_SRC[$v]}/virt/kvm/*.h"
		rm -rf "${ROOT:?}$src"
		cp -a "$LTTNG_SRC" "$ROOT$src"
		rm -rf "$ROOT/lib/modules/$kv/updates/lttng"
		mount_chroot
		# lttng-modules' own Makefile sets CONFIG_LTTNG=m for Kbuild.
		in_chroot make -C "$src" KERNELDIR="/lib/modules/$kv/build" \
			-j"$JOBS" modules >"$log" 2>&1 ||
			die "lttng-modules build failed: $(grep -m1 -E 'error:|Error [0-9]' "$log" || echo "see $log")"
		in_chroot make -C "$src" KERNELDIR="/lib/modules/$kv/build" \
			INSTALL_MOD_DIR=updates/lttng modules_install >>"$log" 2>&1
		in_chroot depmod -a "$kv"
		umount_chroot
		# Only the KVM probes matter (kmem, ext4, btrfs... need full sources).
		if grep -q 'Probe "kvm[^"]*" .*is disabled' "$log"; then
			die "lttng-modules skipped probes: $(grep -m1 'Probe "kvm[^"]*" .*is disabled' "$log")"
		fi
		for ko in lttng-tracer lttng-probe-kvm lttng-probe-kvm-x86 lttng-probe-kvm-x86-mmu \
			lttng-probe-kvm-x86-tdp-mmu; do
			find "$ROOT/lib/modules/$kv/updates/lttng" -name "$ko.ko*" | grep -q . ||
				die "$ko.ko was not built ($log)"
		done
		echo "$kv $PATCH_SUM" >"$ROOT/$stamp"
		rm -f "$LAB/rootfs.ext4"
	fi
}

for v in "${KVERS[@]}"; do
	[ -n "${WANT_STOCK[$v]:-}" ] || continue
	kv=$(guest_kver "$v")
	img_ver=$(guest_kver_pkg "$kv")
	src_ver=$(pkg_version "${STOCK_SRC[$v]}")
	[ "$img_ver" = "$src_ver" ] ||
		echo "    warning: guest kernel $img_ver, host ${STOCK_SRC[$v]} $src_ver: KVM private headers may not match"
	step "lttng-modules (stock $v)"
	# 6.1 keeps the stamp name of the 6.1-only lab.
	stamp=.lttng-stamp
	[ "$v" = 6.1 ] || stamp=.lttng-$v-stamp
	lttng_stock "$v" "$kv" "$stamp"
	done_step "$LTTNG_DESC; $(find "$ROOT/lib/modules/$kv/updates/lttng" -name '*.ko*' | wc -l) modules in updates/lttng"

	step "stock kernel $v"
	d=$(stage_dir stock "$v")
	mkdir -p "$d"
	cp "$ROOT/boot/vmlinuz-$kv" "$d/vmlinuz"
	cp "$ROOT/boot/initrd.img-$kv" "$d/initrd.img"
	echo "$kv" >"$d/kernel.release"
	echo "$img_ver" >"$d/version"
	done_step "$kv in $(basename "$d")/"
done

# ------------------------------------------------------- KVM selftests
# KVM's own selftests (tools/testing/selftests/kvm) of each kernel's
# source tree, the one check.sh unpacked ($CACHE/ks/VER/linux), built on
# the host for x86_64 and linked statically (the host's glibc; nothing
# to match in the rootfs).  Their uapi headers come from `make
# headers_install` into an object tree of their own: the source tree
# stays clean for check.sh's O= build.  Built in $LAB/src/selftests-VER,
# installed stripped into the rootfs as /opt/kvm-selftests/VER/ (not
# under /lab: the run disk is mounted there) with BUILD-STATUS, the
# tests that built and those that did not (make -k: the rest builds).
# Stamp: the git trees of tools/ and the uapi headers, and the flags.
# selftests-compat.h (-include) defines what a tree's tests call and its
# library lacks (Debian's 6.1 dirty_log_test: TEST_ASSERT_EQ); it is
# copied into the build directory, which the flags name, and said by
# its name alone in BUILD-STATUS.
SELFTEST_FLAGS="EXTRA_CFLAGS=-static -include selftests-compat.h"
selftests_build() {
	local v=$1 linux=$CACHE/ks/$1/linux s d log want stamp t built=() failed=()
	s=$LAB/src/selftests-$v
	d=$ROOT/opt/kvm-selftests/$v
	log=$LAB/logs/selftests-$v.log
	stamp=$(cd "$linux" && git rev-parse HEAD:tools HEAD:include/uapi HEAD:arch/x86/include/uapi \
		2>/dev/null | tr '\n' ' ')
	[ -n "$stamp" ] || stamp="nogit $(find "$linux/tools/testing/selftests/kvm" -newer "$linux/Makefile" | wc -l)"
	stamp="$stamp$SELFTEST_FLAGS $(cksum <"$HERE/selftests-compat.h")"
	if [ "$(cat "$d/.stamp" 2>/dev/null)" = "$stamp" ]; then
		SELFTEST_DESC="cached: $(grep -c '^built ' "$d/BUILD-STATUS" || true) built, $(grep -c '^failed ' "$d/BUILD-STATUS" || true) failed"
		return 0
	fi
	rm -rf "$s"
	mkdir -p "$s"
	cp "$HERE/selftests-compat.h" "$s/"
	"${NICE[@]}" make -s -C "$linux" O="$s/obj" INSTALL_HDR_PATH="$s/hdr" headers_install \
		>"$log" 2>&1 || die "headers_install of $linux failed ($log)"
	local mk=("${NICE[@]}" make -C "$linux/tools/testing/selftests/kvm"
		OUTPUT="$s/out" LINUX_HDR_PATH="$s/hdr/include/" KHDR_INCLUDES="-isystem $s/hdr/include"
		"${SELFTEST_FLAGS/selftests-compat.h/$s/selftests-compat.h}")
	# The x86_64 test programs (lib.mk prefixes them with OUTPUT), and
	# those run by a wrapper script (TEST_GEN_PROGS_EXTENDED:
	# nx_huge_pages_test, run by nx_huge_pages_test.sh), which lib.mk
	# builds as well.
	want=$("${mk[@]}" -s -f Makefile -f <(printf 'lab-progs:\n\t@echo $(TEST_GEN_PROGS) $(TEST_GEN_PROGS_EXTENDED)\n') lab-progs 2>>"$log")
	[ -n "$want" ] || die "no test programs in $linux/tools/testing/selftests/kvm ($log)"
	"${mk[@]}" -k -j"$JOBS" >>"$log" 2>&1 || true
	rm -rf "$d"
	mkdir -p "$d"
	for t in $want; do
		t=${t#"$s/out/"}
		if [ -x "$s/out/$t" ]; then
			mkdir -p "$d/$(dirname "$t")"
			strip -o "$d/$t" "$s/out/$t"
			built+=("$t")
		else
			failed+=("$t")
		fi
	done
	[ "${#built[@]}" -gt 0 ] || die "no KVM selftest built ($log)"
	{
		echo "# KVM selftests of $(cd "$linux" && git describe --always --tags 2>/dev/null || echo "$linux")"
		echo "# (make -C tools/testing/selftests/kvm $SELFTEST_FLAGS; build log: logs/selftests-$v.log)"
		for t in "${built[@]}"; do echo "built $t"; done
		for t in "${failed[@]}"; do
			# Its first compiler or linker error, made again alone.
			"${mk[@]}" "$s/out/$t" >"$s/failed.log" 2>&1 || true
			cat "$s/failed.log" >>"$log"
			echo "failed $t: $(grep -m1 -E 'error|undefined reference' "$s/failed.log" |
				sed -E "s,$s/,,g; s,^.*/tools/testing/selftests/kvm/,," | cut -c1-200)"
		done
	} >"$d/BUILD-STATUS"
	echo "$stamp" >"$d/.stamp"
	rm -f "$LAB/rootfs.ext4"
	SELFTEST_DESC="${#built[@]} built, ${#failed[@]} failed${failed:+ (${failed[*]})}"
}
for v in "${KVERS[@]}"; do
	[ -n "${WANT_STOCK[$v]:-}${WANT_PATCHED[$v]:-}" ] || continue
	step "KVM selftests $v"
	if [ ! -d "$CACHE/ks/$v/linux/tools/testing/selftests/kvm" ]; then
		done_step "skipped: no $CACHE/ks/$v/linux (kernel-series/check.sh --kernel $v unpacks it)"
		continue
	fi
	selftests_build "$v"
	done_step "/opt/kvm-selftests/$v: $SELFTEST_DESC"
done

# ---------------------------------------------------------- rootfs image
step "rootfs image"
# The guest's init is a stub that mounts the run disk and runs its script.
cat >"$LAB/lab-init.new" <<'EOF'
#!/bin/sh
# mmureplay lab init: mount the run disk (second virtio disk) and run it.
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev 2>/dev/null
mkdir -p /lab
if mount -o ro /dev/vdb /lab && [ -x /lab/init.sh ]; then
	exec /bin/bash /lab/init.sh
fi
echo "lab-init: no run disk on /dev/vdb" >/dev/console
echo 1 >/proc/sys/kernel/sysrq
echo o >/proc/sysrq-trigger
sleep 10
EOF
if cmp -s "$LAB/lab-init.new" "$ROOT/lab-init"; then
	rm -f "$LAB/lab-init.new"
else
	mv "$LAB/lab-init.new" "$ROOT/lab-init"
	chmod 755 "$ROOT/lab-init"
fi
if [ ! -f "$LAB/rootfs.ext4" ] || [ "$ROOT/lab-init" -nt "$LAB/rootfs.ext4" ]; then
	rm -f "$LAB/rootfs.ext4.tmp"
	size_mb=$(($(du -sm "$ROOT" | cut -f1) + 768))
	"${NICE[@]}" mkfs.ext4 -q -F -L labroot -d "$ROOT" "$LAB/rootfs.ext4.tmp" "${size_mb}M" \
		>"$LAB/logs/mkfs.log" 2>&1 || die "mkfs.ext4 failed (logs/mkfs.log)"
	mv "$LAB/rootfs.ext4.tmp" "$LAB/rootfs.ext4"
fi
done_step "$(du -h --apparent-size "$LAB/rootfs.ext4" | cut -f1) ($(du -h "$LAB/rootfs.ext4" | cut -f1) used)"

# ------------------------------------------------------- patched kernels
for v in "${KVERS[@]}"; do
	[ -n "${WANT_PATCHED[$v]:-}" ] || continue
	step "patched kernel $v"
	KS=$CACHE/ks/$v
	KB=$KS/build
	PREL=$(cat "$KB/include/config/kernel.release")
	P=$(stage_dir patched "$v")
	M=$P.tmp/root/lib/modules/$PREL
	rm -rf "$P.tmp"
	mkdir -p "$M/kernel" "$M/updates/lttng"
	cp "$KB/arch/x86/boot/bzImage" "$P.tmp/bzImage"
	# run.sh names a hung guest's RIPs with it; config says what it has.
	cp "$KB/System.map" "$P.tmp/System.map"
	cp "$KB/.config" "$P.tmp/config"
	echo "$PREL" >"$P.tmp/kernel.release"
	# Copy (read-only) the modules of the build tree; no make in the
	# check.sh build tree, it may be building.
	(cd "$KB" && find . -name '*.ko' -not -path './source/*' -printf '%P\n') |
		while read -r ko; do
			mkdir -p "$M/kernel/$(dirname "$ko")"
			cp "$KB/$ko" "$M/kernel/$ko"
		done
	for f in modules.order modules.builtin; do
		[ ! -f "$KB/$f" ] || sed 's,^,kernel/,' "$KB/$f" >"$M/$f"
	done
	[ ! -f "$KB/modules.builtin.modinfo" ] || cp "$KB/modules.builtin.modinfo" "$M/"
	(cd "$KS/lttng-modules" && find . -name '*.ko' -printf '%P\n') |
		while read -r ko; do
			cp "$KS/lttng-modules/$ko" "$M/updates/lttng/"
		done
	depmod -b "$P.tmp/root" -a "$PREL" >"$LAB/logs/depmod-patched-$v.log" 2>&1 ||
		die "depmod failed (logs/depmod-patched-$v.log)"
	(cd "$KS/linux" && git log --oneline mmureplay-base..HEAD 2>/dev/null) >"$P.tmp/series.txt" || true
	(cd "$KS/lttng-modules" && git log --oneline mmureplay-base..HEAD 2>/dev/null) >>"$P.tmp/series.txt" || true
	rm -rf "$P"
	mv "$P.tmp" "$P"
	done_step "$PREL in $(basename "$P")/, $(find "$P/root" -name '*.ko' | wc -l) modules"
done

echo "build.sh: lab ready in $LAB ($(($(date +%s) - T0))s)"
