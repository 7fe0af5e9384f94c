"""Stock 6.1 runs recorded with the MMU events only, no syscall (the
lab's run.sh --trace-cmd-events "kvmmmu kvm:kvm_unmap_hva_range
kvm:kvm_page_fault kvm:kvm_exit kvm:kvm_entry"), as tracefs text and
trace.dat, with LTTng beside them (the oracle, syscalls included).

usage: test_text_mmu_events.py MMUREPLAY DATA_DIR WORK_DIR

For each fixture tracecmd-lttng-kernel-6.1.192-stock-*-mmu-events:
  - the text's and trace.dat's event counts are the babeltrace2 CLI's
    counts of the same events in LTTng's trace (event-counts.txt), event
    by event: the three recordings saw the same events;
  - the self-check passes on the text DB, the trace.dat DB and LTTng's;
    the observed faults, leaf zaps and recovered NX pages are LTTng's;
    the VM's teardown (its leaves zapped by the VMM thread after the last
    vCPU exit, no syscall to announce it) is predicted in full (leaf_zaps
    by cause: the teardown's equal LTTng's, collapse folded in);
  - the text DB knows dirty logging from the MMU events alone where the
    workload logged dirty pages ("inferred"); on the nxrecovery run,
    without that inference (rule dirty_sweep off) the text fails on the
    NX recovery batches of the dirty-logging phase (recovery_batch),
    which is how it failed before the rule was written.
What it cannot catch: a workload that turns dirty logging on without
write-protecting or splitting a present leaf (a slot created with
logging on: nothing in the MMU events says so).
"""
import json
import lzma
import os
import shutil
import sys

from mmrtest import check, extract_fixture, finish, fresh_dir, run

NAMES = {"kvm_tdp_mmu_spte_changed": "kvm_tdp_mmu_spte_changed",
         "kvm_exit": "kvm_x86_exit", "kvm_entry": "kvm_x86_entry",
         "kvm_page_fault": "kvm_x86_page_fault",
         "kvm_mmu_spte_requested": "kvm_mmu_spte_requested",
         "kvm_mmu_set_spte": "kvm_mmu_set_spte",
         "fast_page_fault": "kvm_mmu_fast_page_fault",
         "kvm_mmu_get_page": "kvm_mmu_get_page",
         "kvm_mmu_prepare_zap_page": "kvm_mmu_prepare_zap_page",
         "kvm_mmu_split_huge_page": "kvm_mmu_split_huge_page",
         "kvm_unmap_hva_range": "kvm_unmap_hva_range"}
# kvmmmu events lttng-modules 2.13 has no probe for: held to trace-cmd's
# count of the same run instead.
NO_LTTNG = {"kvm_mmu_zap_all_fast"}


def counts(path):
    out = {}
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) >= 2 and w[0].isdigit():
                out[w[1].rstrip(":")] = int(w[0])
    return out


def fidelity(mmr, db, *extra):
    r = run([mmr, "fidelity", db, "--json", *extra])
    return r.returncode, (json.loads(r.stdout) if r.stdout else {})


def replay_zaps(mmr, db):
    r = run([mmr, "replay", db, "--policy", "baseline", "--json"])
    return json.loads(r.stdout)["policies"]["baseline"] if r.stdout else {}


def main():
    mmr, data, work = sys.argv[1:4]
    work = fresh_dir(work)
    fixtures = sorted(d for d in os.listdir(data)
                      if d.startswith("tracecmd-lttng-kernel-6.1.192-stock-")
                      and d.endswith("-mmu-events"))
    check(len(fixtures) >= 2, "the mmu-events fixtures: %s" % fixtures)
    for name in fixtures:
        fx = os.path.join(data, name)
        w = os.path.join(work, name)
        trace = extract_fixture(fx, w, private=True)
        lt = counts(os.path.join(fx, "event-counts.txt"))
        dat = counts(os.path.join(fx, "tracecmd-counts.txt"))
        for rec in ("text-counts.txt", "tracecmd-counts.txt"):
            got = counts(os.path.join(fx, rec))
            check(set(got) <= set(NAMES) | NO_LTTNG,
                  "%s %s: only the MMU events: %s"
                  % (name, rec, sorted(set(got) - set(NAMES) - NO_LTTNG)))
            for ev, n in got.items():
                if ev in NO_LTTNG:
                    check(dat.get(ev) == n, "%s %s: %s %d, trace-cmd %s"
                          % (name, rec, ev, n, dat.get(ev)))
                    continue
                check(lt.get(NAMES.get(ev, ev)) == n,
                      "%s %s: %s %d, babeltrace2 %s"
                      % (name, rec, ev, n, lt.get(NAMES.get(ev, ev))))
        # The sources beside the manifest, as run.sh leaves them.
        for src, dst in (("ftrace-text.txt.xz", "ftrace-text.txt"),
                         ("trace.dat.xz", "trace.dat")):
            with lzma.open(os.path.join(fx, src)) as i, \
                    open(os.path.join(trace, dst), "wb") as o:
                shutil.copyfileobj(i, o)
        dbs = {}
        for kind, src in (("lttng", trace),
                          ("text", os.path.join(trace, "ftrace-text.txt")),
                          ("dat", os.path.join(trace, "trace.dat"))):
            dbs[kind] = os.path.join(w, kind + ".db")
            r = run([mmr, "ingest", "-q", src, "-o", dbs[kind]])
            check(r.returncode == 0, "%s: ingest %s: %s"
                  % (name, kind, r.stderr))
        res = {k: fidelity(mmr, db) for k, db in dbs.items()}
        for kind, (rc, f) in res.items():
            check(rc == 0 and f.get("ok"), "%s: the %s DB passes (exit %d, "
                  "%s)" % (name, kind, rc, f.get("mismatches_by_kind")))
        obs = {k: f.get("observed", {}) for k, (_, f) in res.items()}
        for kind in ("text", "dat"):
            for m in ("faults", "leaf_zaps", "nx_recovered"):
                check(obs[kind].get(m) == obs["lttng"].get(m),
                      "%s: %s observed %s in the %s DB, %s in LTTng's"
                      % (name, m, obs[kind].get(m), kind,
                         obs["lttng"].get(m)))
        # The teardown: zaps by cause as LTTng's (its collapse is the
        # ioctl's, which the text cannot name: folded into teardown).
        zt, zl = replay_zaps(mmr, dbs["text"]), replay_zaps(mmr, dbs["lttng"])
        check(zt.get("leaf_zaps.teardown", -1) +
              zt.get("leaf_zaps.dirty_log_collapse", 0) ==
              zl.get("leaf_zaps.teardown", -2) +
              zl.get("leaf_zaps.dirty_log_collapse", 0) and
              zt.get("leaf_zaps.teardown", 0) > 0,
              "%s: teardown zaps %s (text) vs %s (LTTng)"
              % (name, zt.get("leaf_zaps.teardown"),
                 zl.get("leaf_zaps.teardown")))
        know = res["text"][1].get("knowledge", {})
        if "nxrecovery" in name or "dirty-log" in name:
            check(know.get("dirty_logging") == "inferred",
                  "%s: the text DB infers dirty logging: %s" % (name, know))
        if "nxrecovery" in name:
            rc, f = fidelity(mmr, dbs["text"], "--rule-off", "dirty_sweep")
            check(rc == 6 and "recovery_batch" in
                  [k for k, n in f.get("mismatches_by_kind", {}).items()
                   if n],
                  "%s: dirty_sweep off fails on recovery_batch (exit %d, "
                  "%s)" % (name, rc, f.get("mismatches_by_kind")))
    finish()


if __name__ == "__main__":
    main()
