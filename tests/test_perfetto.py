"""mmureplay export --perfetto on every real fixture, decoded by Debian's
protoc with tests/perfetto/trace_subset.proto (written from the field
numbers Perfetto publishes), not by mmureplay's own code.

usage: test_perfetto.py MMUREPLAY DATA_DIR WORK_DIR PROTO_DIR

Per fixture (every eighth under the sanitizers):
  - protoc decodes the export as perfetto.protos.Trace, and no field is
    left undecoded (a bare field number in its output: a field number
    the export got wrong);
  - every packet sequence's timestamps never go back;
  - on every track, slices nest: an end never comes without its begin,
    and every slice begun is ended;
  - the NPF service slices are the NPF exits the babeltrace2 CLI counts
    (exit_code 1024 on SVM, 48 on VMX; checked with the CLI on the
    bundled trace, with the DB's vcpu_exit rows, which the ingest tests
    hold to the CLI, on the others); every thread track names its tid.
Timestamps are deltas on each sequence's own clock: they are summed
from its clock snapshot, and each NPF slice begins at its exit's time in
the DB.  On patched A/B fixtures (one VM, two VMs) with --policy
perm-upgrade after a replay: the what-if counters sum to the replay's
faults and leaf zaps of each policy; one instant per fault the policy
avoids and per leaf zap it keeps (replay's faults_avoided, zaps_kept),
each on its event's thread at its event's time (the seq it carries).  Bad use: --policy with no stored replay exits 7 naming the
command to run; -o /dev/null stays a device.
What it cannot catch: how Perfetto's UI draws it (no UI here), fields
the subset does not declare (the check refuses them, so it would fail).
"""
import collections
import json
import os
import re
import sqlite3
import subprocess
import sys

from mmrtest import (bt_events, check, done_with, extract_fixture, finish,
                     fresh_dir, run, trace_fixtures)

FIELD = re.compile(r"^(\s*)([a-z_]+|\d+)(?::\s*(.*))?\s*\{?$")


# Messages a packet may hold several of: gathered as lists of dicts.
REPEATED = {"clocks", "debug_annotations", "event_names",
            "debug_annotation_names"}


def _dest(stack, cur, name):
    """Where a field goes: the innermost repeated message it is in (key
    relative to it), else the packet (key relative to the packet)."""
    for i in range(len(stack) - 1, 0, -1):
        if stack[i][1] is not None:
            return stack[i][1], ".".join([n for n, _ in stack[i + 1:]] +
                                         [name])
    return cur, ".".join([n for n, _ in stack[1:]] + [name])


def decode(proto_dir, path):
    """The packets of the export as dicts of dotted field names (None if
    protoc fails); repeated messages (REPEATED) as lists of dicts."""
    with open(path, "rb") as f:
        r = subprocess.run(["protoc", "--proto_path=" + proto_dir,
                            "--decode=perfetto.protos.Trace",
                            "trace_subset.proto"], stdin=f,
                           capture_output=True)
    if r.returncode != 0:
        return None, r.stderr.decode(errors="replace")
    packets, cur, stack = [], None, []
    for line in r.stdout.decode().splitlines():
        s = line.strip()
        if s == "}":
            name, sub = stack.pop()
            if not stack:
                packets.append(cur)
            elif sub is not None:
                where, key = _dest(stack, cur, name)
                where.setdefault(key, []).append(sub)
            continue
        m = FIELD.match(line)
        if not m:
            return None, "unparsed protoc line: " + line
        name = m.group(2)
        if name.isdigit():
            return None, "undecoded field %s in: %s" % (name, line)
        if s.endswith("{"):
            if not stack:
                cur = {}
            stack.append((name, {} if stack and name in REPEATED else None))
            continue
        where, key = _dest(stack, cur, name)
        where[key] = m.group(3)
    return packets, None


def timestamps(name, packets):
    """Each packet's absolute time in "ts": a sequence whose defaults name
    a clock of its own (ids 64-127) holds the ns since its previous
    packet, from the incremental clock its snapshot starts; others hold
    absolute times.  Returns False after a failed check."""
    clock, last = {}, {}
    for p in packets:
        seq = p.get("trusted_packet_sequence_id")
        cid = p.get("trace_packet_defaults.timestamp_clock_id")
        if cid is not None:
            clock[seq] = int(cid)
        for c in p.get("clock_snapshot.clocks", []):
            if c.get("is_incremental") == "true":
                if (int(c["clock_id"]) != clock.get(seq) or
                        not 64 <= int(c["clock_id"]) < 128):
                    check(False, "%s: sequence %s: incremental clock %s "
                          "is not its own" % (name, seq, c["clock_id"]))
                    return False
                last[seq] = int(c["timestamp"])
        if "timestamp" not in p:
            continue
        v = int(p["timestamp"])
        if clock.get(seq):
            if seq not in last:
                check(False, "%s: sequence %s: a delta before its clock"
                      % (name, seq))
                return False
            v += last[seq]
        elif v < last.get(seq, 0):
            check(False, "%s: sequence %s goes back at %d" % (name, seq, v))
            return False
        last[seq] = p["ts"] = v
    return True


