"""The capture DB under a full disk, a read-only mount, two writers and
hand edits.

On a real fixture:
  - disk full (a 1 MiB tmpfs): ingest and report exit 4 in one line and
    leave no file; a replay whose results do not fit exits 4 and leaves
    the DB as it was (same summary, no journal);
  - read-only (the tmpfs remounted ro): replay refuses at once (exit 4,
    "read-only"); summary and fidelity, which only read, work;
  - two replays of one DB at once: both succeed, with the same results;
  - edited by hand: a dropped table or a renamed column is refused in
    one line (exit 2); a row edited after a replay makes the next replay
    read the tables again (the packed stream went stale), so the edit is
    seen: here an impossible SPTE level, refused as corrupt; the row
    counts ingest stores are the tables', and rows deleted or added, or
    a table made again, are counted, not taken from the stored count.
Needs root for the tmpfs (CI runs as root); without it those cases say
SKIP and the rest still runs.

usage: test_db_robust.py MMUREPLAY FIXTURE_DIR WORK_DIR
"""
import os
import shutil
import sqlite3
import subprocess
import sys

from mmrtest import (check, db_rows, finish, fresh_dir, ingest_fixture, run,
                     summary_json)

mmr, fixture, work = sys.argv[1:4]
fresh_dir(work)
trace, db = ingest_fixture(mmr, fixture, work, "cap.db")


def one_line(r, code, words, what):
    lines = r.stderr.strip().splitlines()
    check(r.returncode == code, "%s: exit %d, want %d (%s)"
          % (what, r.returncode, code, r.stderr.strip()))
    check(len(lines) == 1 and all(w in lines[0] for w in words),
          "%s: one line with %s: %r" % (what, words, lines))


# --- a full disk, then a read-only one ---------------------------------
mnt = os.path.join(work, "small")
os.makedirs(mnt)
size_kb = os.path.getsize(db) // 1024 + 512
mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dk" % size_kb,
                          "tmpfs", mnt], capture_output=True).returncode == 0


def fill(leave):
    """A filler file that leaves about `leave` bytes free on mnt."""
    sv = os.statvfs(mnt)
    n = max(0, sv.f_bavail * sv.f_frsize - leave)
    with open(os.path.join(mnt, "filler"), "wb") as f:
        try:
            f.write(b"\0" * n)
        except OSError:
            pass

if not mounted:
    print("SKIP disk full / read-only: cannot mount a tmpfs (not root?)")
else:
    try:
        out = os.path.join(mnt, "out.db")
        fill(256 << 10)
        # ingest's own handling of its output: not served by the store.
        one_line(run([mmr, "ingest", "-q", trace, "-o", out],
                     store=False), 4,
                 ["out.db", "full"], "ingest onto a full disk")
        check(sorted(os.listdir(mnt)) == ["filler"],
              "ingest left %s" % os.listdir(mnt))
        os.unlink(os.path.join(mnt, "filler"))
        # Full but for a little: a report does not fit.
        fill(4096)
        one_line(run([mmr, "report", db, "-o", os.path.join(mnt, "r.html")]),
                 4, ["r.html"], "report onto a full disk")
        check(sorted(os.listdir(mnt)) == ["filler"],
              "report left %s" % os.listdir(mnt))
        os.unlink(os.path.join(mnt, "filler"))
        # A DB that fits, whose replay results (the packed stream) do not.
        small = os.path.join(mnt, "cap.db")
        shutil.copy(db, small)
        before = summary_json(mmr, small)
        fill(0)
        r = run([mmr, "replay", small, "-o", os.devnull])
        one_line(r, 4, ["cap.db", "full"], "replay on a full disk")
        after = summary_json(mmr, small)
        check(after == before, "the replay changed the DB's summary")
        check(sorted(os.listdir(mnt)) == ["cap.db", "filler"],
              "replay left %s" % os.listdir(mnt))
        os.unlink(os.path.join(mnt, "filler"))
        # Read-only.
        subprocess.run(["mount", "-o", "remount,ro", mnt], check=True)
        one_line(run([mmr, "replay", small]), 4, ["cap.db", "read-only"],
                 "replay of a read-only DB")
        check(run([mmr, "summary", small]).returncode == 0,
              "summary of a read-only DB")
        check(run([mmr, "fidelity", small]).returncode == 0,
              "fidelity of a read-only DB")
    finally:
        subprocess.run(["umount", mnt])

