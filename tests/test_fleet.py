"""The fleet contract (docs/fleet.md) on real captures and real processes:
mmureplay analyze / merge / fleet-report, and mmureplay-fleet on a real
Dask cluster (a `dask scheduler` and two `dask worker` processes on
localhost, started and stopped here).

Captures: three real fixtures (a 6.1 NX recovery run, a bgsnapshot run,
a capture of two VMs) and one that is not a trace.  Checked:
  - a shell loop of `mmureplay analyze` gives a shard per capture: the
    real ones ok (exit 0), the non-trace failed (exit 2) with a shard
    that names the file and the problem; each shard's event count is
    babeltrace2's count of the trace (the fixture's event-counts.txt,
    written by the CLI), its figures are `mmureplay replay --json`'s on
    the shard's own DB, and a second analyze of a capture gives the same
    bytes;
  - merge: order-independent and idempotent (shards one at a time in
    reverse, and everything merged twice, give the same file, byte for
    byte, as one merge); a truncated shard.json, and one whose series
    rows are malformed, are refused with their names and the rest merged
    (exit 2);
  - fleet-report: every capture counted, the failed one listed with its
    reason; its JSON and the shards validate against their schemas;
  - Dask: the worker running a task is killed with SIGKILL mid-task (its
    task is retried on the other worker and counted once); the driver is
    interrupted (SIGINT) and rerun: the rerun skips the shards already
    there; each run's fleet DB equals the shell loop's, byte for byte.

What it cannot catch: a cluster of several machines (one host here, the
same code paths but no network file system), a scheduler that dies (the
driver then fails; rerunning resumes).

usage: test_fleet.py MMUREPLAY DATA_DIR WORK_DIR SCHEMAS_DIR FLEET_DRIVER
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

from mmrtest import check, extract_fixture, finish, fresh_dir, run

FIXTURES = ["lttng-kernel-6.1.192-patched-nxrecovery-skip-dirty-off",
            "lttng-kernel-6.1.192-patched-bgsnapshot-perm-upgrade-off",
            "lttng-kernel-6.1.192-patched-multivm-nxrecovery-bgsnapshot"]
# A knob-on capture without its manifest: replayed as baseline, its
# self-check fails (a row with the reason, no what-if).
CHECK_FAILS = "lttng-kernel-6.1.192-patched-bgsnapshot-perm-upgrade-on"
# The capture whose task the Dask test holds (and kills the worker of).
HELD = FIXTURES[1]


def bt_total(fixture_dir):
    """babeltrace2's event count of the fixture (event-counts.txt)."""
    total = 0
    with open(os.path.join(fixture_dir, "event-counts.txt")) as f:
        for line in f:
            n = line.split()
            if n and n[0].isdigit():
                total += int(n[0])
    return total


def shards_of(d):
    return sorted(os.path.join(d, e) for e in os.listdir(d)
                  if not e.startswith("."))


def same_file(a, b, what):
    with open(a, "rb") as x, open(b, "rb") as y:
        check(x.read() == y.read(), what + ": %s and %s differ" % (a, b))


def validate(doc, schema_path, what):
    try:
        import jsonschema
    except ImportError:
        print("python3-jsonschema missing: %s not validated" % what)
        return
    with open(schema_path) as f:
        schema = json.load(f)
    try:
        jsonschema.Draft202012Validator(schema).validate(doc)
    except jsonschema.ValidationError as e:
        check(False, "%s does not follow %s: %s" % (what, schema_path,
                                                     e.message))


def shell_loop(mmr, caps, out):
    """analyze each capture, then merge: {capture: (rc, shard)}."""
    res = {}
    for c in caps:
        r = run([mmr, "analyze", c, "-o", os.path.join(out, "shards")])
        res[c] = (r.returncode, r.stdout.strip(), r.stderr)
    m = run([mmr, "merge", os.path.join(out, "shards"), "-o",
             os.path.join(out, "fleet.db")])
    check(m.returncode == 0, "merge of the loop's shards: %s" % m.stderr)
    return res