def tracks_of(packets):
    """{track uuid: tid} of the thread tracks, and each event packet's
    track (its own, else its sequence's default) in "track"."""
    tid, default = {}, {}
    for p in packets:
        if "track_descriptor.thread.tid" in p:
            tid[p["track_descriptor.uuid"]] = \
                int(p["track_descriptor.thread.tid"])
        seq = p.get("trusted_packet_sequence_id")
        d = p.get("trace_packet_defaults.track_event_defaults.track_uuid")
        if d is not None:
            default[seq] = d
        if "track_event.type" in p:
            p["track"] = p.get("track_event.track_uuid", default.get(seq))
    return tid


def check_packets(name, packets):
    """Nesting per track; returns ({tid: [NPF slice begin times]}, thread
    tracks), or 0 after a failed check."""
    if not timestamps(name, packets):
        return 0
    tids = tracks_of(packets)
    depth = collections.Counter()
    npf = collections.defaultdict(list)
    for p in packets:
        t = p.get("track_event.type")
        u = p.get("track")
        if t == "TYPE_SLICE_BEGIN":
            depth[u] += 1
            if p.get("track_event.name_iid") == "1":
                npf[tids.get(u)].append(p["ts"])
        elif t == "TYPE_SLICE_END":
            depth[u] -= 1
            if depth[u] < 0:
                check(False, "%s: a slice ends unbegun on track %s"
                      % (name, u))
                return 0
    check(all(v == 0 for v in depth.values()),
          "%s: slices left open: %s" % (name, {k: v for k, v in
                                              depth.items() if v}))
    return npf, len(tids)


def annotation(p, iid):
    """The int value of the packet's debug annotation iid (a string, as
    protoc prints it), or None."""
    for a in p.get("track_event.debug_annotations", []):
        if a.get("name_iid") == iid:
            return int(a.get("int_value", "0"))
    return None


def whatif(mmr, fixture, w, proto_dir, pol):
    """export --policy pol on the fixture: refused before a stored replay;
    then the what-if counters sum to replay's faults and leaf zaps of
    each policy, there is one instant per fault the policy avoids and
    per leaf zap it keeps (replay's faults_avoided, zaps_kept), each on
    the track of the thread that traced that event, at its time (its
    row in the DB, by the seq it carries).  Returns the DB."""
    fresh_dir(w)
    trace = extract_fixture(fixture, w)
    db = os.path.join(w, "capture.db")
    run([mmr, "ingest", "-q", trace, "-o", db])
    out = os.path.join(w, "out.pftrace")
    r = run([mmr, "export", db, "--perfetto", out, "--policy", pol])
    check(r.returncode == 7 and "mmureplay replay" in r.stderr and
          not os.path.exists(out),
          "--policy before a replay: exit %d: %s" % (r.returncode, r.stderr))
    rep = json.loads(run([mmr, "replay", db, "--policy", pol,
                          "--json"]).stdout)["policies"]
    r = run([mmr, "export", db, "--perfetto", out, "--policy", pol])
    check(r.returncode == 0, "export --policy: %s" % r.stderr)
    packets, err = decode(proto_dir, out)
    check(packets is not None, "protoc on the what-if: %s" % err)
    if not packets or not timestamps(fixture, packets):
        return db
    tids = tracks_of(packets)
    tracks, sums = {}, collections.Counter()
    names, args, instants = {}, {}, collections.defaultdict(list)
    for p in packets:
        for n in p.get("interned_data.debug_annotation_names", []):
            args[n["name"].strip('"')] = n["iid"]
        if "track_descriptor.counter.unit" in p:
            tracks[p["track_descriptor.uuid"]] = \
                p.get("track_descriptor.name", "").strip('"')
        for n in p.get("interned_data.event_names", []):
            names[n["iid"]] = n["name"].strip('"')
        if p.get("track_event.type") == "TYPE_COUNTER":
            sums[tracks.get(p["track_event.track_uuid"])] += \
                int(p.get("track_event.counter_value", "0"))
        if p.get("track_event.type") == "TYPE_INSTANT":
            instants[names.get(p.get("track_event.name_iid"))].append(
                (annotation(p, args.get("seq")), tids.get(p["track"]),
                 p["ts"]))
    recorded = [k for k in rep if k != pol][0]
    for q in (recorded, pol):
        check(sums["faults/s (%s)" % q] == rep[q]["faults"] and
              sums["leaf zaps/s (%s)" % q] == rep[q]["leaf_zaps"],
              "%s: counters %d faults, %d zaps; replay %d, %d"
              % (q, sums["faults/s (%s)" % q],
                 sums["leaf zaps/s (%s)" % q], rep[q]["faults"],
                 rep[q]["leaf_zaps"]))
    con = sqlite3.connect(db)
    base = int(con.execute("SELECT value FROM meta WHERE key = "
                           "'ts_base_ns'").fetchone()[0])
    for what, table, figure in (("fault avoided", "fault", "faults_avoided"),
                                ("leaf zap kept", "spte_change",
                                 "zaps_kept")):
        got = instants["%s (%s)" % (what, pol)]
        check(len(got) == rep[pol][figure] and got,
              "%s: %d '%s' instants, replay's %s %d"
              % (fixture, len(got), what, figure, rep[pol][figure]))
        off = [(seq, tid, ts) for seq, tid, ts in got
               if con.execute("SELECT tid, ? + ts FROM %s WHERE seq = ?"
                              % table, (base, seq)).fetchone() !=
               (tid, ts)]
        check(not off, "%s: '%s' instants not on their event's thread "
              "and time: %s" % (fixture, what, off[:3]))
    con.close()
    return db


