"""Bad input: each case gets a one-line error naming the file, its own
exit status, no crash, and no half-written DB; a cut trace keeps what
was read, marked truncated.

usage: test_bad_input.py MMUREPLAY FIXTURE_DIR WORK_DIR
"""
import json
import os
import shutil
import sqlite3
import sys

from mmrtest import (check, db_rows, extract_fixture, finish, fresh_dir, run,
                     summary_json, u64)

mmr, fixture, work = sys.argv[1:4]
fresh_dir(work)
good = extract_fixture(fixture, work)
kdir = os.path.join(good, "lttng-trace", "kernel")


def leftovers():
    return sorted(f for f in os.listdir(work) if ".db" in f)


def expect_fail(args, code, names, what):
    r = run([mmr] + args)
    lines = r.stderr.strip().splitlines()
    check(r.returncode == code, "%s: exit %d, want %d (%s)"
          % (what, r.returncode, code, r.stderr.strip()))
    check(len(lines) == 1, "%s: want one error line, got %r" % (what, lines))
    check(lines and names in lines[0], "%s: error does not name %s: %r"
          % (what, names, lines))
    check(lines and lines[0].startswith("mmureplay"), what + ": prefix")
    check(leftovers() == [], "%s: files left: %s" % (what, leftovers()))
    return r


db = os.path.join(work, "out.db")

# Missing path, a file that is no trace, a directory without a trace.
expect_fail(["ingest", os.path.join(work, "nope"), "-o", db], 2,
            os.path.join(work, "nope"), "missing path")
notrace = os.path.join(work, "README")
with open(notrace, "w") as f:
    f.write("not a trace\n")
expect_fail(["ingest", notrace, "-o", db], 2, notrace, "regular file")
empty = fresh_dir(os.path.join(work, "empty"))
expect_fail(["ingest", empty, "-o", db], 2, empty, "no trace under dir")

# Corrupt metadata: TSDL garbage in the middle of the metadata stream.
bad = os.path.join(work, "corrupt")
shutil.copytree(good, bad)
meta = os.path.join(bad, "lttng-trace", "kernel", "metadata")
with open(meta, "r+b") as f:
    f.seek(3000)
    f.write(b"}}}} garbage {{{{ ;;; event {")
expect_fail(["ingest", bad, "-o", db], 2,
            os.path.join(bad, "lttng-trace", "kernel"), "corrupt metadata")

# Unwritable output: the directory does not exist.
expect_fail(["ingest", good, "-o", os.path.join(work, "no", "out.db")], 4,
            os.path.join(work, "no", "out.db"), "unwritable output")

# A DB from a newer schema, and a file that is no DB.
newer = os.path.join(work, "newer.sqlite")
con = sqlite3.connect(newer)
con.execute("CREATE TABLE meta (key TEXT PRIMARY KEY, value)")
con.execute("PRAGMA user_version = 99")
con.commit()
con.close()
r = run([mmr, "summary", newer])
check(r.returncode == 2 and newer in r.stderr and "newer" in r.stderr and
      len(r.stderr.strip().splitlines()) == 1, "newer schema: %r" % r.stderr)
# The same failure, the same code, in every command that reads a DB.
for cmd in ("summary", "fidelity", "replay", "report", "spikes"):
    for path, what in ((newer, "newer"), (notrace, "not a capture"),
                       (os.path.join(work, "nope.db"), "No such file")):
        r = run([mmr, cmd, path])
        check(r.returncode == 2 and path in r.stderr and what in r.stderr
              and len(r.stderr.strip().splitlines()) == 1,
              "%s on %s: %d %r" % (cmd, what, r.returncode, r.stderr))

# Usage errors.
check(run([mmr, "ingest", good]).returncode == 1, "ingest without -o")
check(run([mmr, "summary", "--bogus", "x"]).returncode == 1, "bad option")
check(run([mmr, "frobnicate"]).returncode == 1, "unknown command")

# Option values: typed, ranged, checked before any file is touched (the
# DB named does not exist: exit 1, not 2), one line naming the option.
anydb = os.path.join(work, "any.db")
for args, names, what in (
        (["fidelity", anydb, "--nx-ratio", "abc"], "--nx-ratio",
         "not a number"),
        (["replay", anydb, "--nx-ratio", "4x"], "'4x'", "trailing junk"),
        (["replay", anydb, "--nx-period=0"], "--nx-period", "below range"),
        (["replay", anydb, "--nx-period", "99999999999"], "--nx-period",
         "above range"),
        (["spikes", anydb, "--top", "65"], "0..64", "--top range"),
        (["spikes", anydb, "--threshold-us=-3"], "--threshold-us",
         "negative threshold"),
        (["spikes", anydb, "--top="], "--top", "empty value"),
        (["summary", anydb, "--json=yes"], "--json", "flag with a value"),
        (["fidelity", anydb, "--nx-ratio"], "--nx-ratio", "missing value"),
        (["report", anydb, "--bogus=1"], "--bogus", "unknown option"),
        (["replay", anydb] + ["--policy", "x" * 1000] * 5, "--policy",
         "list option too long")):
    expect_fail(args, 1, names, what)
# Every command that reads a DB takes it the same way: no DB, two DBs.
for cmd in ("summary", "fidelity", "replay", "report", "spikes"):
    expect_fail([cmd], 1, "one DB", cmd + " without a DB")
    expect_fail([cmd, anydb, anydb], 1, "one DB", cmd + " with two DBs")
