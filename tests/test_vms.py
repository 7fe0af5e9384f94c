"""Each event's VM (ingest/vms.h) against the lab's own record and the
babeltrace2 CLI, on real captures of several VMs at once.

usage: test_vms.py MMUREPLAY DATA_DIR WORK

For each multi-VM capture (tests/data and tests/data/pending, manifest
lab.vms from capture/lab/run.sh multi): table vm holds one VM per workload,
with the pid the lab recorded; each VM's rows are exactly the canonical
events babeltrace2 shows with that pid from its KVM_CREATE_VM's return
on (the process has one VM); the rows of no VM are those of the other
pids (kernel threads: 6.1's NX recovery kthread, kswapd), counted in
meta vm_unattributed:no_vm_process.  A capture recorded without the pid
context (every fixture before the lab added it) has no VM, and says so.
The summary's row per VM gives babeltrace2's page faults of its pid, and
of each of its vCPUs (two VMs' vCPU 0 apart), its invalidations per
thread babeltrace2's (ksmd, NUMA hinting).
Each VM of the captures under tests/data passes its own self-check
(fidelity replays each alone), and --vm narrows to one (summary: the
VM's events alone, its faults babeltrace2's of its pid).
Each patched capture cut late at 30% (its VMs from before the cut) gives
each VM the struct kvm address its process's kvm_vm_create gave it in
the whole capture, and every row naming an address that address's VM.
Two captures cut late where one VM's vCPUs ran no more still hold each
lab VM (known by its root's teardown at its exit), and every VM passes.
A capture cut through a vCPU's fault gives the VM from before the cut
its process's rows from the cut's start (babeltrace2's events of the
pid before its first vCPU event), and passes; one missing a CPU's
stream keeps the rows of no VM those meta counts.  A DB whose table vm
was edited (ids not 1, 2, ...) is refused by summary and report in one
line naming the DB and the table.
What this cannot catch: a process with several VMs at once (no capture
has one), whose threads the vCPU fds tell apart.  A sliced run
(mmrtest.fixture_step() > 1) takes every second capture.
"""
import collections
import json
import os
import re
import shutil
import sqlite3
import sys

from damage import damage, kernel_dir
from mmrtest import (check, db_rows, extract_fixture, finish, fixture_offset,
                     fixture_step, fresh_dir, late_cut, run)

mmr, data, work = sys.argv[1:4]
fresh_dir(work)
KVM_CREATE_VM = 0xae01
LINE = re.compile(r'^\[[0-9.]+\] \S+ (\S+): (.*)$')
PID = re.compile(r'\bpid = (\d+)')
TID = re.compile(r'\btid = (\d+)')
VTID = re.compile(r'\bvtid = (\d+)')
KVM = re.compile(r'\bkvm = (0x[0-9a-fA-F]+|\d+)')
FIELD = re.compile(r'\b(fd|cmd|ret|vcpu_id) = (-?\d+)')


def multi_vm_fixtures():
    """Multi-VM fixtures that hold their VMs' creation: not the last
    seconds of a run cut by babeltrace2's trimmer (the manifest's lab
    trim_begin_s), which begin mid-run (test_late_cut, test_rules_off
    and the per-fixture tests take those)."""
    for top in (data, os.path.join(data, "pending")):
        for d in sorted(os.listdir(top)):
            m = os.path.join(top, d, "manifest.json")
            if (os.path.exists(m) and len(lab_vms(m)) > 1 and
                    "trim_begin_s" not in json.load(open(m)).get("lab",
                                                                 {})):
                yield os.path.join(top, d)


def lab_vms(manifest):
    return json.load(open(manifest)).get("lab", {}).get("vms") or []


