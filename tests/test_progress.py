"""Progress lines: on a terminal, every long step of every command says
how far it is; on a pipe or a file, nothing.

On a SYNTHETIC capture (bench/synth, 1.2 M events: a lab fixture is too
short for a step to reach the first report, every 64 Ki events), the
commands run with stderr on a pseudo-terminal and then on a pipe.

What this can catch: a step that shows no progress on a terminal (the
replay stream, the replay's passes, summary's and the report's scans), a
line without its total and percentage (the table pass of a read-only
DB's fidelity too), a total that is not the
events the step reads (the percentage of a complete step's last line
over 100), progress written to a pipe, a line left on the terminal after
the command (every line is erased: the last write ends with the erase).
What it cannot: the rate and ETA, which need a step longer than the
quarter second between two redraws (seen by hand on bench/scale.py's
captures); whether a step of a real capture lasts over a second.
"""
import os
import pty
import re
import select
import shutil
import subprocess
import sys

from mmrtest import check, finish, fresh_dir, run

mmr, synth, work = sys.argv[1:4]
fresh_dir(work)
out = os.path.join(work, "synthetic-1200k")
db = os.path.join(work, "synthetic-1200k.db")

r = run([synth, "--events", "1200000", "--seed", "5", "--vcpus", "4",
         "--out", out])
check(r.returncode == 0, "synth exit %d: %s" % (r.returncode, r.stderr))
r = run([mmr, "ingest", out, "-o", db, "-q"])
check(r.returncode == 0, "ingest exit %d: %s" % (r.returncode, r.stderr))


def on_tty(args):
    """Exit code and what args wrote to stderr, a pseudo-terminal."""
    master, slave = pty.openpty()
    p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    chunks = []
    while True:
        ready, _, _ = select.select([master], [], [], 60)
        if not ready:
            break
        try:
            data = os.read(master, 65536)
        except OSError:         # EIO: the child closed the terminal
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    return p.wait(), b"".join(chunks).decode("utf-8", "replace")


LINE = re.compile(r"^([a-z][\w -]*(?:: [\w -]+)?): ([\d,]+) of ([\d,]+) "
                  r"\((\d+)%\)")


def steps(text):
    """{step: [(done, total, pct), ...]} of the progress lines."""
    seen = {}
    for m in (LINE.match(ln) for ln in text.split("\r")):
        if not m:
            continue
        seen.setdefault(m.group(1), []).append(
            (int(m.group(2).replace(",", "")),
             int(m.group(3).replace(",", "")), int(m.group(4))))
    return seen


fresh = os.path.join(work, "fresh.db")     # no replay stream in it
shutil.copy(db, fresh)
cases = [
    (["fidelity", fresh], ["replay: reading the tables",
                           "replay: first pass", "replay baseline"]),
    (["replay", db, "-o", os.devnull],
     ["replay stream: writing", "replay: first pass", "replay baseline",
      "replay nx-readlock"]),
    (["summary", db], ["summary: faults per vCPU", "summary: leaf zaps",
                       "latency: NPF exits and entries"]),
    (["report", db, "-o", os.path.join(work, "r.html")],
     ["summary: leaf zaps", "summary: invalidations"]),
    (["fidelity", db], ["replay: first pass", "replay baseline"]),
]
for args, want in cases:
    rc, text = on_tty([mmr] + args)
    check(rc == 0, "%s on a terminal: exit %d: %s" % (args[0], rc, text))
    seen = steps(text)
    for step in want:
        check(step in seen, "%s: no progress line for '%s' (saw %s)"
              % (args[0], step, sorted(seen)))
    for step, lines in seen.items():
        for done, total, pct in lines:
            check(0 < done <= total and pct <= 100,
                  "%s: '%s' at %d of %d (%d%%)" % (args[0], step, done,
                                                    total, pct))
    check(text.endswith("\r\x1b[K"), "%s: the last progress line is left "
          "on the terminal: %r" % (args[0], text[-80:]))
    r = run([mmr] + args)
    check(r.returncode == 0 and r.stderr == "",
          "%s on a pipe: exit %d, stderr %r" % (args[0], r.returncode,
                                                r.stderr[:200]))
finish()
