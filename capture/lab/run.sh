#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# run.sh - record one workload in the mmureplay QEMU TCG lab.
#
# Usage: capture/lab/run.sh WORKLOAD [options] [-- WORKLOAD_ARGS...]
#        capture/lab/run.sh selftest TEST [options] [-- TEST_ARGS...]
#        capture/lab/run.sh multi WORKLOAD WORKLOAD... [options] [--vm-args VM:ARGS]...
#
#   WORKLOAD              basic | bgsnapshot | nxrecovery (capture/workloads/)
#   selftest TEST         one of KVM's own selftests instead
#                         (tools/testing/selftests/kvm of the booted
#                         kernel's series, built by build.sh into the
#                         rootfs as /opt/kvm-selftests/SERIES/; TEST is its
#                         path there, e.g. kvm_page_table_test or
#                         x86_64/nx_huge_pages_test; BUILD-STATUS there
#                         lists what built), run with TEST_ARGS inside the
#                         same LTTng session as a workload.  manifest.json:
#                         workload "selftest", workload_args "TEST
#                         TEST_ARGS", and "selftest" (name, args, path,
#                         the source it was built from).  Default output
#                         ./lab-out/selftest-TEST-KERNEL
#   multi WORKLOAD...     several VMs in one capture: 2 to 4 workloads
#                         (words or a comma list: multi nxrecovery
#                         bgsnapshot, multi nxrecovery,bgsnapshot; one may
#                         come twice), each its own process and so its
#                         own VM, started at once inside the one LTTng
#                         session; the run waits for all of them (each
#                         with --timeout).  kvm's parameters are the union
#                         of the workloads' defaults and --knob (one kvm
#                         module: nxrecovery's apply to every VM).  With
#                         --ust each bgsnapshot VM runs bgsnapshot-ust
#                         (its latency probe; one VM at least must be
#                         bgsnapshot).  Not with selftest, `--`, --stats,
#                         --capture-tool, --attach-after, --snapshot-at.
#                         manifest.json: workload "multi", workload_args
#                         the comma list, workload_rc the first VM's
#                         non-zero rc (else 0), and "vms": per VM its
#                         workload, args, pid, start and end time
#                         (CLOCK_MONOTONIC ns, the kernel trace's clock,
#                         just before its start and when its wait
#                         returned), rc and log (workload-N.log; the
#                         console shows its lines as "VM N: ...").
#                         Default output ./lab-out/multi-W1-W2...-KERNEL
#   --vm-args VM:ARGS     (multi) the workload arguments of VM, its
#                         position (1..4) or a workload's name (every VM
#                         of it; a position wins), split at spaces; e.g.
#                         --vm-args 'nxrecovery:--plain 8 --dirty 4'.
#                         Default per workload, as for a single run
#   --hugepages N         reserve N 2 MiB hugetlb pages
#                         (/proc/sys/vm/nr_hugepages) before the workload;
#                         a selftest whose TEST_ARGS name a hugetlb backing
#                         (-s anonymous_hugetlb..., shared_hugetlb) gets
#                         256 (512 MiB of the guest's 2 GiB) unless given.
#                         manifest.json: "hugepages" (asked, reserved)
#   --ksm                 the host's (L1's) KSM on while the workload runs,
#                         scanning fast (/sys/kernel/mm/ksm: run 1,
#                         pages_to_scan 10000, sleep_millisecs 10), and
#                         the workload's guest RAM MADV_MERGEABLE (its
#                         --mergeable, added to its arguments): ksmd
#                         merges the identical pages under the running VM
#                         (notifier calls by the thread ksmd)
#   --khugepaged          THP enabled=always and khugepaged scanning fast
#                         (scan_sleep_millisecs 10, alloc_sleep_millisecs
#                         10, pages_to_scan 8192); basic and nxrecovery
#                         get --hugepage-late (their RAM filled as 4 KiB
#                         pages, MADV_HUGEPAGE once the guest runs), so
#                         khugepaged collapses it under the running VM
#                         (notifier calls by the thread khugepaged);
#                         bgsnapshot keeps its 4 KiB pages
#   --memcg-limit MB      run the workload in a cgroup v2 (cgroup2 on
#                         /sys/fs/cgroup, lab-wl) with memory.max MB, with
#                         swap: zram (1 GiB, lzo-rle) when the kernel has
#                         it, else a 512 MiB swap file on the root image;
#                         reclaim then unmaps guest RAM under the VM
#                         (notifier calls by the workload's own threads in
#                         memcg reclaim, or by kswapd*).  Also records
#                         the mm_vmscan_* reclaim events (lttng-probe-vmscan)
#   --numa-balancing      two NUMA nodes for the L1 guest (QEMU -numa, 1 GiB
#                         and one vCPU each) and kernel.numa_balancing=1:
#                         the scanner's PROT_NONE hinting unmaps guest
#                         RAM (notifier calls by the workload's threads,
#                         its vCPU's inside KVM_RUN, outside any
#                         mprotect/madvise)
#   --compaction          kcompactd migrates guest RAM: before the
#                         workload, capture/workloads/fragment holds
#                         every other page of all the L1 guest's free
#                         memory but 160 MiB (so the workload's 4 KiB
#                         pages land in pageblocks shared with its, and
#                         no free 2 MiB block is left), THP defrag is
#                         "defer" (a failed THP fault wakes kcompactd),
#                         and 2 s after the workload starts
#                         vm.compaction_proactiveness is set to 100
#                         (notifier calls by the thread kcompactd0)
#   --madv-collapse       basic and nxrecovery get --collapse (their RAM
#                         filled as 4 KiB pages, then MADV_COLLAPSE of
#                         the whole of it once the guest runs): the VMM
#                         collapses its own guest RAM into THPs (notifier
#                         calls by the VMM's thread, inside madvise(2))
#                         These six are recorded in manifest.json's
#                         "host_mm" (settings, and the counters after the
#                         run: KSM pages_sharing, khugepaged
#                         pages_collapsed, memory.events, swap used);
#                         verify.sh counts the notifier calls by thread
#                         name and checks the ones each must show
#   --kernel KERNEL       stock (default): Debian's 6.1 kernel; patched:
#                         the patched 6.1 kernel staged by build.sh
#                         --kernel patched; 6.12: Debian's 6.12 kernel
#                         (build.sh --kernel 6.12); 6.12-patched: the
#                         patched 6.12 kernel (build.sh --kernel
#                         6.12-patched).  6.1 and 6.1-patched are stock
#                         and patched.  manifest.json records the
#                         kernel's release, its flavor (stock, patched)
#                         and its series (6.1, 6.12)
#   --knob NAME=VAL       kvm module parameter (repeatable); NAME may be
#                         kvm.X or kvm_amd.X, a bare X means kvm.X
#                         (e.g. --knob perm_upgrade_skip_zap=Y)
#   --out DIR             output directory (default ./lab-out/WORKLOAD-KERNEL)
#   --buf-mb N            LTTng per-CPU buffer size (default 64)
#   --event NAME          extra kernel event (repeatable; default set:
#                         kvm_* and the ioctl/mprotect/madvise syscalls)
#   --timeout S           workload timeout inside the guest (default 300)
#   --probes lab|debian   the lttng-modules probes loaded: lab (default) the
#                         lab's patched set (x86 KVM, MMU and TDP MMU probes);
#                         debian: only those Debian 12's lttng-modules-dkms
#                         builds (lttng-probe-kvm, the generic KVM events),
#                         what a stock host records
#   --allow-verify-fail   a verify.sh failure is not a failed run (runs that
#                         are lossy or odd on purpose)
#   --hang-after S        the guest is hung when its serial console stays
#                         silent for S seconds once its init runs (default
#                         150; guest-init.sh prints "LAB: [T] alive" every
#                         10 s from its start to power-off, so only a
#                         guest kernel that stopped scheduling is that
#                         silent).  capture/lab/hang-watch.sh then
#                         asks the guest for backtraces (QEMU monitor: SysRq
#                         l, w, t, an NMI, the vCPUs' registers) and stops
#                         it: DIR/hang.txt, exit 5
#
# Exit status: 0 recorded and verified; 3 the workload failed (rc != 0,
# timeout); 4 verify.sh failed; 5 the guest hung (silent for --hang-after
# seconds, no init line after 150 s, or not powered off after --timeout +
# 420 s): no trace, DIR/hang.txt holds the evidence; 1 or 2 the lab
# itself failed or bad usage.  The output directory is kept in every case.
#   --ftrace              also enable the mmureplay series' new KVM events
#                         in tracefs (ftrace, trace_clock mono) during the
#                         same run; saved as ftrace.txt (+ ftrace-stats.txt:
#                         per-CPU ring buffer stats and the events' format
#                         files) beside trace/; patched kernels only.  Check
#                         with tests/lab/ftrace_vs_lttng.py DIR
#   --ftrace-kb N         ftrace buffer_size_kb per CPU (default 65536; a
#                         small one makes a lossy recording on purpose)
#   --trace-cmd-args STR  more arguments for `trace-cmd record` after the
#                         top buffer's (e.g. "-B inst -e kvm:kvm_exit": an
#                         instance)
#   --trace-cmd           also record the stock kernel's KVM events with
#                         ftrace in the same run, two ways: `trace-cmd record
#                         -C mono` into trace.dat (events: kvm kvmmmu and the
#                         ioctl/mprotect/madvise syscalls) and a tracefs
#                         instance "mmrtext" with the same events whose
#                         `trace` file is saved as ftrace-text.txt (its
#                         buffer: --ftrace-kb per CPU); plus trace-report.txt
#                         (`trace-cmd report` on the host).  Stock or patched
#                         kernel; not with --ftrace (one top-level buffer).
#                         The rootfs needs trace-cmd (build.sh installs it)
#   --trace-cmd-events LIST
#                         --trace-cmd, recording these events instead (trace-cmd
#                         -e arguments, space-separated: a system or
#                         system:event), in trace.dat and the text instance:
#                         what a host records with another event set, e.g.
#                         "kvmmmu kvm:kvm_unmap_hva_range kvm:kvm_page_fault
#                         kvm:kvm_exit kvm:kvm_entry" (no syscall events)
#   --perf                also record the same events with `perf record -a
#                         -k mono` (perf.data), converted on the host by
#                         `perf data convert --to-ctf --all` into perf-ctf/
#                         (--all keeps the side-band records: perf_comm
#                         names the threads) (+ perf-counts.txt:
#                         babeltrace2's counts of it).
#                         Stock or patched kernel; with or without
#                         --trace-cmd.  The rootfs needs linux-perf
#   --ust                 run the UST-enabled variant of the workload
#                         (WORKLOAD-ust, `make -C capture/workloads ust`:
#                         bgsnapshot only, latprobe samples as
#                         mmureplay:latency_sample) and record its LTTng-UST
#                         events (mmureplay:*) in the same session: trace/
#                         holds kernel/ and ust/.  The binary is linked
#                         dynamically with liblttng-ust; the rootfs must
#                         have liblttng-ust1 (build.sh installs it)
#   --ust-buf-mb N        UST per-CPU buffer size (default 8)
#   --capture-tool        record with the product's capture command
#                         (capture/mmureplay-capture start/stop inside the
#                         guest: its events, channels and manifest) instead
#                         of the lab's own session; manifest.json is then
#                         the tool's, the lab's run facts lab-manifest.json
#   --stats               also run kvm-stats-sampler --debugfs (the host
#                         build's, $MMUREPLAY_BUILD or build/ of the
#                         checkout) during the workload: KVM's own counters
#                         (pf_taken, remote_tlb_flush, ...) every 100 ms as
#                         mmureplay:stats_sample in the UST channel
#   --capture-arg ARGS    options for mmureplay-capture start (repeatable,
#                         split at spaces in the guest; implies
#                         --capture-tool), e.g. --capture-arg '--subbuf-size
#                         4K --num-subbuf 2' to make it lose events
#   --attach-after S      a capture that begins while the VM runs: the
#                         workload starts as usual, the LTTng session is
#                         created and started only S seconds (decimals
#                         allowed, 10 ms resolution) after the workload
#                         started, so the VM's creation, its memslots,
#                         root table and first mappings are not in the
#                         trace.  Same events, channel and stop at the
#                         workload's end.  manifest.json: "attach_after_s"
#                         and "late_start" (when, after the workload's
#                         start, `lttng create` began, `lttng start` was
#                         called and returned; tracing begins inside that
#                         last window)
#   --snapshot-at S       flight recorder: the session is created with
#                         `lttng create --snapshot` (channel ch0 in
#                         overwrite mode, in memory) and started before the
#                         workload; S seconds into the workload the guest
#                         runs `lttng snapshot record` once, and the
#                         snapshot becomes trace/.  The small buffers
#                         (--snapshot-buf-kb) make the snapshot keep only
#                         the last moments before S on a busy CPU.
#                         manifest.json: "snapshot_at_s" and "snapshot"
#                         (when the record was called and returned);
#                         verify.txt says which CPUs lost their beginning
#   --snapshot-buf-kb N   the flight recorder's per-CPU buffer in KiB, a
#                         power of two, 64..65536 (default 1024: 4
#                         sub-buffers of 256 KiB; a snapshot of
#                         bgsnapshot's unprotect loop kept 2.3 s, about
#                         14,000 events, per CPU).  --attach-after and
#                         --snapshot-at do not
#                         combine with each other nor with --capture-tool,
#                         --ust, --stats, --ftrace, --trace-cmd or --perf
#   --memslot-ref         (patched kernels; meant with --attach-after) a
#                         second, small kernel session "ref" (channel
#                         refch, discard, 4 x 64 KiB per CPU), created and
#                         started before the workload, records only
#                         kvm_memslot_change and is stopped after the
#                         lab's session; its trace is DIR/ref-trace (the
#                         lab's session stays trace/).  Every memslot
#                         change from the VM's creation on, to check a
#                         late session's state dump against:
#                         capture/lab/check-statedump.py DIR.
#                         manifest.json: "memslot_ref"
#   -- ARGS...            arguments for the workload (default per workload)
#
# Boots under TCG (qemu-system-x86_64 -accel tcg,thread=multi -cpu
# max,la57=off -smp 2 -m 2G), root image with snapshot=on; disk 2 is the
# run disk (guest-init.sh, config, workload binary, patched modules), disk 3
# a raw output disk the guest writes a tar of its results to.  Extracted
# into DIR: trace/ (CTF), manifest.json, console.log (the guest's own log),
# workload.log, serial.log (QEMU serial), event-counts.txt (babeltrace2 on
# the whole trace/: kernel and, with --ust, UST events) and verify.txt
# (capture/lab/verify.sh: the events the workload must give).
#
# Default knobs: nxrecovery loads kvm with nx_huge_pages=force
# nx_huge_pages_recovery_period_ms=1000 nx_huge_pages_recovery_ratio=4.
# On a patched kernel the lab's session also records LTTng's state dump
# at `lttng start`: lttng_statedump_start, lttng_statedump_end and, between
# them, lttng_statedump_kvm_memslot, one per memslot of each running VM
# (kernel-series: Linux patch 12, lttng-modules patch 6; none before the
# workload's VM exists, its memslots with --attach-after).
# Environment: MMUREPLAY_CACHE (lab in $MMUREPLAY_CACHE/lab, see build.sh);
# MMUREPLAY_LAB_SIMULATE_HANG=1 makes guest-init.sh stop the workload and
# itself after "workload start", silently: a simulated hang, to test the
# hang watch.

