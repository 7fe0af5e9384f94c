#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# build.sh - build the mmureplay QEMU TCG lab (unattended, cached).
#
# Usage: capture/lab/build.sh [--kernel stock|patched|auto|all] [--rebuild] [--help]
#
#   --kernel stock    Debian 12 rootfs + Debian's own kernel (linux-image-amd64
#                     from bookworm-security, same version as the host's
#                     linux-source-6.1) + lttng-modules built against it.
#   --kernel patched  the rootfs, plus the patched kernel from
#                     $MMUREPLAY_CACHE/ks/6.1/build (kernel-series/check.sh
#                     --full --kernel 6.1):
#                     bzImage, its modules and its lttng-modules, staged for
#                     run.sh (booted with -kernel, no initrd, modules on a
#                     second disk).
#   --kernel auto     (default) stock, and patched too when its build exists.
#   --kernel all      stock and patched; fails if the patched build is missing.
#   --rebuild         forget the cached rootfs and rebuild everything.
#
# Everything lives outside the checkout in ${MMUREPLAY_CACHE:-$HOME/.cache/mmureplay}/lab:
#   rootfs/            debootstrap tree (minbase, kmod, lttng-tools, babeltrace2,
#                      liblttng-ust1, trace-cmd, linux-perf, linux-image-amd64, headers and
#                      lttng-modules for it)
#   rootfs.ext4        the guest root image (run.sh boots it with snapshot=on)
#   stock/             vmlinuz, initrd.img, kernel.release of the stock kernel
#   patched/           bzImage, kernel.release, root/lib/modules/<release>/ (kernel +
#                      lttng-modules, depmod'ed)
#   src/               lttng-modules-dkms .deb and the patched source trees
#   logs/              one log per step
#
# lttng-modules: Debian's lttng-modules-dkms source (apt-get download +
# dpkg -x; never apt-get install it: its DKMS hook breaks dpkg on 6.1.1xx),
# with the lttng-modules patches listed in kernel-series/linux-6.1/series
# (hrtimer_start and kvm_entry/kvm_page_fault prototype fixes, the x86 KVM
# probes in dkms.conf/Kbuild, probes for the TDP MMU and hva-unmap
# tracepoints and for the mmureplay tracepoints).  For the stock kernel,
# KVM's private headers (arch/x86/kvm, virt/kvm) are copied from the host's
# linux-source-6.1 of the same version into the guest's headers tree, or
# the x86 KVM probes would be skipped silently.
#
# Environment: MMUREPLAY_CACHE, MMUREPLAY_MIRROR (Debian mirror URL; default:
# the host's apt sources), MMUREPLAY_SECURITY_MIRROR, JOBS (default 2).
# Heavy steps run under nice -n 10.  Prints the elapsed time of each step.

set -Eeuo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
CACHE=${MMUREPLAY_CACHE:-$HOME/.cache/mmureplay}
LAB=$CACHE/lab
# The lab runs Linux 6.1: its series and check.sh's cache of that kernel.
KS=$CACHE/ks/6.1
SERIES_DIR=$TOP/kernel-series/linux-6.1
JOBS=${JOBS:-2}
SUITE=bookworm
NICE=(nice -n 10)
KERNEL=auto
REBUILD=0

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
case $KERNEL in stock|patched|auto|all) ;; *) echo "build.sh: --kernel stock|patched|auto|all" >&2; exit 2 ;; esac
[ "$(id -u)" -eq 0 ] || { echo "build.sh: must run as root (debootstrap, chroot)" >&2; exit 1; }

mkdir -p "$LAB/logs" "$LAB/src"
exec 9>"$LAB/.lock"
flock -n 9 || { echo "build.sh: another build.sh or run.sh holds $LAB/.lock" >&2; exit 1; }

STEP=init
die() { echo "build.sh: FAIL [$STEP]: $*" >&2; exit 1; }
trap 'die "command failed at line $LINENO (logs in $LAB/logs)"' ERR
T0=$(date +%s)
step() { STEP=$1; TS=$(date +%s); printf '==> %s\n' "$STEP"; }
done_step() { printf '    %-24s %5ds  %s\n' "$STEP" $(($(date +%s) - TS)) "${1:-ok}"; }

pkg_version() {
	dpkg-query -W -f='${Status} ${Version}\n' "$1" 2>/dev/null |
		awk '$3 == "installed" { print $4 }'
}

ROOT=$LAB/rootfs
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
missing=
for p in qemu-system-x86 debootstrap e2fsprogs xz-utils linux-source-6.1 babeltrace2; do
	[ -n "$(pkg_version "$p")" ] || missing="$missing $p"