# --- two replays at once ----------------------------------------------
two = os.path.join(work, "two.db")
shutil.copy(db, two)
ps = [subprocess.Popen([mmr, "replay", two, "--json", "-o",
                        os.path.join(work, "two-%d.json" % i)],
                       stderr=subprocess.PIPE, text=True) for i in (0, 1)]
errs = [p.communicate()[1] for p in ps]
check([p.returncode for p in ps] == [0, 0],
      "two replays at once: %s %s" % ([p.returncode for p in ps], errs))
outs = []
for i in (0, 1):
    with open(os.path.join(work, "two-%d.json" % i)) as f:
        outs.append(f.read())
check(outs[0] == outs[1], "two replays at once gave different results")

# --- edited by hand ---------------------------------------------------
for what, sql, words in (
        ("a dropped table", "DROP TABLE fault", ["table fault is missing"]),
        ("a renamed column",
         "ALTER TABLE spte_change RENAME COLUMN level TO lvl",
         ["table spte_change has columns"])):
    ed = os.path.join(work, "edited.db")
    shutil.copy(db, ed)
    con = sqlite3.connect(ed)
    con.execute(sql)
    con.commit()
    con.close()
    for cmd in ("summary", "fidelity", "replay"):
        one_line(run([mmr, cmd, ed]), 2, ["edited.db"] + words,
                 "%s, %s" % (cmd, what))
st = os.path.join(work, "stale.db")
shutil.copy(db, st)
check(run([mmr, "replay", st, "-o", os.devnull]).returncode == 0, "replay")
check(db_rows(st, "SELECT count(*) FROM replay_stream")[0][0] > 0,
      "the replay wrote its packed stream")
con = sqlite3.connect(st)
con.execute("UPDATE spte_change SET level = 9 WHERE seq = "
            "(SELECT min(seq) FROM spte_change)")
con.commit()
con.close()
one_line(run([mmr, "fidelity", st]), 2, ["stale.db", "spte_change",
                                         "level"],
         "an edit after a replay is seen")

# Row counts: ingest stores each canonical table's (summary does not
# count the tables); an edit that adds or deletes rows drops the stored
# count, and a table made again (without the triggers) is counted.
base = summary_json(mmr, db)["canonical_counts"]
for table, n in base.items():
    check(db_rows(db, "SELECT count(*) FROM \"%s\"" % table)[0][0] == n,
          "stored count of %s is the table's" % table)
check(db_rows(db, "SELECT count(*) FROM meta WHERE key LIKE 'rows:%'")[0][0]
      == len(base), "a stored count for every canonical table")
for what, sqls, table, delta in (
        ("rows deleted", ["DELETE FROM fault WHERE seq IN (SELECT seq FROM "
                          "fault ORDER BY seq LIMIT 3)"], "fault", -3),
        ("a row added", ["INSERT INTO tlb_flush (seq, ts) VALUES "
                         "(-1, 0)"], "tlb_flush", 1),
        ("a table made again",
         ["CREATE TABLE f2 AS SELECT * FROM fault",
          "DROP TABLE fault",
          "CREATE TABLE fault (seq INTEGER PRIMARY KEY, ts INTEGER NOT "
          "NULL, cpu INTEGER, tid INTEGER, vm INTEGER, vcpu INTEGER, "
          "gpa INTEGER, "
          "error_code INTEGER, rip INTEGER, access TEXT CHECK (access "
          "IN ('read', 'write', 'fetch')), present INTEGER)",
          "INSERT INTO fault SELECT * FROM f2 LIMIT 5", "DROP TABLE f2"],
         "fault", 5 - base["fault"])):
    ed = os.path.join(work, "counted.db")
    shutil.copy(db, ed)
    con = sqlite3.connect(ed)
    for sql in sqls:
        con.execute(sql)
    con.commit()
    con.close()
    got = summary_json(mmr, ed)["canonical_counts"]
    check(got.get(table) == base[table] + delta and
          all(got[t] == base[t] for t in base if t != table),
          "%s: summary counts %s %s, want %d"
          % (what, table, got.get(table), base[table] + delta))
finish()
