"""SYNTHETIC capture (bench/synth), not a kernel recording: generate one,
read it with the babeltrace2 CLI, ingest it, self-check and replay it.

usage: test_synthetic.py MMUREPLAY SYNTH WORK_DIR

What this can catch: a generator whose CTF babeltrace2 cannot read or
whose counts it does not report (event-counts.txt and the printed total
against the CLI); a capture the ingest reads differently from the CLI;
a generator that breaks the kernel's rules the self-check holds (the
verdict, every metric, 0 mismatches), or a self-check that stops seeing
them (its observed figures against the CLI's counts and the kernel's
SPTE rules on the CLI's values); a replay that does not run.  What it
cannot: whether the model is what a kernel does (the lab fixtures hold
that): its agreement with itself is true by construction.
"""
import json
import os
import sys

from mmrtest import (bt_env, bt_events, check, finish, fresh_dir, run,
                     summary_json)

mmr, synth, work = sys.argv[1:4]
fresh_dir(work)
out = os.path.join(work, "synthetic-200k")
trace = os.path.join(out, "trace", "kernel")
db = os.path.join(work, "synthetic-200k.db")

r = run([synth, "--events", "200000", "--seed", "11", "--vcpus", "6",
         "--out", out])
check(r.returncode == 0, "synth exit %d: %s" % (r.returncode, r.stderr))
total = int(r.stdout.strip() or 0)
check(200000 <= total < 201000, "synth wrote %d events" % total)

# Named synthetic: environment, manifest, stream files.
env = bt_env(trace)
check(env.get("tracer_name") == "mmureplay-synth", "env tracer_name %r"
      % env.get("tracer_name"))
check(env.get("synthetic") == "1", "env synthetic %r" % env.get("synthetic"))
check(env.get("domain") == "kernel", "env domain %r" % env.get("domain"))
with open(os.path.join(out, "manifest.json")) as f:
    manifest = json.load(f)
with open(os.path.join(os.path.dirname(__file__), "..", "schemas",
                       "manifest.schema.json")) as f:
    schema = json.load(f)
for key in schema["required"]:
    check(key in manifest, "manifest has no %s" % key)
check(manifest["cpu"]["vendor"] in schema["properties"]["cpu"]
      ["properties"]["vendor"]["enum"], "manifest cpu vendor")
check(manifest["synthetic"]["events"] == total and
      manifest["synthetic"]["seed"] == 11, "manifest synthetic %r"
      % manifest.get("synthetic"))
streams = sorted(f for f in os.listdir(trace) if f != "metadata")
check(streams == ["synthetic_%d" % i for i in range(7)],
      "stream files %s (6 vCPUs + the VMM's CPU)" % streams)

# The CLI reads it and counts what the generator says it wrote.
events = list(bt_events(trace))
cli = {}
for _, name, _ in events:
    cli[name] = cli.get(name, 0) + 1
check(len(events) == total, "CLI events %d != %d" % (len(events), total))
recorded = {}
with open(os.path.join(out, "event-counts.txt")) as f:
    for line in f:
        n, name = line.split()
        recorded[name.rstrip(":")] = int(n)
check(recorded == cli, "event-counts.txt differs from the CLI: %s vs %s"
      % (recorded, cli))
for name in ("kvm_mmu_nx_recovery_begin", "kvm_mmu_fast_page_fault",
             "kvm_memslot_change", "kvm_invalidate_range_start",
             "kvm_mmu_get_page"):
    check(cli.get(name, 0) > 0, "no %s: the pattern is not exercised"
          % name)

# Ingest: the CLI's counts.
r = run([mmr, "ingest", out, "-o", db])
check(r.returncode == 0, "ingest exit %d: %s" % (r.returncode, r.stderr))
s = summary_json(mmr, db)
check(s["raw_event_counts"] == cli, "raw counts differ from the CLI")
check(s["events"] == total, "ingested %d != %d" % (s["events"], total))

# The self-check passes, on figures the CLI gives.
r = run([mmr, "fidelity", db, "--json"])
check(r.returncode == 0, "fidelity exit %d: %s" % (r.returncode, r.stderr))
fid = json.loads(r.stdout or "{}")
check(fid.get("ok") is True, "self-check failed: %s" % fid.get("verdict"))
check(fid.get("mismatches_total") == 0, "%s mismatches: %s"
      % (fid.get("mismatches_total"), fid.get("mismatches", [])[:5]))