done
if [ -n "$missing" ]; then
	# shellcheck disable=SC2086
	"${NICE[@]}" apt-get install -y -q --no-install-recommends $missing \
		>"$LAB/logs/apt-host.log" 2>&1 || die "apt-get install$missing failed (logs/apt-host.log)"
fi
SRC_VER=$(pkg_version linux-source-6.1)
done_step "${missing:- none missing}; linux-source-6.1 $SRC_VER"

MIRROR=${MMUREPLAY_MIRROR:-$(apt_uri_for $SUITE | sed -n 1p)}
SEC_MIRROR=${MMUREPLAY_SECURITY_MIRROR:-$(apt_uri_for $SUITE-security | sed -n 1p)}
[ -n "$MIRROR" ] || die "no Debian mirror for $SUITE in the host's apt sources (set MMUREPLAY_MIRROR)"

# ------------------------------------------------------ lttng-modules
step "lttng-modules source"
DEB_DIR=$LAB/src/debs
mkdir -p "$DEB_DIR"
if ! ls "$DEB_DIR"/lttng-modules-dkms_*.deb >/dev/null 2>&1; then
	(cd "$DEB_DIR" && apt-get download lttng-modules-dkms) >"$LAB/logs/apt-download.log" 2>&1 ||
		die "apt-get download lttng-modules-dkms failed (logs/apt-download.log)"
fi
LTTNG_DEB=$(ls "$DEB_DIR"/lttng-modules-dkms_*.deb | sort -V | tail -n 1)
LTTNG_VER=$(dpkg-deb -f "$LTTNG_DEB" Version)
mapfile -t LTTNG_PATCHES < <(awk '$1 == "patch" && $2 == "lttng-modules" { print $3 }' \
	"$SERIES_DIR/series" 2>/dev/null)
[ "${#LTTNG_PATCHES[@]}" -gt 0 ] ||
	die "no lttng-modules patches in kernel-series/linux-6.1/series (the lab needs the TDP MMU probes)"
PATCH_SUM=$( (echo "$LTTNG_VER"; for p in "${LTTNG_PATCHES[@]}"; do cat "$SERIES_DIR/$p"; done) |
	sha1sum | cut -c1-12)
LTTNG_SRC=$LAB/src/lttng-modules-$PATCH_SUM
if [ ! -f "$LTTNG_SRC/.patched" ]; then
	rm -rf "$LAB"/src/lttng-modules-* "$LAB/src/x"
	dpkg-deb -x "$LTTNG_DEB" "$LAB/src/x"
	mkdir -p "$LTTNG_SRC"
	cp -a "$LAB"/src/x/usr/src/lttng-modules-*/. "$LTTNG_SRC"/
	rm -rf "$LAB/src/x"
	for p in "${LTTNG_PATCHES[@]}"; do
		patch -d "$LTTNG_SRC" -p1 -s --no-backup-if-mismatch <"$SERIES_DIR/$p" \
			>>"$LAB/logs/lttng-patch.log" 2>&1 || die "$p does not apply (logs/lttng-patch.log)"
	done
	touch "$LTTNG_SRC/.patched"
fi
done_step "$LTTNG_VER + ${#LTTNG_PATCHES[@]} patches ($PATCH_SUM)"

# ------------------------------------------------------------ rootfs
[ "$REBUILD" -eq 0 ] || rm -rf "$ROOT" "$LAB/rootfs.ext4" "$LAB/stock" "$LAB/patched"
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
KVER=$(ls "$ROOT/lib/modules" | grep -- '-amd64$' | sort -V | tail -n 1)
IMG_VER=$(chroot "$ROOT" dpkg-query -W -f='${Version}' "linux-image-$KVER")
[ "$IMG_VER" = "$SRC_VER" ] ||
	echo "    warning: guest kernel $IMG_VER, host linux-source-6.1 $SRC_VER: KVM private headers may not match"
done_step "kernel $KVER ($IMG_VER)"

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

# ------------------------------------------- lttng-modules, stock kernel
build_stock=0 build_patched=0
PATCHED_OK=0
[ -f "$KS/build/arch/x86/boot/bzImage" ] && [ -f "$KS/build/arch/x86/kvm/kvm.ko" ] &&
	[ -f "$KS/lttng-modules/src/probes/lttng-probe-kvm-x86-tdp-mmu.ko" ] && PATCHED_OK=1
case $KERNEL in
stock) build_stock=1 ;;
patched) build_patched=1 ;;
all) build_stock=1 build_patched=1 ;;
auto) build_stock=1 build_patched=$PATCHED_OK ;;
esac
if [ "$build_patched" -eq 1 ] && [ "$PATCHED_OK" -eq 0 ]; then
	die "no patched kernel build in $KS/build (run kernel-series/check.sh --full --kernel 6.1 first)"
