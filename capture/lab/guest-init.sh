#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# guest-init.sh - test init of the mmureplay QEMU TCG lab (runs as PID 1 in
# the L1 guest, started by /lab-init from the run disk /dev/vdb).
#
# Reads /lab/config (written by run.sh): WORKLOAD, WORKLOAD_ARGS,
# KVM_PARAMS, KVM_AMD_PARAMS, KERNEL_FLAVOR, KERNEL_SERIES, BUF_MB,
# SUBBUF_MB, SUBBUF_KB, NUM_SUBBUF, CHANNEL_MODE, EVENTS, SYSCALLS,
# TIMEOUT, FTRACE_EVENTS, FTRACE_KB, WORKLOAD_BIN, UST, UST_EVENTS,
# UST_BUF_MB, CAPTURE_TOOL, CAPTURE_ARGS, STATS, ATTACH_AFTER,
# SNAPSHOT_AT, STATEDUMP, MEMSLOT_REF, SELFTEST, SELFTEST_ARGS,
# SELFTEST_PATH, SELFTEST_SRC, HUGEPAGES, SIMULATE_HANG, MULTI_N,
# MULTI_WL_I, MULTI_ARGS_I, MULTI_BIN_I, KSM, KHUGEPAGED, MEMCG_MB, NUMA_BAL,
# EXTRA_MODULES, EXTRA_PROBES.  Loads kvm/kvm_amd
# with the parameters, records the workload with an LTTng kernel session,
# and writes to the raw output disk /dev/vdc a tar of /out: trace/ (CTF),
# manifest.json (workload_rc 124 = timeout, 125 = stuck after its RESULT line),
# console.log, workload.log.  Then powers off.  From start to power-off
# a background loop prints "LAB: [T] alive" on /dev/console every 10 s
# (not in console.log): the host (run.sh) takes a guest whose console
# stays silent for long for hung, and a slow step (an LTTng setup of
# 90 s on a loaded host) is not silent.
#
# FTRACE_EVENTS (SYSTEM/EVENT ...; run.sh --ftrace): the same tracepoints
# are also enabled in tracefs (trace_clock mono, the clock of LTTng's kernel
# tracer; overwrite mode, FTRACE_KB per CPU), on before `lttng start` and off
# after `lttng stop`; /out gets ftrace.txt (the `trace` file) and
# ftrace-stats.txt (per-CPU stats, buffer size, clock, format files).
#
# TRACECMD_EVENTS (trace-cmd -e arguments; run.sh --trace-cmd): the same
# run is also recorded by `trace-cmd record -C mono` into /out/trace.dat
# (started before `lttng start`, stopped with SIGINT after `lttng stop`)
# and by a tracefs instance "mmrtext" with the same events (trace_clock
# mono, FTRACE_KB per CPU) whose `trace` file becomes /out/ftrace-text.txt;
# trace-cmd's output goes to /out/tracecmd.log.
#
# PERF_EVENTS (perf record -e arguments; run.sh --perf): `perf record -a
# -k mono` of the same tracepoints into /out/perf.data, started before
# `lttng start` (once its perf_event fds are open) and stopped with SIGINT
# after `lttng stop`; its output goes to /out/perf.log.
#
# UST=1 (run.sh --ust; the workload binary WORKLOAD_BIN is linked with
# liblttng-ust from the rootfs): the same session "lab" also gets a UST
# channel uch0 (per-UID buffers, discard mode, UST_BUF_MB per CPU, 1 MiB
# sub-buffers) with the events UST_EVENTS (default mmureplay:*) and the
# contexts vtid, procname; the workload starts with
# LTTNG_UST_REGISTER_TIMEOUT=30000 so that it registers with the session
# daemon before its first event.  trace/ then holds kernel/ and ust/.
#
# CAPTURE_TOOL=1 (run.sh --capture-tool): the session is the product's,
# made by capture/mmureplay-capture start/stop (its event list, channel
# sizes, blocking UST channel, its refusal when a probe is missing); its
# manifest is /out/manifest.json and this script's own goes to
# /out/lab-manifest.json.
#
# STATS=1 (run.sh --stats): the UST channel too, and kvm-stats-sampler
# --debugfs from just before the workload to just after it (with
# CAPTURE_TOOL=1: mmureplay-capture start --stats runs it).
#
# ATTACH_AFTER=S (run.sh --attach-after): the tracer's modules and the
# session daemon are ready before the workload, but the session is
# created and started only S seconds after the workload started (the VM
# then runs); it stops at the workload's end as usual.  SNAPSHOT_AT=S
# (run.sh --snapshot-at): the session is a snapshot session (channel ch0
# in overwrite mode, CHANNEL_MODE overwrite, NUM_SUBBUF x SUBBUF_KB per
# CPU) started before the workload; S seconds into the workload one
# `lttng snapshot record` saves the buffers, and that snapshot's kernel/
# becomes /out/trace/kernel.  The manifest records when each step ran,
# in seconds after the workload's start (/proc/uptime: 10 ms).
#
# STATEDUMP=1 (patched kernels; run.sh puts the state dump's events in
# EVENTS): lttng-probe-statedump is loaded too, so that the session's
# state dump at `lttng start` records lttng_statedump_kvm_memslot (one
# per memslot of each running VM, kernel-series lttng-modules patch 6)
# between lttng_statedump_start and lttng_statedump_end.
#
# SELFTEST=TEST (run.sh selftest TEST): the workload is KVM's selftest
# SELFTEST_PATH (/opt/kvm-selftests/SERIES/TEST in the rootfs, built by
# build.sh) with SELFTEST_ARGS, run like a workload binary (in /out,
# output in workload.log); the manifest gets "selftest".  HUGEPAGES=N:
# N 2 MiB hugetlb pages are reserved before the workload (manifest
# "hugepages": asked and reserved).
#
# MULTI_N=N (run.sh multi): N workloads (MULTI_WL_I with MULTI_ARGS_I,
# I = 1..N; MULTI_BIN_I the binary where it is not the workload's own,
# the UST variant of run.sh multi --ust, run as UST=1 runs one), each
# its own process and so its own VM, started at once
# in the one session; each writes workload-I.log (echoed to the console
# as "VM I: ..."), workload.log is their concatenation afterwards.  Each
# has TIMEOUT and the 60 s after its RESULT line; workload_rc is the
# first VM's non-zero rc, else 0.  The manifest gets "vms": per VM its
# workload, args, pid, rc, and its start (just before the exec) and end
# (when its wait returned) in CLOCK_MONOTONIC ns, the clock of LTTng's
# kernel trace (/proc/timer_list's "now at"; null without it).
#
# KSM=1, KHUGEPAGED=1, MEMCG_MB=N, NUMA_BAL=1 (run.sh --ksm,
# --khugepaged, --memcg-limit, --numa-balancing): the host's memory
# management set up before the workload (host_mm_setup): KSM on with a
# fast scan; THP always with a fast khugepaged; a cgroup v2 lab-wl with
# memory.max N MiB that the workload (every VM of a multi run) starts
# in, with swap (zram, else a swap file); kernel.numa_balancing=1.  The
# manifest gets "host_mm": the settings and, after the run, the
# counters (KSM pages_sharing, khugepaged pages_collapsed, the
# cgroup's memory.events and swap).  COMPACTION=1 (run.sh
# --compaction): fragment holds every other page of all free memory but
# 160 MiB from before the workload, THP defrag is "defer" (a THP fault
# that finds no free 2 MiB block wakes kcompactd), and 2 s into the
# workload vm.compaction_proactiveness becomes 100 (host_mm_start), so
# that kcompactd migrates guest RAM;
# the manifest's "compaction" gets /proc/vmstat's compaction and
# migration counters.  MADV_COLLAPSE=1 (run.sh --madv-collapse) is the
# workloads' --collapse; recorded as "madv_collapse".  EXTRA_MODULES, EXTRA_PROBES: more
# lttng probe modules to load (lttng-probe-vmscan for --memcg-limit).
#
# MEMSLOT_REF=1 (run.sh --memslot-ref): a second kernel session "ref"
# (channel refch, discard, 4 x 64 KiB per CPU, kvm_memslot_change only,
# contexts pid, tid, procname) is created and started before the
# workload and stopped after the lab's session; its trace is
# /out/ref-trace: the memslot changes from the VM's creation on, against
# which a late session's state dump can be checked
# (capture/lab/check-statedump.py).

