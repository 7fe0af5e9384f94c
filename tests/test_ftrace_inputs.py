"""Ingest one lab run recorded four ways at once (capture/lab/run.sh
--trace-cmd --perf: LTTng, trace-cmd record into trace.dat, a tracefs
instance kept as text, perf record converted to CTF) and check the
ftrace and perf inputs against LTTng.

usage: test_ftrace_inputs.py MMUREPLAY FIXTURE_DIR WORK_DIR

The fixture is unpacked as the capture directory run.sh writes:
manifest.json beside trace/ (LTTng), trace.dat, ftrace-text.txt and
perf-ctf/, and each is ingested as it lies (the manifest is found beside the input or
one directory up).  Checks:
  - raw counts: trace.dat's equal `trace-cmd report`'s event lines (run
    now) and the counts recorded when the fixture was made; the text's
    equal its event lines (counted here with a regex of the line shape,
    not the reader's parser) and the recorded ones; perf's CTF's equal
    the babeltrace2 CLI's and the recorded ones;
  - canonical events, event by event per CPU, every column but seq and
    ts: trace.dat against LTTng (the oracle; LTTng's window lies inside
    ftrace's, so LTTng's rows must be one contiguous run of trace.dat's,
    and the KVM tables must be equal as a whole), and the text against
    trace.dat, except what the print formats do not show (the MMU page
    role's unprinted bits, fast_page_fault's ret other than fixed /
    spurious: NULL); LTTng's rows are one contiguous run of perf's too;
  - timestamps, by the order in which the tracers' probes run on one
    tracepoint hit (registration order: trace-cmd's buffer, then the
    text instance, then perf, then LTTng): every event's trace.dat time
    is at or before its text time (truncated to microseconds: the text's
    are whole microseconds) and at or before its LTTng time (LTTng's
    clock read back to CLOCK_MONOTONIC with the offset the CTF metadata
    gives), and its perf time (perf -k mono) at or before LTTng's; the median gap is a few microseconds (MEDIAN_TOL), the
    largest is unbounded (a vCPU of the TCG lab descheduled between
    two probes: 35 ms seen);
  - the summary totals are the same; `mmureplay fidelity` passes on the
    ftrace DBs and on LTTng's, and the ftrace DBs observe LTTng's
    figures.  (LTTng's timestamps, a few microseconds later, put 4
    faults before the first traced zap of their stock recovery batch:
    the zap explains them, as the replay allows until the faulting vCPU
    traces anything else.)
    perf's DB is checked to run the self-check, not for its verdict: it
    holds two records twice, and perf data convert keeps no process
    names, so the stock inferences that need the NX recovery worker's
    name are unknown.
What it cannot catch: an event both tracers miss, a field both decode
the same wrong way (LTTng's probes and the kernel's format files are
independent sources, which makes that unlikely, not impossible).
"""
import collections
import json
import lzma
import os
import re
import shutil
import sqlite3
import sys
import tarfile

from mmrtest import check, db_rows, finish, fresh_dir, run, summary_json

mmr, fixture, work = sys.argv[1:4]
fresh_dir(work)
cap = os.path.join(work, "capture")
os.makedirs(cap)
for tarball in ("trace.tar.xz", "perf-ctf.tar.xz"):
    with tarfile.open(os.path.join(fixture, tarball)) as tf:
        tf.extractall(cap)
shutil.copy(os.path.join(fixture, "manifest.json"), cap)
for name in ("trace.dat", "ftrace-text.txt"):
    with lzma.open(os.path.join(fixture, name + ".xz")) as src, \
            open(os.path.join(cap, name), "wb") as dst:
        shutil.copyfileobj(src, dst)
dat = os.path.join(cap, "trace.dat")
text = os.path.join(cap, "ftrace-text.txt")
# The fixture keeps file version 6; trace-cmd's default is version 7
# with compressed sections: the same recording converted back.
dat7 = os.path.join(cap, "trace-v7.dat")
r = run(["trace-cmd", "convert", "--file-version", "7", "--compression",
         "any", "-i", dat, "-o", dat7])
check(r.returncode == 0 and os.path.exists(dat7),
      "trace-cmd convert: %s" % r.stderr[-300:])

# Median gap between two tracers' timestamps of one event (ns).
MEDIAN_TOL = 10000


