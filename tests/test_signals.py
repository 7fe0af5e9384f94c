"""SIGINT and SIGTERM at random points of ingest, replay and report.

Each command is first timed once on the fixture; then it is run again and
sent a signal at a random point of that time (seeded; the seed is
printed).  A run the signal reached must exit 130 / 143 with one line,
leave no temporary (NAME.tmp-PID) and no SQLite journal, and leave the
previous output as it was; the DB it read or updated still opens and
answers `summary`.  A signal that comes before main installs its
handlers kills the process the default way; nothing is written by then.  At least one run of each command must be reached, or
the test proves nothing and fails.

Then the temporaries of a process that died without cleaning up (SIGKILL)
are removed by the next run that writes the same name, and named; a
temporary whose PID is alive is left alone.

usage: test_signals.py MMUREPLAY FIXTURE_DIR WORK_DIR
"""
import os
import random
import shutil
import signal
import subprocess
import sys
import time

from mmrtest import check, extract_fixture, finish, fresh_dir, run

mmr, fixture, work = sys.argv[1:4]
fresh_dir(work)
trace = extract_fixture(fixture, work)
base = os.path.join(work, "base.db")
r = run([mmr, "ingest", "-q", trace, "-o", base])
check(r.returncode == 0, "ingest: %s" % r.stderr)
seed = int(os.environ.get("MMR_SIGNAL_SEED", time.time_ns() % 100000))
rng = random.Random(seed)
print("seed", seed)

SENTINEL = b"previous output\n"
TRIALS = 8


def debris(d):
    return sorted(f for f in os.listdir(d)
                  if ".tmp-" in f or f.endswith("-journal") or
                  f.endswith("-wal"))


def setup(name):
    """A fresh directory: a DB to work on, an old output beside it."""
    d = fresh_dir(os.path.join(work, name))
    db = os.path.join(d, "cap.db")
    shutil.copy(base, db)
    out = os.path.join(d, "out")
    with open(out, "wb") as f:
        f.write(SENTINEL)
    return d, db, out


COMMANDS = {
    # name: argv builder (db, out) -> args; the output it replaces
    "ingest": lambda db, out: ["ingest", "-q", trace, "-o", out],
    "replay": lambda db, out: ["replay", db, "--json", "-o", out],
    "report": lambda db, out: ["report", db, "-o", out],
}

for name, argv in COMMANDS.items():
    d, db, out = setup(name + "-timing")
    t0 = time.monotonic()
    # Timed as it runs: the test store would serve an ingest at once.
    r = run([mmr] + argv(db, out), store=False)
    full = time.monotonic() - t0
    check(r.returncode == 0, "%s runs: %s" % (name, r.stderr))
    reached = 0
    for i in range(TRIALS):
        sig = signal.SIGINT if i % 2 == 0 else signal.SIGTERM
        d, db, out = setup("%s-%d" % (name, i))
        at = rng.uniform(0.0, full * 0.9)
        p = subprocess.Popen([mmr] + argv(db, out), stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
        time.sleep(at)
        p.send_signal(sig)
        _, err = p.communicate(timeout=120)
        what = "%s, %s at %.3f of %.3f s" % (name, sig.name, at, full)
        with open(out, "rb") as f:
            now = f.read()
        check(debris(d) == [], "%s: left %s" % (what, debris(d)))
        if p.returncode == 0:
            check(now != SENTINEL, what + ": finished, output written")
        elif p.returncode == -sig:
            # Before main installed the handlers (the loader's time):
            # the default action, nothing was written yet.
            check(now == SENTINEL, what + ": killed early, output untouched")
        else:
            reached += 1
            check(p.returncode == 128 + sig,
                  "%s: exit %d, want %d (%s)" % (what, p.returncode,
                                                 128 + sig, err.strip()))
            lines = err.strip().splitlines()
            check(len(lines) == 1 and
                  lines[0].startswith("mmureplay: interrupted by " +
                                      sig.name),
                  "%s: one line: %r" % (what, lines))
            check(now == SENTINEL, what + ": previous output untouched")
        r = run([mmr, "summary", db, "-o", os.devnull])
        check(r.returncode == 0, "%s: the DB still answers: %s"
              % (what, r.stderr.strip()))
    print("%s: %d of %d runs interrupted" % (name, reached, TRIALS))
    check(reached > 0, "%s: no run was reached by its signal" % name)

# Temporaries of dead processes: removed by the next run, and named.
d, db, out = setup("stale")
dead = subprocess.Popen(["true"])
dead.wait()
stale = "%s.tmp-%d" % (out, dead.pid)
live = "%s.tmp-%d" % (out, os.getpid())
for f in (stale, live):
    with open(f, "w") as fp:
        fp.write("left behind\n")
# ingest's own handling of its output: never served by the test store.
r = run([mmr, "ingest", "-q", trace, "-o", out], store=False)
check(r.returncode == 0, "ingest over stale temporaries: %s" % r.stderr)
check(not os.path.exists(stale), "the dead process's temporary is removed")
check(os.path.basename(stale) in r.stderr and "gone" in r.stderr,
      "and named: %r" % r.stderr)
check(os.path.exists(live), "a live process's temporary is left alone")
os.unlink(live)
finish()
