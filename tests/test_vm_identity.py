"""The VM by the patched kernel's word (kernel-series patches 13-14), on
real captures of several VMs that recorded kvm_vm_create.

usage: test_vm_identity.py MMUREPLAY DATA_DIR WORK

For every fixture whose trace holds kvm_vm_create for two VMs or more
(tests/data; not a part of a run cut late, where a VM made before it
shows none):
1. table vm is babeltrace2's kvm_vm_create events, one VM each, with
   their struct kvm address, process and fd; a VM is destroyed in the
   DB exactly when babeltrace2 shows its kvm_vm_destroy;
2. every invalidation start and recovery batch of a thread of no VM's
   process (ksmd, khugepaged, kswapd, 6.1's NX recovery kthread) has
   the VM whose address it names, none unknown (meta
   vm_unattributed:unknown_kvm 0), and the summary's sources count a
   kernel thread's starts per VM, one row each (ksmd works for both);
3. each VM passes its own self-check, and the replay had no kernel
   thread's work left to attribute by state (kthread_events_decided 0:
   the kernel said);
4. the stock inference on the same events: the DB with the kernel's word
   taken away (the VM of every row of a thread of no VM's process set
   NULL, as a stock kernel leaves them) replays each VM to the same
   figures, and leaves more kernel threads' events without a VM (the
   contexts that zapped nothing, which no leaf can tell).
A fixture whose kernel threads invalidated nothing has items 1 only.
What this cannot catch: a kernel thread's SPTE change outside any
invalidation (page aging), which the kernel does not name either.
"""
import json
import os
import shutil
import sqlite3
import sys

from mmrtest import (bt_events, check, db_rows, extract_fixture, finish,
                     fresh_dir, run, u64)

mmr, data, work = sys.argv[1:4]
fresh_dir(work)


def bt_vm_events(trace):
    """kvm_vm_create (kvm, pid, fd) in order, the destroyed addresses, and
    per (procname, kvm) the invalidation starts and recovery begins."""
    made, destroyed, named, starts = [], set(), {}, {}
    for _, name, f in bt_events(trace, context=True):
        if name == "kvm_vm_create":
            made.append((f["kvm"], f["pid"], f["fd"]))
        elif name == "kvm_vm_destroy":
            destroyed.add(f["kvm"])
        elif name in ("kvm_invalidate_range_start",
                      "kvm_mmu_nx_recovery_begin"):
            key = (f["procname"], f["kvm"], f["pid"])
            named[key] = named.get(key, 0) + 1
            if name == "kvm_invalidate_range_start":
                starts[key] = starts.get(key, 0) + 1
    # The threads of no VM's process (6.12's recovery worker is a task
    # of the VM's process).
    pids = set(pid for _, pid, _ in made)

    def outside(counts):
        out = {}
        for (proc, kvm, pid), n in counts.items():
            if pid not in pids:
                out[(proc, kvm)] = out.get((proc, kvm), 0) + n
        return out
    return made, destroyed, outside(named), outside(starts)


def vm_checks(f):
    """fidelity --json's VMs, each checked alone; a capture of one VM is
    checked once, as a whole (no per-VM rows)."""
    if "vms" in f:
        return f["vms"]
    return [{"vm": 1, "ok": f.get("ok"), "observed": f["observed"]}] \
        if "observed" in f else []


def per_vm(f):
    return dict((v["vm"], (v["ok"], v["observed"]["faults"],
                           v["observed"]["leaf_zaps"]))
                for v in vm_checks(f))


def cut_late(d):
    """A part of a run cut by babeltrace2's trimmer from a later second
    (the manifest's lab trim_begin_s): a VM made before it shows no
    kvm_vm_create (test_vms and test_rules_off take those)."""
    m = os.path.join(data, d, "manifest.json")
    return os.path.exists(m) and "trim_begin_s" in json.load(
        open(m)).get("lab", {})


