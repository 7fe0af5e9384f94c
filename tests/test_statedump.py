"""Memslots from LTTng's state dump, on real captures attached late.

usage: test_statedump.py MMUREPLAY FIXTURE_DIR WORK

The fixture is a lab capture (capture/lab/run.sh --attach-after S
--memslot-ref) on a kernel with both kernel-series patches that list
memslots in the state dump (Linux 12, lttng-modules 6): its trace is a
session started S seconds into the workload, whose state dump lists the
VM's memslots (lttng_statedump_kvm_memslot); ref/ is a second session
recorded from before the VM existed with kvm_memslot_change only, the
memslots as the VM's KVM_SET_USER_MEMORY_REGION ioctls set them.
Checked:
  - the dump lists exactly the memslots the ioctls had set when it ran:
    the state after the last kvm_memslot_change of each slot in ref/
    before the dump's first event (deleted slots absent), every field
    equal (base_gfn, npages, hva, flags);
  - ingest stores each dumped memslot as a memslot row of change 4, its
    fields the CLI's;
  - the self-check passes and capture_start.memslots_state_dump counts
    the slots the dump listed before any traced change of theirs (the
    dump runs at the session's start, before any change in the trace
    here); the HTML report says the dump listed them;
What this cannot catch: a VM other than the workload's (the lab runs
one; the model has no VM dimension yet); a change racing the dump (none
in these captures); the dump's effect on a what-if: in these captures
every NX split came before the session, so nx-skip-dirty has nothing to
keep before the slot's next traced change reveals its flags anyway
(test_replay_rules state_dump_memslots covers it).
"""
import json
import os
import sys

from mmrtest import bt_events, check, db_rows, finish, fresh_dir, \
    ingest_fixture, run

mmr, fixture, work = sys.argv[1:4]
fresh_dir(work)
FIELDS = ("base_gfn", "npages", "hva", "flags")
STATE_DUMP = 4
DELETE = 1

trace, db = ingest_fixture(mmr, fixture, work)
dump = []
for sec, name, f in bt_events(trace):
    if name == "lttng_statedump_kvm_memslot":
        dump.append((float(sec), f))
check(dump, "the state dump lists memslots")
t_dump = min(t for t, _ in dump) if dump else 0
listed = {(f["as_id"], f["slot"]): tuple(f[k] for k in FIELDS)
          for _, f in dump}

# The memslots the ioctls had set when the dump ran.
ref = os.path.join(fixture, "ref")
check(os.path.isdir(ref), "the fixture has ref/")
state = {}
changes = 0
for sec, name, f in bt_events(ref):
    if name != "kvm_memslot_change" or float(sec) >= t_dump:
        continue
    changes += 1
    key = (f["as_id"], f["slot"])
    if f["change"] == DELETE:
        state.pop(key, None)
    else:
        state[key] = (f["base_gfn"], f["npages"], f["hva"], f["new_flags"])
check(changes > 0, "ref/ holds the memslot changes before the dump")
check(listed == state, "dump %s == ioctls %s" % (sorted(listed.items()),
                                                 sorted(state.items())))

rows = db_rows(db, "SELECT as_id, slot, base_gfn, npages, hva, old_flags, "
               "new_flags, dirty_logging FROM memslot WHERE change = %d "
               "ORDER BY seq" % STATE_DUMP)
want = [(f["as_id"], f["slot"], f["base_gfn"], f["npages"], f["hva"],
         f["flags"], f["flags"], f["dirty_logging"]) for _, f in dump]
check([tuple(r) for r in rows] == want, "memslot rows %s == CLI %s" %
      (rows, want))


def replay(db_path, tag):
    out = os.path.join(work, tag + ".json")
    r = run([mmr, "replay", db_path, "--policy", "nx-skip-dirty", "--json",
             "-o", out])
    check(r.returncode == 0, "replay %s: rc %d %s" % (tag, r.returncode,
                                                      r.stderr))
    with open(out) as fp:
        return json.load(fp)


doc = replay(db, "dump")
check(doc["self_check"]["ok"], "self-check passes")
start = doc["capture_start"]
check(start["began_mid_run"], "began mid-run")
check(start["memslots_state_dump"] == len(listed),
      "memslots_state_dump %d == %d listed" % (start["memslots_state_dump"],
                                               len(listed)))
html = os.path.join(work, "report.html")
r = run([mmr, "report", db, "-o", html])
check(r.returncode == 0, "report: " + r.stderr)
with open(html) as fp:
    check("state dump listed the memslots" in fp.read(),
          "the report says the state dump listed the memslots")
print("%d memslots dumped, equal to the ioctls' (%d changes before)" %
      (len(listed), changes))
finish()