def bt_rows_by_pid(trace, canonical, faults):
    """Canonical events per pid, counted from its process's first
    KVM_CREATE_VM return on (before it, the process has no VM), and
    the events of processes that made none.  On a capture of the
    patched kernel that names VMs (kvm_vm_create; kernel-series patches
    13-14), a VM is made at kvm_vm_create, and an event naming a struct
    kvm (field kvm) is that VM's process's, as is every event of its
    thread from an invalidation start or recovery begin naming it to the
    end: the kernel's word, read from babeltrace2's fields.  An address
    named before its kvm_vm_create is the VM created next there (the
    notifier is registered before the event), if none there was
    destroyed between; a context naming an address of no VM is no VM's,
    never its thread's process's.  An
    LTTng-UST event (run.sh multi --ust: the latency probe's) names its
    thread by vtid: its process is the one the kernel trace gave that
    thread."""
    p = run(["babeltrace2", "--clock-seconds", "--no-delta", trace])
    check(p.returncode == 0, "babeltrace2 %s" % trace)
    lines = p.stdout.splitlines()
    # kvm -> [(line, pid of a creation, or None: a destruction)]
    made = collections.defaultdict(list)
    for i, line in enumerate(lines):
        m = LINE.match(line) if "kvm_vm_" in line else None
        if m and m.group(1) in ("kvm_vm_create", "kvm_vm_destroy"):
            made[int(KVM.search(m.group(2)).group(1), 0)].append(
                (i, int(PID.search(m.group(2)).group(1))
                 if m.group(1) == "kvm_vm_create" else None))

    def made_next(kvm, i):
        for j, pid in made.get(kvm, ()):
            if j > i:
                return pid
        return None

    created, in_create = set(), set()
    per_pid, before = collections.Counter(), collections.Counter()
    pid_faults = collections.Counter()
    vcpu_faults = collections.Counter()     # (pid, vcpu_id)
    live, window = {}, {}                   # kvm -> pid, tid -> pid
    pid_of = {}                             # tid -> pid
    for i, line in enumerate(lines):
        m = LINE.match(line)
        if not m or m.group(1) not in canonical:
            continue
        name, body = m.groups()
        mp = PID.search(body)
        if mp:
            pid = int(mp.group(1))
            tid = int(TID.search(body).group(1))
            pid_of[tid] = pid
        else:
            # An LTTng-UST event (vtid and procname, no pid): the
            # process the kernel trace gave that thread.
            tid = int(VTID.search(body).group(1))
            pid = pid_of.get(tid)
        # The fields this reads (an ioctl's cmd and ret, a fault's
        # vcpu_id, a struct kvm), parsed only where they can be.
        f = dict((k, int(v)) for k, v in FIELD.findall(body)) \
            if name in faults or name.startswith("syscall_") else {}
        kvm = KVM.search(body) if "kvm = " in body else None
        kvm = int(kvm.group(1), 0) if kvm else None
        if name == "kvm_vm_create":
            live[kvm] = pid
            created.add(pid)
        if name == "syscall_entry_ioctl" and f.get("cmd") == KVM_CREATE_VM:
            in_create.add(pid)
        # The return row is the VM's own: it says the fd.
        if name == "syscall_exit_ioctl" and pid in in_create:
            in_create.discard(pid)
            if f.get("ret", -1) >= 0:
                created.add(pid)
        owner = pid if pid in created else None
        if kvm is not None and name != "kvm_vm_create":
            owner = live.get(kvm, made_next(kvm, i))
            if name.endswith(("_start", "_begin")):
                window[tid] = owner
            elif name.endswith("_end"):
                window.pop(tid, None)
            if name == "kvm_vm_destroy":
                live.pop(kvm, None)
        elif tid in window:
            owner = window[tid]
        if owner is not None:
            pid = owner
        if owner is not None:
            per_pid[pid] += 1
            pid_faults[pid] += name in faults
            if name in faults and "vcpu_id" in f:
                vcpu_faults[(pid, f["vcpu_id"])] += 1
        else:
            before[pid] += 1
    return per_pid, before, pid_faults, vcpu_faults


