"""Record real UST traces with a real lttng-sessiond and ingest them.

usage: test_ust_capture.py MMUREPLAY UST_GEN UST_GEN_OLD KFIXTURE WORK

1. Kernel + UST in one capture: a lab kernel trace and a UST trace of
   ust_gen (blocking channel: nothing may be lost) ingested together;
   counts equal the babeltrace2 CLI's on the same two traces, and every
   UST field value is the one ust_gen computed (u64 with bit 63 intact,
   strings, the recording thread).
2. An unknown event version (old field layout) is counted, reported and
   not mapped.
3. A discard-mode channel too small for the burst loses events: the DB's
   lost-event total equals the discarded counts the CLI reports, and the
   kept events are counted exactly.
"""
import json
import os
from decimal import Decimal
import re
import subprocess
import sys

from mmrtest import (bt_events, check, db_rows, extract_fixture, finish,
                     fresh_dir, run, summary_json, u64)

mmr, gen, gen_old, kfixture, work = sys.argv[1:6]
fresh_dir(work)
NLAT, NSTATS = 20000, 40


def lttng(*args):
    r = run(["lttng"] + list(args))
    if r.returncode != 0:
        raise RuntimeError("lttng %s: %s" % (" ".join(args), r.stderr))


def record(name, channel_opts, prog, prog_args, blocking):
    out = os.path.join(work, name)
    sess = "mmrtest-%s-%d" % (name, os.getpid())
    lttng("create", sess, "--output=" + out)
    try:
        lttng("enable-channel", "-u", "-s", sess, "ch", *channel_opts)
        lttng("enable-event", "-u", "-s", sess, "-c", "ch", "mmureplay:*")
        lttng("add-context", "-u", "-s", sess, "-c", "ch", "-t", "vtid",
              "-t", "procname")
        lttng("start", sess)
        env = dict(os.environ)
        if blocking:
            env["LTTNG_UST_ALLOW_BLOCKING"] = "1"
        p = subprocess.run([prog] + prog_args, env=env)
        lttng("stop", sess)
    finally:
        lttng("destroy", sess)
    check(p.returncode == 0, name + ": generator failed")
    return out, p


# 1. Kernel + UST, nothing lost.
ktrace = extract_fixture(kfixture, os.path.join(work, "k"))
utrace, _ = record("ust", ["--blocking-timeout=inf"], gen,
                   [str(NLAT), str(NSTATS)], True)
db = os.path.join(work, "both.db")
r = run([mmr, "ingest", ktrace, utrace, "-o", db])
check(r.returncode == 0, "ingest kernel+ust: %s" % r.stderr)
s = summary_json(mmr, db)

cli = {}
for _, name, _ in bt_events(ktrace):
    cli[name] = cli.get(name, 0) + 1
uev = list(bt_events(utrace))
for _, name, _ in uev:
    cli[name] = cli.get(name, 0) + 1
check(s["raw_event_counts"] == cli, "raw counts: %s vs CLI %s"
      % (s["raw_event_counts"], cli))
check(cli.get("mmureplay:latency_sample") == NLAT and
      cli.get("mmureplay:stats_sample") == NSTATS, "CLI saw all UST events")
check(s["lost"]["events"] == 0, "blocking channel lost events")
domains = sorted(t["domain"] for t in s["traces"])
check(domains == ["kernel", "ust"], "trace domains %s" % domains)

lat = db_rows(db, "SELECT probe, ns, gfn, tid FROM latency_sample "
                  "ORDER BY seq")
check([(p, n, u64(g)) for p, n, g, _ in lat] ==
      [(i % 4, 1000 + (i * 7919) % 100000, 0x8000000000000000 | i)
       for i in range(NLAT)], "latency_sample values")
tids = set(t for *_, t in lat)
check(len(tids) == 1 and None not in tids, "one recording thread: %s" % tids)
procs = db_rows(db, "SELECT procname FROM thread WHERE tid = %d"
                % tids.pop())
check(procs == [("ust_gen",)], "thread name %s" % procs)
st = db_rows(db, "SELECT sampler_vm, stat, value FROM stats_sample ORDER BY seq")
check(st == [(1, "remote_tlb_flush" if j % 2 else "pf_taken", 3 * j)
             for j in range(NSTATS)], "stats_sample values")
# KVM-stats rates beside the event rates: pf_taken's increase over the
# sampled time, from the CLI's timestamps and values.
# (Decimal: ns since 1970 do not fit a double's mantissa.)
pf = [(Decimal(t), f["value"]) for t, n, f in uev
      if n == "mmureplay:stats_sample" and f["stat"] == "pf_taken"]