def ingest(src, db):
    r = run([mmr, "ingest", src, "-o", db])
    check(r.returncode == 0, "ingest %s: exit %d: %s"
          % (src, r.returncode, r.stderr))
    return r


dbs = {"lttng": os.path.join(work, "lttng.db"),
       "dat": os.path.join(work, "dat.db"),
       "dat7": os.path.join(work, "dat7.db"),
       "text": os.path.join(work, "text.db"),
       "perf": os.path.join(work, "perf.db")}
ingest(os.path.join(cap, "trace"), dbs["lttng"])
ingest(os.path.join(cap, "perf-ctf"), dbs["perf"])
ingest(dat, dbs["dat"])
ingest(dat7, dbs["dat7"])
r = ingest(text, dbs["text"])
check("print format unknown" not in r.stderr,
      "a catalogued event without a text format: %s" % r.stderr)
sums = {k: summary_json(mmr, v) for k, v in dbs.items()}


def bare(name):
    return name.split(":", 1)[-1]


def recorded(fname):
    out = {}
    with open(os.path.join(fixture, fname)) as f:
        for line in f:
            n, name = line.split()
            out[name] = int(n)
    return out


# trace-cmd report: "COMM-PID [CPU] SEC.USEC: EVENT: ..." per event.
REPORT = re.compile(r"^\s*.*-\d+\s+\[\d+\]\s+(?:\S+\s+)?\d+\.\d+: (\w+):")
rep = run(["trace-cmd", "report", "-i", dat])
check(rep.returncode == 0, "trace-cmd report: %s" % rep.stderr[:300])
report_counts = collections.Counter()
for line in rep.stdout.splitlines():
    m = REPORT.match(line)
    if m:
        report_counts[m.group(1)] += 1
dat_counts = {bare(k): v for k, v in sums["dat"]["raw_event_counts"].items()}
check(dat_counts == dict(report_counts),
      "trace.dat raw counts differ from trace-cmd report: %s vs %s"
      % (dat_counts, dict(report_counts)))
check(dat_counts == recorded("tracecmd-counts.txt"),
      "trace.dat raw counts differ from tracecmd-counts.txt")
check(sums["dat"]["events"] == sum(report_counts.values()), "dat events")

# The text: event lines, by the shape of the line only.
TEXT_EV = re.compile(r"^\s*.*-\d+\s+\[\d+\]\s+\S+\s+\d+\.\d+: "
                     r"(\w+)(:|\(| -> )")
text_counts = collections.Counter()
with open(text) as f:
    for line in f:
        if line.startswith("#") or not line.strip():
            continue
        m = TEXT_EV.match(line)
        check(m is not None, "text line of unknown shape: %r" % line)
        if not m:
            continue
        name = m.group(1)
        if m.group(2) == "(":
            name = "sys_enter_" + name[4:]
        elif m.group(2) == " -> ":
            name = "sys_exit_" + name[4:]
        text_counts[name] += 1
tcounts = {bare(k): v for k, v in sums["text"]["raw_event_counts"].items()}
check(tcounts == dict(text_counts), "text raw counts differ from its "
      "lines: %s vs %s" % (tcounts, dict(text_counts)))
check(tcounts == recorded("text-counts.txt"),
      "text raw counts differ from text-counts.txt")

# Version 7 (compressed) reads to the same rows as version 6.
def dump(db):
    con = sqlite3.connect(db)
    out = {t: con.execute("SELECT * FROM %s ORDER BY seq" % t).fetchall()
           for t in ("spte_change", "fault", "vcpu_exit", "syscall",
                     "sp_alloc", "notifier")}
    out["raw"] = con.execute("SELECT name, count FROM raw_event "
                             "ORDER BY name").fetchall()
    con.close()
    return out


check(dump(dbs["dat"]) == dump(dbs["dat7"]), "trace.dat v6 and v7 differ")
del dbs["dat7"]

# trace-cmd report -R -t: every field by name, nanoseconds: the same rows
# as the binary file, timestamps included.  Plain `trace-cmd report`
# prints kvm_exit and the MMU page events through libtraceevent's kvm
# plugin (fields left out): refused with a pointer to -R.
for args, name in ((["-R", "-t"], "report-raw.txt"), ([], "report.txt")):
    r = run(["trace-cmd", "report"] + args + ["-i", dat])
    check(r.returncode == 0, "trace-cmd report %s: %s" % (args, r.stderr))
    with open(os.path.join(cap, name), "w") as f:
        f.write(r.stdout)