def check_replay_vms(name, db, ids):
    """replay's rows per VM: one per VM and policy, each VM's self-check
    ok, a policy's rows summing to its capture-wide figures; --vm N gives
    VM N's row as the whole table (the same replay, narrowed)."""
    r = run([mmr, "replay", db, "--json"])
    rep = json.loads(r.stdout) if r.stdout else {}
    per = rep.get("vms", [])
    check(r.returncode == 0 and sorted(v["vm"] for v in per) == ids and
          all(v["self_check_ok"] for v in per),
          "%s: replay gives a row per VM, each checked (%s)"
          % (name, [(v["vm"], v["self_check_ok"]) for v in per]))
    recorded = list(rep.get("policies", {"": 0}))[0]

    def vm_fig(v, pol, k):
        # A policy that cannot act on a VM leaves it as recorded.
        p = v["policies"][pol]
        return p[k] if p["applicable"] else \
            v["policies"][recorded][k] if k in ("faults", "leaf_zaps",
                                                "tlb_flushes") else 0
    for pol, fig in rep.get("policies", {}).items():
        if not fig["applicable"]:
            continue
        for k in ("faults", "leaf_zaps", "tlb_flushes", "faults_avoided",
                  "zaps_kept"):
            total = sum(vm_fig(v, pol, k) for v in per)
            check(abs(total - fig[k]) < 1e-6,
                  "%s: %s %s: the VMs' rows sum to the capture's (%s vs "
                  "%s)" % (name, pol, k, total, fig[k]))
    # The DB keeps each VM's figures (replay_vm_metric) as the JSON.
    stored = dict(((vm, pol), v) for vm, pol, v in db_rows(
        db, "SELECT vm, policy, value FROM replay_vm_metric WHERE name = "
        "'faults'"))
    want = dict(((v["vm"], pol), f["faults"]) for v in per
                for pol, f in v["policies"].items() if f["applicable"])
    check(stored == want and want,
          "%s: replay_vm_metric holds each VM's faults (%s vs %s)"
          % (name, stored, want))
    runs = db_rows(db, "SELECT policy, value FROM replay_run JOIN "
                   "replay_metric ON run_id = id WHERE name = 'faults'")
    r1 = run([mmr, "replay", db, "--json", "--vm", str(ids[-1])])
    one = json.loads(r1.stdout) if r1.stdout else {}
    row = [v for v in per if v["vm"] == ids[-1]]
    check(r1.returncode == 0 and row and
          one["vm_attribution"]["narrowed_to"] == ids[-1] and
          all(one["policies"][p]["faults"] == row[0]["policies"][p]["faults"]
              and one["policies"][p]["leaf_zaps"] ==
              row[0]["policies"][p]["leaf_zaps"]
              for p in one["policies"] if one["policies"][p]["applicable"]),
          "%s: replay --vm %d is VM %d's row" % (name, ids[-1], ids[-1]))
    check(db_rows(db, "SELECT policy, value FROM replay_run JOIN "
                  "replay_metric ON run_id = id WHERE name = 'faults'") ==
          runs, "%s: replay --vm leaves the capture's stored runs" % name)
    # The HTML report: a row per VM and policy from the stored figures.
    page = os.path.join(os.path.dirname(db), "report.html")
    check(run([mmr, "report", db, "-o", page]).returncode == 0,
          "%s: report" % name)
    body = open(page).read()
    sec = body[body.find('id="vms"'):]
    for v in per:
        pol = list(v["policies"])[0]
        cells = "<td>%d</td><td>%s (%d)</td><td>%s</td><td>{:,}</td>" \
            .format(int(v["policies"][pol]["faults"])) % (
                v["vm"], v["procname"], v["pid"], pol)
        check(cells in sec, "%s: the report's row of VM %d: %s"
              % (name, v["vm"], cells))
    t = run([mmr, "replay", db]).stdout
    check(all(re.search(r"^\s+%d\s+\d+\s+\S+\s+\S+\s+[\d,]+" % i, t,
                        re.M) for i in ids) and "Per VM" in t,
          "%s: replay's text has a row per VM:\n%s" % (name, t))


def check_cut_kvm(name, trace, db, w):
    """A patched capture cut late (its VMs from before the cut, their
    kvm_vm_create gone): each VM learns its struct kvm address from its
    own process's work, never from its thread's reclaim of another VM's
    memory; so each address the cut gives a VM is the one the whole
    capture's kvm_vm_create gave that VM's process, and every row naming
    an address is the VM of that address's process (or of none, said)."""
    owner = dict(db_rows(db, "SELECT kvm, pid FROM vm WHERE kvm IS NOT "
                             "NULL"))
    if not owner:
        return
    cut, k, _ = late_cut(trace, 0.3, os.path.join(w, "cut"))
    cdb = os.path.join(w, "cut.db")
    check(run([mmr, "ingest", "-q", cut, "-o", cdb]).returncode == 0,
          "%s: ingest the cut at %d s" % (name, k))
    learnt = db_rows(cdb, "SELECT kvm, pid FROM vm WHERE kvm IS NOT NULL")
    check(all(owner.get(a) == pid for a, pid in learnt),
          "%s: the cut at %d s gives each VM its process's struct kvm "
          "(cut %s, whole %s)" % (name, k, learnt, owner))
    for table in ("notifier", "nx_recovery"):
        wrong = db_rows(cdb, "SELECT count(*) FROM %s t JOIN vm ON vm.id "
                             "= t.vm WHERE t.kvm IS NOT NULL AND t.kvm IS "
                             "NOT vm.kvm" % table)[0][0]
        check(wrong == 0, "%s: the cut at %d s gives %d %s rows a VM "
              "other than the one they name" % (name, k, wrong, table))


