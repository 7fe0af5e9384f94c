"""Strings from a trace or a DB are data: escaped in HTML, never SQL.

A real capture is ingested and replayed; then its DB is edited by hand
the way a hostile or damaged input could read: the trace's hostname,
path, kernel release and tracer, a raw event name, a thread's name, a
stored run's knowledge columns hold markup, quotes and an SQL fragment.
The HTML report must show each only escaped (no element, attribute or
script of its own), the JSON must give the exact strings back, and the
SQL fragment must stay text (every table still there afterwards).

usage: test_untrusted_strings.py MMUREPLAY FIXTURE_DIR WORK_DIR
"""
import json
import re
import os
import sqlite3
import sys

from mmrtest import check, db_rows, finish, fresh_dir, ingest_fixture, run

mmr, fixture, work = sys.argv[1:4]
fresh_dir(work)
trace, db = ingest_fixture(mmr, fixture, work, "cap.db")
r = run([mmr, "replay", db, "-o", os.devnull])
check(r.returncode == 0, "replay: %s" % r.stderr)

MARK = "<script>alert(\"x\")</script><img src=x onerror='y'>&amp;"
SQL = "x'); DROP TABLE fault; --"
tables_before = db_rows(db, "SELECT name FROM sqlite_master ORDER BY name")
con = sqlite3.connect(db)
con.execute("UPDATE trace SET hostname = ?, path = ?, kernel_release = ?, "
            "tracer_name = ?", (MARK, MARK, MARK, MARK))
con.execute("INSERT INTO raw_event (name, count, canonical, note) "
            "VALUES (?, 1, NULL, ?)", (MARK, SQL))
con.execute("INSERT INTO raw_event (name, count, canonical, note) "
            "VALUES (?, 1, NULL, NULL)", (SQL,))
con.execute("UPDATE thread SET procname = ?", (MARK,))
con.execute("UPDATE replay_run SET memslots = ?, lock_waits = ?",
            (MARK, SQL))
con.commit()
con.close()

html = os.path.join(work, "report.html")
r = run([mmr, "report", db, "-o", html])
check(r.returncode == 0, "report: %s" % r.stderr)
with open(html) as f:
    page = f.read()
# The page's own script (the timeline's zoom) is one element without
# the DB's text; nothing the DB holds became an element or attribute.
scripts = re.findall(r"<script[^>]*>(.*?)</script>", page, re.S)
check(len(scripts) <= 1 and "alert" not in "".join(scripts) and
      "<img" not in page and
      "onerror=" not in page.replace("onerror=&#39;", ""),
      "the page carries markup from the DB")
escaped = ("&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;&lt;img src=x "
           "onerror=&#39;y&#39;&gt;&amp;amp;")
check(page.count(escaped) >= 3, "the strings are shown escaped (%d times)"
      % page.count(escaped))

r = run([mmr, "summary", db, "--json"])
check(r.returncode == 0, "summary: %s" % r.stderr)
s = json.loads(r.stdout) if r.returncode == 0 else {}
check(s.get("traces", [{}])[0].get("hostname") == MARK and
      MARK in s.get("raw_event_counts", {}) and
      SQL in s.get("raw_event_counts", {}),
      "JSON gives the exact strings back")
for cmd in (["summary", db], ["spikes", db], ["fidelity", db, "--json"]):
    r = run([mmr] + cmd + ["-o", os.devnull])
    check(r.returncode == 0, "%s: exit %d: %s" % (cmd, r.returncode,
                                                  r.stderr))
check(db_rows(db, "SELECT name FROM sqlite_master ORDER BY name") ==
      tables_before, "the SQL fragment stayed text")
finish()