rdb = os.path.join(work, "report-raw.db")
ingest(os.path.join(cap, "report-raw.txt"), rdb)
rd, dd = dump(rdb), dump(dbs["dat"])
rd.pop("raw")
dd.pop("raw")
check(rd == dd, "trace-cmd report -R -t rows differ from trace.dat's")
r = run([mmr, "ingest", os.path.join(cap, "report.txt"), "-o",
         os.path.join(work, "report.db")])
check(r.returncode == 2 and "-R" in r.stderr and
      len(r.stderr.strip().splitlines()) == 1,
      "plain trace-cmd report: exit %d: %s" % (r.returncode, r.stderr))

# perf's CTF: the CLI's counts, now and when recorded.
# (perf's CTF has no hostname: "[TS] (+DELTA) NAME: {...}".)
bt = run(["babeltrace2", os.path.join(cap, "perf-ctf")])
check(bt.returncode == 0, "babeltrace2 on perf-ctf: %s" % bt.stderr[:300])
pc = dict(collections.Counter(
    line.split(" ", 3)[2].rstrip(":") for line in bt.stdout.splitlines()))
check(sums["perf"]["raw_event_counts"] == pc, "perf raw counts differ "
      "from babeltrace2: %s vs %s" % (sums["perf"]["raw_event_counts"], pc))
check(pc == recorded("perf-counts.txt"), "perf counts differ from "
      "perf-counts.txt")

# Source meta.
check(sums["dat"]["source"]["format"] == "trace-cmd" and
      sums["dat"]["source"]["ts_resolution_ns"] == 1 and
      "kvm:kvm_exit" in sums["dat"]["source"]["events"].split(","),
      "trace.dat source: %s" % sums["dat"]["source"])
check(sums["text"]["source"]["format"] == "ftrace-text" and
      sums["text"]["source"]["ts_resolution_ns"] == 1000 and
      "kvm_mmu_get_page: role" in (sums["text"]["source"].get("lossy") or "")
      and sums["dat"]["source"].get("lossy") is None,
      "text source: %s" % sums["text"]["source"])
check(sums["perf"]["source"]["format"] == "ctf" and
      sums["perf"]["source"]["tracer"] == "perf",
      "perf source: %s" % sums["perf"]["source"])
check(sums["lttng"]["source"]["format"] == "ctf" and
      sums["lttng"]["source"]["tracer"].startswith("lttng-modules"),
      "lttng source: %s" % sums["lttng"]["source"])

# Canonical rows per CPU: (table, columns after seq, ts, cpu), abs ts.
TABLES = {
    "spte_change": "tid, as_id, gfn, level, old_spte, new_spte",
    "fault": "tid, vcpu, gpa, error_code, rip",
    "spte_request": "tid, gfn, pfn, level",
    "spte_set": "tid, gfn, spte, level",
    "fast_fault": "tid, vcpu, gpa, error_code, old_spte, new_spte, ret",
    "sp_alloc": "tid, gfn, role, created",
    "sp_free": "tid, gfn, role",
    "huge_split": "tid, gfn, spte, level, errno",
    "notifier": "tid, phase, hva_start, hva_end, event, flags",
    "vcpu_exit": "tid, vcpu, exit_reason, info1, info2, isa",
    "vcpu_entry": "tid, vcpu",
    "syscall": "tid, (SELECT substr(name, -5) FROM raw_event r WHERE "
               "r.id = raw_id), a0, a1, a2",
}
KVM = [t for t in TABLES if t != "syscall"]
# Role bits TP_printk shows (mmutrace.h KVM_MMU_PAGE_PRINTK).
ROLE_PRINTED = 0xf | 1 << 4 | 3 << 5 | 1 << 7 | 7 << 8 | 1 << 11 | \
    1 << 12 | 1 << 16