def check_corrupt_vm(name, db, w):
    """A corrupt event in one VM's rows: fidelity says so once, in one
    line, exit 2 (the split by VM reads it first; it once fell back to
    narrowing each VM, which said it again after a warning)."""
    bad = os.path.join(w, "corrupt.db")
    shutil.copy(db, bad)
    con = sqlite3.connect(bad)
    con.execute("UPDATE spte_change SET level = 9 WHERE seq = (SELECT seq "
                "FROM spte_change WHERE vm = 1 LIMIT 1 OFFSET 100)")
    con.commit()
    con.close()
    r = run([mmr, "fidelity", bad, "--json"])
    check(r.returncode == 2 and len(r.stderr.splitlines()) == 1 and
          "corrupt" in r.stderr,
          "%s: a corrupt event: exit %d, %r" % (name, r.returncode,
                                                r.stderr))
    # VM ids edited away from ingest's 1, 2, ...: the summary (and the
    # report, which holds it) refuse in one line naming the DB and table
    # vm (they said "query failed: another row available").
    bad = os.path.join(w, "renumbered.db")
    shutil.copy(db, bad)
    con = sqlite3.connect(bad)
    con.execute("UPDATE vm SET id = id + 10")
    con.commit()
    con.close()
    for cmd in (["summary", bad], ["report", bad, "-o", os.devnull]):
        r = run([mmr] + cmd)
        check(r.returncode == 2 and len(r.stderr.splitlines()) == 1 and
              bad in r.stderr and "table vm: VM ids are not 1, 2" in
              r.stderr, "%s: %s of renumbered VMs: exit %d, %r"
              % (name, cmd[0], r.returncode, r.stderr))


fixtures = list(multi_vm_fixtures())
check(len(fixtures) >= 5, "the multi-VM captures are found (%d)"
      % len(fixtures))
# A sliced run (the sanitizers, CI's regular run) takes every second of
# them, from the first or the second as the fixtures' slice begins.
if fixture_step() > 1:
    fixtures = fixtures[fixture_offset() % 2::2]
    print("a slice: %d multi-VM captures" % len(fixtures))
