#!/bin/sh
# Build the Debian package of the committed tree and check it.
#
# Usage: scripts/deb.sh [--out DIR] [--root]
#   --out DIR  where the .deb and lintian's report go (default ./deb-out)
#   --root     also install the .deb into a fresh Debian 12 root
#              (debootstrap --variant=minbase, network needed; its
#              tarball is kept a week in ROOT_CACHE) and run
#              mmureplay --help, man mmureplay and the main job on the
#              bundled capture inside it (about a minute; CI runs it)
#
# The build runs on a clean clone of HEAD (dpkg-buildpackage -us -uc -b),
# so what is built is what is committed.  Exit 1 when the build fails or
# lintian reports an error.
set -eu
OUT=$(pwd)/deb-out
ROOT=0
while [ $# -gt 0 ]; do
	case $1 in
	--out) OUT=$2; shift 2 ;;
	--root) ROOT=1; shift ;;
	-h|--help) sed -n '2,/^set/s/^# \{0,1\}//p' "$0" | sed '$d'; exit 0 ;;
	*) echo "deb.sh: unknown argument $1" >&2; exit 2 ;;
	esac
done
TOP=$(cd "$(dirname "$0")/.." && pwd)
sh "$TOP/scripts/setup.sh" --package
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
[ -n "${DEB_KEEP:-}" ] && trap - EXIT && echo "deb.sh: work in $WORK" >&2
git clone -q "$TOP" "$WORK/mmureplay"
(cd "$WORK/mmureplay" && dpkg-buildpackage -us -uc -b >"$WORK/build.log" 2>&1) ||
	{ tail -30 "$WORK/build.log" >&2; echo "deb.sh: build failed" >&2; exit 1; }
mkdir -p "$OUT"
cp "$WORK"/mmureplay_*.deb "$OUT/"
DEB=$(ls "$OUT"/mmureplay_*.deb | tail -1)
lintian --no-tag-display-limit "$DEB" >"$OUT/lintian.txt" 2>&1 || true
echo "deb.sh: $DEB ($(stat -c %s "$DEB") bytes); lintian:" \
	"$(grep -c '^E:' "$OUT/lintian.txt" || true) errors," \
	"$(grep -c '^W:' "$OUT/lintian.txt" || true) warnings ($OUT/lintian.txt)"
if grep -q '^E:' "$OUT/lintian.txt"; then
	grep '^E:' "$OUT/lintian.txt" >&2
	exit 1
fi
[ "$ROOT" = 1 ] || exit 0
R="$WORK/root"
# The root is debootstrap's minbase of bookworm, made at most a week ago:
# its tarball is kept in ROOT_CACHE (default /var/cache/mmureplay) and
# made again when older or missing, so a run does not unpack the base
# system each time (a minute of two cores).  apt-get update inside the
# root then takes today's package lists.
CACHE=${ROOT_CACHE:-/var/cache/mmureplay}
BASE="$CACHE/bookworm-minbase.tar"
mkdir -p "$CACHE"
if [ -z "$(find "$BASE" -mtime -7 2>/dev/null)" ]; then
	debootstrap --variant=minbase bookworm "$R" >"$WORK/debootstrap.log" 2>&1 ||
		{ tail -5 "$WORK/debootstrap.log" >&2; exit 1; }
	tar -C "$R" -cf "$BASE.tmp" . && mv "$BASE.tmp" "$BASE"
else
	mkdir "$R"
	tar -C "$R" -xf "$BASE"
fi
cp "$DEB" "$R/tmp/"
chroot "$R" sh -c "apt-get update -qq && apt-get install -y -qq man-db xz-utils \
	/tmp/$(basename "$DEB") >/dev/null" || exit 1
chroot "$R" mmureplay --help >/dev/null ||
	{ echo "deb.sh: mmureplay --help fails in the root" >&2; exit 1; }
chroot "$R" sh -c 'MANWIDTH=80 man mmureplay 2>&1 | head -3'
chroot "$R" sh -c 'cd /tmp && mkdir ex && tar xJf \
	/usr/share/doc/mmureplay/examples/trace.tar.xz -C ex &&
	mmureplay ingest ex -o c.db && mmureplay report c.db -o r.html &&
	test -s r.html && echo "main job on the bundled capture: report written"'
