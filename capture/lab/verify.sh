#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
#
# verify.sh - check that a lab trace holds the events its workload must
# produce (babeltrace2 on the host).
#
# Usage: capture/lab/verify.sh RUN_OUT_DIR
#
# RUN_OUT_DIR is a run.sh output directory (trace/ + manifest.json).  Prints
# the derived counts and one PASS/FAIL line per check; exits 1 if any check
# fails.  Checks (stock 6.1 behaviour unless a knob says otherwise):
#   all         no discarded events; kvm_x86_page_fault, kvm_mmu_spte_requested,
#               kvm_mmu_set_spte and kvm_tdp_mmu_spte_changed present
#   basic       5 kvm_unmap_hva_range (2 mprotect cycles, MADV_DONTNEED;
#               5 or more with --thp, --hugepage or --split: THP splits);
#               fast page faults (dirty logging write-protection; not
#               with --no-dirty-log)
#   debian      (run.sh --probes debian) no x86 KVM event, generic ones
#               present; nothing else can be checked
#   bgsnapshot  one kvm_unmap_hva_range per unprotect (>= 8192; --mode
#               whole: one unprotect of the whole range); leaf zaps
#               (level 1 present -> not present) and refaults; with
#               perm_upgrade_skip_zap=Y: >= 8192 skip decisions instead
#   nxrecovery  zaps by the recovery worker (comm kvm-nx-lpage-re; not
#               with --hugepage-late: its RAM was 4 KiB pages when the
#               guest first touched it, so nothing is NX-split); exec
#               faults (error code bit 4)
#   selftest    (run.sh selftest TEST) KVM's own selftests: only the
#               checks of all (each test does its own; its exit status
#               is the workload's)
#   multi       (run.sh multi) per VM of the manifest's "vms": the
#               events of its pid (the pid context) must show what its
#               workload's single run shows (the checks above and
#               "MMU events present"); the whole trace has no discarded
#               events.  nxrecovery's worker: on 6.12 a vhost task of the
#               VM's process (its pid); on 6.1 a kthread with a pid of
#               its own, whose VM the trace does not say: then "recovery
#               worker zaps" counts the kvm-nx-lpage-re events of no VM's
#               pid over the whole trace.  Without the pid context (a
#               trace from before it) each workload's checks run on the
#               whole trace, and it says so
#   late        (run.sh --attach-after or --snapshot-at) the trace begins
#               while the VM runs, so it legitimately lacks the VM's
#               creation and the phases before the session started (a
#               snapshot also lacks those after it): counts that add up
#               over the whole workload become "some" (basic: at most 5
#               notifier calls, no bound with THP; fast page faults only if the trace holds
#               the dirty-logging phase's marker; bgsnapshot: some
#               notifier calls and refaults, leaf zaps not required:
#               the saver may run ahead of the vCPU).  Every other
#               check stays.  A snapshot run also prints, per stream, the
#               packet sequence numbers it holds: a first one above 0 is
#               a CPU whose beginning the flight recorder overwrote
#   host mm     (run.sh --ksm, --khugepaged, --memcg-limit,
#               --numa-balancing, --compaction, --madv-collapse; the
#               manifest's "host_mm") the
#               notifier calls (kvm_unmap_hva_range, the patched
#               kvm_invalidate_range_start, 6.1's change_pte
#               kvm_set_spte_hva) and the aging calls (kvm_age_hva) are
#               counted by thread name (procname), and those made inside
#               reclaim (between a thread's mm_vmscan_*_reclaim_begin and
#               _end); checks: --ksm some by ksmd; --khugepaged some by
#               khugepaged; --memcg-limit some by kswapd* or by a thread
#               inside reclaim (it says which); --numa-balancing some by
#               the workload's threads outside its mprotect, madvise and
#               ioctl calls but KVM_RUN (where a vCPU thread runs its
#               task work: the NUMA scanner); --compaction some by
#               kcompactd*; --madv-collapse some inside the workload's
#               madvise(MADV_COLLAPSE) (behavior 25).  basic's exact notifier count becomes a
#               lower bound (the host adds its own), its dirty-log fast
#               page faults are not required (KSM's merged pages and
#               swapped-out ones take the slow path)