def check_loop(mmr, data, caps, res, schemas):
    for c in caps:
        rc, shard, err = res[c]
        name = os.path.basename(os.path.dirname(c)) \
            if os.path.basename(c) == "trace" else os.path.basename(c)
        if name == "notatrace":
            check(rc == 2, "analyze of a non-trace: exit %d, not 2" % rc)
        elif name == CHECK_FAILS:
            check(rc == 6, "analyze of %s: exit %d, not 6" % (name, rc))
        else:
            check(rc == 0, "analyze %s: exit %d: %s" % (name, rc, err))
        check(os.path.isfile(os.path.join(shard, "shard.json")),
              "analyze %s: no shard.json in '%s'" % (name, shard))
        if not os.path.isfile(os.path.join(shard, "shard.json")):
            continue
        with open(os.path.join(shard, "shard.json")) as f:
            doc = json.load(f)
        validate(doc, os.path.join(schemas, "shard.schema.json"),
                 "shard " + name)
        if name == "notatrace":
            check(doc["status"] == "failed" and doc["stage"] == "ingest"
                  and c in (doc["error"] or ""),
                  "the failed shard says what and where: %s" % doc)
            check(doc["id"].startswith("unreadable-"), "failed shard id")
            continue
        if name == CHECK_FAILS:
            check(doc["status"] == "check_failed" and
                  doc["self_check"]["ok"] is False and
                  doc["self_check"]["reason"] and
                  [p["name"] for p in doc["policies"]] == ["baseline"],
                  "%s: a failed self-check, its reason, no what-if: %s"
                  % (name, {k: doc[k] for k in ("status", "self_check")}))
            continue
        check(doc["status"] == "ok", "%s: status %s" % (name, doc["status"]))
        check(doc["capture"]["events"] ==
              bt_total(os.path.join(data, name)),
              "%s: shard events %d, babeltrace2 %d"
              % (name, doc["capture"]["events"],
                 bt_total(os.path.join(data, name))))
        # The shard's figures are replay's on the shard's own DB.
        r = run([mmr, "replay", os.path.join(shard, "capture.db"),
                 "--policy", "perm-upgrade", "--json"])
        check(r.returncode == 0, "replay of %s's shard DB" % name)
        if r.returncode:
            continue
        rep = json.loads(r.stdout)["policies"]["perm-upgrade"]
        pol = {p["name"]: p for p in doc["policies"]}
        for k in ("faults", "leaf_zaps", "tlb_flushes", "lock_wait_ms"):
            check(pol["perm-upgrade"]["figures"][k] == rep[k],
                  "%s: shard's %s %s, replay's %s"
                  % (name, k, pol["perm-upgrade"]["figures"][k], rep[k]))
            check(pol["perm-upgrade"]["kinds"][k] == rep["figure_kind"][k],
                  "%s: shard's kind of %s %s, replay's %s"
                  % (name, k, pol["perm-upgrade"]["kinds"][k],
                     rep["figure_kind"][k]))
    return