set -Eeuo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TOP=$(cd "$HERE/../.." && pwd)
CACHE=${MMUREPLAY_CACHE:-$HOME/.cache/mmureplay}
LAB=$CACHE/lab
WL_DIR=$TOP/capture/workloads

usage() { sed -n '3,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; }

[ $# -ge 1 ] || { usage; exit 2; }
case $1 in -h|--help) usage; exit 0 ;; esac
WORKLOAD=$1
shift
SELFTEST= HUGEPAGES= KSM=0 KHUGEPAGED=0 MEMCG_MB= NUMA_BAL=0 COMPACTION=0 MADV_COLLAPSE=0
if [ "$WORKLOAD" = selftest ]; then
	case ${1:-} in
	''|-*) echo "run.sh: selftest TEST: which test (see BUILD-STATUS in the rootfs's /opt/kvm-selftests/SERIES/)" >&2; exit 2 ;;
	esac
	SELFTEST=$1
	shift
fi
# multi: the workloads up to the first option, words or comma lists.
MULTI=()
if [ "$WORKLOAD" = multi ]; then
	while [ $# -gt 0 ] && [[ $1 != -* ]]; do
		IFS=, read -r -a w <<<"$1"
		MULTI+=("${w[@]}")
		shift
	done
	[ "${#MULTI[@]}" -ge 2 ] && [ "${#MULTI[@]}" -le 4 ] ||
		{ echo "run.sh: multi wants 2 to 4 workloads (basic, bgsnapshot, nxrecovery), got ${#MULTI[@]}" >&2; exit 2; }
fi
KERNEL=stock OUT= BUF_MB=64 TIMEOUT=300 FTRACE=0 FTRACE_KB=65536 UST=0 UST_BUF_MB=8
TRACECMD=0 PERF=0 PROBES=lab ALLOW_VERIFY_FAIL=0 TRACECMD_ARGS= TRACECMD_EVENTS_SET=
CAPTURE_TOOL=0 CAPTURE_ARGS=() STATS=0 HANG_AFTER=150
ATTACH_AFTER= SNAPSHOT_AT= SNAP_KB=1024 HAVE_BUF_MB=0 MEMSLOT_REF=0
KNOBS=() EXTRA_EVENTS=() WARGS=() HAVE_WARGS=0 VM_ARGS=()
while [ $# -gt 0 ]; do
	case $1 in
	--kernel) KERNEL=${2:?}; shift 2 ;;
	--knob) KNOBS+=("${2:?}"); shift 2 ;;
	--out) OUT=${2:?}; shift 2 ;;
	--buf-mb) BUF_MB=${2:?}; HAVE_BUF_MB=1; shift 2 ;;
	--event) EXTRA_EVENTS+=("${2:?}"); shift 2 ;;
	--timeout) TIMEOUT=${2:?}; shift 2 ;;
	--ftrace) FTRACE=1; shift ;;
	--ftrace-kb) FTRACE_KB=${2:?}; shift 2 ;;
	--trace-cmd) TRACECMD=1; shift ;;
	--trace-cmd-args) TRACECMD=1; TRACECMD_ARGS=${2:?}; shift 2 ;;
	--trace-cmd-events) TRACECMD=1; TRACECMD_EVENTS_SET=${2:?}; shift 2 ;;
	--perf) PERF=1; shift ;;
	--probes) PROBES=${2:?}; shift 2 ;;
	--allow-verify-fail) ALLOW_VERIFY_FAIL=1; shift ;;
	--hang-after) HANG_AFTER=${2:?}; shift 2 ;;
	--ust) UST=1; shift ;;
	--ust-buf-mb) UST_BUF_MB=${2:?}; shift 2 ;;
	--capture-tool) CAPTURE_TOOL=1; shift ;;
	--stats) STATS=1; shift ;;
	--capture-arg) CAPTURE_TOOL=1; CAPTURE_ARGS+=("${2:?}"); shift 2 ;;
	--attach-after) ATTACH_AFTER=${2:?}; shift 2 ;;
	--snapshot-at) SNAPSHOT_AT=${2:?}; shift 2 ;;
	--snapshot-buf-kb) SNAP_KB=${2:?}; shift 2 ;;
	--memslot-ref) MEMSLOT_REF=1; shift ;;
	--hugepages) HUGEPAGES=${2:?}; shift 2 ;;
	--ksm) KSM=1; shift ;;
	--khugepaged) KHUGEPAGED=1; shift ;;
	--memcg-limit) MEMCG_MB=${2:?}; shift 2 ;;
	--numa-balancing) NUMA_BAL=1; shift ;;
	--compaction) COMPACTION=1; shift ;;
	--madv-collapse) MADV_COLLAPSE=1; shift ;;
	--vm-args) VM_ARGS+=("${2:?}"); shift 2 ;;
	--) shift; WARGS=("$@"); HAVE_WARGS=1; break ;;
	-h|--help) usage; exit 0 ;;
	*) echo "run.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
	esac
