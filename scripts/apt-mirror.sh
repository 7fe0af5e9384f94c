# SPDX-License-Identifier: GPL-2.0
# shellcheck shell=bash
#
# apt-mirror.sh - sourced by kernel-series/check.sh and capture/lab/build.sh.
#
# apt_uri_for SUITE prints the Debian mirror URLs that the host's apt
# sources give for SUITE (deb822 .sources files, then one-line .list
# files), one per line, so that no mirror is ever written into the tree.

apt_uri_for() {
	local suite=$1 f
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -r "$f" ] || continue
		awk -v s="$suite" '
			/^[ \t]*$/ { if (u != "" && ok) { print u; done = 1; exit } u = ""; ok = 0; next }
			/^URIs:/ { u = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i == s) ok = 1 }
			END { if (!done && u != "" && ok) print u }' "$f"
	done
	cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
		awk -v s="$suite" '$1 == "deb" { for (i = 2; i < NF; i++) if ($i ~ /^[a-z]+:\/\// && $(i + 1) == s) print $i }' || true
}
