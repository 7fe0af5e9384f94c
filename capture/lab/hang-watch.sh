#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# hang-watch.sh - watch a lab guest until it powers off; take a silent
# guest for hung, collect what it can say, and stop it.
#
# Usage: capture/lab/hang-watch.sh --pid PID --serial FILE --monitor PREFIX
#            --out DIR [--hang-after S] [--boot-limit S] [--limit S]
#            [--system-map FILE] [--key-wait S]
#
#   --pid PID           the QEMU process
#   --serial FILE       its serial console log (-serial file:FILE)
#   --monitor PREFIX    its human monitor on a pipe chardev (-chardev
#                       pipe,id=mon0,path=PREFIX -mon chardev=mon0): the
#                       fifos PREFIX.in and PREFIX.out, made before QEMU
#                       starts; everything QEMU says there goes to
#                       DIR/monitor.log (removed when the guest did not
#                       hang)
#   --out DIR           where hang.txt and monitor.log go
#   --hang-after S      the guest is hung once its console (the serial
#                       log) has not grown for S seconds after its init's
#                       first "LAB: " line (default 120; guest-init.sh
#                       prints "LAB: [T] alive" every 10 s until it
#                       powers the guest off)
#   --boot-limit S      ... or when no "LAB: " line came S seconds after
#                       the start (default 150: an early-boot hang)
#   --limit S           ... or when it has not powered off after S seconds
#                       (default 720)
#   --system-map FILE   the guest kernel's System.map: the vCPUs' RIPs in
#                       hang.txt get symbol+offset (relocated by the
#                       "LAB: [T] kernel _text=" line of the console:
#                       KASLR)
#   --key-wait S        the longest pause after each SysRq key (default 40)
#
# On a hang, through the monitor: `info registers -a` (every vCPU's RIP),
# the magic SysRq keys 8 (console loglevel 8), l (backtrace of every active
# CPU), w (blocked tasks), t (every task), each followed by a pause until
# the console has been quiet for 2 s (at most --key-wait), an NMI to every vCPU,
# `info registers -a` again (did the CPUs move?), then `quit` (SIGKILL 10 s
# later).  DIR/hang.txt: why it was taken for hung, the last console lines
# before, the tasks sysrq-w reported blocked, the RIPs, and everything the
# console printed after the keys.  What it cannot catch: a guest that
# keeps printing while making no progress (a console flood, the heartbeat
# of a kernel that schedules while the workload is stuck) is not hung
# here; the guest's own timeouts cover that.  The guest's trace lives in its memory
# until it powers off, so trace growth cannot be watched from the host.
#
# Exit status: 0 QEMU exited by itself; 5 the guest hung (DIR/hang.txt,
# QEMU stopped); 2 bad usage.

set -Euo pipefail

PID='' SERIAL='' MON='' OUT='' HANG_AFTER=120 BOOT_LIMIT=150 LIMIT=720 SYSMAP='' KEY_WAIT=40
usage() { sed -n '3,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }
bad() { echo "hang-watch.sh: $*" >&2; exit 2; }
while [ $# -gt 0 ]; do
	case $1 in
	--pid) PID=${2:-}; shift 2 ;;
	--serial) SERIAL=${2:-}; shift 2 ;;
	--monitor) MON=${2:-}; shift 2 ;;
	--out) OUT=${2:-}; shift 2 ;;
	--hang-after) HANG_AFTER=${2:-}; shift 2 ;;
	--boot-limit) BOOT_LIMIT=${2:-}; shift 2 ;;
	--limit) LIMIT=${2:-}; shift 2 ;;
	--system-map) SYSMAP=${2:-}; shift 2 ;;
	--key-wait) KEY_WAIT=${2:-}; shift 2 ;;
	-h|--help) usage; exit 0 ;;
	*) bad "unknown argument '$1' (see --help)" ;;
	esac
done
if [ -z "$PID" ] || [ -z "$SERIAL" ] || [ -z "$MON" ] || [ -z "$OUT" ]; then
	bad "--pid, --serial, --monitor and --out are needed (see --help)"
fi
for v in "$HANG_AFTER" "$BOOT_LIMIT" "$LIMIT" "$KEY_WAIT"; do
	[[ $v =~ ^[1-9][0-9]*$ ]] || bad "a limit must be a positive number of seconds, got '$v'"
done
if [ ! -p "$MON.in" ] || [ ! -p "$MON.out" ]; then
	bad "$MON.in and $MON.out must be fifos"
fi
[ -z "$SYSMAP" ] || [ -r "$SYSMAP" ] || bad "cannot read --system-map $SYSMAP"

MONLOG=$OUT/monitor.log
HANG=$OUT/hang.txt
: >"$MONLOG"
# Read-write opens of a fifo never block, whether QEMU has it open or not;
# the reader drains QEMU's replies so that it never waits on a full pipe.
exec 7<>"$MON.in"
cat 0<>"$MON.out" >>"$MONLOG" 2>/dev/null &
CAT_PID=$!
trap 'kill "$CAT_PID" 2>/dev/null' EXIT

size() { stat -c %s "$SERIAL" 2>/dev/null || echo 0; }
# A QEMU that exited but is not reaped yet (a zombie) is not alive.
alive() {
	local st
	st=$(ps -o stat= -p "$PID" 2>/dev/null) && [ "${st:0:1}" != Z ]
}
mon() { printf '%s\n' "$*" >&7; }