export PATH=/usr/sbin:/usr/bin:/sbin:/bin
LAB=/lab
OUT=/out
T_INIT=$(cut -d' ' -f1 /proc/uptime)

mountpoint -q /proc || mount -t proc proc /proc
mountpoint -q /sys || mount -t sysfs sysfs /sys
mountpoint -q /dev || mount -t devtmpfs devtmpfs /dev
mount -t tmpfs -o size=1200m tmpfs /tmp
mount -t tmpfs tmpfs /run
mkdir -p /dev/shm /dev/pts /var/run/lttng
mount -t tmpfs tmpfs /dev/shm
mount -t devpts devpts /dev/pts 2>/dev/null
mount -t tracefs tracefs /sys/kernel/tracing 2>/dev/null
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mkdir -p "$OUT"
mount -t tmpfs -o size=1200m tmpfs "$OUT"
echo 1 >/proc/sys/kernel/sysrq
hostname lab

# shellcheck source=/dev/null
. "$LAB/config"

poweroff_now() {
	sync
	echo o >/proc/sysrq-trigger
	sleep 30
}

log() { echo "LAB: [$(cut -d' ' -f1 /proc/uptime)] $*"; }

TRACEFS=/sys/kernel/tracing
FTRACE_ON=0

# ftrace twin of the LTTng session (FTRACE_EVENTS); builtins only, forks
# are slow under TCG.
ftrace_start() {
	local ev n=0
	[ -n "${FTRACE_EVENTS:-}" ] || return 0
	[ -d "$TRACEFS/events" ] || { log "ftrace: no tracefs at $TRACEFS"; return 0; }
	echo 0 >"$TRACEFS/tracing_on"
	echo >"$TRACEFS/set_event"
	echo mono >"$TRACEFS/trace_clock" || log "ftrace: trace_clock mono failed"
	echo "${FTRACE_KB:-65536}" >"$TRACEFS/buffer_size_kb" ||
		log "ftrace: buffer_size_kb ${FTRACE_KB:-65536} failed"
	echo >"$TRACEFS/trace"
	for ev in $FTRACE_EVENTS; do
		if echo 1 >"$TRACEFS/events/$ev/enable"; then
			n=$((n + 1))
		else
			log "ftrace: cannot enable $ev"
		fi
	done
	echo 1 >"$TRACEFS/tracing_on"
	FTRACE_ON=1
	log "ftrace on: $n events, buffer_size_kb $(<"$TRACEFS/buffer_size_kb"), clock $(<"$TRACEFS/trace_clock")"
}

ftrace_stop() {
	local ev
	[ "$FTRACE_ON" = 1 ] || return 0
	echo 0 >"$TRACEFS/tracing_on"
	cat "$TRACEFS/trace" >"$OUT/ftrace.txt"
	{
		echo "buffer_size_kb: $(<"$TRACEFS/buffer_size_kb")"
		echo "trace_clock: $(<"$TRACEFS/trace_clock")"
		echo "events: $FTRACE_EVENTS"
		grep -H . "$TRACEFS"/per_cpu/cpu*/stats
		for ev in $FTRACE_EVENTS; do
			echo "== format $ev"
			cat "$TRACEFS/events/$ev/format"
		done
	} >"$OUT/ftrace-stats.txt" 2>&1
	echo >"$TRACEFS/set_event"
	log "ftrace off: $(grep -m1 'entries-in-buffer' "$OUT/ftrace.txt" | sed 's/^# *//')"
}

TRACECMD_PID=
TEXT_INST=$TRACEFS/instances/mmrtext

# trace-cmd record of the stock events, and the same events in a tracefs
# instance kept as text; both attached to the tracepoints LTTng uses.
tracecmd_start() {
	local ev a args=() sys
	[ -n "${TRACECMD_EVENTS:-}" ] || return 0
	command -v trace-cmd >/dev/null || { log "trace-cmd: not in the rootfs"; return 0; }
	for ev in $TRACECMD_EVENTS; do args+=(-e "$ev"); done
	# run.sh --trace-cmd-args: more buffers (-B NAME -e ...) after the
	# top one's; word-split on purpose.
	# shellcheck disable=SC2206
	args+=(${TRACECMD_ARGS:-})
	trace-cmd record -C mono -b "${FTRACE_KB:-65536}" -o "$OUT/trace.dat" "${args[@]}" \
		>"$OUT/tracecmd.log" 2>&1 &
	TRACECMD_PID=$!
	# Recording has begun once it has enabled the events and turned
	# tracing on (its "Hit Ctrl^C" line is buffered until it exits);
	# builtins only, forks are slow under TCG.
	for a in $(seq 1 600); do
		read -r ev <"$TRACEFS/events/kvm/kvm_exit/enable" 2>/dev/null
		read -r sys <"$TRACEFS/tracing_on" 2>/dev/null
		[ "$ev" = 1 ] && [ "$sys" = 1 ] && break
		kill -0 "$TRACECMD_PID" 2>/dev/null || break
		sleep 0.1
	done
	log "trace-cmd record pid $TRACECMD_PID: $(tr '\n' ' ' <"$OUT/tracecmd.log" | head -c 200)"
	# The text instance after trace-cmd has set up its own buffers (it
	# resets the top-level one), still before LTTng starts.
	mkdir "$TEXT_INST" || { log "trace-cmd: cannot create $TEXT_INST"; return 0; }
	echo mono >"$TEXT_INST/trace_clock"
	echo "${FTRACE_KB:-65536}" >"$TEXT_INST/buffer_size_kb"
	for ev in $TRACECMD_EVENTS; do
		case $ev in
		*:*) sys=${ev%%:*}; a=$TEXT_INST/events/$sys/${ev#*:}/enable ;;
		*) a=$TEXT_INST/events/$ev/enable ;;
		esac
		echo 1 >"$a" || log "text instance: cannot enable $ev"
	done
	echo 1 >"$TEXT_INST/tracing_on"
}

tracecmd_stop() {
	[ -n "$TRACECMD_PID" ] || return 0
	echo 0 >"$TEXT_INST/tracing_on"
	kill -INT "$TRACECMD_PID"
	wait "$TRACECMD_PID"
	log "trace-cmd record rc=$? trace.dat $(du -h "$OUT/trace.dat" 2>/dev/null | cut -f1)"
	cat "$TEXT_INST/trace" >"$OUT/ftrace-text.txt"
	{
		echo "== text instance mmrtext: buffer_size_kb $(<"$TEXT_INST/buffer_size_kb") clock $(<"$TEXT_INST/trace_clock")"
		grep -H . "$TEXT_INST"/per_cpu/cpu*/stats
	} >>"$OUT/tracecmd.log" 2>&1
	echo >"$TEXT_INST/set_event"
	rmdir "$TEXT_INST" || log "cannot remove $TEXT_INST"
	log "text instance: $(grep -m1 'entries-in-buffer' "$OUT/ftrace-text.txt" | sed 's/^# *//')"
}

