#!/bin/sh
# Install the Debian 12 packages that the build, the tests and the main job
# need; with --package, also what scripts/deb.sh needs (the package's
# build, lintian, debootstrap).  Idempotent: packages already present are
# left alone.
set -eu

PKGS="build-essential cmake pkg-config xz-utils
      libbabeltrace2-dev babeltrace2
      libsqlite3-dev sqlite3
      libcjson-dev
      liblttng-ust-dev lttng-tools
      libtracecmd-dev libtraceevent-dev libtracefs-dev trace-cmd
      python3 python3-jsonschema python3-distributed protobuf-compiler time
      clang libclang-rt-14-dev ccache
      chromium man-db"
[ "${1:-}" = "--package" ] &&
	PKGS="$PKGS git debhelper dpkg-dev lintian debootstrap"

missing=""
for p in $PKGS; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing="$missing $p"
done
[ -z "$missing" ] && exit 0

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
# Another install (a lab build, unattended upgrades) may hold dpkg's
# lock: wait for it rather than fail.
$SUDO apt-get -o DPkg::Lock::Timeout=600 update -qq
# shellcheck disable=SC2086
$SUDO apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing >/dev/null