for fx in fixtures:
    name = os.path.basename(fx)
    w = fresh_dir(os.path.join(work, name))
    trace = extract_fixture(fx, w)
    db = os.path.join(w, "capture.db")
    r = run([mmr, "ingest", "-q", trace, "-o", db])
    check(r.returncode == 0, "ingest %s: %s" % (name, r.stderr))
    lab = lab_vms(os.path.join(fx, "manifest.json"))
    vms = db_rows(db, "SELECT id, pid, fd, created_seq, procname FROM vm "
                  "ORDER BY id")
    check(sorted(v[1] for v in vms) == sorted(v["pid"] for v in lab) and
          all(v[2] is not None and v[3] is not None for v in vms),
          "%s: a VM per workload, made in the trace, with the lab's pids "
          "(%s; lab %s)" % (name, vms, [(v["pid"], v["workload"])
                                        for v in lab]))
    by_pid = dict((v["pid"], v["workload"]) for v in lab)
    # run.sh multi --ust runs a workload's UST variant, WORKLOAD-ust.
    check(all(v[4] in (by_pid.get(v[1], "")[:15],
                       (by_pid.get(v[1], "") + "-ust")[:15]) for v in vms),
          "%s: each VM's procname is its workload's (%s)"
          % (name, [(v[1], v[4]) for v in vms]))
    canonical = set(n for (n,) in db_rows(
        db, "SELECT name FROM raw_event WHERE canonical IS NOT NULL"))
    tables = sorted(set(t for (t,) in db_rows(
        db, "SELECT canonical FROM raw_event WHERE canonical IS NOT NULL")))
    rows = collections.Counter()
    for t in tables:
        for vm, n in db_rows(db, 'SELECT vm, count(*) FROM "%s" GROUP BY vm'
                             % t):
            rows[vm] += n
    faults = set(n for (n,) in db_rows(
        db, "SELECT name FROM raw_event WHERE canonical = 'fault'"))
    per_pid, before, pid_faults, vcpu_faults = bt_rows_by_pid(
        trace, canonical, faults)
    for vm_id, pid, _, _, _ in vms:
        check(rows[vm_id] == per_pid[pid],
              "%s: VM %d (pid %d) holds the %d events babeltrace2 shows "
              "of its pid from its creation on (%d)"
              % (name, vm_id, pid, per_pid[pid], rows[vm_id]))
    others = sum(n for pid, n in per_pid.items() if pid not in by_pid)
    meta = dict(db_rows(db, "SELECT key, value FROM meta WHERE key LIKE "
                        "'vm%'"))
    none = rows[None]
    check(none == sum(before.values()) + others and
          meta["vm_unattributed:no_vm_process"] == none and
          meta["vm_unattributed:no_pid"] == 0 and
          meta["vm_attribution"] == "pid",
          "%s: the %d rows of no VM are the other processes' and those "
          "before each VM (%d + %d), said in meta (%s)"
          % (name, none, sum(before.values()), others, meta))
    # The summary's row per VM: its faults are babeltrace2's page faults
    # of its pid.
    sm = json.loads(run([mmr, "summary", db, "--json"]).stdout)
    check(sorted((v["vm"], v["pid"], v["faults"]) for v in sm["vms"]) ==
          sorted((v[0], v[1], pid_faults[v[1]]) for v in vms) and
          sm["vm_attribution"]["source"] == "pid",
          "%s: summary's VMs and their faults (%s)" % (name, sm["vms"]))
    # Each VM's vCPUs apart (two VMs' vCPU 0 are two rows): babeltrace2's
    # page faults per pid and vcpu_id.
    for vm_id, pid, _, _, _ in vms:
        row = [x for x in sm["vms"] if x["vm"] == vm_id]
        want = dict((str(c), n) for (p_, c), n in vcpu_faults.items()
                    if p_ == pid)
        check(row and row[0]["per_vcpu_faults"] == want,
              "%s: VM %d's faults per vCPU are babeltrace2's of pid %d "
              "(%s; babeltrace2 %s)" % (name, vm_id, pid,
                                        row and row[0]["per_vcpu_faults"],
                                        want))
    txt = run([mmr, "summary", db]).stdout
    for vm_id, pid, _, _, _ in vms:
        for (p_, c), n in vcpu_faults.items():
            if p_ == pid:
                check(re.search(r"^  %-4d %-21d %12s$" % (vm_id, c,
                                "{:,}".format(n)), txt, re.M),
                      "%s: the text's vCPU table has VM %d vCPU %d: %d"
                      % (name, vm_id, c, n))
    # summary --vm N counts that VM's events alone: its faults are
    # babeltrace2's of its pid, its leaf zaps its row's; spikes --vm N
    # takes its probe samples alone.
    for v in vms:
        one = run([mmr, "summary", db, "--json", "--vm", str(v[0])])
        o = json.loads(one.stdout) if one.returncode == 0 else {}
        row = [x for x in sm["vms"] if x["vm"] == v[0]]
        check(o.get("narrowed_vm") == v[0] and row and
              [x["vm"] for x in o["vms"]] == [v[0]] and
              o["totals"]["npf_faults"] == pid_faults[v[1]] and
              o["totals"]["leaf_zaps"] == row[0]["leaf_zaps"] and
              0 < o["latency"]["npf_service"]["n"] <= pid_faults[v[1]],
              "%s: summary --vm %d is VM %d's events (%s)"
              % (name, v[0], v[0], o.get("totals")))
        sp = run([mmr, "spikes", db, "--json", "--vm", str(v[0])])
        want = db_rows(db, "SELECT count(*) FROM latency_sample WHERE vm "
                       "= %d" % v[0])[0][0]
        check(sp.returncode == 0 and
              json.loads(sp.stdout)["samples"] == want,
              "%s: spikes --vm %d takes its %d samples" % (name, v[0], want))
        # compare --vm N of the capture against itself: VM N's figures
        # on both sides, its self-check (the replay of its own state,
        # kernel threads' work included, not of the narrowed tables).
        # One capture of two VMs and one of three: each check replays
        # every VM twice, the same code on every capture.
        if name in ("lttng-kernel-6.1.192-patched-multivm-nxrecovery-"
                    "bgsnapshot", "lttng-kernel-6.1.192-stock-multivm-"
                    "nxrecovery-bgsnapshot-basic"):
            cp = run([mmr, "compare", "--a", db, "--b", db, "--json",
                      "--vm", str(v[0])])
            c = json.loads(cp.stdout) if cp.returncode == 0 else {}
            crow = {x["key"]: x for x in c.get("rows", [])}
            check(c.get("vm") == v[0] and
                  crow["faults"]["a"]["median"] == pid_faults[v[1]] and
                  crow["leaf_zaps"]["b"]["median"] == row[0]["leaf_zaps"]
                  and all(r["self_check_ok"] for r in c["a"]["runs"] +
                          c["b"]["runs"]),
                  "%s: compare --vm %d is VM %d's, self-checked (%s)"
                  % (name, v[0], v[0], cp.stderr.strip()))
            # report --vm N: the VM's summary and its own replay.
            html = os.path.join(w, "vm%d.html" % v[0])
            rp = run([mmr, "report", db, "--vm", str(v[0]), "-o", html])
            page = open(html).read() if rp.returncode == 0 else ""
            check("VM %d alone (--vm)" % v[0] in page and
                  "{:,}".format(pid_faults[v[1]]) in page,
                  "%s: report --vm %d shows VM %d alone (%d: %s)"
                  % (name, v[0], v[0], rp.returncode, rp.stderr.strip()))
    # Each VM replayed alone: its own self-check, the capture's verdict
    # every VM's, the figures their sums (those under data/pending/ are
    # checked by test_pending.py).
    if os.path.basename(os.path.dirname(fx)) != "pending":
        r = run([mmr, "fidelity", db, "--json"])
        f = json.loads(r.stdout)
        per = [(v["vm"], v["pid"], v["ok"]) for v in f["vms"]]
        check(r.returncode == 0 and f["ok"] and
              sorted((v[0], v[1]) for v in per) ==
              sorted((v[0], v[1]) for v in vms) and all(v[2] for v in per)
              and f["observed"]["faults"] ==
              sum(v["observed"]["faults"] for v in f["vms"]),
              "%s: every VM passes its own self-check (%s)" % (name, per))
        one = run([mmr, "fidelity", db, "--json", "--vm", "1"])
        check(one.returncode == 0 and
              [v["vm"] for v in json.loads(one.stdout)["vms"]] == [1],
              "%s: --vm 1 replays VM 1 alone" % name)
        check_replay_vms(name, db, [v[0] for v in vms])
        check_corrupt_vm(name, db, w)
        check_cut_kvm(name, trace, db, w)
    print("%s: %s, %d rows of no VM" % (
        name, ", ".join("VM %d pid %d: %d" % (v[0], v[1], rows[v[0]])
                        for v in vms), none))