PERF_PID=

perf_start() {
	local ev a args=()
	[ -n "${PERF_EVENTS:-}" ] || return 0
	command -v perf >/dev/null || { log "perf: not in the rootfs"; return 0; }
	set -f	# the event names are patterns for perf, not for the shell
	for ev in $PERF_EVENTS; do args+=(-e "$ev"); done
	set +f
	perf record -a -k mono -m 4M -o "$OUT/perf.data" "${args[@]}" \
		>"$OUT/perf.log" 2>&1 &
	PERF_PID=$!
	for a in $(seq 1 120); do
		ls -l "/proc/$PERF_PID/fd" 2>/dev/null | grep -q perf_event && break
		kill -0 "$PERF_PID" 2>/dev/null || break
		sleep 0.5
	done
	# Every per-CPU event is opened before recording starts; the fds
	# appear one by one, so give the rest a moment.
	sleep 2
	log "perf record pid $PERF_PID"
}

perf_stop() {
	[ -n "$PERF_PID" ] || return 0
	kill -INT "$PERF_PID"
	wait "$PERF_PID"
	log "perf record rc=$? perf.data $(du -h "$OUT/perf.data" 2>/dev/null | cut -f1): $(tr '\n' ' ' <"$OUT/perf.log" | head -c 200)"
}

# The host's memory management for the workload (KSM, KHUGEPAGED,
# MEMCG_MB, NUMA_BAL); sets MEMCG_DIR, SWAP_KIND and HM_* for the
# manifest.
host_mm_setup() {
	local k=/sys/kernel/mm/ksm t=/sys/kernel/mm/transparent_hugepage f
	MEMCG_DIR= SWAP_KIND= HM_KSM=null HM_KHP=null HM_MEMCG=null HM_NUMA=null
	HM_COMPACT=null HM_COLLAPSE=false FRAG_PID=
	[ "${MADV_COLLAPSE:-0}" != 1 ] || HM_COLLAPSE=true
	if [ "${COMPACTION:-0}" = 1 ]; then
		# All free memory but 160 MiB: no free 2 MiB block is left, so
		# a THP fault fails and, with defrag "defer", wakes kcompactd.
		FRAG_MIB=$(awk '/^MemFree/ { m = int($2 / 1024) - 160; print (m < 64 ? 64 : m) }' /proc/meminfo)
		echo defer >/sys/kernel/mm/transparent_hugepage/defrag
		"$LAB/bin/fragment" "$FRAG_MIB" >/tmp/fragment.log 2>&1 &
		FRAG_PID=$!
		for _ in $(seq 1 600); do
			grep -q '^FRAGMENT ready' /tmp/fragment.log && break
			kill -0 "$FRAG_PID" 2>/dev/null || break
			sleep 0.5
		done
		log "compaction: $(head -c 200 /tmp/fragment.log) proactiveness=$(cat /proc/sys/vm/compaction_proactiveness 2>/dev/null || echo absent) thp defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag) free: $(awk '/^MemFree/ { print $2 " kB" }' /proc/meminfo)"
		HM_COMPACT="{\"fragment_mib\": $FRAG_MIB, \"thp_defrag\": \"defer\", \"ready\": $(grep -q '^FRAGMENT ready' /tmp/fragment.log && echo true || echo false)"
	fi
	if [ "${KSM:-0}" = 1 ]; then
		if [ -w $k/run ]; then
			echo 10000 >$k/pages_to_scan
			echo 10 >$k/sleep_millisecs
			echo 1 >$k/run
			log "ksm: run=$(cat $k/run) pages_to_scan=$(cat $k/pages_to_scan) sleep_millisecs=$(cat $k/sleep_millisecs)"
			HM_KSM="{\"run\": 1, \"pages_to_scan\": $(cat $k/pages_to_scan), \"sleep_millisecs\": $(cat $k/sleep_millisecs)"
		else
			log "ksm: no $k/run (a kernel without CONFIG_KSM)"
			HM_KSM='{"run": null, "error": "no /sys/kernel/mm/ksm"'
		fi
	fi
	if [ "${KHUGEPAGED:-0}" = 1 ]; then
		echo always >$t/enabled
		echo 10 >$t/khugepaged/scan_sleep_millisecs
		echo 10 >$t/khugepaged/alloc_sleep_millisecs
		echo 8192 >$t/khugepaged/pages_to_scan
		log "khugepaged: thp $(cat $t/enabled) scan_sleep_millisecs=$(cat $t/khugepaged/scan_sleep_millisecs) alloc_sleep_millisecs=$(cat $t/khugepaged/alloc_sleep_millisecs) pages_to_scan=$(cat $t/khugepaged/pages_to_scan)"
		HM_KHP="{\"thp_enabled\": \"always\", \"scan_sleep_millisecs\": $(cat $t/khugepaged/scan_sleep_millisecs), \"alloc_sleep_millisecs\": $(cat $t/khugepaged/alloc_sleep_millisecs), \"pages_to_scan\": $(cat $t/khugepaged/pages_to_scan)"
	fi
	if [ -n "${MEMCG_MB:-}" ]; then
		mkdir -p /sys/fs/cgroup
		mountpoint -q /sys/fs/cgroup || mount -t cgroup2 cgroup2 /sys/fs/cgroup
		if echo +memory >/sys/fs/cgroup/cgroup.subtree_control 2>/dev/null; then
			MEMCG_DIR=/sys/fs/cgroup/lab-wl
			mkdir -p $MEMCG_DIR
			echo "${MEMCG_MB}M" >$MEMCG_DIR/memory.max
		else
			log "memcg: no memory controller (a kernel without CONFIG_MEMCG)"
		fi
		# Swap: zram when the kernel has it, else a swap file.
		if modprobe zram num_devices=1 2>/dev/null && [ -w /sys/block/zram0/disksize ]; then
			echo 1G >/sys/block/zram0/disksize && mkswap /dev/zram0 >/dev/null &&
				swapon /dev/zram0 && SWAP_KIND=zram
		fi
		if [ -z "$SWAP_KIND" ]; then
			f=/lab-swapfile
			dd if=/dev/zero of=$f bs=1M count=512 status=none && chmod 600 $f &&
				mkswap $f >/dev/null && swapon $f && SWAP_KIND=file
		fi
		log "memcg: ${MEMCG_DIR:-none} memory.max=$(cat $MEMCG_DIR/memory.max 2>/dev/null) swap=${SWAP_KIND:-none} ($(grep SwapTotal /proc/meminfo | tr -s ' '))"
		HM_MEMCG="{\"cgroup\": $(json_str "$MEMCG_DIR"), \"memory_max\": $(json_str "$(cat $MEMCG_DIR/memory.max 2>/dev/null)"), \"limit_mb\": $MEMCG_MB, \"swap\": $(json_str "$SWAP_KIND"), \"swap_total_kb\": $(awk '/^SwapTotal/ { print $2 }' /proc/meminfo)"
	fi
	if [ "${NUMA_BAL:-0}" = 1 ]; then
		if [ -w /proc/sys/kernel/numa_balancing ]; then
			echo 1 >/proc/sys/kernel/numa_balancing
		fi
		log "numa: $(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l) nodes, numa_balancing=$(cat /proc/sys/kernel/numa_balancing 2>/dev/null || echo absent)"
		HM_NUMA="{\"nodes\": $(ls -d /sys/devices/system/node/node* 2>/dev/null | wc -l), \"numa_balancing\": $(cat /proc/sys/kernel/numa_balancing 2>/dev/null || echo null)"
	fi
}