def fixtures():
    for d in sorted(os.listdir(data)):
        counts = os.path.join(data, d, "event-counts.txt")
        if not os.path.exists(counts) or cut_late(d):
            continue
        for line in open(counts):
            n, _, name = line.strip().partition(" ")
            if name == "kvm_vm_create:" and int(n) >= 2:
                yield d


found = list(fixtures())
check(found, "a fixture recorded kvm_vm_create")
for fx in found:
    w = fresh_dir(os.path.join(work, fx))
    trace = extract_fixture(os.path.join(data, fx), w)
    db = os.path.join(w, "capture.db")
    r = run([mmr, "ingest", "-q", trace, "-o", db])
    check(r.returncode == 0, "ingest %s: %s" % (fx, r.stderr.strip()))
    made, destroyed, named, starts = bt_vm_events(trace)
    # 1. The VMs are the kernel's.
    vms = db_rows(db, "SELECT id, kvm, pid, fd, destroyed_seq FROM vm "
                  "ORDER BY id")
    check([(u64(k), p, f) for _, k, p, f, _ in vms] == made and made,
          "%s: table vm is babeltrace2's kvm_vm_create events %s: %s"
          % (fx, made, vms))
    check(set(u64(k) for _, k, _, _, d in vms if d is not None) ==
          destroyed,
          "%s: the VMs destroyed are those of kvm_vm_destroy (%d)"
          % (fx, len(destroyed)))
    # 2-4 need a kernel thread's work: a capture with none (two VMs
    # with a latency probe, no host memory pressure) has nothing to name.
    if not named:
        print("%s: %d VMs, no kernel thread's invalidation or batch: "
              "items 2-4 do not apply" % (fx, len(vms)))
        continue
    # 2. Kernel threads' invalidations and batches: the VM they name.
    by_kvm = dict((u64(k), i) for i, k, _, _, _ in vms)
    got = {}
    for table in ("notifier", "nx_recovery"):
        for proc, kvm, vm, n in db_rows(
                db, "SELECT t.procname, e.kvm, e.vm, count(*) FROM %s e "
                "JOIN (SELECT tid, min(procname) AS procname, max(pid) AS "
                "pid FROM thread GROUP BY tid) t USING (tid) WHERE "
                "e.kvm IS NOT NULL AND "
                "e.phase = 0 AND (t.pid IS NULL OR t.pid NOT IN "
                "(SELECT pid FROM vm)) GROUP BY 1, 2, 3" % table):
            check(vm == by_kvm.get(u64(kvm)),
                  "%s: %s's %s rows naming %#x are VM %s's (%s)"
                  % (fx, proc, table, u64(kvm), by_kvm.get(u64(kvm)), vm))
            got[(proc, u64(kvm))] = got.get((proc, u64(kvm)), 0) + n
    want = dict((k, n) for k, n in named.items() if k[1] in by_kvm)
    check(got == want and got,
          "%s: kernel threads' starts per (thread, VM) as babeltrace2 "
          "shows them: %s vs %s" % (fx, got, want))
    # ... and the summary's rows of who invalidated: one per (thread, VM).
    sm = json.loads(run([mmr, "summary", db, "--json"]).stdout)
    kthreads = set(p for p, _ in starts)
    rows = dict(((s["thread"], s["vm"]), s["invalidations"])
                for s in sm["sources"]
                if s["thread"] in kthreads and s["invalidations"])
    want_rows = dict(((p, by_kvm[k]), n) for (p, k), n in starts.items()
                     if k in by_kvm)
    # (A capture whose kernel threads start no invalidation, as reclaim
    # in the VM processes' own threads under a memory cgroup, has only
    # the NX kthread's batches: no row of who invalidated.)
    check(rows == want_rows and (rows or not starts),
          "%s: the summary counts each kernel thread's starts per VM, as "
          "babeltrace2 shows them: %s vs %s" % (fx, rows, want_rows))
    meta = dict(db_rows(db, "SELECT key, value FROM meta WHERE key LIKE "
                        "'vm_unattributed:%'"))
    check(meta.get("vm_unattributed:unknown_kvm") == 0,
          "%s: no event names an unknown VM (%s)" % (fx, meta))
    # 3. Each VM's self-check, nothing left to infer.
    r = run([mmr, "fidelity", db, "--json"])
    f = json.loads(r.stdout) if r.stdout else {}
    check(r.returncode == 0 and f.get("ok") and
          all(v["ok"] for v in vm_checks(f)) and
          len(vm_checks(f)) == len(vms),
          "%s: every VM passes its own self-check (%s)"
          % (fx, per_vm(f)))
    att = f.get("vm_attribution", {})
    check(att.get("kthread_events_decided") == 0,
          "%s: the replay attributed nothing by state: the kernel named "
          "every kernel thread's context (%s)" % (fx, att))
    # 4. The stock inference on the same events.
    stock = os.path.join(w, "stock.db")
    shutil.copy(db, stock)
    tables = [t for (t,) in db_rows(
        db, "SELECT DISTINCT canonical FROM raw_event WHERE canonical "
        "IS NOT NULL")]
    con_sql = ";".join(
        'UPDATE "%s" SET vm = NULL WHERE tid IN (SELECT tid FROM thread '
        'WHERE pid IS NULL OR pid NOT IN (SELECT pid FROM vm))' % t
        for t in tables)
    con = sqlite3.connect(stock)
    con.executescript(con_sql)
    con.commit()
    con.close()
    r2 = run([mmr, "fidelity", stock, "--json"])
    f2 = json.loads(r2.stdout) if r2.stdout else {}
    att2 = f2.get("vm_attribution", {})
    check(per_vm(f2) == per_vm(f),
          "%s: by the stock inference each VM replays the same (%s vs "
          "the kernel's word %s)" % (fx, per_vm(f2), per_vm(f)))
    # A context that zapped nothing tells no VM by its leaves; the kernel
    # names it (ksmd's scans of pages it did not merge).
    check(att.get("kthread_events_left", 0) <
          att2.get("kthread_events_left", 0),
          "%s: the kernel's word leaves fewer kernel threads' events "
          "without a VM than the stock inference (%s vs %s)"
          % (fx, att.get("kthread_events_left"),
             att2.get("kthread_events_left")))
    print("%s: %d VMs, kernel threads' starts %s; the stock inference "
          "attributed %d of their events by the leaves zapped, left %d"
          % (fx, len(vms), got, att2.get("kthread_events_decided", -1),
             att2.get("kthread_events_left", -1)))