PRESENT, LARGE, REMOVED = 1 << 11, 1 << 7, 0x5a0


def leaf(spte, level):
    return bool(spte & PRESENT) and spte != REMOVED and \
        (level == 1 or bool(spte & LARGE))


zaps = sum(1 for _, n, f in events if n == "kvm_tdp_mmu_spte_changed" and
           leaf(f["old_spte"], f["level"]) and
           not (f["new_spte"] & PRESENT))
obs = fid.get("observed", {})
check(obs.get("faults") == cli["kvm_x86_page_fault"], "faults %s != CLI %d"
      % (obs.get("faults"), cli["kvm_x86_page_fault"]))
check(obs.get("leaf_zaps") == zaps, "leaf zaps %s != CLI %d"
      % (obs.get("leaf_zaps"), zaps))
check(obs.get("nx_recovered") == cli["kvm_mmu_nx_recover_page"],
      "nx_recovered %s != CLI %d" % (obs.get("nx_recovered"),
                                     cli["kvm_mmu_nx_recover_page"]))
for k in ("faults", "leaf_zaps", "flush_contexts", "nx_recovered"):
    check(obs.get(k, 0) > 0 and fid["predicted"].get(k) == obs.get(k),
          "%s: predicted %s, observed %s" % (k, fid["predicted"].get(k),
                                             obs.get(k)))

# Replay runs every policy, verified.
r = run([mmr, "replay", db, "--json"])
check(r.returncode == 0, "replay exit %d: %s" % (r.returncode, r.stderr))
rep = json.loads(r.stdout or "{}")
pols = rep.get("policies", {})
check(sorted(pols) == ["baseline", "nx-readlock", "nx-skip-dirty",
                       "perm-upgrade"], "policies %s" % sorted(pols))
base = pols.get("baseline", {})
check(base.get("verified") is True and
      base.get("faults") == cli["kvm_x86_page_fault"] and
      base.get("recovery_batches") == cli["kvm_mmu_nx_recovery_begin"],
      "baseline replay %s" % {k: base.get(k) for k in
                              ("verified", "faults", "recovery_batches")})

# The same seed, the same events; another seed, others.
outs = []
for name, seed in (("a", "5"), ("b", "5"), ("c", "6")):
    d = os.path.join(work, "seed-" + name)
    r = run([synth, "--events", "5000", "--seed", seed, "--out", d])
    check(r.returncode == 0, "synth seed %s exit %d" % (seed, r.returncode))
    outs.append(run(["babeltrace2", os.path.join(d, "trace")]).stdout)
check(outs[0] == outs[1] and outs[0], "seed 5 twice: different events")
check(outs[0] != outs[2], "seeds 5 and 6: the same events")

# The worker sleeps a whole period after each batch, whatever the size
# and seed: the first once made a late batch's next one come early
# (fixed wake-up times), which the self-check refuses (recovery_period);
# the second passed then too.
for events, seed in (("160000", "1"), ("40000", "3")):
    d = os.path.join(work, "period-%s-%s" % (events, seed))
    r = run([synth, "--events", events, "--seed", seed, "--out", d])
    check(r.returncode == 0, "synth %s/%s exit %d" % (events, seed,
                                                      r.returncode))
    pdb = d + ".db"
    run([mmr, "ingest", "-q", d, "-o", pdb])
    r = run([mmr, "fidelity", pdb, "--json"])
    f = json.loads(r.stdout) if r.stdout else {}
    check(r.returncode == 0 and f.get("ok"),
          "synth --events %s --seed %s: self-check %s" % (
              events, seed, f.get("mismatches_by_kind")))

# Bad input: one line, the documented exit status, nothing written.
r = run([synth, "--events", "10", "--out", os.path.join(work, "bad")])
check(r.returncode == 1 and len(r.stderr.splitlines()) == 1 and
      not os.path.exists(os.path.join(work, "bad")),
      "--events 10: exit %d, %r" % (r.returncode, r.stderr))
r = run([synth, "--events", "5000", "--out", out])
check(r.returncode == 4 and out in r.stderr and
      len(r.stderr.splitlines()) == 1,
      "existing trace: exit %d, %r" % (r.returncode, r.stderr))

finish()