want = float((pf[-1][1] - pf[0][1]) / (pf[-1][0] - pf[0][0]))
got = summary_json(mmr, db)["stats_rates"]["pf_taken_per_s"]
check(abs(got - want) <= 1e-6 * want, "pf_taken/s %s != %s" % (got, want))

# Muxed in time order: seq follows ts across kernel and UST rows.
ts = [t for (t,) in db_rows(
    db, "SELECT ts FROM (SELECT seq, ts FROM latency_sample UNION ALL "
        "SELECT seq, ts FROM spte_change) ORDER BY seq")]
check(ts == sorted(ts), "seq order is time order")

# 2. Unknown event version.
otrace, _ = record("old", ["--blocking-timeout=inf"], gen_old, ["7"], True)
odb = os.path.join(work, "old.db")
r = run([mmr, "ingest", otrace, "-o", odb])
check(r.returncode == 0 and "unknown event version" in r.stderr,
      "old layout: exit %d %r" % (r.returncode, r.stderr))
s = summary_json(mmr, odb)
check(s["raw_event_counts"] == {"mmureplay:latency_sample": 7},
      "old layout counted")
check(s["canonical_counts"]["latency_sample"] == 0, "old layout not mapped")
check([u["name"] for u in s["unmapped_known_events"]] ==
      ["mmureplay:latency_sample"] and
      "ns" in s["unmapped_known_events"][0]["reason"], "old layout reported")

# 3. Lost events in discard mode.
ltrace, _ = record("lossy", ["--discard", "--subbuf-size=4096",
                             "--num-subbuf=2", "--switch-timer=0"],
                   gen, ["400000", "0"], False)
ldb = os.path.join(work, "lossy.db")
r = run([mmr, "ingest", ltrace, "-o", ldb])
check(r.returncode == 0, "lossy ingest: %s" % r.stderr)
s = summary_json(mmr, ldb)
bt = subprocess.run(["babeltrace2", ltrace], stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE, text=True)
kept = sum(1 for line in bt.stdout.splitlines() if "latency_sample" in line)
discarded = sum(int(n) for n in re.findall(
    r"Tracer\s+discarded\s+(\d+)\s+events?\b", bt.stderr))
check(discarded > 0, "the burst must overflow the small buffers")
check(s["lost"]["events"] == discarded, "lost %d != CLI discarded %d"
      % (s["lost"]["events"], discarded))
check(s["raw_event_counts"].get("mmureplay:latency_sample") == kept,
      "kept events %s != %d" % (s["raw_event_counts"], kept))
check(kept + discarded == 400000, "kept + lost = emitted (%d + %d)"
      % (kept, discarded))
check(all(r["begin_ts"] is not None and r["end_ts"] >= r["begin_ts"]
          for r in s["lost"]["records"]), "lost records have time ranges")
# The same lossy UST trace beside the kernel trace: the replay says the
# capture is damaged (JSON, text and one stderr line), and its verdict
# stays the kernel part's own (the UST losses touch no model event).
kdb = os.path.join(work, "lossy-kernel.db")
r = run([mmr, "ingest", ktrace, ltrace, "-o", kdb, "-q"])
check(r.returncode == 0, "kernel + lossy ust ingest: %s" % r.stderr)
r = run([mmr, "fidelity", kdb, "--json"])
fd = json.loads(r.stdout) if r.returncode in (0, 6) else {}
dmg = fd.get("capture_damage", {})
check(r.returncode == 0 and fd["ok"] and
      dmg.get("lost_events") == discarded and dmg.get("lost_ranges", 0) > 0
      and dmg.get("truncated") is False,
      "fidelity reports the damage: %s (exit %d)" % (dmg, r.returncode))
warn = [l for l in r.stderr.splitlines() if "damaged capture" in l]
check(len(warn) == 1 and kdb in warn[0] and str(discarded) in warn[0],
      "one stderr line names the file and the loss: %s" % r.stderr)
r = run([mmr, "replay", kdb, "--policy", "perm-upgrade"])
check(r.returncode == 0 and "Damaged capture: the tracer discarded" in
      r.stdout, "the what-if says it too: %s" % r.stdout[:400])
r = run([mmr, "fidelity", db, "--json"])
check(json.loads(r.stdout)["capture_damage"] ==
      {"lost_events": 0, "lost_ranges": 0, "truncated": False},
      "an undamaged capture says so")
finish()