# Who invalidated: the summary's sources against babeltrace2's
# invalidation starts per thread name (patched: kvm_invalidate_range_start,
# the stock kvm_unmap_hva_range beside it not counted again; stock:
# kvm_unmap_hva_range), on the captures under the host's KSM (ksmd) and
# NUMA balancing (the vCPU thread inside KVM_RUN).
NAME = re.compile(r'procname = "([^"]*)"')
TS = re.compile(r'^\[(\d+)\.(\d{9})\]')
for fx, event in (("lttng-kernel-6.1.192-patched-basic-ksm",
                   "kvm_invalidate_range_start"),
                  ("lttng-kernel-6.1.192-stock-basic-ksm",
                   "kvm_unmap_hva_range"),
                  ("lttng-kernel-6.1.192-stock-nxrecovery-numa-balancing",
                   "kvm_unmap_hva_range")):
    w = fresh_dir(os.path.join(work, fx))
    trace = extract_fixture(os.path.join(data, fx), w)
    db = os.path.join(w, "capture.db")
    check(run([mmr, "ingest", "-q", trace, "-o", db]).returncode == 0,
          "ingest %s" % fx)
    p = run(["babeltrace2", "--clock-seconds", "--no-delta", trace])
    base = db_rows(db, "SELECT value FROM meta WHERE key = 'ts_base_ns'"
                   )[0][0]
    bt, bt_sec = collections.Counter(), collections.Counter()
    for line in p.stdout.splitlines():
        m = LINE.match(line)
        if m and m.group(1) == event:
            thread = NAME.search(m.group(2)).group(1)
            bt[thread] += 1
            s, ns = TS.match(line).groups()
            bt_sec[(thread, (int(s) * 10 ** 9 + int(ns) - base) //
                    10 ** 9)] += 1
    sm = json.loads(run([mmr, "summary", db, "--json"]).stdout)
    got = collections.Counter()
    for src in sm["sources"]:
        got[src["thread"]] += src["invalidations"]
    check(+got == +bt and bt,
          "%s: invalidations per thread as babeltrace2 counts %s: %s, "
          "summary: %s" % (fx, event, dict(bt), dict(+got)))
    # ... and per second of the capture; a source's seconds sum to it.
    per_sec, zaps = collections.Counter(), collections.Counter()
    for q in sm["sources_per_second"]:
        src = sm["sources"][q["source"]]
        per_sec[(src["thread"], q["second"])] += q["invalidations"]
        zaps[q["source"]] += q["leaf_zaps"]
    check(+per_sec == +bt_sec,
          "%s: invalidations per thread and second as babeltrace2 counts "
          "(%d cells, summary %d)" % (fx, len(+bt_sec), len(+per_sec)))
    check(all(zaps[i] == src["leaf_zaps"]
              for i, src in enumerate(sm["sources"])),
          "%s: each source's leaf zaps per second sum to its own" % fx)
    print("%s: invalidations by thread %s" % (fx, dict(bt)))

