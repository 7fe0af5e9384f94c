"""mmureplay export --perfetto on every real fixture, decoded by Debian's
protoc with tests/perfetto/trace_subset.proto (written from the field
numbers Perfetto publishes), not by mmureplay's own code.

usage: test_perfetto.py MMUREPLAY DATA_DIR WORK_DIR PROTO_DIR

Per fixture (every fourth under the sanitizers):
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
On a patched A/B fixture with --policy perm-upgrade after a replay: the
what-if counters sum to the replay's faults and leaf zaps of each
policy.  Bad use: --policy with no stored replay exits 7 naming the
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


def decode(proto_dir, path):
    """The packets of the export as dicts (None if protoc fails)."""
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
            stack.pop()
            if not stack:
                packets.append(cur)
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
            stack.append(name)
            continue
        cur[".".join(stack[1:] + [name])] = m.group(3)
    return packets, None


def check_packets(name, packets):
    last = {}
    depth = collections.Counter()
    npf = 0
    threads = 0
    for p in packets:
        seq = p.get("trusted_packet_sequence_id")
        if "timestamp" in p:
            ts = int(p["timestamp"])
            if ts < last.get(seq, 0):
                check(False, "%s: sequence %s goes back at %d"
                      % (name, seq, ts))
                return 0
            last[seq] = ts
        if "track_descriptor.thread.tid" in p:
            threads += 1
        t = p.get("track_event.type")
        u = p.get("track_event.track_uuid")
        if t == "TYPE_SLICE_BEGIN":
            depth[u] += 1
            if p.get("track_event.name_iid") == "1":
                npf += 1
        elif t == "TYPE_SLICE_END":
            depth[u] -= 1
            if depth[u] < 0:
                check(False, "%s: a slice ends unbegun on track %s"
                      % (name, u))
                return 0
    check(all(v == 0 for v in depth.values()),
          "%s: slices left open: %s" % (name, {k: v for k, v in
                                              depth.items() if v}))
    return npf, threads


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
        npf, threads = res
        con = sqlite3.connect(db)
        want = con.execute("SELECT count(*) FROM vcpu_exit WHERE "
                           "exit_reason = ?", (npf_reason(db),)
                           ).fetchone()[0]
        con.close()
        check(npf == want, "%s: %d NPF slices, %d NPF exits"
              % (fx, npf, want))
        if fx == "lttng-kernel-6.1-tdp-basic":
            cli = sum(1 for _, n, f in bt_events(trace)
                      if n == "kvm_x86_exit" and f.get("exit_reason") ==
                      1024)
            check(npf == cli, "%s: %d NPF slices, babeltrace2 %d"
                  % (fx, npf, cli))
        check(threads > 0 or want == 0, "%s: thread tracks" % fx)
        done_with(w)

    # The what-if counters against replay's figures.
    fx = "lttng-kernel-6.1.192-patched-bgsnapshot-perm-upgrade-off"
    w = fresh_dir(os.path.join(work, "whatif"))
    trace = extract_fixture(os.path.join(data, fx), w)
    db = os.path.join(w, "capture.db")
    run([mmr, "ingest", "-q", trace, "-o", db])
    out = os.path.join(w, "out.pftrace")
    r = run([mmr, "export", db, "--perfetto", out, "--policy",
             "perm-upgrade"])
    check(r.returncode == 7 and "mmureplay replay" in r.stderr and
          not os.path.exists(out),
          "--policy before a replay: exit %d: %s" % (r.returncode, r.stderr))
    rep = json.loads(run([mmr, "replay", db, "--policy", "perm-upgrade",
                          "--json"]).stdout)["policies"]
    r = run([mmr, "export", db, "--perfetto", out, "--policy",
             "perm-upgrade"])
    check(r.returncode == 0, "export --policy: %s" % r.stderr)
    packets, err = decode(proto_dir, out)
    check(packets is not None, "protoc on the what-if: %s" % err)
    tracks, sums = {}, collections.Counter()
    for p in packets or []:
        if "track_descriptor.counter.unit" in p:
            tracks[p["track_descriptor.uuid"]] = \
                p.get("track_descriptor.name", "").strip('"')
        if p.get("track_event.type") == "TYPE_COUNTER":
            sums[tracks.get(p["track_event.track_uuid"])] += \
                int(p.get("track_event.counter_value", "0"))
    for pol in ("baseline", "perm-upgrade"):
        check(sums["faults/s (%s)" % pol] == rep[pol]["faults"] and
              sums["leaf zaps/s (%s)" % pol] == rep[pol]["leaf_zaps"],
              "%s: counters %d faults, %d zaps; replay %d, %d"
              % (pol, sums["faults/s (%s)" % pol],
                 sums["leaf zaps/s (%s)" % pol], rep[pol]["faults"],
                 rep[pol]["leaf_zaps"]))
    r = run([mmr, "export", db, "--perfetto", "/dev/null", "-q"])
    check(r.returncode == 0 and not os.path.isfile("/dev/null"),
          "--perfetto /dev/null stays a device")
    finish()


if __name__ == "__main__":
    main()