done

# defaults WORKLOAD: its arguments (DEF_ARGS) and kvm parameters (DEF_KVM).
defaults() {
	case $1 in
	basic) DEF_ARGS=() DEF_KVM=() ;;
	bgsnapshot) DEF_ARGS=(--access read --mode perpage) DEF_KVM=() ;;
	nxrecovery)
		DEF_ARGS=(--mem 128 --exec 47 --plain 8 --dirty 8)
		DEF_KVM=(nx_huge_pages=force nx_huge_pages_recovery_period_ms=1000
			nx_huge_pages_recovery_ratio=4) ;;
	selftest) DEF_ARGS=() DEF_KVM=() ;;
	*) return 1 ;;
	esac
}
if [ "$WORKLOAD" = multi ]; then
	[ "$HAVE_WARGS" -eq 0 ] ||
		{ echo "run.sh: multi: no '--', give each VM's arguments with --vm-args VM:ARGS" >&2; exit 2; }
	[ $((CAPTURE_TOOL + STATS)) -eq 0 ] && [ -z "$ATTACH_AFTER$SNAPSHOT_AT" ] ||
		{ echo "run.sh: multi does not combine with --stats, --capture-tool, --attach-after or --snapshot-at" >&2; exit 2; }
	# --ust: each bgsnapshot VM runs bgsnapshot-ust (its latency probe).
	[ "$UST" -eq 0 ] || [[ " ${MULTI[*]} " == *" bgsnapshot "* ]] ||
		{ echo "run.sh: multi --ust wants a bgsnapshot VM (the one workload with a UST variant)" >&2; exit 2; }
	# MULTI_ARGS[i]: VM i+1's arguments; the union of the kvm defaults.
	MULTI_ARGS=() ALL_KVM=()
	for i in "${!MULTI[@]}"; do
		defaults "${MULTI[i]}" && [ "${MULTI[i]}" != selftest ] ||
			{ echo "run.sh: multi: unknown workload '${MULTI[i]}' (basic, bgsnapshot, nxrecovery)" >&2; exit 2; }
		MULTI_ARGS[i]="${DEF_ARGS[*]}"
		for kv in "${DEF_KVM[@]}"; do
			[[ " ${ALL_KVM[*]} " == *" $kv "* ]] || ALL_KVM+=("$kv")
		done
	done
	# By name first, then by position (a position wins).
	for pass in name pos; do
		for va in "${VM_ARGS[@]}"; do
			[[ $va == *:* ]] || { echo "run.sh: --vm-args wants VM:ARGS, got '$va'" >&2; exit 2; }
			vm=${va%%:*}
			if [[ $vm =~ ^[0-9]+$ ]]; then
				[ "$vm" -ge 1 ] && [ "$vm" -le "${#MULTI[@]}" ] ||
					{ echo "run.sh: --vm-args $vm: no VM $vm (1..${#MULTI[@]})" >&2; exit 2; }
				if [ "$pass" = pos ]; then MULTI_ARGS[vm - 1]=${va#*:}; fi
			else
				[[ " ${MULTI[*]} " == *" $vm "* ]] ||
					{ echo "run.sh: --vm-args $vm: no such workload among ${MULTI[*]}" >&2; exit 2; }
				if [ "$pass" = name ]; then
					for i in "${!MULTI[@]}"; do
						[ "${MULTI[i]}" != "$vm" ] || MULTI_ARGS[i]=${va#*:}
					done
				fi
			fi
		done
	done
	DEF_KVM=("${ALL_KVM[@]}") DEF_ARGS=()
	MULTI_LIST=$(IFS=,; echo "${MULTI[*]}")
else
	[ "${#VM_ARGS[@]}" -eq 0 ] || { echo "run.sh: --vm-args is for run.sh multi" >&2; exit 2; }
	defaults "$WORKLOAD" ||
		{ echo "run.sh: unknown workload '$WORKLOAD' (basic, bgsnapshot, nxrecovery, selftest TEST, multi WORKLOAD...)" >&2; exit 2; }
fi
[ "$HAVE_WARGS" -eq 1 ] || WARGS=("${DEF_ARGS[@]}")
[ -z "$MEMCG_MB" ] || { [[ $MEMCG_MB =~ ^[0-9]+$ ]] && [ "$MEMCG_MB" -ge 4 ]; } ||
	{ echo "run.sh: --memcg-limit wants MiB (>= 4)" >&2; exit 2; }
# host_mm_args WORKLOAD ARGS: ARGS plus the guest RAM options --ksm,
# --khugepaged and --madv-collapse want of WORKLOAD
# (capture/workloads/vmm.h).
host_mm_args() {
	local wl=$1 a=$2
	case $wl in basic|bgsnapshot|nxrecovery) ;; *) echo "$a"; return ;; esac
	[ "$KSM" -eq 0 ] || [[ " $a " == *" --mergeable "* ]] || a="$a --mergeable"
	[ "$KHUGEPAGED" -eq 0 ] || [ "$wl" = bgsnapshot ] || [[ " $a " == *" --hugepage-late "* ]] ||
		a="$a --hugepage-late"
	[ "$MADV_COLLAPSE" -eq 0 ] || [ "$wl" = bgsnapshot ] || [[ " $a " == *" --collapse "* ]] ||
		a="$a --collapse"
	echo "${a# }"
}
if [ -z "$SELFTEST" ] && [ "$WORKLOAD" != multi ]; then
	read -r -a WARGS <<<"$(host_mm_args "$WORKLOAD" "${WARGS[*]}")"