set -Eeuo pipefail
[ $# -eq 1 ] || { sed -n '3,/^$/s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"; exit 2; }
DIR=$1
M=$DIR/manifest.json
# run.sh --capture-tool: the lab's run facts are beside the tool's manifest.
[ ! -f "$DIR/lab-manifest.json" ] || M=$DIR/lab-manifest.json
[ -f "$M" ] || { echo "verify.sh: no $M" >&2; exit 2; }
# The kernel trace (with run.sh --ust, trace/ also holds ust/).
TR=$(find "$DIR/trace" -path '*/kernel/metadata' | head -n 1)
[ -n "$TR" ] || TR=$(find "$DIR/trace" -name metadata | head -n 1)
TR=$(dirname "$TR")
WL=$(sed -n 's/^  "workload": "\(.*\)",$/\1/p' "$M")
KNOBS=$(sed -n 's/^  "knobs": "\(.*\)",$/\1/p' "$M")
ATTACH=$(sed -n 's/^  "attach_after_s": \([0-9.]*\),$/\1/p' "$M")
SNAPAT=$(sed -n 's/^  "snapshot_at_s": \([0-9.]*\),$/\1/p' "$M")
LATE=0
[ -z "$ATTACH$SNAPAT" ] || LATE=1
# run.sh's host memory management options: "ksm khugepaged memcg numa".
HOSTMM=$(python3 -c '
import json, sys
h = json.load(open(sys.argv[1])).get("host_mm") or {}
print(" ".join(k for k in ("ksm", "khugepaged", "memcg", "numa_balancing", "compaction", "madv_collapse") if h.get(k)))' "$M" 2>/dev/null || true)

TMP=$(mktemp)
trap 'rm -f "$TMP" "$TMP.err" "$TMP.vm"' EXIT
babeltrace2 "$TR" 2>"$TMP.err" >"$TMP"

# One pass over a text trace (FILE): derived counts as name=value lines,
# evaluated.
counts() {
eval "$(awk '
function f(name,   r) {
	if (match($0, name " = [^,}]+")) {
		r = substr($0, RSTART + length(name) + 3, RLENGTH - length(name) - 3)
		gsub(/ /, "", r); return r
	}
	return ""
}
{ ev = $4; sub(/:$/, "", ev); n[ev]++ }
# Bit 11 of an SPTE (shadow present; the third hex digit from the
# right): a non-present SPTE is 0 on 6.1, 0x8000000000000000 (or
# 0x80000000000005a0, frozen) on 6.12.
function present(h,   d) {
	d = toupper(substr(h, length(h) - 2, 1))
	return length(h) > 4 && index("0123456789ABCDEF", d) - 1 >= 8
}
ev == "kvm_tdp_mmu_spte_changed" {
	o = f("old_spte"); nw = f("new_spte"); l = f("level")
	if (l == 1 && present(o) && !present(nw)) leafzap++
	if (/procname = "kvm-nx-lpage-re"/) worker++
}
ev == "kvm_mmu_prepare_zap_page" && /procname = "kvm-nx-lpage-re"/ { workerzap++ }
ev == "kvm_x86_page_fault" {
	# error code bit 4 (fetch): lowest bit of the second-lowest hex digit
	ec = f("error_code"); d = substr(ec, length(ec) - 1, 1)
	if ((index("0123456789ABCDEF", toupper(d)) - 1) % 2 == 1) fetch++
}
ev == "kvm_mmu_unmap_gfn_range" && f("decision") == 1 { skip++ }
ev == "kvm_mmu_set_spte" && f("level") == 1 { install4k++ }
# Phase markers: ioctl(-1, 0x4d520000 | phase); 1297219588 is
# 0x4d520004, basic'"'"'s DIRTY_LOG_ON.
ev == "syscall_entry_ioctl" && f("fd") == "4294967295" && f("cmd") == "1297219588" { dirtyon++ }
END {
	printf "N_fault=%d N_req=%d N_set=%d N_changed=%d N_unmap=%d N_fast=%d\n",
		n["kvm_x86_page_fault"], n["kvm_mmu_spte_requested"], n["kvm_mmu_set_spte"],
		n["kvm_tdp_mmu_spte_changed"], n["kvm_unmap_hva_range"], n["kvm_mmu_fast_page_fault"]
	printf "LEAFZAP=%d WORKER=%d WORKERZAP=%d FETCH=%d SKIP=%d INSTALL4K=%d DIRTYON=%d\n",
		leafzap, worker, workerzap, fetch, skip, install4k, dirtyon
}' "$1")"
}
counts "$TMP"
echo "workload=$WL knobs='${KNOBS}'"
[ -z "$ATTACH" ] || echo "  late start: session created ${ATTACH}s after the workload started"
if [ -n "$SNAPAT" ]; then
	echo "  flight recorder: snapshot ${SNAPAT}s after the workload started"
	# A snapshot has no packet index: read each packet's header in the
	# stream files.  lttng-modules' kernel layout (little endian, byte
	# aligned): magic, uuid[16], stream_id, stream_instance_id, then the
	# context timestamp_begin, timestamp_end, content_size, packet_size
	# (bits), packet_seq_num.
	python3 - "$TR" <<'PY' || echo "  (cannot read the packet headers)"
import glob, os, struct, sys
for f in sorted(glob.glob(os.path.join(sys.argv[1], "ch*_*"))):
    b = open(f, "rb").read()
    off, seqs = 0, []
    while off + 72 <= len(b):
        if struct.unpack_from("<I", b, off)[0] != 0xC1FC1FC1:
            sys.exit("%s: no packet header at %d" % (f, off))
        size, seq = struct.unpack_from("<QQ", b, off + 56)
        seqs.append(seq)
        off += max(size // 8, 72)
    if seqs:
        print("  stream %s: packets %d..%d%s" % (os.path.basename(f), seqs[0], seqs[-1],
              " (its beginning was overwritten)" if seqs[0] > 0 else ""))
PY
fi
show_counts() {
	echo "  page faults=$N_fault spte_requested=$N_req set_spte=$N_set spte_changed=$N_changed"
	echo "  unmap_hva_range=$N_unmap fast_page_fault=$N_fast leaf zaps(4K present->not)=$LEAFZAP"
	echo "  4K installs=$INSTALL4K exec faults=$FETCH skip decisions=$SKIP"
	echo "  recovery worker: spte_changed=$WORKER prepare_zap_page=$WORKERZAP"
}
show_counts

fails=0
# PFX: "VM I: " before each check of a multi run's VM.
PFX=
check() {
	if eval "$2"; then echo "PASS $PFX$1"; else echo "FAIL $PFX$1 ($2)"; fails=$((fails + 1)); fi
}
check "no discarded events" "! grep -q -i discard '$TMP.err'"
PROBES=$(sed -n 's/^  "lttng_probes": "\(.*\)",$/\1/p' "$M")
if [ "$PROBES" = debian ]; then
	# run.sh --probes debian: Debian's lttng-modules has no x86 KVM
	# probes, so no MMU event may be there; the workload's own checks
	# need those events.
	check "no x86 KVM events (Debian's probes)" "[ $N_fault -eq 0 ] && [ $N_changed -eq 0 ]"
	check "generic KVM events present" "[ $N_unmap -gt 0 ]"
	[ "$fails" -eq 0 ]
	exit
fi
# wl_checks WORKLOAD ARGS: its checks on the counts of counts().
wl_checks() {
local WL=$1 ARGS=$2
check "MMU events present" "[ $N_fault -gt 0 ] && [ $N_req -gt 0 ] && [ $N_set -gt 0 ] && [ $N_changed -gt 0 ]"
case $WL in
basic)
	if [[ " $ARGS " =~ \ --(thp|hugepage|split)\  ]] || [ -n "$HOSTMM" ]; then
		# A THP split is one more invalidation (of its 2 MiB), and
		# --split adds an mprotect RO/RW cycle: 5 or more (a late
		# start holds only those after it: no bound).
		[ "$LATE" -eq 1 ] || check ">= 5 notifier calls" "[ $N_unmap -ge 5 ]"
	elif [ "$LATE" -eq 1 ]; then
		# Only the calls after the session started.
		check "<= 5 notifier calls (late start)" "[ $N_unmap -le 5 ]"
	else
		check "5 notifier calls" "[ $N_unmap -eq 5 ]"
	fi
	# Without dirty logging, the fast path has nothing to fix; with
	# the host's memory management (KSM's read-only merged pages,
	# swapped-out pages) the write faults may all take the slow path.
	[[ " $ARGS " == *" --no-dirty-log "* ]] || { [ "$LATE" -eq 1 ] && [ "$DIRTYON" -eq 0 ]; } ||
		[ -n "$HOSTMM" ] || check "dirty-log fast page faults" "[ $N_fast -gt 0 ]"
	;;
bgsnapshot)
	# --mem MiB (default 32): one unprotect per 4 KiB page, data pages
	# from 1 MiB up.
	MEM=32
	[[ ! $ARGS =~ --mem\ ([0-9]+) ]] || MEM=${BASH_REMATCH[1]}
	PAGES=$((MEM * 256)) DATA=$(((MEM - 1) * 256))
	if [ "$LATE" -eq 1 ]; then
		# Only part of the unprotect loop is in the trace.
		PAGES=1 DATA=1
	fi
	if [[ $ARGS =~ --mode\ whole ]]; then
		# One unprotect of the whole range after the copy.
		check "notifier calls for the whole-range unprotect" "[ $N_unmap -ge 1 ]"
	else
		check "one notifier call per unprotect" "[ $N_unmap -ge $PAGES ]"
	fi
	if [[ $KNOBS == *perm_upgrade_skip_zap=Y* ]]; then
		check "perm-upgrade skips" "[ $SKIP -ge $PAGES ]"
	else
		# A read guest has every page mapped when they are protected.
		# A late start misses that whole-range zap, and the saver may
		# run ahead of the vCPU's pass (an unprotect then finds no
		# leaf): no leaf zap is certain.
		[[ $ARGS == *--access* && $ARGS != *"--access read"* ]] || [ "$LATE" -eq 1 ] ||
			check "leaf zaps" "[ $LEAFZAP -ge $DATA ]"
		check "refaults after zaps" "[ $INSTALL4K -gt $DATA ]"
	fi
	;;
nxrecovery)
	# --hugepage-late first: whatever thread the worker is, it need not
	# zap (a multi run's VM whose worker zapped nothing failed here).
	if [[ " $ARGS " == *" --hugepage-late "* ]]; then
		# The read phase faulted RAM in as 4 KiB pages: KVM's
		# mappings stay 4 KiB after khugepaged's collapse, so no NX
		# huge page need be split (nor recovered).
		echo "  recovery worker zaps: not required (--hugepage-late)"
	elif [ -n "${KTHREAD_WORKER:-}" ] && [ "$WORKERZAP" -eq 0 ]; then
		# multi on 6.1: the worker is a kthread of its own pid.
		check "recovery worker zaps (a kthread of no VM's pid, over the whole trace: $KTHREAD_WORKER)" \
			"[ ${KTHREAD_WORKER%% *} -gt 0 ]"
	else
		check "recovery worker zaps" "[ $WORKERZAP -gt 0 ] && [ $WORKER -gt 0 ]"
	fi
	check "exec faults (NX splits)" "[ $FETCH -gt 0 ]"
	;;
selftest)
	echo "  selftest: $ARGS"
	;;