# A page KSM shares at one gfn in two identical VMs, zapped by khugepaged
# in one VM's mm: the leaves fit both VMs' states, and the memslot
# learnt for each (hva - gpa) tells which VM's range it was.  Before the
# rule the zap went to no VM and the other VM faulted there
# (fault_not_required).
fx = "lttng-kernel-6.1.192-stock-multivm-basic-basic-ksm-khugepaged-first-21s"
w = fresh_dir(os.path.join(work, fx + "-memslot"))
trace = extract_fixture(os.path.join(data, fx), w)
db = os.path.join(w, "capture.db")
check(run([mmr, "ingest", "-q", trace, "-o", db]).returncode == 0,
      "ingest %s" % fx)
f = json.loads(run([mmr, "fidelity", db, "--json"]).stdout)
check(f["ok"] and f["vm_attribution"]["contexts_by_memslot"] >= 1,
      "%s: passes, a shared page's zap told by the memslot (%s)"
      % (fx, f["vm_attribution"]))

# Cut late where one VM's vCPUs ran no more (its workload done, its
# process exiting): the VM is still one, known by its root's teardown
# (a TDP root's entry cleared, which only tdp_mmu_zap_root() does, here
# at its exit), named by its process; each VM passes its own
# self-check.  Before, ingest knew the VMs by their vCPU events alone,
# and the exit's zaps went to the VM left (776 and 97 mismatches).
# The lab's pids are the truth: every VM's process lives at the cut.
for fx, share in (
        ("lttng-kernel-6.1.192-stock-multivm-bgsnapshot-bgsnapshot-memcg",
         0.8),
        ("lttng-kernel-6.12.118-stock-multivm-bgsnapshot-basic-numa-memcg-2",
         0.8)):
    w = fresh_dir(os.path.join(work, fx + "-idle"))
    trace = extract_fixture(os.path.join(data, fx), w)
    cut, k, _ = late_cut(trace, share, os.path.join(w, "cut"))
    db = os.path.join(w, "cut.db")
    check(run([mmr, "ingest", "-q", cut, "-o", db]).returncode == 0,
          "ingest %s cut at %d s" % (fx, k))
    lab = lab_vms(os.path.join(data, fx, "manifest.json"))
    vms = db_rows(db, "SELECT pid, procname, fd FROM vm ORDER BY pid")
    check(sorted((v[0], v[1], v[2]) for v in vms) ==
          sorted((v["pid"], v["workload"][:15], None) for v in lab),
          "%s cut at %d s: a VM per lab workload, from before the cut "
          "(%s; lab %s)" % (fx, k, vms, [(v["pid"], v["workload"])
                                         for v in lab]))
    r = run([mmr, "fidelity", db, "--json"])
    f = json.loads(r.stdout)
    check(r.returncode == 0 and f["capture_start"]["began_mid_run"] and
          len(f["vms"]) == len(lab) and all(v["ok"] for v in f["vms"]),
          "%s cut at %d s: every VM passes (exit %d, %s)"
          % (fx, k, r.returncode, [(v.get("pid"), v.get("ok"))
                                    for v in f.get("vms", [])]))

# A late cut through a vCPU's fault (patched 6.12, three VMs under KSM
# and khugepaged, from 3 s on): the vCPU thread's first rows, before its
# first exit, entry or fault, are its VM's too (they were no VM's: 517
# rows), and the fault's free of the table it mapped a 2 MiB leaf over
# zaps nothing (the model, seeing no fault, took it for a teardown and
# counted the new leaf: zap_count 1).
fx = ("lttng-kernel-6.12.118-patched-multivm-basic-basic-bgsnapshot-ksm-"
      "khugepaged-from-3s")
w = fresh_dir(os.path.join(work, fx))
trace = extract_fixture(os.path.join(data, fx), w)
db = os.path.join(w, "capture.db")
check(run([mmr, "ingest", "-q", trace, "-o", db]).returncode == 0,
      "ingest %s" % fx)
canonical = set(n for (n,) in db_rows(
    db, "SELECT name FROM raw_event WHERE canonical IS NOT NULL"))
tables = sorted(set(t for (t,) in db_rows(
    db, "SELECT canonical FROM raw_event WHERE canonical IS NOT NULL")))
vms = dict(db_rows(db, "SELECT pid, id FROM vm WHERE created_seq IS NULL"))
vcpu = set(n for (n,) in db_rows(
    db, "SELECT name FROM raw_event WHERE canonical IN ('vcpu_exit', "
    "'vcpu_entry', 'fault')"))