fi
for i in "${!MULTI[@]}"; do
	MULTI_ARGS[i]=$(host_mm_args "${MULTI[i]}" "${MULTI_ARGS[i]}")
done
[ -z "$HUGEPAGES" ] || [[ $HUGEPAGES =~ ^[0-9]+$ ]] || { echo "run.sh: --hugepages wants a number of 2 MiB pages" >&2; exit 2; }
# A selftest on a hugetlb backing needs the pages reserved.
[ -n "$HUGEPAGES" ] || [ -z "$SELFTEST" ] || [[ " ${WARGS[*]} " != *hugetlb* ]] || HUGEPAGES=256
case $PROBES in lab|debian) ;; *) echo "run.sh: --probes lab|debian" >&2; exit 2 ;; esac
# FLAVOR stock|patched, KSERIES the kernel series (6.1, 6.12); the lab
# directory of the kernel: stock/, patched/ for 6.1, stock-VER/,
# patched-VER/ for the others (build.sh's names).
case $KERNEL in
stock|6.1) FLAVOR=stock KSERIES=6.1 ;;
patched|6.1-patched) FLAVOR=patched KSERIES=6.1 ;;
*-patched) FLAVOR=patched KSERIES=${KERNEL%-patched} ;;
*) FLAVOR=stock KSERIES=$KERNEL ;;
esac
if ! [[ $KSERIES =~ ^[0-9]+\.[0-9]+$ ]] || [ ! -d "$TOP/kernel-series/linux-$KSERIES" ]; then
	echo "run.sh: --kernel stock|patched|VER|VER-patched (VER: a kernel-series/linux-VER)" >&2; exit 2
fi
KDIR=$FLAVOR
[ "$KSERIES" = 6.1 ] || KDIR=$FLAVOR-$KSERIES
[ "$BUF_MB" -ge 8 ] || { echo "run.sh: --buf-mb must be >= 8" >&2; exit 2; }
[ "$FTRACE" -eq 0 ] || [ "$FLAVOR" = patched ] ||
	{ echo "run.sh: --ftrace needs a patched kernel (the new events)" >&2; exit 2; }
[ "$MEMSLOT_REF" -eq 0 ] || [ "$FLAVOR" = patched ] ||
	{ echo "run.sh: --memslot-ref needs a patched kernel (kvm_memslot_change)" >&2; exit 2; }
[ "$FTRACE" -eq 0 ] || [ "$TRACECMD" -eq 0 ] ||
	{ echo "run.sh: --ftrace and --trace-cmd both want the top-level ftrace buffer" >&2; exit 2; }
if ! [[ $FTRACE_KB =~ ^[0-9]+$ ]] || [ "$FTRACE_KB" -lt 4 ] || [ "$FTRACE_KB" -gt 262144 ]; then
	echo "run.sh: --ftrace-kb must be 4..262144" >&2; exit 2
fi
if ! [[ $UST_BUF_MB =~ ^[0-9]+$ ]] || [ "$UST_BUF_MB" -lt 2 ] || [ "$UST_BUF_MB" -gt 256 ]; then
	echo "run.sh: --ust-buf-mb must be 2..256" >&2; exit 2
fi
[[ $HANG_AFTER =~ ^[1-9][0-9]*$ ]] || { echo "run.sh: --hang-after wants a positive number of seconds" >&2; exit 2; }
# A late start (--attach-after) or a flight recorder (--snapshot-at):
# seconds as a JSON number (awk's %g: no leading zeros, no trailing dot).
for s in "$ATTACH_AFTER" "$SNAPSHOT_AT"; do
	[ -z "$s" ] || [[ $s =~ ^[0-9]+(\.[0-9]+)?$ ]] ||
		{ echo "run.sh: --attach-after / --snapshot-at want seconds (e.g. 2.5), got '$s'" >&2; exit 2; }