# Wait until the console has been quiet for 2 s (at most $1 s).
wait_quiet() {
	local cap=$1 n last quiet=0 t=0
	last=$(size)
	while [ "$t" -lt $((cap * 2)) ] && alive; do
		sleep 0.5
		t=$((t + 1))
		n=$(size)
		if [ "$n" -eq "$last" ]; then
			quiet=$((quiet + 1))
			[ "$quiet" -lt 4 ] || return 0
		else
			quiet=0 last=$n
		fi
	done
}

# The vCPUs' RIPs of the monitor output between bytes $1 and $2, one
# "CPU#n RIP=..." line each, with symbol+offset when a System.map is
# given, "(halted)" for a vCPU in HLT (idle, not spinning).
rips() {
	local text_run text_map
	text_run=$(sed -n 's/^LAB: \[[0-9.]*\] kernel _text=\([0-9a-f]*\).*/\1/p' "$SERIAL" | head -n 1)
	text_map=
	[ -z "$SYSMAP" ] || text_map=$(awk '$3 == "_text" { print $1; exit }' "$SYSMAP")
	tail -c +"$(($1 + 1))" "$MONLOG" | head -c "$(($2 - $1))" | tr -d '\r' |
		sed -n 's/.*\(CPU#[0-9][0-9]*\).*/\1/p; s/^RIP=\([0-9a-f]*\).* HLT=\([01]\).*/\1 \2/p' |
		paste - - 2>/dev/null |
		awk -v map="$SYSMAP" -v trun="$text_run" -v tmap="$text_map" '
		function hex(s,   i, c, v) {
			v = 0
			for (i = 1; i <= length(s); i++) {
				c = index("0123456789abcdef", substr(s, i, 1)) - 1
				v = v * 16 + c
			}
			return v
		}
		BEGIN {
			n = 0
			# Numbers are doubles here: kernel text addresses
			# (ffffff...) compare on their low 40 bits, exactly.
			if (map != "" && trun != "" && tmap != "") {
				slide = hex(substr(trun, 7)) - hex(substr(tmap, 7))
				while ((getline line < map) > 0) {
					split(line, f, " ")
					if (f[2] !~ /^[tTwW]$/) continue
					addr[n] = hex(substr(f[1], 7)); sym[n] = f[3]; n++
				}
			}
		}
		{
			out = $1 " RIP=" $2
			if (n > 0 && substr($2, 1, 6) == "ffffff") {
				a = hex(substr($2, 7)) - slide
				best = -1
				for (i = 0; i < n; i++)
					if (addr[i] <= a && (best < 0 || addr[i] > addr[best]))
						best = i
				if (best >= 0)
					out = out sprintf(" %s+0x%x", sym[best], a - addr[best])
			}
			if ($3 == 1)
				out = out " (halted)"
			print out
		}'
}

T0=$(date +%s)
last_size=0 last_change=$T0 booted=0 reason=
while alive; do
	sleep 1
	now=$(date +%s)
	n=$(size)
	if [ "$n" -ne "$last_size" ]; then
		last_size=$n last_change=$now
		[ "$booted" -eq 1 ] || ! grep -q '^LAB: ' "$SERIAL" || booted=1
	fi
	if [ "$booted" -eq 0 ] && [ $((now - T0)) -ge "$BOOT_LIMIT" ]; then
		reason="no guest init line (\"LAB: \") ${BOOT_LIMIT}s after the start"
	elif [ "$booted" -eq 1 ] && [ $((now - last_change)) -ge "$HANG_AFTER" ]; then
		reason="no console output for ${HANG_AFTER}s (--hang-after)"
	elif [ $((now - T0)) -ge "$LIMIT" ]; then
		reason="not powered off ${LIMIT}s after the start (--limit)"
	fi
	[ -z "$reason" ] || break
done
if [ -z "$reason" ]; then
	# Only the banner: nothing was asked.
	rm -f "$MONLOG"
	exit 0
fi

# ------------------------------------------------------------ evidence
at=$(size)
{
	echo "guest hung: $reason"
	echo "detected $(date -u +%FT%TZ), $(($(date +%s) - T0)) s after the start," \
		"$(($(date +%s) - last_change)) s after the last console output"
	echo
	echo "== the last console lines before"
	tail -n 15 "$SERIAL" | tr -d '\r'
} >"$HANG"
m0=$(stat -c %s "$MONLOG")
mon "info registers -a"
sleep 2
for key in 8 l w t; do
	mon "sendkey alt-sysrq-$key"
	wait_quiet "$KEY_WAIT"
done
mon nmi
wait_quiet 10
m1=$(stat -c %s "$MONLOG")
mon "info registers -a"
sleep 2
after=$(size)
mon quit
for _ in $(seq 20); do alive || break; sleep 0.5; done
alive && kill -9 "$PID" 2>/dev/null
wait "$PID" 2>/dev/null
{
	echo
	echo "== blocked tasks (sysrq-w, state D)"
	tail -c +"$((at + 1))" "$SERIAL" | tr -d '\r' | grep -E 'task:.* state:D' |
		sed 's/^\[ *[0-9.]*\] //' || echo "(none reported)"
	echo
	echo "== vCPU RIPs at detection (monitor: info registers -a)"
	rips "$m0" "$m1"
	echo
	echo "== vCPU RIPs after the keys and the NMI"
	rips "$m1" "$(stat -c %s "$MONLOG")"
	echo
	echo "== console after the keys ($((after - at)) bytes: sysrq 8, l, w, t, then an NMI)"
	if [ "$after" -gt "$at" ]; then
		tail -c +"$((at + 1))" "$SERIAL" | tr -d '\r'
	else
		echo "(nothing: the guest did not answer the keys)"
	fi
} >>"$HANG"
exit 5