# As the workload starts: proactive compaction 2 s later (COMPACTION),
# in the background.
host_mm_start() {
	[ -n "$FRAG_PID" ] || return 0
	(
		sleep 2
		if echo 100 >/proc/sys/vm/compaction_proactiveness; then
			log "compaction: proactiveness 100"
		else
			log "compaction: no vm.compaction_proactiveness (before Linux 5.9)"
		fi
	) &
}

# After the workload: the counters into the HM_* objects (closed here).
host_mm_after() {
	local k=/sys/kernel/mm/ksm t=/sys/kernel/mm/transparent_hugepage/khugepaged ev
	if [ "$HM_COMPACT" != null ]; then
		kill "$FRAG_PID" 2>/dev/null
		wait "$FRAG_PID" 2>/dev/null
		ev=$(awk '$1 ~ /^(compact_|pgmigrate_)/ { printf "%s\"%s\": %s", (n++ ? ", " : ""), $1, $2 }' /proc/vmstat)
		HM_COMPACT="$HM_COMPACT, \"proactiveness\": $(cat /proc/sys/vm/compaction_proactiveness 2>/dev/null || echo null), \"vmstat\": {$ev}}"
		log "compaction after: $HM_COMPACT"
	fi
	if [ "$HM_KSM" != null ]; then
		[ ! -r $k/pages_sharing ] ||
			HM_KSM="$HM_KSM, \"pages_shared\": $(cat $k/pages_shared), \"pages_sharing\": $(cat $k/pages_sharing), \"full_scans\": $(cat $k/full_scans)"
		HM_KSM="$HM_KSM}"
		[ ! -r $k/pages_sharing ] || echo 0 >$k/run
		log "ksm after: $HM_KSM"
	fi
	if [ "$HM_KHP" != null ]; then
		HM_KHP="$HM_KHP, \"pages_collapsed\": $(cat $t/pages_collapsed), \"full_scans\": $(cat $t/full_scans)}"
		log "khugepaged after: $HM_KHP"
	fi
	if [ "$HM_MEMCG" != null ]; then
		if [ -n "$MEMCG_DIR" ]; then
			ev=$(awk '{ printf "%s\"%s\": %s", (NR > 1 ? ", " : ""), $1, $2 }' $MEMCG_DIR/memory.events)
			HM_MEMCG="$HM_MEMCG, \"memory_events\": {$ev}, \"memory_peak\": $(cat $MEMCG_DIR/memory.peak 2>/dev/null || echo null), \"stat\": {$(awk '$1 ~ /^(pgscan|pgsteal|pgmajfault|workingset_refault_anon|thp_swpout|swap)$/ { printf "%s\"%s\": %s", (n++ ? ", " : ""), $1, $2 }' $MEMCG_DIR/memory.stat)}"
		fi
		HM_MEMCG="$HM_MEMCG, \"pswpout\": $(awk '$1 == "pswpout" { print $2 }' /proc/vmstat), \"pswpin\": $(awk '$1 == "pswpin" { print $2 }' /proc/vmstat)}"
		log "memcg after: $HM_MEMCG"
	fi
	if [ "$HM_NUMA" != null ]; then
		HM_NUMA="$HM_NUMA, \"numa_pte_updates\": $(awk '$1 == "numa_pte_updates" { print $2 }' /proc/vmstat), \"numa_hint_faults\": $(awk '$1 == "numa_hint_faults" { print $2 }' /proc/vmstat), \"numa_pages_migrated\": $(awk '$1 == "numa_pages_migrated" { print $2 }' /proc/vmstat)}"
		log "numa after: $HM_NUMA"
	fi
}

# wl_exec CMD ARGS...: exec CMD, first joining the workload's memory
# cgroup (MEMCG_DIR) if any: run in the background, $! is CMD's pid.
wl_exec() {
	[ -z "${MEMCG_DIR:-}" ] || echo "$BASHPID" >"$MEMCG_DIR/cgroup.procs" ||
		log "memcg: could not move $BASHPID into $MEMCG_DIR"
	exec "$@"
}

json_str() {
	# JSON string of $1 (one process: forks are slow under TCG).
	S=$1 awk 'BEGIN { s = ENVIRON["S"]; gsub(/\\/, "&&", s); gsub(/"/, "\\\"", s)
		gsub(/\t/, "\\t", s); gsub(/[\r\n]/, " ", s); printf "\"%s\"", s }'
}