done
[ -z "$ATTACH_AFTER" ] || ATTACH_AFTER=$(awk -v s="$ATTACH_AFTER" 'BEGIN { printf "%g", s }')
[ -z "$SNAPSHOT_AT" ] || SNAPSHOT_AT=$(awk -v s="$SNAPSHOT_AT" 'BEGIN { printf "%g", s }')
if [ -n "$ATTACH_AFTER" ] || [ -n "$SNAPSHOT_AT" ]; then
	[ -z "$ATTACH_AFTER" ] || [ -z "$SNAPSHOT_AT" ] ||
		{ echo "run.sh: --attach-after and --snapshot-at are two ways to begin late: one at a time" >&2; exit 2; }
	# The other recorders start with the lab's session before the
	# workload (or are another session): not combined.
	[ $((CAPTURE_TOOL + UST + STATS + FTRACE + TRACECMD + PERF)) -eq 0 ] ||
		{ echo "run.sh: --attach-after / --snapshot-at do not combine with --capture-tool, --ust, --stats, --ftrace, --trace-cmd or --perf" >&2; exit 2; }
fi
# The kernel channel ch0: BUF_MB per CPU in 8 MiB sub-buffers, or the
# flight recorder's SNAP_KB in 4 sub-buffers (lttng wants powers of two).
SUBBUF_KB=8192 NUM_SUBBUF=$((BUF_MB / 8)) SUBBUF_MB=8 CH_MODE=discard
if [ -n "$SNAPSHOT_AT" ]; then
	[ "$HAVE_BUF_MB" -eq 0 ] ||
		{ echo "run.sh: --snapshot-at sizes its buffers with --snapshot-buf-kb, not --buf-mb" >&2; exit 2; }
	if ! [[ $SNAP_KB =~ ^[0-9]+$ ]] || [ "$SNAP_KB" -lt 64 ] || [ "$SNAP_KB" -gt 65536 ] ||
		[ $((SNAP_KB & (SNAP_KB - 1))) -ne 0 ]; then
		echo "run.sh: --snapshot-buf-kb must be a power of two, 64..65536" >&2; exit 2
	fi
	SUBBUF_KB=$((SNAP_KB / 4)) NUM_SUBBUF=4 CH_MODE=overwrite
	BUF_MB=$(awk -v k="$SNAP_KB" 'BEGIN { printf "%g", k / 1024 }')
	SUBBUF_MB=$(awk -v k="$SUBBUF_KB" 'BEGIN { printf "%g", k / 1024 }')