early, first_vcpu = collections.Counter(), set()
p = run(["babeltrace2", "--clock-seconds", "--no-delta", trace])
for line in p.stdout.splitlines():
    m = LINE.match(line)
    mp = m and PID.search(m.group(2))
    if not mp or m.group(1) not in canonical:
        continue
    pid = int(mp.group(1))
    if m.group(1) in vcpu:
        first_vcpu.add(pid)
    elif pid in vms and pid not in first_vcpu:
        early[pid] += 1
nulls = dict((pid, sum(db_rows(
    db, 'SELECT count(*) FROM "%s" WHERE vm IS NULL AND tid IN (SELECT tid '
    'FROM thread WHERE pid = %d)' % (t, pid))[0][0] for t in tables))
    for pid in vms)
check(sum(early.values()) > 0 and not any(nulls.values()),
      "%s: a VM from before the cut has its process's rows from the "
      "cut's start (babeltrace2: %s events before a vCPU's first exit, "
      "entry or fault; rows left without a VM: %s)"
      % (fx, dict(early), nulls))
r = run([mmr, "fidelity", db, "--json"])
f = json.loads(r.stdout)
check(r.returncode == 0 and f["capture_start"]["began_mid_run"] and
      f["mismatches_total"] == 0,
      "%s: passes, began mid-run (exit %d, %s)"
      % (fx, r.returncode, f.get("mismatches_by_kind")))

# A patched capture missing one CPU's stream (damage.py's cut-header,
# as the damage matrix makes it): a VM from before what is left takes
# its process's earlier rows, but never a row naming an address not
# known (it stays unknown_kvm): the rows of no VM are those meta counts.
# Before, such rows were taken as the VM's and counted off no_vm_process
# (an assertion in ingest failed).
fx = "lttng-kernel-6.1.192-patched-multivm-nxrecovery-basic-bgsnapshot-ksm-memcg"
w = fresh_dir(os.path.join(work, fx + "-one-cpu"))
trace = extract_fixture(os.path.join(data, fx), w, private=True)
damage("cut-header", kernel_dir(trace))
db = os.path.join(w, "capture.db")
r = run([mmr, "ingest", "-q", trace, "-o", db])
tables = [t for (t,) in db_rows(
    db, "SELECT DISTINCT canonical FROM raw_event WHERE canonical IS NOT "
    "NULL")] if r.returncode == 3 else []
nulls = sum(db_rows(db, 'SELECT count(*) FROM "%s" WHERE vm IS NULL' % t)
            [0][0] for t in tables) if r.returncode == 3 else -1
meta = dict(db_rows(db, "SELECT key, value FROM meta WHERE key LIKE "
                    "'vm_unattributed:%'")) if r.returncode == 3 else {}
check(r.returncode == 3 and nulls == sum(meta.values()) and
      meta["vm_unattributed:unknown_kvm"] > 0,
      "%s, one CPU's stream cut to its header: ingest keeps the rest "
      "(exit %d: %s), and the rows of no VM are those meta counts (%d; %s)"
      % (fx, r.returncode, r.stderr.strip().splitlines()[-1:], nulls, meta))

# A capture without the pid context: no VM, and the DB says why.
old = os.path.join(data, "lttng-kernel-6.1-bgsnapshot-perpage-read")
w = fresh_dir(os.path.join(work, "no-pid"))
trace = extract_fixture(old, w)
db = os.path.join(w, "capture.db")
check(run([mmr, "ingest", "-q", trace, "-o", db]).returncode == 0,
      "ingest %s" % old)
meta = dict(db_rows(db, "SELECT key, value FROM meta WHERE key LIKE 'vm%'"))
n = db_rows(db, "SELECT count(*) FROM spte_change")[0][0]
sm = json.loads(run([mmr, "summary", db, "--json"]).stdout)
check(sm["vms"] == [] and sm["vm_attribution"]["source"] == "none",
      "no pid context: the summary lists no VM and says why (%s)"
      % sm["vm_attribution"])
check(db_rows(db, "SELECT count(*) FROM vm")[0][0] == 0 and
      meta["vm_attribution"] == "none" and
      db_rows(db, "SELECT count(*) FROM spte_change WHERE vm IS NULL")[0][0]
      == n and n > 0,
      "no pid context: no VM, every row unattributed (%s)" % meta)
r = run([mmr, "fidelity", db, "--vm", "1"])
check(r.returncode == 1 and "no VM 1" in r.stderr and
      len(r.stderr.strip().splitlines()) == 1,
      "--vm on a capture without VMs: one line, exit 1 (%d: %s)"
      % (r.returncode, r.stderr))
finish()