def per_cpu(db, tables, text_view=False):
    con = sqlite3.connect(db)
    base = con.execute("SELECT value FROM meta WHERE key = "
                       "'ts_base_ns'").fetchone()[0]
    rows = []
    for t in tables:
        for r in con.execute("SELECT seq, ts, cpu, %s FROM %s"
                             % (TABLES[t], t)):
            vals = list(r[3:])
            if text_view and t in ("sp_alloc", "sp_free"):
                vals[2] &= ROLE_PRINTED
            if text_view and t == "fast_fault" and vals[6] not in (4, 5):
                vals[6] = None
            rows.append((r[2], r[0], r[1] + base, (t,) + tuple(vals)))
    con.close()
    out = collections.defaultdict(list)
    for cpu, seq, ts, key in sorted(rows):
        out[cpu].append((ts, key))
    return out


def contiguous(small, big, what):
    """small's keys must be one run of big's; -> (ts_small, ts_big)."""
    pairs = []
    for cpu in sorted(set(small) | set(big)):
        s, b = small.get(cpu, []), big.get(cpu, [])
        if not s:
            continue
        keys_b = [k for _, k in b]
        keys_s = [k for _, k in s]
        start = None
        for i in range(len(keys_b) - len(keys_s) + 1):
            if keys_b[i] == keys_s[0] and \
                    keys_b[i:i + len(keys_s)] == keys_s:
                start = i
                break
        check(start is not None, "%s cpu%d: %d rows are not one run of "
              "the other's %d" % (what, cpu, len(s), len(b)))
        if start is None:
            for i, (x, y) in enumerate(zip(keys_s, keys_b)):
                if x != y:
                    print("  first difference at %d: %s vs %s" % (i, x, y),
                          file=sys.stderr)
                    break
            continue
        pairs += [(s[i][0], b[start + i][0]) for i in range(len(s))]
    return pairs


def ctf_clock_offset(trace_dir):
    """The kernel trace's clock offset from the Epoch, ns (CLI dump)."""
    for d, _, files in sorted(os.walk(trace_dir)):
        if "metadata" in files and os.sep + "kernel" in d:
            out = run(["babeltrace2", "-o", "ctf-metadata", d]).stdout
            m = re.search(r"clock \{.*?freq = 1000000000;.*?offset = "
                          r"(\d+);", out, re.S)
            off_s = re.search(r"clock \{.*?offset_s = (\d+);", out, re.S)
            return int(m.group(1)) + \
                (int(off_s.group(1)) * 10**9 if off_s else 0)
    return None