def main():
    mmr, data, work, schemas, driver = sys.argv[1:6]
    mmr = os.path.abspath(mmr)
    work = fresh_dir(os.path.abspath(work))
    caps_dir = os.path.join(work, "caps")
    os.makedirs(caps_dir)
    caps = []
    for name in FIXTURES:
        d = os.path.join(caps_dir, name)
        os.makedirs(d)
        caps.append(extract_fixture(os.path.join(data, name), d,
                                    private=True))
    d = os.path.join(caps_dir, CHECK_FAILS)
    os.makedirs(d)
    t = extract_fixture(os.path.join(data, CHECK_FAILS), d, private=True)
    os.unlink(os.path.join(t, "manifest.json"))
    caps.append(t)
    bad = os.path.join(caps_dir, "notatrace")
    os.makedirs(bad)
    with open(os.path.join(bad, "README"), "w") as f:
        f.write("not a trace\n")
    caps.append(bad)

    # The shell loop: the reference every engine must equal.
    loop = os.path.join(work, "loop")
    res = shell_loop(mmr, caps, loop)
    check_loop(mmr, data, caps, res, schemas)
    ref = os.path.join(loop, "fleet.db")

    # The same capture analysed again: the same shard, byte for byte.
    again = os.path.join(work, "again")
    r = run([mmr, "analyze", caps[0], "-o", again])
    same_file(os.path.join(res[caps[0]][1], "shard.json"),
              os.path.join(r.stdout.strip(), "shard.json"),
              "a capture analysed twice")

    # merge: one at a time in reverse order, then all again: one file.
    inc = os.path.join(work, "inc.db")
    for s in reversed(shards_of(os.path.join(loop, "shards"))):
        m = run([mmr, "merge", s, "-o", inc])
        check(m.returncode == 0, "merge %s: %s" % (s, m.stderr))
    same_file(ref, inc, "shards merged one by one in reverse")
    m = run([mmr, "merge", os.path.join(loop, "shards"), "-o", inc])
    same_file(ref, inc, "every shard merged twice")

    # A truncated shard: refused by name, the rest merged.
    cut = os.path.join(work, "cut")
    shutil.copytree(os.path.join(loop, "shards"), cut)
    victim = shards_of(cut)[0]
    with open(os.path.join(victim, "shard.json"), "r+b") as f:
        f.truncate(os.path.getsize(os.path.join(victim, "shard.json")) // 2)
    m = run([mmr, "merge", cut, "-o", os.path.join(work, "cut.db")])
    check(m.returncode == 2, "merge with a truncated shard: exit %d"
          % m.returncode)
    check(os.path.join(victim, "shard.json") in m.stderr and
          "truncated" in m.stderr,
          "the truncated shard is named: %s" % m.stderr)
    n = subprocess.run(["sqlite3", os.path.join(work, "cut.db"),
                        "SELECT count(*) FROM capture"],
                       capture_output=True, text=True).stdout.strip()
    check(n == str(len(caps) - 1), "the others merged: %s rows" % n)
    # A shard that parses but whose series rows are malformed: refused
    # the same way, never read blindly.
    bad = os.path.join(work, "bad")
    shutil.copytree(os.path.join(loop, "shards"), bad)
    victim = [d for d in shards_of(bad) if "unreadable" not in d][0]
    with open(os.path.join(victim, "shard.json")) as f:
        doc = json.load(f)
    doc["policies"][0]["series"] = [[1, 2]]
    with open(os.path.join(victim, "shard.json"), "w") as f:
        json.dump(doc, f)
    m = run([mmr, "merge", bad, "-o", os.path.join(work, "bad.db")])
    check(m.returncode == 2 and os.path.join(victim, "shard.json") in
          m.stderr and "malformed" in m.stderr,
          "a malformed shard is refused by name: %s" % m.stderr)

    # fleet-report: every capture counted, the failure with its reason.
    r = run([mmr, "fleet-report", ref])
    check(r.returncode == 0, "fleet-report: %s" % r.stderr)
    check("captures      5 (ok 3, check_failed 1, failed 1)" in r.stdout,
          "fleet-report counts:\n" + r.stdout)
    check("no CTF trace" in r.stdout and "notatrace" in r.stdout,
          "fleet-report lists the failed capture and why")
    r = run([mmr, "fleet-report", ref, "--json"])
    doc = json.loads(r.stdout)
    validate(doc, os.path.join(schemas, "fleet-report.schema.json"),
             "fleet-report --json")
    check(doc["captures"]["total"] == 5 and
          doc["captures"]["by_status"]["failed"] == 1 and
          doc["captures"]["by_status"]["check_failed"] == 1,
          "fleet-report JSON counts")
    check(sorted(f["status"] for f in doc["failing"]) ==
          ["check_failed", "failed"] and
          all(f["reason"] for f in doc["failing"]),
          "fleet-report lists both captures without a what-if, with "
          "reasons: %s" % doc["failing"])
    # Against an earlier fleet DB (the one without the cut shard), and
    # as HTML; -o /dev/null stays a device.
    r = run([mmr, "fleet-report", ref, "--json", "--against",
             os.path.join(work, "cut.db")])
    doc = json.loads(r.stdout) if r.returncode == 0 else {}
    validate(doc, os.path.join(schemas, "fleet-report.schema.json"),
             "fleet-report --json --against")
    check(doc.get("against") and doc["against"]["captures"]["total"] == 4,
          "fleet-report --against reads the earlier DB")
    html = os.path.join(work, "fleet.html")
    r = run([mmr, "fleet-report", ref, "--html", "-o", html])
    with open(html) as f:
        page = f.read()
    check(r.returncode == 0 and "<table>" in page and
          "perm-upgrade" in page and "notatrace" in page,
          "fleet-report --html")
    r = run([mmr, "fleet-report", ref, "--html", "-o", "/dev/null"])
    check(r.returncode == 0 and not os.path.isfile("/dev/null"),
          "fleet-report -o /dev/null")
    r = run([mmr, "merge", os.path.join(loop, "shards"), "-o",
             "/dev/null"])
    check(r.returncode == 4 and "not a regular file" in r.stderr,
          "merge -o /dev/null refused: %s" % r.stderr)
    pu = [p for p in doc["policies"] if p["name"] == "perm-upgrade"]
    check(pu and pu[0]["avoided"]["faults_per_s"]["max"] > 0,
          "perm-upgrade avoids faults somewhere in the fleet")

    list_labels(mmr, driver, work, caps[1])
    dask_runs(mmr, driver, work, caps, ref)
    finish()


def list_labels(mmr, driver, work, cap):
    """--list with host, label and VM words, on a local cluster: the
    shard and the fleet DB carry them."""
    lst = os.path.join(work, "list.txt")
    with open(lst, "w") as f:
        f.write("# a comment\n\n%s host=host-a label.rack=r7 vm.1=web\n"
                % cap)
    shards = os.path.join(work, "list-shards")
    out = os.path.join(work, "list.db")
    r = run([driver, "--list", lst, "--shards", shards, "-o", out,
             "--workers", "1", "--mmureplay", mmr])
    check(r.returncode == 0, "driver --list: %s" % r.stderr[-2000:])
    q = subprocess.run(["sqlite3", out, "SELECT c.host, l.key, l.value "
                        "FROM capture c JOIN capture_label l ON "
                        "l.capture = c.id"], capture_output=True,
                       text=True).stdout.split()
    check(q == ["host-a|rack|r7"], "the list's host and label: %s" % q)
    r = run([driver, "--list", lst, "--shards", shards])
    check(r.returncode == 0 and "1 already in" in r.stderr,
          "a second run has nothing to do: %s" % r.stderr[-500:])
    bad = os.path.join(work, "bad-list.txt")
    with open(bad, "w") as f:
        f.write("%s colour=blue\n" % cap)
    r = run([driver, "--list", bad, "--shards", shards])
    check(r.returncode == 2 and "bad-list.txt:1" in r.stderr,
          "a bad list word names its line: %s" % r.stderr)


def wait_for(cond, timeout, what):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.2)
    check(False, "timed out waiting for " + what)
    return False