def npf_reason(db):
    con = sqlite3.connect(db)
    isa = con.execute("SELECT value FROM meta WHERE key = 'fault_isa'"
                      ).fetchone()
    con.close()
    return 48 if isa and isa[0] == "vmx" else 1024


def main():
    mmr, data, work, proto_dir = sys.argv[1:5]
    fresh_dir(work)
    for fx in trace_fixtures(data):
        w = os.path.join(work, fx)
        os.makedirs(w)
        trace = extract_fixture(os.path.join(data, fx), w)
        db = os.path.join(w, "capture.db")
        r = run([mmr, "ingest", "-q", trace, "-o", db])
        if r.returncode not in (0, 3):
            check(False, "%s: ingest: %s" % (fx, r.stderr))
            continue
        out = os.path.join(w, "out.pftrace")
        r = run([mmr, "export", db, "--perfetto", out, "-q"])
        check(r.returncode == 0, "%s: export: %s" % (fx, r.stderr))
        if r.returncode:
            continue
        packets, err = decode(proto_dir, out)
        check(packets is not None, "%s: protoc: %s" % (fx, err))
        if packets is None:
            continue
        res = check_packets(fx, packets)
        if not res:
            continue
        npf_at, threads = res
        npf = sum(len(v) for v in npf_at.values())
        con = sqlite3.connect(db)
        base = con.execute("SELECT value FROM meta WHERE key = "
                           "'ts_base_ns'").fetchone()
        base = int(base[0]) if base else 0
        exits = collections.defaultdict(list)
        for tid, ts in con.execute("SELECT tid, ts FROM vcpu_exit WHERE "
                                   "exit_reason = ? ORDER BY seq",
                                   (npf_reason(db),)):
            exits[tid].append(base + ts)
        con.close()
        want = sum(len(v) for v in exits.values())
        check(npf == want, "%s: %d NPF slices, %d NPF exits"
              % (fx, npf, want))
        # Each slice begins at its exit's time, through the deltas.
        bad = [t for t in exits if sorted(exits[t]) != sorted(npf_at[t])]
        check(not bad, "%s: NPF slices of threads %s not at their exits' "
              "times" % (fx, bad[:5]))
        if fx == "lttng-kernel-6.1-tdp-basic":
            cli = sum(1 for _, n, f in bt_events(trace)
                      if n == "kvm_x86_exit" and f.get("exit_reason") ==
                      1024)
            check(npf == cli, "%s: %d NPF slices, babeltrace2 %d"
                  % (fx, npf, cli))
        check(threads > 0 or want == 0, "%s: thread tracks" % fx)
        done_with(w)

    # The what-if against replay's figures, on one VM and on two.
    db = None
    for fx in ("lttng-kernel-6.1.192-patched-bgsnapshot-perm-upgrade-off",
               "lttng-kernel-6.1.192-patched-multivm-bgsnapshot-"
               "nxrecovery-perm-upgrade-off"):
        db = whatif(mmr, os.path.join(data, fx),
                    os.path.join(work, "whatif-" + fx[-30:]), proto_dir,
                    "perm-upgrade")
    r = run([mmr, "export", db, "--perfetto", "/dev/null", "-q"])
    check(r.returncode == 0 and not os.path.isfile("/dev/null"),
          "--perfetto /dev/null stays a device")
    finish()


if __name__ == "__main__":
    main()