def gaps(pairs, what):
    g = sorted(a - b for a, b in pairs)
    if not g:
        return
    print("%s: %d events, gap min %d ns, median %d ns, max %d ns"
          % (what, len(g), g[0], g[len(g) // 2], g[-1]))
    check(g[0] >= 0, "%s: an event earlier than in trace.dat (%d ns)"
          % (what, g[0]))
    check(g[len(g) // 2] <= MEDIAN_TOL, "%s: median gap %d ns"
          % (what, g[len(g) // 2]))


lt = per_cpu(dbs["lttng"], TABLES)
da = per_cpu(dbs["dat"], TABLES)
pairs = contiguous(lt, da, "LTTng in trace.dat")
check(len(pairs) == sum(len(v) for v in lt.values()) and pairs,
      "LTTng rows matched: %d" % len(pairs))
# The KVM tables hold the same events as a whole (the tracers' windows
# differ by the syscalls of the tracers themselves only).
lk, dk = per_cpu(dbs["lttng"], KVM), per_cpu(dbs["dat"], KVM)
check({c: [k for _, k in v] for c, v in lk.items()} ==
      {c: [k for _, k in v] for c, v in dk.items()},
      "KVM tables differ between LTTng and trace.dat")
off = ctf_clock_offset(os.path.join(cap, "trace"))
check(off is not None, "no CTF clock offset")
if off is not None:
    gaps([(a - off, b) for a, b in pairs], "LTTng - trace.dat")

# perf: the KVM tables after dropping records perf.data holds twice
# (same time, same fields, one after the other: perf record wrote them
# twice; `perf script` shows them twice too), and the syscalls as a
# subsequence (perf records its own ioctls while LTTng runs).
def undup(rows):
    out = {}
    for cpu, v in rows.items():
        out[cpu] = [r for i, r in enumerate(v) if i == 0 or r != v[i - 1]]
    return out


pk = per_cpu(dbs["perf"], KVM)
dups = sum(len(v) for v in pk.values()) - \
    sum(len(v) for v in undup(pk).values())
check(dups == 0, "perf rows held twice in the DB: %d" % dups)
# The CLI shows them: a line equal to the one before but for its delta.
lines = [re.sub(r"\(\+[0-9.?]+\) ", "", ln) for ln in bt.stdout.splitlines()]
cli_dups = sum(1 for i in range(1, len(lines)) if lines[i] == lines[i - 1])
got = db_rows(dbs["perf"], "SELECT value FROM meta WHERE key = "
              "'source_duplicates'")
check(cli_dups > 0 and got == [(cli_dups,)],
      "perf records dropped as repeats: %s, the CLI shows %d" % (got, cli_dups))
check(sums["perf"]["source"]["duplicates_dropped"] == cli_dups,
      "summary: %s" % sums["perf"]["source"])
print("perf.data records held twice (dropped at ingest): %d" % cli_dups)
ppairs = contiguous(lk, undup(pk), "LTTng's KVM rows in perf")
check(len(ppairs) == sum(len(v) for v in lk.values()) and ppairs,
      "LTTng rows matched in perf: %d" % len(ppairs))
if off is not None:
    gaps([(a - off, b) for a, b in ppairs], "LTTng - perf")
ls_, ps_ = per_cpu(dbs["lttng"], ["syscall"]), per_cpu(dbs["perf"], ["syscall"])
for cpu in ls_:
    it = iter(k for _, k in ps_.get(cpu, []))
    check(all(k in it for _, k in ls_[cpu]), "cpu%d: LTTng's syscalls are "
          "not a subsequence of perf's" % cpu)

tx = per_cpu(dbs["text"], TABLES, text_view=True)
dv = per_cpu(dbs["dat"], TABLES, text_view=True)
tpairs = contiguous(tx, dv, "text in trace.dat")
check(len(tpairs) == sum(len(v) for v in tx.values()) and tpairs,
      "text rows matched: %d" % len(tpairs))
check(all(a % 1000 == 0 for a, _ in tpairs), "text ts not in us")
gaps([(a, b // 1000 * 1000) for a, b in tpairs], "text - trace.dat (us)")

for k in ("npf_faults", "leaf_zaps", "notifier_invalidations"):
    vals = {s: sums[s]["totals"].get(k) for s in ("lttng", "dat", "text")}
    check(len(set(vals.values())) == 1, "summary %s differs: %s" % (k, vals))

def fidelity(db):
    r = run([mmr, "fidelity", db, "--json"])
    check(r.returncode in (0, 6) and r.stdout, "fidelity on %s: exit %d: "
          "%s" % (db, r.returncode, r.stderr))
    try:
        f = json.loads(r.stdout)
    except ValueError:
        return None
    f["rc"] = r.returncode
    f["mismatches"] = [(m["kind"], m["gfn"], m["predicted"], m["observed"])
                       for m in f["mismatches"]]
    for k in ("database", "capture_damage"):
        f.pop(k)
    return f


fl = fidelity(dbs["lttng"])
# LTTng's timestamps come 2-4 us later than ftrace's: 4 faults precede
# the first traced zap of their recovery batch there (stock: no begin
# event), explained by that zap (nx_recovery_batch exemption).
check(fl and fl["ok"] and fl["rc"] == 0, "fidelity on LTTng fails: %s" % fl)
for k in ("dat", "text"):
    f = fidelity(dbs[k])
    check(f and f["ok"] and f["rc"] == 0, "fidelity on %s fails: %s"
          % (k, f))
    check(f and fl and f["observed"] == fl["observed"],
          "fidelity on %s observes %s, on LTTng %s"
          % (k, f and f["observed"], fl and fl["observed"]))
fp = fidelity(dbs["perf"])
# perf.data's repeats dropped, the self-check passes; perf data convert
# without --all names no thread, so NX recovery is unknown, not 0.
check(fp and fp["ok"] and fp["rc"] == 0, "fidelity on perf fails: %s" % fp)
check(fp and fp["observed_how"]["nx_recovered"] == "unknown" and
      fp["check_kind"]["nx_recovered"] == "unchecked",
      "perf without thread names: NX recovery %s / %s"
      % (fp and fp["observed_how"], fp and fp["check_kind"]))
print("fidelity on perf: ok %s, observed %s, predicted %s, knowledge %s"
      % (fp and fp["ok"], fp and fp["observed"], fp and fp["predicted"],
         fp and fp["knowledge"]))
finish()