# kvm and kvm_amd module parameters as module.name=value lines (one
# process: forks are slow under TCG).
kvm_params() {
	grep -H . /sys/module/kvm/parameters/* /sys/module/kvm_amd/parameters/* 2>/dev/null |
		sed -E 's,^/sys/module/([^/]+)/parameters/([^:]+):,\1.\2=,'
}

# The kernel's own hang reports: a soft lockup (a CPU in the kernel for
# 2 * watchdog_thresh) and a hung task (D state for
# hung_task_timeout_secs, made 30 s on every kernel: Debian's default is
# 120) print backtraces on the console.  Says which are live; a kernel
# built without them has no such file.
lockup_detectors() {
	local f v line=
	echo 30 >/proc/sys/kernel/hung_task_timeout_secs 2>/dev/null
	for f in watchdog soft_watchdog watchdog_thresh hung_task_timeout_secs; do
		v=absent
		[ -r "/proc/sys/kernel/$f" ] && read -r v <"/proc/sys/kernel/$f"
		line="$line $f=$v"
	done
	log "lockup detectors:$line"
}

main() {
	local krel kv rc t0 t1 p ev disc params

	krel=$(uname -r)
	log "uptime at init: ${T_INIT}s kernel $krel flavor=$KERNEL_FLAVOR workload=$WORKLOAD args='$WORKLOAD_ARGS'"
	log "cmdline: $(cat /proc/cmdline)"
	log "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-) flags:$(grep -m1 -o -w -E 'svm|npt|vgif|la57' /proc/cpuinfo | sort -u | tr '\n' ' ')"
	lockup_detectors
	# With KASLR the host needs this to name a hung vCPU's RIP.
	log "kernel _text=$(grep -m1 ' _text$' /proc/kallsyms | cut -d' ' -f1)"

	# Patched kernels bring their modules on the run disk.
	if [ -d "$LAB/modules/$krel" ] && [ ! -d "/lib/modules/$krel/kernel" ]; then
		mkdir -p "/lib/modules/$krel"
		mount --bind "$LAB/modules/$krel" "/lib/modules/$krel"
		log "modules from the run disk: $LAB/modules/$krel"
	fi

	# shellcheck disable=SC2086
	modprobe kvm $KVM_PARAMS; log "modprobe kvm $KVM_PARAMS rc=$?"
	# shellcheck disable=SC2086
	modprobe kvm_amd $KVM_AMD_PARAMS; log "modprobe kvm_amd $KVM_AMD_PARAMS rc=$?"
	kvm_params | sed 's/^/LAB-param: /'
	log "thp: $(cat /sys/kernel/mm/transparent_hugepage/enabled) defrag: $(cat /sys/kernel/mm/transparent_hugepage/defrag)"
	[ -c /dev/kvm ] || { log "no /dev/kvm"; return 1; }
	if [ -n "${HUGEPAGES:-}" ]; then
		echo "$HUGEPAGES" >/proc/sys/vm/nr_hugepages
		read -r HP_RESERVED </proc/sys/vm/nr_hugepages
		log "hugetlb: $HP_RESERVED of $HUGEPAGES 2 MiB pages reserved"
	fi
	host_mm_setup

	# LTTng: load the tracer and the probes we need (the TDP MMU probe is
	# not in lttng-sessiond's default list), then only those.
	t0=$(cut -d' ' -f1 /proc/uptime)
	# --probes debian: what Debian 12's lttng-modules-dkms builds of KVM
	# (its dkms.conf has lttng-probe-kvm only, no x86 probes).
	if [ "${PROBES:-lab}" = debian ]; then
		mods="lttng-tracer lttng-probe-kvm" kprobes=kvm
	else
		mods="lttng-tracer lttng-probe-kvm lttng-probe-kvm-x86 lttng-probe-kvm-x86-mmu lttng-probe-kvm-x86-tdp-mmu"
		kprobes=kvm,kvm-x86,kvm-x86-mmu,kvm-x86-tdp-mmu
	fi
	# The state dump's events (lttng_statedump_*) are in their own probe.
	if [ "${STATEDUMP:-0}" = 1 ]; then
		mods="$mods lttng-probe-statedump" kprobes=$kprobes,statedump
	fi
	log "lttng probes: $kprobes"
	for p in $mods $EXTRA_MODULES; do
		modprobe "$p" || log "modprobe $p failed"
	done
	export LTTNG_KMOD_PROBES=$kprobes${EXTRA_PROBES:+,$EXTRA_PROBES}
	lttng-sessiond --daemonize || { log "lttng-sessiond failed"; return 1; }
	ref_start || return 1
	LABMAN=$OUT/manifest.json
	if [ "${CAPTURE_TOOL:-0}" = 1 ]; then
		LABMAN=$OUT/lab-manifest.json
		# shellcheck disable=SC2046,SC2086
		MMUREPLAY_SAMPLER=$LAB/bin/kvm-stats-sampler \
			"$LAB/bin/mmureplay-capture" start -o "$OUT" --session lab \
			--workload "$WORKLOAD $WORKLOAD_ARGS" \
			$([ "${UST:-0}" = 1 ] || [ "${STATS:-0}" = 1 ] || echo --no-ust) \
			$([ "${STATS:-0}" = 1 ] && echo --stats) $CAPTURE_ARGS
		rc=$?
		log "mmureplay-capture start rc=$rc"
		[ "$rc" -eq 0 ] || return 1
		lttng list lab -k | sed -n '/Recording event rules/,$p' | grep -E '^\s+\S' |
			sed 's/^/LAB-event: /'
		ftrace_start
		tracecmd_start
	elif [ -n "${ATTACH_AFTER:-}" ]; then
		log "late start: the session is created ${ATTACH_AFTER}s after the workload starts"
	else
		lab_session || return 1
	fi
	t1=$(cut -d' ' -f1 /proc/uptime)
	log "lttng setup took $(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.2f", b - a }')s ($(lsmod | grep -c '^lttng') lttng modules)"
	run_workload
	host_mm_after
	if [ "${CAPTURE_TOOL:-0}" = 1 ]; then
		lttng list lab >"$OUT/lttng-list.txt" 2>&1
		timeout 300 "$LAB/bin/mmureplay-capture" stop -o "$OUT" --session lab ||
			log "mmureplay-capture stop failed"
		ref_stop
		ftrace_stop
		tracecmd_stop
		disc=$(sed -n 's/.*"discarded_events": \([0-9]*\).*/\1/p' "$OUT/manifest.json")
		log "mmureplay-capture stopped, manifest: $(tr -d '\n' <"$OUT/manifest.json" | head -c 300)"
	else
		lab_stop
	fi
	kill "$(cat /var/run/lttng/lttng-sessiond.pid 2>/dev/null)" 2>/dev/null
	log "lttng destroyed"
	log "trace: $(du -sh "$OUT/trace" | cut -f1)"
	log "meminfo: $(grep -E 'MemFree|AnonHugePages' /proc/meminfo | tr -s ' ' | tr '\n' ' ')"
	dmesg | grep -E -i 'kvm|svm|lttng|warning|bug|oops' | tail -n 30 | sed 's/^/LAB-dmesg: /'
	lab_manifest >"$LABMAN"
	return 0
}

# The lab's own session: kernel channel ch0 (discard, NUM_SUBBUF x
# SUBBUF_KB per CPU) with EVENTS and SYSCALLS, the UST channel with UST=1;
# started.  SNAPSHOT_AT: a snapshot session, ch0 in overwrite mode, its
# snapshots under /out/snapshot.
lab_session() {
	if [ -n "${SNAPSHOT_AT:-}" ]; then
		lttng create lab --snapshot --output="$OUT/snapshot" >/dev/null || return 1
	else
		lttng create lab --output="$OUT/trace" >/dev/null || return 1
	fi
	lttng enable-channel -k ch0 "--${CHANNEL_MODE:-discard}" --subbuf-size="${SUBBUF_KB}K" \
		--num-subbuf="$NUM_SUBBUF" >/dev/null || return 1
	# shellcheck disable=SC2086
	for ev in $EVENTS; do
		lttng enable-event -k -c ch0 "$ev" >/dev/null || log "enable-event $ev failed"
	done
	[ -z "$SYSCALLS" ] || lttng enable-event -k -c ch0 --syscall "$SYSCALLS" >/dev/null ||
		log "enable-event --syscall $SYSCALLS failed"
	# pid: the process (so the VM) of each event; tid: its thread.
	lttng add-context -k -c ch0 -t pid -t tid -t procname >/dev/null || log "add-context failed"
	# A late start lists them once tracing runs (the listing is slow).
	[ -n "${ATTACH_AFTER:-}" ] || list_events
	if [ "${UST:-0}" = 1 ] || [ "${STATS:-0}" = 1 ]; then
		lttng enable-channel -u uch0 --buffers-uid --discard --subbuf-size=1M \
			--num-subbuf="${UST_BUF_MB:-8}" >/dev/null || { log "UST channel failed"; return 1; }
		set -f	# the event names are patterns for lttng, not for the shell
		for ev in ${UST_EVENTS:-mmureplay:*}; do
			lttng enable-event -u -c uch0 "$ev" >/dev/null || log "enable-event -u $ev failed"
		done
		set +f
		lttng add-context -u -c uch0 -t vtid -t procname >/dev/null ||
			log "add-context -u failed"
		log "UST channel uch0: ${UST_EVENTS:-mmureplay:*}, ${UST_BUF_MB:-8} MiB per CPU"
	fi
	ftrace_start
	tracecmd_start
	perf_start
	[ -z "${ATTACH_AFTER:-}" ] || since_workload LATE_START_AT
	lttng start >/dev/null || return 1
	if [ -n "${ATTACH_AFTER:-}" ]; then
		since_workload LATE_STARTED_AT
		list_events
	fi
}

# MEMSLOT_REF: the session "ref", kvm_memslot_change only, from before
# the workload (created first: `lttng create lab` then makes "lab" the
# current session again).
ref_start() {
	[ "${MEMSLOT_REF:-0}" = 1 ] || return 0
	lttng create ref --output="$OUT/ref-trace" >/dev/null || { log "ref session: create failed"; return 1; }
	lttng enable-channel -k -s ref refch --discard --subbuf-size=64K --num-subbuf=4 >/dev/null ||
		{ log "ref session: enable-channel failed"; return 1; }
	lttng enable-event -k -s ref -c refch kvm_memslot_change >/dev/null ||
		{ log "ref session: enable-event kvm_memslot_change failed"; return 1; }
	# pid: the VM's process (the state dump's vm_pid is the creator's).
	lttng add-context -k -s ref -c refch -t pid -t tid -t procname >/dev/null ||
		log "ref session: add-context failed"
	lttng start ref >/dev/null || { log "ref session: start failed"; return 1; }
	log "ref session: kvm_memslot_change into ref-trace, started"
}