esac
}

# host_mm_checks: the notifier calls by thread name (run.sh's host
# memory management options).
host_mm_checks() {
	local out by wls=$WL
	# run.sh multi: each VM's workload (its UST variant's name too).
	[ "$WL" != multi ] || wls=$(sed -n 's/^    {"vm": [0-9]*, "workload": "\([a-z]*\)".*/\1 \1-ust/p' "$M" | tr '\n' ' ')
	out=$(awk -v wls="$wls" '
	function f(name,   r) {
		if (match($0, name " = [^,}]+")) {
			r = substr($0, RSTART + length(name) + 3, RLENGTH - length(name) - 3)
			gsub(/[ "]/, "", r); return r
		}
		return ""
	}
	{ ev = $4; sub(/:$/, "", ev); tid = f("tid"); p = f("procname") }
	ev ~ /^mm_vmscan_(memcg|direct)_reclaim_begin$/ { inrecl[tid] = 1; next }
	ev ~ /^mm_vmscan_(memcg|direct)_reclaim_end$/ { delete inrecl[tid]; next }
	# KVM_RUN (ioctl 0xae80) is where task work runs for a vCPU
	# thread: NUMA hinting, memcg reclaim at memory.high.
	# madvise(MADV_COLLAPSE): behavior 25.
	ev == "syscall_entry_madvise" && f("behavior") == "25" { incoll[tid] = 1 }
	ev == "syscall_exit_madvise" { delete incoll[tid] }
	ev ~ /^syscall_entry_(mprotect|madvise)$/ ||
	(ev == "syscall_entry_ioctl" && f("cmd") != "44672") { insys[tid] = 1; next }
	ev ~ /^syscall_exit_(mprotect|madvise|ioctl)$/ { delete insys[tid]; next }
	ev == "kvm_unmap_hva_range" || ev == "kvm_invalidate_range_start" ||
	ev == "kvm_set_spte_hva" || ev == "kvm_age_hva" {
		k = p " " ev; n[k]++
		if (tid in inrecl) r[k]++
		# A patched kernel traces kvm_unmap_hva_range and its own
		# kvm_invalidate_range_start for one call: counted once.
		if (ev != "kvm_age_hva") {
			e = (ev == "kvm_invalidate_range_start") ? "i" : "u"
			if (e == "u" && ev == "kvm_unmap_hva_range") unmaps++
			if (p ~ /^ksmd$/) c[e, "ksmd"]++
			if (p ~ /^khugepaged$/) c[e, "khp"]++
			if (p ~ /^kswapd/) c[e, "kswapd"]++
			if (p ~ /^kcompactd/) c[e, "kcompactd"]++
			if (tid in incoll) c[e, "coll"]++
			if (tid in inrecl) { c[e, "recl"]++; if (p !~ /^kswapd/) c[e, "reclwl"]++ }
			if (index(" " wls " ", " " p " ") && !(tid in insys)) c[e, "nosys"]++
		}
	}
	END {
		for (k in n) printf "  by thread: %s %d%s\n", k, n[k], (k in r) ? " (" r[k] " in reclaim)" : ""
		e = unmaps ? "u" : "i"
		printf "HM_KSMD=%d HM_KHP=%d HM_KSWAPD=%d HM_RECL=%d HM_RECLWL=%d HM_NOSYS=%d HM_KCOMPACTD=%d HM_COLL=%d\n",
			c[e, "ksmd"], c[e, "khp"], c[e, "kswapd"], c[e, "recl"], c[e, "reclwl"], c[e, "nosys"],
			c[e, "kcompactd"], c[e, "coll"]
	}' "$TMP")
	echo "  host mm: $HOSTMM; notifier and aging calls by thread name (procname event count):"
	echo "$out" | grep '^  by thread' | sort -k3,3 -k4,4 || true
	eval "$(echo "$out" | grep '^HM_')"
	echo "  notifier calls: ksmd=$HM_KSMD khugepaged=$HM_KHP kswapd*=$HM_KSWAPD in reclaim=$HM_RECL (of them not kswapd: $HM_RECLWL) by $WL outside mprotect/madvise/ioctl but KVM_RUN=$HM_NOSYS kcompactd*=$HM_KCOMPACTD in MADV_COLLAPSE=$HM_COLL"
	[[ " $HOSTMM " != *" ksm "* ]] || check "ksm: notifier calls by ksmd" "[ $HM_KSMD -gt 0 ]"
	[[ " $HOSTMM " != *" khugepaged "* ]] || check "khugepaged: notifier calls by khugepaged" "[ $HM_KHP -gt 0 ]"
	if [[ " $HOSTMM " == *" memcg "* ]]; then
		by="kswapd* $HM_KSWAPD, the workload's threads in reclaim $HM_RECLWL"
		check "memcg: notifier calls by reclaim ($by)" "[ $((HM_KSWAPD + HM_RECLWL)) -gt 0 ]"
	fi
	[[ " $HOSTMM " != *" numa_balancing "* ]] ||
		check "numa balancing: notifier calls by ${wls% } outside its mprotect/madvise/ioctls but KVM_RUN" "[ $HM_NOSYS -gt 0 ]"
	[[ " $HOSTMM " != *" compaction "* ]] ||
		check "compaction: notifier calls by kcompactd" "[ $HM_KCOMPACTD -gt 0 ]"
	[[ " $HOSTMM " != *" madv_collapse "* ]] ||
		check "madv_collapse: notifier calls inside madvise(MADV_COLLAPSE)" "[ $HM_COLL -gt 0 ]"
}

ARGS=$(sed -n 's/^  "workload_args": "\(.*\)",$/\1/p' "$M")
[ -z "$HOSTMM" ] || host_mm_checks
if [ "$WL" != multi ]; then
	wl_checks "$WL" "$ARGS"
	[ "$fails" -eq 0 ]
	exit
fi
# run.sh multi: one line per VM in the manifest's "vms".
VMS=$(sed -n 's/^    {"vm": \([0-9]*\), "workload": "\([a-z]*\)", "args": "\(.*\)", "pid": \([0-9a-z]*\), .*/\1|\2|\4|\3/p' "$M")
[ -n "$VMS" ] || { echo "FAIL multi run without \"vms\" in $M"; exit 1; }
PIDS=$(echo "$VMS" | cut -d'|' -f3 | tr '\n' ' ')
if grep -q -m1 '}, { pid = [0-9]*, ' "$TMP"; then
	HAVE_PID=1
	# kvm-nx-lpage-re's events of no VM's pid: the worker kthreads (6.1).
	KTHREAD_WORKER=$(awk -v pids=" $PIDS" '
		/procname = "kvm-nx-lpage-re"/ && match($0, /\}, \{ pid = [0-9]+,/) {
			p = substr($0, RSTART + 11, RLENGTH - 12)
			if (index(pids, " " p " ")) next
			n++; t[p] = 1
		}
		END { k = 0; for (p in t) k++; printf "%d events, %d threads", n, k }' "$TMP")
	echo "  pid context: yes; worker kthreads: $KTHREAD_WORKER"
else
	HAVE_PID=0
	echo "  pid context: no (each workload checked on the whole trace)"
fi
while IFS='|' read -r vm vwl vpid vargs; do
	if [ "$HAVE_PID" -eq 1 ]; then
		grep -F "}, { pid = $vpid, " "$TMP" >"$TMP.vm" || true
		counts "$TMP.vm"
	fi
	echo "VM $vm: $vwl $vargs (pid $vpid)"
	show_counts
	PFX="VM $vm: "
	wl_checks "$vwl" "$vargs"
done <<<"$VMS"
[ "$fails" -eq 0 ]
