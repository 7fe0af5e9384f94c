"""Ingest's own time merge (analyze/ingest/merge.c) against utils.muxer.

The merge replaces babeltrace2's utils.muxer in ingest's graph and must
keep its order exactly: seq numbers, stream ids, thread first_seq and
the lost table all follow the message order.  For every fixture holding
a CTF trace, the trace is ingested twice, once as shipped and once with
MMUREPLAY_TEST_MUXER=1 (utils.muxer and a simple sink, the graph ingest
had before), and every table of the two DBs is compared row by row.
The fixtures hold events of two CPUs at the same nanosecond (checked
below), so the muxer's tie-break is exercised, not only the time order.

Then damaged copies (tests/damage.py) of two fixtures: a cut stream, a
packet whose header is broken, packets swapped (time going backwards:
both refuse the rest of the trace at the same event), a stream file
missing, and a packet that reports discarded events (the lost table):
same exit status, same message, same DB.  Messages are compared with
addresses and temporary directory names masked, and the muxer's words
for a time going backwards mapped to the merge's.

What it cannot catch: an order difference on input the fixtures and
damages do not produce (e.g. two traces with the same UUID and name).

usage: test_ingest_merge.py MMUREPLAY DATA_DIR WORK_DIR
"""
import os
import re
import shutil
import sqlite3
import sys

from damage import damage, kernel_dir
from mmrtest import (check, extract_fixture, finish, fresh_dir, run, sliced,
                     trace_fixtures)

mmr, data, work = sys.argv[1:4]
fresh_dir(work)
DAMAGES = ("cut-third", "flip-packet-magic", "packets-reordered",
           "stream-deleted", "discarded-records")
DAMAGED_FIXTURES = ("lttng-kernel-6.1.192-stock-basic",
                    "lttng-kernel-6.1.192-patched-bgsnapshot-latprobe")


def norm(text):
    text = re.sub(r"0x[0-9a-f]+", "0x", text)
    text = re.sub(r"mmureplay-salvage-\w+", "salvage", text)
    text = re.sub(r"Youngest upstream message[^:]*timestamp:", "BACKWARDS:",
                  text)
    return text.replace("muxer-msg-iter-addr=0x, ", "")


def tables(db):
    """{table: [rows]} of every table, in rowid or key order, as stored
    (norm() is applied only where two tables differ: compare())."""
    out = {}
    con = sqlite3.connect(db)
    # A damaged payload can leave a string that is not UTF-8.
    con.text_factory = lambda b: b.decode("utf-8", "replace")
    for (t,) in con.execute("SELECT name FROM sqlite_master WHERE "
                            "type = 'table' ORDER BY name"):
        out[t] = con.execute('SELECT * FROM "%s"' % t).fetchall()
    con.close()
    return out


def normed(rows):
    """rows with every string masked by norm(): two tables that differ
    only in addresses and temporary names are the same."""
    return [tuple(norm(v) if isinstance(v, str) else v for v in r)
            for r in rows]


def ingest(trace, db, muxer):
    env = dict(os.environ)
    env.pop("MMUREPLAY_TEST_MUXER", None)
    if muxer:
        env["MMUREPLAY_TEST_MUXER"] = "1"
    if os.path.exists(db):
        os.unlink(db)
    r = run([mmr, "ingest", "-q", trace, "-o", db], env=env, timeout=300)
    return (r.returncode, norm(r.stderr.replace(db, "DB")),
            tables(db) if os.path.exists(db) else None)


def compare(name, trace, d):
    merged = ingest(trace, os.path.join(d, "merge.db"), False)
    muxed = ingest(trace, os.path.join(d, "muxer.db"), True)
    check(merged[0] == muxed[0], "%s: exit %d, muxer %d" % (name, merged[0],
                                                           muxed[0]))
    check(merged[1] == muxed[1], "%s: message %r, muxer %r" %
          (name, merged[1], muxed[1]))
    if merged[2] is None or muxed[2] is None:
        check(merged[2] is None and muxed[2] is None,
              "%s: a DB from one graph only" % name)
        return merged
    for t in sorted(set(merged[2]) | set(muxed[2])):
        a, b = merged[2].get(t), muxed[2].get(t)
        if a != b and a is not None and b is not None:
            a, b = normed(a), normed(b)
        if a != b:
            first = next((i for i, (x, y) in enumerate(zip(a or [], b or []))
                          if x != y), min(len(a or []), len(b or [])))
            check(False, "%s: table %s differs from row %d (%d rows, "
                  "muxer %d)" % (name, t, first, len(a or []),
                                 len(b or [])))
    return merged


ties = events = 0
for fx in trace_fixtures(data):
    d = fresh_dir(os.path.join(work, fx))
    trace = extract_fixture(os.path.join(data, fx), d)
    if kernel_dir(trace) is None:
        continue        # trace-cmd and ftrace inputs have no graph
    rc, _, db = compare(fx, trace, d)
    check(rc == 0 and db is not None, "%s: ingest failed" % fx)
    if rc == 0:
        con = sqlite3.connect(os.path.join(d, "merge.db"))
        events += con.execute("SELECT value FROM meta WHERE key = "
                              "'events'").fetchone()[0]
        # Same nanosecond on two CPUs: where the tie-break decides.
        ties += con.execute(
            "WITH e AS (SELECT ts, cpu FROM spte_change UNION ALL "
            "SELECT ts, cpu FROM fault UNION ALL SELECT ts, cpu FROM "
            "vcpu_exit UNION ALL SELECT ts, cpu FROM vcpu_entry UNION ALL "
            "SELECT ts, cpu FROM syscall UNION ALL SELECT ts, cpu FROM "
            "notifier) SELECT count(*) FROM (SELECT ts FROM e GROUP BY ts "
            "HAVING count(DISTINCT coalesce(cpu, -1)) > 1)").fetchone()[0]
        con.close()
    if fx in DAMAGED_FIXTURES:
        for kind in DAMAGES:
            case = os.path.join(work, fx + "-" + kind)
            shutil.copytree(trace, case)
            if not damage(kind, kernel_dir(case)):
                continue
            rc, _, _ = compare("%s %s" % (fx, kind), case, case)
            check(rc in (0, 3), "%s %s: exit %d" % (fx, kind, rc))
            shutil.rmtree(case)
    shutil.rmtree(d)
print("%d events compared, %d timestamps shared by two CPUs" % (events,
                                                                 ties))
check(events > 0, "no fixture compared")
if not sliced():
    # Every fixture runs here; in a slice (the sanitizers) a part.
    check(ties > 0, "no fixture has a tie for the merge to break")
finish()
