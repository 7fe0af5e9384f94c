#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# lab_fake_guest.sh - a stand-in for the lab's QEMU, for testing
# capture/lab/hang-watch.sh without the lab (test_lab_hang_watch.py).
# SYNTHETIC: its console lines, backtraces and registers are made up in
# the format of the real ones (a 6.1 guest's sysrq output, QEMU 7.2's
# `info registers -a`); what the test checks is the watcher's reaction.
#
# Usage: lab_fake_guest.sh SERIAL MONITOR_PREFIX MODE
#
#   ok      init lines, a heartbeat every second for 4 s, then exits 0
#   hang    init lines, "workload start", then silence; answers the
#           monitor: `info registers -a`, sysrq l and w on the console,
#           `quit` ends it
#   deaf    as hang, but answers neither the keys nor `quit`
#   boot    never prints an init line
#   chatty  a heartbeat every second, forever (never powers off)

serial=$1 mon=$2 mode=$3
exec 3<>"$mon.in" 4<>"$mon.out"
echo "QEMU 7.2.22 monitor - type 'help' for more information" >&4
say() { echo "$*" >>"$serial"; }

registers() {
	local cpu rip
	for cpu in 0 1; do
		rip=ffffffff9a12345$cpu
		[ "$cpu" -eq 0 ] || rip=ffffffff9a200010
		printf '(qemu) CPU#%d\r\nRAX=0000000000000000 RBX=ffff888100000000\r\n' "$cpu" >&4
		printf 'RIP=%s RFL=00000246 [---Z-P-] CPL=0 II=0 A20=1 SMM=0 HLT=%d\r\n' \
			"$rip" "$cpu" >&4
	done
}

serve() {
	local line
	while :; do
		line=
		read -r -t 1 line <&3
		line=${line%$'\r'}
		[ "$mode" != chatty ] || say "LAB: [7.00] workload running"
		case $line in
		"info registers -a") registers ;;
		"sendkey alt-sysrq-l")
			[ "$mode" = deaf ] && continue
			say "[   40.100000] sysrq: Show backtrace of all active CPUs"
			say "[   40.100100] NMI backtrace for cpu 1"
			say "[   40.100200] Call Trace:"
			say "[   40.100300]  kvm_tdp_mmu_zap_leafs+0x1a0/0x2b0 [kvm]" ;;
		"sendkey alt-sysrq-w")
			[ "$mode" = deaf ] && continue
			say "[   41.000000] sysrq: Show Blocked State"
			say "[   41.000100] task:nxrecovery      state:D stack:0     pid:210   ppid:1      flags:0x00004002" ;;
		quit) [ "$mode" = deaf ] || exit 0 ;;
		esac
	done
}

case $mode in
boot) serve ;;
*)
	say "LAB: [5.00] uptime at init: 4.90s kernel 6.1.192+ flavor=patched workload=nxrecovery"
	say "LAB: [5.10] kernel _text=ffffffff9a000000"
	say "LAB: [6.00] workload start: nxrecovery --mem 128"
	case $mode in
	ok)
		for i in 1 2 3 4; do sleep 1; say "LAB: [$((6 + i)).00] workload running ($i s)"; done
		say "LAB: DONE"
		exit 0 ;;
	hang|deaf|chatty) serve ;;
	esac ;;
esac