# Stop and destroy "ref" after the lab's session stopped; sets ref_disc.
ref_stop() {
	[ "${MEMSLOT_REF:-0}" = 1 ] || return 0
	timeout 60 lttng stop ref >/dev/null 2>&1 || log "ref session: stop failed or timed out"
	ref_disc=$(lttng list ref 2>&1 | sed -n 's/.*Discarded events: *\([0-9]*\).*/\1/p' |
		awk '{ n += $1 } END { if (NR) print n }')
	timeout 60 lttng destroy ref >/dev/null
	log "ref session stopped (discarded: ${ref_disc:-?})"
}

list_events() {
	lttng list lab -k | sed -n '/Recording event rules/,$p' | grep -E '^\s+\S' |
		sed 's/^/LAB-event: /'
}

# Times for ATTACH_AFTER / SNAPSHOT_AT in centiseconds of /proc/uptime;
# builtins only (forks are slow under TCG).  to_cs VAR SECONDS.
to_cs() {
	local i=${2%%.*} f=
	[ "$i" = "$2" ] || f=${2#*.}
	f=${f}00
	printf -v "$1" '%d' $((10#${i:-0} * 100 + 10#${f:0:2}))
}

now_cs() {
	local up _
	read -r up _ </proc/uptime
	to_cs "$1" "$up"
}

# since_workload VAR: seconds since the workload started (WL_CS).
since_workload() {
	local n
	now_cs n
	n=$((n - WL_CS))
	printf -v "$1" '%d.%02d' $((n / 100)) $((n % 100))
}

# ATTACH_AFTER: create and start the session S seconds after the workload
# started; SNAPSHOT_AT: record the snapshot then.  The workload keeps
# running meanwhile.
late_step() {
	local s=${ATTACH_AFTER:-$SNAPSHOT_AT} target n t
	to_cs target "$s"
	target=$((WL_CS + target))
	now_cs n
	if [ "$n" -lt "$target" ]; then
		n=$((target - n))
		printf -v t '%d.%02d' $((n / 100)) $((n % 100))
		sleep "$t"
	fi
	kill -0 "$wpid" 2>/dev/null || log "the workload ended before ${s}s"
	if [ -n "${ATTACH_AFTER:-}" ]; then
		since_workload LATE_CREATE_AT
		log "late start: creating the session at ${LATE_CREATE_AT}s"
		lab_session || log "late start: the session failed"
		log "late start: lttng start called at ${LATE_START_AT:-?}s, returned at ${LATE_STARTED_AT:-?}s after the workload's start"
	else
		since_workload SNAP_RECORD_AT
		t=$(timeout 120 lttng snapshot record -s lab 2>&1)
		since_workload SNAP_RECORDED_AT
		log "snapshot: lttng snapshot record called at ${SNAP_RECORD_AT}s, returned at ${SNAP_RECORDED_AT}s after the workload's start: $t"
	fi
}

# mono_ns VAR: CLOCK_MONOTONIC in ns, ktime_get() (the clock of LTTng's
# kernel tracer): /proc/timer_list's third line "now at N nsecs";
# builtins only.  Empty when there is no such file.
mono_ns() {
	local _a _b n=
	{ read -r _a; read -r _a; read -r _a _b n _a; } </proc/timer_list 2>/dev/null
	[[ $n =~ ^[0-9]+$ ]] || n=
	printf -v "$1" '%s' "$n"
}

# One VM of a multi run (in a subshell): start its workload, say its
# pid and start time (/tmp/vm-I.pid), echo its log to the console,
# wait; rc and end time into /tmp/vm-I.end.
run_vm() {
	local i=$1 wl args bin p s e r
	eval "wl=\$MULTI_WL_$i args=\$MULTI_ARGS_$i bin=\${MULTI_BIN_$i:-\$wl}"
	mono_ns s
	# shellcheck disable=SC2086
	if [ "$bin" != "$wl" ]; then
		# run.sh multi --ust: the UST variant registers with the session.
		wl_exec env LTTNG_UST_REGISTER_TIMEOUT=30000 LTTNG_UST_ALLOW_BLOCKING=1 \
			"$LAB/bin/$bin" $args >"$OUT/workload-$i.log" 2>&1 &
	else
		wl_exec "$LAB/bin/$wl" $args >"$OUT/workload-$i.log" 2>&1 &
	fi
	p=$!
	echo "$p ${s:-null}" >"/tmp/vm-$i.pid"
	tail -n +1 -f --pid="$p" "$OUT/workload-$i.log" | sed -u "s/^/VM $i: /" &
	wait "$p"
	r=$?
	mono_ns e
	echo "$r ${e:-null}" >"/tmp/vm-$i.end"
	wait
}

# Run the MULTI_N workloads at once (in /out) and wait for all; sets rc
# and VM_PID_I, VM_START_I, VM_END_I, VM_RC_I.
run_multi() {
	local i n=$MULTI_N wrap=() forced=() done_at=() deadline alive p s r e wl args

	log "workload start: $n VMs: $WORKLOAD_ARGS"
	for i in $(seq 1 "$n"); do
		eval "log \"VM $i: \$MULTI_WL_$i \$MULTI_ARGS_$i\""
	done
	cd "$OUT" || return 1
	echo 1 >/proc/sys/kernel/softlockup_all_cpu_backtrace 2>/dev/null
	dmesg -n 7
	now_cs WL_CS
	printf -v WL_UP '%d.%02d' $((WL_CS / 100)) $((WL_CS % 100))
	rm -f /tmp/vm-*.pid /tmp/vm-*.end
	for i in $(seq 1 "$n"); do
		run_vm "$i" &
		wrap[i]=$!
	done
	deadline=$((SECONDS + TIMEOUT))
	while :; do
		alive=0
		for i in $(seq 1 "$n"); do
			kill -0 "${wrap[i]}" 2>/dev/null || continue
			alive=1
			[ -z "${forced[i]:-}" ] && [ -f "/tmp/vm-$i.pid" ] || continue
			read -r p s <"/tmp/vm-$i.pid"
			if [ "$SECONDS" -ge "$deadline" ]; then
				log "VM $i: workload timeout (${TIMEOUT}s): killing it"
				kill -9 "$p"
				forced[i]=124
				continue
			fi
			if [ -z "${done_at[i]:-}" ] && grep -q ' RESULT ' "$OUT/workload-$i.log"; then
				done_at[i]=$SECONDS
			fi
			if [ -n "${done_at[i]:-}" ] && [ $((SECONDS - done_at[i])) -ge 60 ]; then
				log "VM $i: workload did not exit 60 s after its RESULT line (stuck in the kernel?)"
				kill -9 "$p"
				forced[i]=125
			fi
		done
		[ "$alive" = 1 ] || break
		sleep 1
	done
	# Only the VMs' wrappers (trace-cmd or perf may run in the background).
	wait "${wrap[@]}"
	sleep 0.2
	dmesg -n 4
	rc=0
	: >"$OUT/workload.log"
	for i in $(seq 1 "$n"); do
		p=null s=null r=null e=null
		[ ! -f "/tmp/vm-$i.pid" ] || read -r p s <"/tmp/vm-$i.pid"
		[ ! -f "/tmp/vm-$i.end" ] || read -r r e <"/tmp/vm-$i.end"
		r=${forced[i]:-$r}
		[ "$r" != null ] || r=1
		printf -v "VM_PID_$i" '%s' "$p"
		printf -v "VM_START_$i" '%s' "$s"
		printf -v "VM_END_$i" '%s' "$e"
		printf -v "VM_RC_$i" '%s' "$r"
		[ "$rc" -ne 0 ] || rc=$r
		eval "wl=\$MULTI_WL_$i args=\$MULTI_ARGS_$i"
		log "VM $i: $wl pid $p rc=$r monotonic ${s}..${e} ns"
		{
			echo "== VM $i: $wl $args (pid $p, rc $r)"
			cat "$OUT/workload-$i.log"
		} >>"$OUT/workload.log"
	done
	log "workload rc=$rc at $(cut -d' ' -f1 /proc/uptime)"
}

# The manifest's "vms" (multi runs; nothing otherwise), beginning with a
# newline, after "workload_rc".
vms_json() {
	local i wl args p s e r sep=
	[ -n "${MULTI_N:-}" ] || return 0
	printf '\n  "vms_clock": "monotonic",\n  "vms": ['
	for i in $(seq 1 "$MULTI_N"); do
		eval "wl=\$MULTI_WL_$i args=\$MULTI_ARGS_$i p=\${VM_PID_$i:-null} s=\${VM_START_$i:-null} e=\${VM_END_$i:-null} r=\${VM_RC_$i:-null}"
		printf '%s\n    {"vm": %d, "workload": %s, "args": %s, "pid": %s, "start_ns": %s, "end_ns": %s, "rc": %s, "log": "workload-%d.log"}' \
			"$sep" "$i" "$(json_str "$wl")" "$(json_str "$args")" "$p" "$s" "$e" "$r" "$i"
		sep=,
	done
	printf '\n  ],'
}

# Run the workload (in /out) and wait for it; sets rc.
run_workload() {
	local wpid tpid spid deadline done_at

	host_mm_start
	[ -z "${MULTI_N:-}" ] || { run_multi; return; }
	log "workload start: $WORKLOAD $WORKLOAD_ARGS"
	cd "$OUT" || return 1
	# Kernel backtraces (soft lockups) on the console from here on.
	echo 1 >/proc/sys/kernel/softlockup_all_cpu_backtrace 2>/dev/null
	dmesg -n 7
	now_cs WL_CS
	printf -v WL_UP '%d.%02d' $((WL_CS / 100)) $((WL_CS % 100))
	# shellcheck disable=SC2086
	if [ -n "${SELFTEST:-}" ]; then
		wl_exec "$SELFTEST_PATH" $SELFTEST_ARGS >"$OUT/workload.log" 2>&1 &
	elif [ "${UST:-0}" = 1 ]; then
		wl_exec env LTTNG_UST_REGISTER_TIMEOUT=30000 LTTNG_UST_ALLOW_BLOCKING=1 \
			"$LAB/bin/${WORKLOAD_BIN:-$WORKLOAD}" $WORKLOAD_ARGS >"$OUT/workload.log" 2>&1 &
	else
		wl_exec "$LAB/bin/${WORKLOAD_BIN:-$WORKLOAD}" $WORKLOAD_ARGS >"$OUT/workload.log" 2>&1 &
	fi
	wpid=$!
	spid=
	# With the capture tool, its --stats runs the sampler.
	if [ "${STATS:-0}" = 1 ] && [ "${CAPTURE_TOOL:-0}" != 1 ]; then
		LTTNG_UST_REGISTER_TIMEOUT=30000 LTTNG_UST_ALLOW_BLOCKING=1 \
			"$LAB/bin/kvm-stats-sampler" --debugfs --period-ms 100 \
			>"$OUT/stats-sampler.log" 2>&1 &
		spid=$!
	fi
	tail -n +1 -f --pid=$wpid "$OUT/workload.log" &
	tpid=$!
	[ -z "${ATTACH_AFTER:-}${SNAPSHOT_AT:-}" ] || late_step
	# Wait for it, but do not hang forever on a process stuck in the
	# kernel: give up 60 s after its RESULT line, or after TIMEOUT.
	deadline=$((SECONDS + TIMEOUT)) done_at= rc=
	# SIMULATE_HANG=1 (run.sh's MMUREPLAY_LAB_SIMULATE_HANG, for testing
	# the host's hang watch): stop the workload, the heartbeat and this
	# loop, silently.
	if [ "${SIMULATE_HANG:-0}" = 1 ]; then
		kill -STOP "$wpid" "$tpid" "$HEARTBEAT_PID"
		sleep 100000
	fi
	while kill -0 "$wpid" 2>/dev/null; do
		if [ "$SECONDS" -ge "$deadline" ]; then
			log "workload timeout (${TIMEOUT}s): killing it"
			kill -9 "$wpid"
			rc=124
			break
		fi
		if [ -z "$done_at" ] && grep -q ' RESULT ' "$OUT/workload.log"; then
			done_at=$SECONDS
		fi
		if [ -n "$done_at" ] && [ $((SECONDS - done_at)) -ge 60 ]; then
			log "workload did not exit 60 s after its RESULT line (stuck in the kernel?)"
			rc=125
			break
		fi
		sleep 1
	done
	if [ -z "$rc" ]; then
		wait "$wpid"
		rc=$?
	fi
	sleep 0.2
	if [ -n "$spid" ]; then
		kill "$spid" 2>/dev/null
		wait "$spid" 2>/dev/null
		log "kvm-stats-sampler stopped ($(wc -l <"$OUT/stats-sampler.log") log lines)"
	fi
	kill "$tpid" 2>/dev/null
	dmesg -n 4
	log "workload rc=$rc at $(cut -d' ' -f1 /proc/uptime)"
}

# Stop the lab's own session; sets disc (discarded events).
lab_stop() {
	timeout 120 lttng stop lab >/dev/null 2>&1 || log "lttng stop failed or timed out"
	ftrace_stop
	tracecmd_stop
	perf_stop
	lttng list lab >"$OUT/lttng-list.txt" 2>&1
	grep -E 'Event-loss mode|Discarded events|Lost packets' "$OUT/lttng-list.txt"
	disc=$(sed -n 's/.*Discarded events: *\([0-9]*\).*/\1/p' "$OUT/lttng-list.txt" |
		awk '{ n += $1 } END { if (NR) print n }')
	lost=$(sed -n 's/.*Lost packets: *\([0-9]*\).*/\1/p' "$OUT/lttng-list.txt" |
		awk '{ n += $1 } END { if (NR) print n }')
	log "lttng stopped"
	ref_stop
	timeout 60 lttng destroy lab >/dev/null
	[ -z "${SNAPSHOT_AT:-}" ] || snapshot_to_trace
}

# The snapshot (/out/snapshot/NAME/kernel) becomes /out/trace/kernel.
snapshot_to_trace() {
	local k
	for k in "$OUT"/snapshot/*/kernel; do
		[ -d "$k" ] || { log "snapshot: no snapshot in $OUT/snapshot"; return 0; }
		if [ -z "${SNAP_NAME:-}" ]; then
			SNAP_NAME=${k%/kernel}
			SNAP_NAME=${SNAP_NAME##*/}
			mkdir -p "$OUT/trace"
			mv "$k" "$OUT/trace/kernel"
		else
			log "snapshot: more than one snapshot, kept $SNAP_NAME"
		fi
	done
	rm -rf "$OUT/snapshot"
	log "snapshot $SNAP_NAME is trace/kernel"
}

# The lab's manifest (run facts: workload, knobs, channel) on stdout.
lab_manifest() {
	local params

	params=$(kvm_params | awk '{
		i = index($0, "="); k = substr($0, 1, i - 1); v = substr($0, i + 1)
		gsub(/\\/, "&&", v); gsub(/"/, "\\\"", v)
		printf "%s    \"%s\": \"%s\"", (NR > 1 ? ",\n" : ""), k, v }')
	cat <<EOF
{
  "schema": "mmureplay-lab-manifest/1",
  "tracer": "lttng-kernel",
  "lttng_tools": $(json_str "$(lttng --version 2>/dev/null | head -n 1)"),
  "lttng_modules": $(json_str "$(cat /sys/module/lttng_tracer/version 2>/dev/null || modinfo -F version lttng-tracer 2>/dev/null)"),
  "kernel_release": $(json_str "$krel"),
  "kernel_version": $(json_str "$(cat /proc/version)"),
  "kernel_flavor": $(json_str "$KERNEL_FLAVOR"),
  "kernel_series": $(json_str "${KERNEL_SERIES:-6.1}"),
  "kernel_cmdline": $(json_str "$(cat /proc/cmdline)"),
  "cpu_vendor": $(json_str "$(grep -m1 vendor_id /proc/cpuinfo | cut -d: -f2- | tr -d ' ')"),
  "cpu_model": $(json_str "$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //')"),
  "tdp": "npt",
  "host": "qemu-tcg-lab",
  "workload": $(json_str "$WORKLOAD"),
  "workload_args": $(json_str "$WORKLOAD_ARGS"),
  "workload_rc": $rc,$(vms_json)
  "knobs": $(json_str "$KNOBS"),
  "kvm_module_args": $(json_str "$KVM_PARAMS"),
  "kvm_params": {
$params
  },
  "thp_enabled": $(json_str "$(cat /sys/kernel/mm/transparent_hugepage/enabled)"),
  "events": $(json_str "$EVENTS"),
  "lttng_probes": $(json_str "${PROBES:-lab}"),
  "syscalls": $(json_str "$SYSCALLS"),
  "contexts": "pid,tid,procname",
  "channel": {"name": "ch0", "mode": "${CHANNEL_MODE:-discard}", "subbuf_size_mb": $SUBBUF_MB, "per_cpu_buffer_mb": $BUF_MB, "subbuf_size_kb": $SUBBUF_KB, "num_subbuf": $NUM_SUBBUF, "cpus": $(nproc)},
  "attach_after_s": ${ATTACH_AFTER:-null},
  "late_start": $(if [ -n "${ATTACH_AFTER:-}" ]; then echo "{\"workload_start_uptime_s\": ${WL_UP:-null}, \"create_at_s\": ${LATE_CREATE_AT:-null}, \"start_at_s\": ${LATE_START_AT:-null}, \"started_at_s\": ${LATE_STARTED_AT:-null}}"; else echo null; fi),
  "snapshot_at_s": ${SNAPSHOT_AT:-null},
  "statedump": $([ "${STATEDUMP:-0}" = 1 ] && echo true || echo false),
  "memslot_ref": $(if [ "${MEMSLOT_REF:-0}" = 1 ]; then echo "{\"session\": \"ref\", \"events\": \"kvm_memslot_change\", \"channel\": {\"name\": \"refch\", \"mode\": \"discard\", \"subbuf_size_kb\": 64, \"num_subbuf\": 4}, \"contexts\": \"pid,tid,procname\", \"discarded\": ${ref_disc:-null}, \"trace_dir\": \"ref-trace\"}"; else echo null; fi),
  "snapshot": $(if [ -n "${SNAPSHOT_AT:-}" ]; then echo "{\"workload_start_uptime_s\": ${WL_UP:-null}, \"record_at_s\": ${SNAP_RECORD_AT:-null}, \"recorded_at_s\": ${SNAP_RECORDED_AT:-null}, \"name\": $(json_str "${SNAP_NAME:-}"), \"per_cpu_buffer_kb\": $((SUBBUF_KB * NUM_SUBBUF))}"; else echo null; fi),
  "lost_packets": ${lost:-null},
  "workload_bin": $(json_str "${SELFTEST_PATH:-${WORKLOAD_BIN:-$WORKLOAD}}"),
  "selftest": $(if [ -n "${SELFTEST:-}" ]; then echo "{\"name\": $(json_str "$SELFTEST"), \"args\": $(json_str "$SELFTEST_ARGS"), \"path\": $(json_str "$SELFTEST_PATH"), \"source\": $(json_str "${SELFTEST_SRC:-}"), \"linkage\": \"static\"}"; else echo null; fi),
  "host_mm": {"ksm": $HM_KSM, "khugepaged": $HM_KHP, "memcg": $HM_MEMCG, "numa_balancing": $HM_NUMA, "compaction": $HM_COMPACT, "madv_collapse": $HM_COLLAPSE},
  "hugepages": $(if [ -n "${HUGEPAGES:-}" ]; then echo "{\"page_kb\": 2048, \"asked\": $HUGEPAGES, \"reserved\": ${HP_RESERVED:-null}}"; else echo null; fi),
  "ust": $(if [ "${UST:-0}" = 1 ]; then echo "{\"channel\": {\"name\": \"uch0\", \"mode\": \"discard\", \"buffers\": \"per-uid\", \"subbuf_size_mb\": 1, \"per_cpu_buffer_mb\": ${UST_BUF_MB:-8}}, \"events\": $(json_str "${UST_EVENTS:-mmureplay:*}"), \"contexts\": \"vtid,procname\", \"trace_dir\": \"trace/ust\"}"; else echo null; fi),
  "discarded_events": ${disc:-null},
  "ftrace": $(if [ "$FTRACE_ON" = 1 ]; then echo "{\"events\": $(json_str "$FTRACE_EVENTS"), \"buffer_size_kb\": ${FTRACE_KB:-65536}, \"trace_clock\": \"mono\", \"file\": \"ftrace.txt\"}"; else echo null; fi),
  "phase_markers": "syscall_entry_ioctl with fd = 4294967295 (-1) and cmd = 0x4d520000 | phase (ret -9 EBADF); the MARK lines of workload.log name the phases",
  "perf": $(if [ -n "$PERF_PID" ]; then echo "{\"events\": $(json_str "$PERF_EVENTS"), \"clock\": \"mono\", \"file\": \"perf.data\", \"version\": $(json_str "$(perf version 2>/dev/null)")}"; else echo null; fi),
  "trace_cmd": $(if [ -n "$TRACECMD_PID" ]; then echo "{\"events\": $(json_str "$TRACECMD_EVENTS"), \"buffer_size_kb\": ${FTRACE_KB:-65536}, \"trace_clock\": \"mono\", \"file\": \"trace.dat\", \"text\": \"ftrace-text.txt\", \"version\": $(json_str "$(trace-cmd -h 2>&1 | sed -n 's/^trace-cmd version //p' | head -n 1)")}"; else echo null; fi),
  "capture_tool": $([ "${CAPTURE_TOOL:-0}" = 1 ] && echo true || echo false),
  "stats_sampler": $([ "${STATS:-0}" = 1 ] && echo true || echo false),
  "trace_dir": "trace"
}
EOF
}

# The heartbeat for the host's hang watch: it stops only when the guest
# stops scheduling it.  Builtins but sleep; outside main's pipe, so that
# tee sees its end when main ends.
(
	while sleep 10; do
		read -r up _ </proc/uptime
		echo "LAB: [$up] alive"
	done
) >/dev/console 2>&1 &
HEARTBEAT_PID=$!
main 2>&1 | tee /tmp/console.log
cp /tmp/console.log "$OUT/console.log"
tar -cf /dev/vdc -C "$OUT" . && sync &&
	echo "LAB: [$(cut -d' ' -f1 /proc/uptime)] results written to /dev/vdc ($(du -sh "$OUT" | cut -f1))"
kill "$HEARTBEAT_PID" 2>/dev/null
echo "LAB: DONE"
poweroff_now