# A struct kvm named before its kvm_vm_create: the event is traced once
# the VM's fd is known, after kvm_create_vm() registered the MMU notifier,
# and ksmd, scanning the VMM's mm, invalidated in between.  Those rows are
# the VM created next at that address (babeltrace2 shows them before the
# create event), none unknown.
fx = "lttng-kernel-6.12.118-patched-nxrecovery-ksm"
w = fresh_dir(os.path.join(work, fx))
trace = extract_fixture(os.path.join(data, fx), w)
db = os.path.join(w, "capture.db")
check(run([mmr, "ingest", "-q", trace, "-o", db]).returncode == 0,
      "ingest %s" % fx)
early, created = 0, None
for _, name, f in bt_events(trace):
    if name == "kvm_vm_create":
        created = f["kvm"]
    elif name == "kvm_invalidate_range_start" and created is None:
        early += 1
got = db_rows(db, "SELECT count(*) FROM notifier n JOIN vm ON vm.id = n.vm "
              "WHERE n.phase = 0 AND n.event IS NOT NULL AND n.seq < "
              "vm.created_seq AND n.kvm = vm.kvm")[0][0]
meta = dict(db_rows(db, "SELECT key, value FROM meta WHERE key = "
                    "'vm_unattributed:unknown_kvm'"))
check(early > 0 and got == early and
      meta.get("vm_unattributed:unknown_kvm") == 0,
      "%s: the %d starts before kvm_vm_create (babeltrace2) are its VM's: "
      "%d, unknown %s" % (fx, early, got, meta))
finish()