fi
if [ -n "$SELFTEST" ]; then
	OUT=${OUT:-./lab-out/selftest-${SELFTEST//\//-}-$KERNEL}
elif [ "$WORKLOAD" = multi ]; then
	OUT=${OUT:-./lab-out/multi-${MULTI_LIST//,/-}-$KERNEL}
else
	OUT=${OUT:-./lab-out/$WORKLOAD-$KERNEL}
fi

die() { echo "run.sh: FAIL: $*" >&2; exit 1; }
T0=$(date +%s.%N)
elapsed() { awk -v a="$T0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

[ -f "$LAB/rootfs.ext4" ] || die "no lab in $LAB (run capture/lab/build.sh)"
# Runs share the lab; build.sh takes the lock exclusively.
exec 9>"$LAB/.lock"
flock -s -n 9 || die "build.sh is updating $LAB"
QEMU_KERNEL=()
if [ "$FLAVOR" = stock ]; then
	[ -f "$LAB/$KDIR/vmlinuz" ] || die "no stock kernel in $LAB/$KDIR (build.sh --kernel $KERNEL)"
	QEMU_KERNEL=(-kernel "$LAB/$KDIR/vmlinuz" -initrd "$LAB/$KDIR/initrd.img")
else
	[ -f "$LAB/$KDIR/bzImage" ] || die "no patched kernel in $LAB/$KDIR (build.sh --kernel $KERNEL)"
	QEMU_KERNEL=(-kernel "$LAB/$KDIR/bzImage")
fi

# kvm / kvm_amd module parameters: defaults, then knobs (last one wins).
declare -A KVM_P=() AMD_P=()
ORDER=()
for kv in "${DEF_KVM[@]}" "${KNOBS[@]}"; do
	case $kv in *=*) ;; *) die "--knob wants NAME=VAL, got '$kv'" ;; esac
	name=${kv%%=*} val=${kv#*=}
	case $name in
	kvm_amd.*) AMD_P[${name#kvm_amd.}]=$val ;;
	kvm.*) KVM_P[${name#kvm.}]=$val; ORDER+=("${name#kvm.}") ;;
	*.*) die "--knob $name: only kvm.* and kvm_amd.* parameters" ;;
	*) KVM_P[$name]=$val; ORDER+=("$name") ;;
	esac
done
KVM_PARAMS= AMD_PARAMS=
declare -A SEEN=()
for k in "${ORDER[@]}"; do
	[ -z "${SEEN[$k]:-}" ] || continue
	SEEN[$k]=1
	KVM_PARAMS="$KVM_PARAMS $k=${KVM_P[$k]}"
done
for k in "${!AMD_P[@]}"; do AMD_PARAMS="$AMD_PARAMS $k=${AMD_P[$k]}"; done

# ------------------------------------------------------------ run disk
echo "==> workloads"
nice -n 10 make -s -C "$WL_DIR" >/dev/null || die "make -C capture/workloads failed"
BIN=$WORKLOAD
if [ "$UST" -eq 1 ]; then
	BIN=$WORKLOAD-ust
	[ "$WORKLOAD" != multi ] || BIN=bgsnapshot-ust
	nice -n 10 make -s -C "$WL_DIR" "$BIN" >/dev/null ||
		die "make -C capture/workloads $BIN failed (a UST variant exists for bgsnapshot; needs liblttng-ust-dev)"
fi
[ -n "$SELFTEST" ] || [ "$WORKLOAD" = multi ] || [ -x "$WL_DIR/$BIN" ] || die "$WL_DIR/$BIN not built"
# MULTI_BIN[i]: the binary VM i+1 runs.
MULTI_BIN=()
for i in "${!MULTI[@]}"; do
	MULTI_BIN[i]=${MULTI[i]}
	[ "$UST" -eq 0 ] || [ "${MULTI[i]}" != bgsnapshot ] || MULTI_BIN[i]=$BIN
	[ -x "$WL_DIR/${MULTI_BIN[i]}" ] || die "$WL_DIR/${MULTI_BIN[i]} not built"
done
SELFTEST_PATH= SELFTEST_SRC=
if [ -n "$SELFTEST" ]; then
	# build.sh installs them into the rootfs (and so into rootfs.ext4).
	SELFTEST_PATH=/opt/kvm-selftests/$KSERIES/$SELFTEST
	STATUS=$LAB/rootfs/opt/kvm-selftests/$KSERIES/BUILD-STATUS
	[ -f "$STATUS" ] || die "no KVM selftests for $KSERIES in the rootfs (capture/lab/build.sh --kernel $KERNEL)"
	[ -x "$LAB/rootfs$SELFTEST_PATH" ] ||
		die "no selftest $SELFTEST for $KSERIES; $(grep -c '^built ' "$STATUS") built, see $STATUS$(
			grep "^failed $SELFTEST:" "$STATUS" | sed 's/^/: /')"
	[ "$LAB/rootfs.ext4" -nt "$LAB/rootfs$SELFTEST_PATH" ] ||
		die "rootfs.ext4 is older than $SELFTEST_PATH (rerun capture/lab/build.sh)"
	SELFTEST_SRC=$(sed -n '1s/^# KVM selftests of //p' "$STATUS")
fi
if [ "$UST" -eq 1 ]; then
	# Dynamically linked: every library it needs must be in the rootfs
	# (liblttng-ust1 comes from build.sh), nothing is copied.
	for lib in $(readelf -d "$WL_DIR/$BIN" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -e "$LAB/rootfs/usr/lib/x86_64-linux-gnu/$lib" ] ||
			[ -e "$LAB/rootfs/lib/x86_64-linux-gnu/$lib" ] ||
			die "$BIN needs $lib, not in the lab rootfs (rerun capture/lab/build.sh)"
	done
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/mmureplay-lab.XXXXXX")
QEMU_PID=
cleanup() {
	[ -z "$QEMU_PID" ] || kill "$QEMU_PID" 2>/dev/null || true
	rm -rf "$WORK"
}
trap cleanup EXIT

RUN=$WORK/run
mkdir -p "$RUN/bin"
cp "$HERE/guest-init.sh" "$RUN/init.sh"
chmod 755 "$RUN/init.sh"
[ -n "$SELFTEST" ] || [ "$WORKLOAD" = multi ] || cp "$WL_DIR/$BIN" "$RUN/bin/"
for w in "${MULTI_BIN[@]}"; do cp "$WL_DIR/$w" "$RUN/bin/"; done
[ "$COMPACTION" -eq 0 ] || cp "$WL_DIR/fragment" "$RUN/bin/"
[ "$CAPTURE_TOOL" -eq 0 ] || cp "$TOP/capture/mmureplay-capture" "$RUN/bin/"
if [ "$STATS" -eq 1 ]; then
	SAMPLER=${MMUREPLAY_BUILD:-$TOP/build}/capture/kvm-stats-sampler
	[ -x "$SAMPLER" ] || die "--stats: no $SAMPLER (cmake --build build)"
	for lib in $(readelf -d "$SAMPLER" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
		[ -e "$LAB/rootfs/usr/lib/x86_64-linux-gnu/$lib" ] ||
			[ -e "$LAB/rootfs/lib/x86_64-linux-gnu/$lib" ] ||
			die "kvm-stats-sampler needs $lib, not in the lab rootfs (rerun capture/lab/build.sh)"
	done
	cp "$SAMPLER" "$RUN/bin/"
fi
if [ "$FLAVOR" = patched ]; then
	PREL=$(cat "$LAB/$KDIR/kernel.release")
	mkdir -p "$RUN/modules"
	cp -a "$LAB/$KDIR/root/lib/modules/$PREL" "$RUN/modules/"
fi
EVENTS="kvm_*"
# Patched kernels: the state dump's memslots (lttng-probe-statedump).
STATEDUMP=0
if [ "$FLAVOR" = patched ]; then
	STATEDUMP=1
	EVENTS="$EVENTS lttng_statedump_start lttng_statedump_end lttng_statedump_kvm_memslot"
fi
# --memcg-limit: who reclaims, and when (lttng-probe-vmscan).
EXTRA_MODULES= EXTRA_PROBES=
if [ -n "$MEMCG_MB" ]; then
	EVENTS="$EVENTS mm_vmscan_memcg_reclaim_begin mm_vmscan_memcg_reclaim_end"
	EVENTS="$EVENTS mm_vmscan_direct_reclaim_begin mm_vmscan_direct_reclaim_end"
	EVENTS="$EVENTS mm_vmscan_kswapd_wake mm_vmscan_kswapd_sleep"
	EXTRA_MODULES=lttng-probe-vmscan EXTRA_PROBES=vmscan
fi
for e in "${EXTRA_EVENTS[@]}"; do EVENTS="$EVENTS $e"; done
KNOB_STR="${KNOBS[*]}"
# The series' new events as SYSTEM/EVENT of tracefs (include/trace/events/kvm.h
# is TRACE_SYSTEM kvm, arch/x86/kvm/mmu/mmutrace.h is kvmmmu).
FTRACE_EVENTS=
[ "$FTRACE" -eq 0 ] || FTRACE_EVENTS="kvm/kvm_invalidate_range_start kvm/kvm_invalidate_range_end
kvm/kvm_remote_tlb_flush kvm/kvm_memslot_change kvmmmu/kvm_mmu_unmap_gfn_range
kvmmmu/kvm_mmu_nx_recovery_begin kvmmmu/kvm_mmu_nx_recovery_end
kvmmmu/kvm_mmu_nx_recover_page kvmmmu/kvm_mmu_fault_lock_wait
kvm/kvm_vm_create kvm/kvm_vm_destroy"
# The stock kernel's KVM events as trace-cmd -e arguments (README.md,
# "Recording on a stock host", lists the same set).
TRACECMD_EVENTS=
[ "$TRACECMD" -eq 0 ] || TRACECMD_EVENTS=${TRACECMD_EVENTS_SET:-"kvm kvmmmu
syscalls:sys_enter_ioctl syscalls:sys_exit_ioctl syscalls:sys_enter_mprotect
syscalls:sys_exit_mprotect syscalls:sys_enter_madvise syscalls:sys_exit_madvise"}
PERF_EVENTS=
[ "$PERF" -eq 0 ] || PERF_EVENTS="kvm:* kvmmmu:*
syscalls:sys_enter_ioctl syscalls:sys_exit_ioctl syscalls:sys_enter_mprotect
syscalls:sys_exit_mprotect syscalls:sys_enter_madvise syscalls:sys_exit_madvise"
if [ "$PERF" -eq 1 ]; then
	[ -x "$LAB/rootfs/usr/bin/perf" ] ||
		die "--perf: no perf in the lab rootfs (rerun capture/lab/build.sh)"
	command -v perf >/dev/null || die "--perf: no perf on the host (apt-get install linux-perf)"
fi
if [ "$TRACECMD" -eq 1 ]; then
	[ -x "$LAB/rootfs/usr/bin/trace-cmd" ] ||
		die "--trace-cmd: no trace-cmd in the lab rootfs (rerun capture/lab/build.sh)"
	command -v trace-cmd >/dev/null || die "--trace-cmd: no trace-cmd on the host (scripts/setup.sh)"
fi
{
	printf 'WORKLOAD=%q\n' "$WORKLOAD"
	if [ -n "$SELFTEST" ]; then
		printf 'WORKLOAD_ARGS=%q\n' "$SELFTEST${WARGS[*]:+ ${WARGS[*]}}"
	elif [ "$WORKLOAD" = multi ]; then
		printf 'WORKLOAD_ARGS=%q\n' "$MULTI_LIST"
		printf 'MULTI_N=%q\n' "${#MULTI[@]}"
		for i in "${!MULTI[@]}"; do
			printf 'MULTI_WL_%d=%q\nMULTI_ARGS_%d=%q\nMULTI_BIN_%d=%q\n' $((i + 1)) "${MULTI[i]}" \
				$((i + 1)) "${MULTI_ARGS[i]}" $((i + 1)) "${MULTI_BIN[i]}"
		done
	else
		printf 'WORKLOAD_ARGS=%q\n' "${WARGS[*]}"
	fi
	printf 'SELFTEST=%q\nSELFTEST_ARGS=%q\nSELFTEST_PATH=%q\nSELFTEST_SRC=%q\n' \
		"$SELFTEST" "${WARGS[*]}" "$SELFTEST_PATH" "$SELFTEST_SRC"
	printf 'HUGEPAGES=%q\n' "$HUGEPAGES"
	printf 'KSM=%q\nKHUGEPAGED=%q\nMEMCG_MB=%q\nNUMA_BAL=%q\n' "$KSM" "$KHUGEPAGED" "$MEMCG_MB" "$NUMA_BAL"
	printf 'COMPACTION=%q\nMADV_COLLAPSE=%q\n' "$COMPACTION" "$MADV_COLLAPSE"
	printf 'EXTRA_MODULES=%q\nEXTRA_PROBES=%q\n' "$EXTRA_MODULES" "$EXTRA_PROBES"
	printf 'KVM_PARAMS=%q\n' "${KVM_PARAMS# }"
	printf 'KVM_AMD_PARAMS=%q\n' "${AMD_PARAMS# }"
	printf 'KNOBS=%q\n' "$KNOB_STR"
	printf 'KERNEL_FLAVOR=%q\nKERNEL_SERIES=%q\n' "$FLAVOR" "$KSERIES"
	printf 'BUF_MB=%q\nSUBBUF_MB=%q\n' "$BUF_MB" "$SUBBUF_MB"
	printf 'SUBBUF_KB=%q\nNUM_SUBBUF=%q\nCHANNEL_MODE=%q\n' "$SUBBUF_KB" "$NUM_SUBBUF" "$CH_MODE"
	printf 'ATTACH_AFTER=%q\nSNAPSHOT_AT=%q\n' "$ATTACH_AFTER" "$SNAPSHOT_AT"
	printf 'STATEDUMP=%q\nMEMSLOT_REF=%q\n' "$STATEDUMP" "$MEMSLOT_REF"
	printf 'EVENTS=%q\n' "$EVENTS"
	printf 'SYSCALLS=%q\n' "ioctl,mprotect,madvise"
	printf 'TIMEOUT=%q\n' "$TIMEOUT"
	printf 'FTRACE_EVENTS=%q\n' "${FTRACE_EVENTS//$'\n'/ }"
	printf 'FTRACE_KB=%q\n' "$FTRACE_KB"
	printf 'TRACECMD_EVENTS=%q\n' "${TRACECMD_EVENTS//$'\n'/ }"
	printf 'TRACECMD_ARGS=%q\n' "$TRACECMD_ARGS"
	printf 'PERF_EVENTS=%q\n' "${PERF_EVENTS//$'\n'/ }"
	printf 'WORKLOAD_BIN=%q\n' "$BIN"
	printf 'UST=%q\nUST_EVENTS=%q\nUST_BUF_MB=%q\n' "$UST" 'mmureplay:*' "$UST_BUF_MB"
	printf 'CAPTURE_TOOL=%q\nCAPTURE_ARGS=%q\n' "$CAPTURE_TOOL" "${CAPTURE_ARGS[*]}"
	printf 'STATS=%q\n' "$STATS"
	printf 'PROBES=%q\n' "$PROBES"
	printf 'SIMULATE_HANG=%q\n' "${MMUREPLAY_LAB_SIMULATE_HANG:-0}"
} >"$RUN/config"
size_mb=$(($(du -sm "$RUN" | cut -f1) + 32))
mkfs.ext4 -q -F -L labrun -d "$RUN" "$WORK/run.img" "${size_mb}M" >/dev/null 2>&1 ||
	die "mkfs.ext4 of the run disk failed"
truncate -s 1G "$WORK/out.img"

# ------------------------------------------------------------------ boot
if [ "$WORKLOAD" = multi ]; then
	echo "==> boot ($KERNEL kernel $(cat "$LAB/$KDIR/kernel.release"), ${#MULTI[@]} VMs; kvm:${KVM_PARAMS:- defaults})"
	for i in "${!MULTI[@]}"; do echo "    VM $((i + 1)): ${MULTI[i]} ${MULTI_ARGS[i]}"; done
else
	echo "==> boot ($KERNEL kernel $(cat "$LAB/$KDIR/kernel.release"), ${SELFTEST_PATH:-$BIN} ${WARGS[*]}; kvm:${KVM_PARAMS:- defaults})"
fi
[ -z "$HUGEPAGES" ] || echo "    hugetlb: $HUGEPAGES 2 MiB pages reserved before the workload"
[ "$KSM" -eq 0 ] || echo "    host mm: KSM on (fast scan), guest RAM MADV_MERGEABLE"
[ "$KHUGEPAGED" -eq 0 ] || echo "    host mm: THP always, khugepaged scanning fast"
[ -z "$MEMCG_MB" ] || echo "    host mm: the workload in a memory cgroup, memory.max ${MEMCG_MB}M, with swap"
[ "$NUMA_BAL" -eq 0 ] || echo "    host mm: two NUMA nodes, NUMA balancing on"
[ "$COMPACTION" -eq 0 ] || echo "    host mm: free memory fragmented before the workload, THP defrag defer, proactive compaction (kcompactd)"
[ "$MADV_COLLAPSE" -eq 0 ] || echo "    host mm: the VMM collapses its guest RAM (MADV_COLLAPSE)"
[ -z "$ATTACH_AFTER" ] || echo "    late start: the session is created ${ATTACH_AFTER}s after the workload starts"
[ -z "$SNAPSHOT_AT" ] || echo "    flight recorder: ${SNAP_KB} KiB per CPU, one snapshot ${SNAPSHOT_AT}s after the workload starts"
[ "$MEMSLOT_REF" -eq 0 ] || echo "    memslot reference: session ref (kvm_memslot_change) from before the workload into ref-trace/"
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
rm -rf "$OUT/trace" "$OUT/manifest.json" "$OUT/lab-manifest.json" "$OUT/console.log" "$OUT/workload.log" \
	"$OUT/serial.log" "$OUT/event-counts.txt" "$OUT/verify.txt" \
	"$OUT/ftrace.txt" "$OUT/ftrace-stats.txt" "$OUT/trace.dat" "$OUT/ftrace-text.txt" \
	"$OUT/trace-report.txt" "$OUT/tracecmd.log" "$OUT/perf.data" "$OUT/perf-ctf" \
	"$OUT/perf-counts.txt" "$OUT/perf.log" "$OUT/hang.txt" "$OUT/monitor.log" "$OUT/ref-trace"
[ "$WORKLOAD" != multi ] || rm -f "$OUT"/workload-[0-9].log
# The QEMU monitor on a pipe chardev (MON.in / MON.out): the hang watch
# sends it the SysRq keys.
MON=$WORK/mon
mkfifo "$MON.in" "$MON.out"
# The guest kernel's symbols, to name a hung vCPU's RIP.
SYSMAP=$LAB/$KDIR/System.map
[ "$FLAVOR" = patched ] || SYSMAP=$LAB/rootfs/boot/System.map-$(cat "$LAB/$KDIR/kernel.release")
[ -r "$SYSMAP" ] || SYSMAP=
T_BOOT=$(date +%s)
# --numa-balancing: two nodes of 1 GiB, a vCPU each.
QEMU_NUMA=()
[ "$NUMA_BAL" -eq 0 ] || QEMU_NUMA=(
	-object memory-backend-ram,id=ram0,size=1G -object memory-backend-ram,id=ram1,size=1G
	-numa node,nodeid=0,cpus=0,memdev=ram0 -numa node,nodeid=1,cpus=1,memdev=ram1)
# no_timer_check: under TCG on a loaded host the kernel's check that the
# 8254 timer reaches the IO-APIC can miss its window and panic at boot
# ("IO-APIC + timer doesn't work": 5 of 16 boots of the 6.12 kernels at
# a host load of 8-16, none of 80 patched 6.1 boots); the check only
# guards real chipsets.
nice -n 10 qemu-system-x86_64 \
	-accel tcg,thread=multi -cpu max,la57=off -smp 2 -m 2G "${QEMU_NUMA[@]}" \
	-display none -no-reboot -serial "file:$OUT/serial.log" \
	-chardev "pipe,id=mon0,path=$MON" -mon chardev=mon0,mode=readline \
	"${QEMU_KERNEL[@]}" \
	-append "root=/dev/vda rw console=ttyS0 init=/lab-init panic=-1 quiet no_timer_check" \
	-drive "file=$LAB/rootfs.ext4,if=virtio,format=raw,snapshot=on" \
	-drive "file=$WORK/run.img,if=virtio,format=raw,readonly=on" \
	-drive "file=$WORK/out.img,if=virtio,format=raw" \
	-nic none &
QEMU_PID=$!
hrc=0
"$HERE/hang-watch.sh" --pid "$QEMU_PID" --serial "$OUT/serial.log" --monitor "$MON" \
	--out "$OUT" --hang-after "$HANG_AFTER" --boot-limit 150 --limit $((TIMEOUT + 420)) \
	${SYSMAP:+--system-map "$SYSMAP"} || hrc=$?
wait "$QEMU_PID" || true
QEMU_PID=
echo "    guest ran $(($(date +%s) - T_BOOT))s"
if [ "$hrc" -eq 5 ]; then
	echo "    FAILED: $(head -n 1 "$OUT/hang.txt")"
	sed -n '/^== blocked tasks/,/^$/s/^/    /p' "$OUT/hang.txt"
	echo "run.sh: $WORKLOAD ($KERNEL) guest HUNG (exit 5), backtraces in $OUT/hang.txt, console in $OUT/serial.log, $(elapsed)s" >&2
	exit 5
fi
[ "$hrc" -eq 0 ] || die "hang-watch.sh failed (rc $hrc)"

# --------------------------------------------------------------- results
tar -xf "$WORK/out.img" -C "$OUT" 2>/dev/null ||
	die "no results on the output disk (see $OUT/serial.log)"
[ -f "$OUT/manifest.json" ] || die "no manifest.json (see $OUT/console.log, $OUT/serial.log)"
# The lab's run facts; with --capture-tool manifest.json is the tool's.
LABM=$OUT/manifest.json
[ "$CAPTURE_TOOL" -eq 0 ] || LABM=$OUT/lab-manifest.json
[ -f "$LABM" ] || die "no $(basename "$LABM") (see $OUT/console.log)"
# Everything is saved first; the exit status says what failed.
status=0
if ! grep -q '"workload_rc": 0,' "$LABM"; then
	echo "    FAILED: workload $(sed -n 's/^  "workload_rc": \(.*\),$/rc \1/p' "$LABM") (see $OUT/console.log)"
	status=3
fi
if command -v babeltrace2 >/dev/null; then
	# The whole trace: the CLI finds and merges every CTF trace under it
	# (kernel/, and ust/uid/... with --ust).
	babeltrace2 "$OUT/trace" 2>"$OUT/babeltrace2.err" | awk '{ print $4 }' | sort | uniq -c |
		sort -k1,1nr -k2 >"$OUT/event-counts.txt" || true
	echo "    events: $(awk '{ n += $1 } END { print n + 0 }' "$OUT/event-counts.txt")" \
		"($(grep -c . "$OUT/event-counts.txt") kinds)" \
		"discarded: $(sed -n 's/.*"discarded_events": \([0-9a-z]*\).*/\1/p' "$OUT/manifest.json")"
	# The first lines only, without a pipe that SIGPIPE would fail
	# under pipefail (a lossy trace warns once per discard record).
	[ ! -s "$OUT/babeltrace2.err" ] || sed -n '1,5s/^/    babeltrace2: /p' "$OUT/babeltrace2.err"
fi
if command -v babeltrace2 >/dev/null; then
	if ! "$HERE/verify.sh" "$OUT" >"$OUT/verify.txt" 2>&1; then
		if [ "$ALLOW_VERIFY_FAIL" -eq 1 ]; then
			echo "    verify.sh found problems (allowed: --allow-verify-fail)"
		else
			echo "    FAILED: verify.sh (see $OUT/verify.txt)"
			[ "$status" -ne 0 ] || status=4
		fi
	fi
	sed 's/^/    /' "$OUT/verify.txt"
	if [ "$STATEDUMP" -eq 1 ]; then
		echo "    state dump: $(awk '$2 == "lttng_statedump_kvm_memslot:" { n = $1 } END { print n + 0 }' \
			"$OUT/event-counts.txt" 2>/dev/null) lttng_statedump_kvm_memslot"
	fi
	if [ "$MEMSLOT_REF" -eq 1 ]; then
		if [ -d "$OUT/ref-trace" ]; then
			echo "    ref-trace: $(babeltrace2 "$OUT/ref-trace" 2>/dev/null | grep -c kvm_memslot_change) kvm_memslot_change" \
				"(check: capture/lab/check-statedump.py $OUT)"
		else
			echo "    warning: --memslot-ref but no ref-trace/ (see $OUT/console.log)"
		fi
	fi
fi
if [ "$FTRACE" -eq 1 ]; then
	if [ -f "$OUT/ftrace.txt" ]; then
		echo "    ftrace: $(grep -c -v '^#' "$OUT/ftrace.txt") events in ftrace.txt" \
			"(compare: tests/lab/ftrace_vs_lttng.py $OUT)"
	else
		echo "    warning: --ftrace but no ftrace.txt (see $OUT/console.log)"
	fi
fi
if [ "$TRACECMD" -eq 1 ]; then
	if [ -f "$OUT/trace.dat" ] && [ -f "$OUT/ftrace-text.txt" ]; then
		trace-cmd report -i "$OUT/trace.dat" >"$OUT/trace-report.txt" 2>"$OUT/trace-report.err" ||
			echo "    warning: trace-cmd report failed (see $OUT/trace-report.err)"
		echo "    trace-cmd: $(grep -c -v '^ *cpus=' "$OUT/trace-report.txt") lines in trace-report.txt," \
			"$(grep -c -v '^#' "$OUT/ftrace-text.txt") in ftrace-text.txt"
	else
		echo "    warning: --trace-cmd but no trace.dat / ftrace-text.txt (see $OUT/console.log)"
	fi
fi
if [ "$PERF" -eq 1 ]; then
	if [ -f "$OUT/perf.data" ] &&
		perf data convert --to-ctf "$OUT/perf-ctf" --all -i "$OUT/perf.data" >>"$OUT/perf.log" 2>&1; then
		babeltrace2 "$OUT/perf-ctf" 2>>"$OUT/perf.log" | awk '{ sub(/:$/, "", $3); print $3 }' | sort | uniq -c |
			sort -k1,1nr -k2 >"$OUT/perf-counts.txt" || true
		echo "    perf: $(awk '{ n += $1 } END { print n + 0 }' "$OUT/perf-counts.txt") events in perf-ctf/"
	else
		echo "    warning: --perf but no perf.data or no CTF from it (see $OUT/perf.log)"
	fi
fi
if [ "$status" -ne 0 ]; then
	echo "run.sh: $WORKLOAD ($KERNEL) FAILED (exit $status), output kept in $OUT, $(elapsed)s" >&2
	exit "$status"
fi
echo "run.sh: $WORKLOAD ($KERNEL) recorded into $OUT in $(elapsed)s"