for cmd in ("ingest", "summary"):
    r = run([mmr, cmd, "--help"])
    check(r.returncode == 0 and "Usage: mmureplay " + cmd in r.stdout and
          "Exit status" in r.stdout, cmd + " --help")

# A stream file cut in the middle of its packet: its whole packets are
# kept and the cut one is left out (libbabeltrace2 can abort on a packet
# whose content ends inside an event: ingest/salvage.c), the DB says
# truncated and why, the exit status is 3.  This stream is one packet, so
# nothing of cpu 0 is left; cpu 1 is whole.
full = os.path.join(work, "full.db")
check(run([mmr, "ingest", good, "-o", full]).returncode == 0, "full ingest")
cut = os.path.join(work, "cut")
shutil.copytree(good, cut)
stream = os.path.join(cut, "lttng-trace", "kernel", "ch0_0")
size = os.path.getsize(stream)
os.truncate(stream, size // 2 + 123)
cutdb = os.path.join(work, "cut.db")
r = run([mmr, "ingest", cut, "-o", cutdb])
check(r.returncode == 3, "cut stream: exit %d (%s)" % (r.returncode,
                                                       r.stderr))
check("ch0_0" in r.stderr and "truncated" in r.stderr and
      "left out" in r.stderr, "cut: message")
check(os.path.exists(cutdb), "cut: partial DB kept")
check(not [f for f in os.listdir(work) if ".tmp-" in f], "cut: temp left")
s = summary_json(mmr, cutdb)
sf = summary_json(mmr, full)
check(s["truncated"] and "ch0_0" in (s["truncated_reason"] or ""),
      "cut: marked truncated")
check(0 < s["events"] < sf["events"], "cut: %d of %d events"
      % (s["events"], sf["events"]))
# The whole stream (cpu 1) is all there; the cut one (cpu 0) keeps its
# whole packets: none.
q = "SELECT gfn, old_spte, new_spte, level FROM spte_change WHERE cpu = %d " \
    "ORDER BY seq"
check(db_rows(cutdb, q % 1) == db_rows(full, q % 1), "cut: cpu 1 intact")
part, whole = db_rows(cutdb, q % 0), db_rows(full, q % 0)
check(len(part) == 0 < len(whole),
      "cut: cpu 0's one packet left out (%d of %d)" % (len(part), len(whole)))
# "--name=VALUE" is "--name VALUE".
eq, sp = os.path.join(work, "eq.json"), os.path.join(work, "sp.json")
check(run([mmr, "summary", full, "--json", "--output=" + eq]).returncode
      == 0 and run([mmr, "summary", full, "--json", "-o", sp]).returncode
      == 0, "summary --output=FILE")
check(open(eq).read() == open(sp).read() != "", "--output=FILE is -o FILE")
r = run([mmr, "spikes", full, "--json", "--top=3"])
check(r.returncode == 0 and r.stdout == run(
    [mmr, "spikes", full, "--json", "--top", "3"]).stdout, "--top=3")
# A list option collects every value, repeated or comma-separated.
r = run([mmr, "replay", full, "--json", "-p", "perm-upgrade", "-p",
         "nx-readlock", "--policy=nx-skip-dirty"])
check(r.returncode == 0 and sorted(json.loads(r.stdout)["policies"]) ==
      ["baseline", "nx-readlock", "nx-skip-dirty", "perm-upgrade"],
      "repeated --policy: %d %s" % (r.returncode, r.stderr))
check(u64(-1) == 0xFFFFFFFFFFFFFFFF, "u64 helper")

# -o onto something that is not a regular file: written in place (a
# report), refused (a DB); it stays what it was.  Renaming the temporary
# over it used to turn a device or FIFO into a plain file: run as root,
# "-o /dev/null" broke the machine's /dev/null.  A private null device
# (root only) and a FIFO stand in for it.
import stat
specials = []
fifo = os.path.join(work, "fifo")
os.mkfifo(fifo)
specials.append((fifo, stat.S_ISFIFO))
if os.geteuid() == 0:
    dev = os.path.join(work, "null")
    os.mknod(dev, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    specials.append((dev, stat.S_ISCHR))
for path, kind in specials:
    # A reader that never blocks: the writer's open succeeds at once,
    # and a FIFO replaced by a file just leaves it empty.
    rfd = os.open(path, os.O_RDONLY | os.O_NONBLOCK) \
        if kind is stat.S_ISFIFO else None
    r = run([mmr, "summary", full, "--json", "-o", path])
    got = b""
    if rfd is not None:
        try:
            while True:
                chunk = os.read(rfd, 65536)
                if not chunk:
                    break
                got += chunk
        except BlockingIOError:
            pass
        os.close(rfd)
    check(r.returncode == 0 and kind(os.lstat(path).st_mode),
          "summary -o %s: exit %d, still a special file (%s)"
          % (os.path.basename(path), r.returncode, r.stderr.strip()))
    check(rfd is None or b'"events"' in got,
          "the FIFO's reader got the JSON")
    r = run([mmr, "ingest", good, "-o", path])
    check(r.returncode == 4 and "not a regular file" in r.stderr and
          kind(os.lstat(path).st_mode) and
          not [f for f in os.listdir(work) if ".tmp-" in f],
          "ingest -o %s: refused, left as it was (exit %d, %s)"
          % (os.path.basename(path), r.returncode, r.stderr.strip()))
finish()