def dask_runs(mmr, driver, work, caps, ref):
    if not shutil.which("dask"):
        check(False, "the dask command (python3-distributed) is missing")
        return
    # A wrapper that holds HELD's task once, long enough to kill its
    # worker: it writes the worker's pid (its parent) and sleeps; the
    # retry finds the mark and runs at once.
    mark = os.path.join(work, "held.pid")
    wrapper = os.path.join(work, "mmureplay-held")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\ncase \"$2\" in *%s*)\n"
                "  if [ -n \"$MMR_FLEET_HOLD\" ] && [ ! -e %s ]; then\n"
                "    echo $PPID > %s.tmp && mv %s.tmp %s; sleep 60; fi;;\n"
                "esac\nexec %s \"$@\"\n"
                % (HELD, mark, mark, mark, mark, mmr))
    os.chmod(wrapper, 0o755)
    sched_file = os.path.join(work, "scheduler.json")
    env = dict(os.environ, MMR_FLEET_HOLD="1")
    procs = []
    log = open(os.path.join(work, "dask.log"), "w")
    try:
        procs.append(subprocess.Popen(
            ["dask", "scheduler", "--scheduler-file", sched_file,
             "--host", "127.0.0.1", "--port", "0", "--no-dashboard"],
            stdout=log, stderr=log, env=env))
        if not wait_for(lambda: os.path.exists(sched_file), 60,
                        "the scheduler"):
            return
        workers = []
        for i in range(2):
            w = subprocess.Popen(
                ["dask", "worker", "--scheduler-file", sched_file,
                 "--nthreads", "1", "--no-nanny", "--no-dashboard",
                 "--name", "w%d" % i, "--host", "127.0.0.1",
                 "--local-directory", os.path.join(work, "dask-space")],
                stdout=log, stderr=log, env=env)
            procs.append(w)
            workers.append(w)
        shards = os.path.join(work, "dask-shards")
        out = os.path.join(work, "dask.db")
        d = subprocess.Popen([driver, *caps, "--shards", shards, "-o", out,
                              "--scheduler-file", sched_file,
                              "--mmureplay", wrapper, "--retries", "2"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        if wait_for(lambda: os.path.exists(mark), 120, "the held task"):
            with open(mark) as f:
                pid = int(f.read())
            check(pid in [w.pid for w in workers],
                  "the held task runs in a worker (pid %d)" % pid)
            os.kill(pid, signal.SIGKILL)
        try:
            o, e = d.communicate(timeout=300)
        except subprocess.TimeoutExpired:
            d.kill()
            o, e = d.communicate()
        check(d.returncode == 0, "driver after a killed worker: exit %d: %s"
              % (d.returncode, e[-2000:]))
        if os.path.exists(out):
            same_file(ref, out, "the Dask run (a worker killed) and the "
                      "shell loop")
        check(len(shards_of(shards)) == len(caps),
              "one shard per capture after the retry: %s"
              % shards_of(shards))

        # Interrupted and rerun: a local cluster this time.
        shards2 = os.path.join(work, "int-shards")
        out2 = os.path.join(work, "int.db")
        os.unlink(mark)
        d = subprocess.Popen([driver, *caps, "--shards", shards2, "-o",
                              out2, "--workers", "2", "--mmureplay",
                              wrapper], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
        wait_for(lambda: os.path.exists(mark) and os.path.isdir(shards2)
                 and len(shards_of(shards2)) >= 2, 180,
                 "the interrupted run's first shards")
        before = len(shards_of(shards2)) if os.path.isdir(shards2) else 0
        d.send_signal(signal.SIGINT)
        try:
            o, e = d.communicate(timeout=120)
        except subprocess.TimeoutExpired:
            d.kill()
            o, e = d.communicate()
        check(d.returncode == 130, "interrupted driver: exit %d, not 130: %s"
              % (d.returncode, e[-1000:]))
        check(not os.path.exists(out2), "no fleet DB from an interrupted run")
        r = run([driver, *caps, "--shards", shards2, "-o", out2,
                 "--workers", "2", "--mmureplay", wrapper])
        check(r.returncode == 0, "rerun: exit %d: %s" % (r.returncode,
                                                           r.stderr[-2000:]))
        said = [ln for ln in r.stderr.splitlines() if "already in" in ln]
        got = int(said[0].split(",")[1].split()[0]) if said else -1
        check(got >= before and got < len(caps),
              "the rerun resumes: %d already done (%d before the "
              "interrupt): %s" % (got, before, said))
        if os.path.exists(out2):
            same_file(ref, out2, "the interrupted-and-rerun run and the "
                      "shell loop")
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
        for p in procs:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
        log.close()


if __name__ == "__main__":
    main()