fi

if [ "$build_stock" -eq 1 ]; then
	step "lttng-modules (stock)"
	STAMP="$KVER $PATCH_SUM"
	if [ "$(cat "$ROOT/.lttng-stamp" 2>/dev/null)" != "$STAMP" ]; then
		# KVM's private headers of the same version, where the Kbuild looks
		# for them ($(srctree) of Debian's headers is the -common tree).
		COMMON=$(readlink -f "$ROOT/usr/src/linux-headers-${KVER%-amd64}-common")
		[ -d "$COMMON" ] || die "no headers tree $COMMON"
		tar -xJf /usr/src/linux-source-6.1.tar.xz -C "$COMMON" --strip-components=1 \
			--wildcards 'linux-source-6.1/arch/x86/kvm/*.h' \
			'linux-source-6.1/virt/kvm/*.h'
		rm -rf "$ROOT/usr/src/lttng-modules-lab"
		cp -a "$LTTNG_SRC" "$ROOT/usr/src/lttng-modules-lab"
		rm -rf "$ROOT/lib/modules/$KVER/updates/lttng"
		mount_chroot
		# lttng-modules' own Makefile sets CONFIG_LTTNG=m for Kbuild.
		in_chroot make -C /usr/src/lttng-modules-lab KERNELDIR="/lib/modules/$KVER/build" \
			-j"$JOBS" modules >"$LAB/logs/lttng-stock.log" 2>&1 ||
			die "lttng-modules build failed: $(grep -m1 -E 'error:|Error [0-9]' "$LAB/logs/lttng-stock.log" || echo 'see logs/lttng-stock.log')"
		in_chroot make -C /usr/src/lttng-modules-lab KERNELDIR="/lib/modules/$KVER/build" \
			INSTALL_MOD_DIR=updates/lttng modules_install >>"$LAB/logs/lttng-stock.log" 2>&1
		in_chroot depmod -a "$KVER"
		umount_chroot
		# Only the KVM probes matter (kmem, ext4, btrfs... need full sources).
		if grep -q 'Probe "kvm[^"]*" .*is disabled' "$LAB/logs/lttng-stock.log"; then
			die "lttng-modules skipped probes: $(grep -m1 'Probe "kvm[^"]*" .*is disabled' "$LAB/logs/lttng-stock.log")"
		fi
		for ko in lttng-tracer lttng-probe-kvm lttng-probe-kvm-x86 lttng-probe-kvm-x86-mmu \
			lttng-probe-kvm-x86-tdp-mmu; do
			find "$ROOT/lib/modules/$KVER/updates/lttng" -name "$ko.ko*" | grep -q . ||
				die "$ko.ko was not built (logs/lttng-stock.log)"
		done
		echo "$STAMP" >"$ROOT/.lttng-stamp"
		rm -f "$LAB/rootfs.ext4"
	fi
	done_step "$(find "$ROOT/lib/modules/$KVER/updates/lttng" -name '*.ko*' | wc -l) modules in updates/lttng"

	step "stock kernel"
	mkdir -p "$LAB/stock"
	cp "$ROOT/boot/vmlinuz-$KVER" "$LAB/stock/vmlinuz"
	cp "$ROOT/boot/initrd.img-$KVER" "$LAB/stock/initrd.img"
	echo "$KVER" >"$LAB/stock/kernel.release"
	echo "$IMG_VER" >"$LAB/stock/version"
	done_step "$KVER"
fi

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

# ------------------------------------------------------- patched kernel
if [ "$build_patched" -eq 1 ]; then
	step "patched kernel"
	KB=$KS/build
	PREL=$(cat "$KB/include/config/kernel.release")
	P=$LAB/patched
	M=$P.tmp/root/lib/modules/$PREL
	rm -rf "$P.tmp"
	mkdir -p "$M/kernel" "$M/updates/lttng"
	cp "$KB/arch/x86/boot/bzImage" "$P.tmp/bzImage"
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
	depmod -b "$P.tmp/root" -a "$PREL" >"$LAB/logs/depmod-patched.log" 2>&1 ||
		die "depmod failed (logs/depmod-patched.log)"
	(cd "$KS/linux" && git log --oneline mmureplay-base..HEAD 2>/dev/null) >"$P.tmp/series.txt" || true
	(cd "$KS/lttng-modules" && git log --oneline mmureplay-base..HEAD 2>/dev/null) >>"$P.tmp/series.txt" || true
	rm -rf "$P"
	mv "$P.tmp" "$P"
	done_step "$PREL, $(find "$P/root" -name '*.ko' | wc -l) modules"
fi

echo "build.sh: lab ready in $LAB ($(($(date +%s) - T0))s)"
