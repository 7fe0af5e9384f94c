"""Bad ftrace input: a one-line message naming the file, the README's exit
status, no crash, no half-written DB.

usage: test_ftrace_bad_input.py MMUREPLAY FIXTURE_DIR WORK_DIR

FIXTURE_DIR is a run.sh --trace-cmd fixture (trace.dat.xz,
ftrace-text.txt.xz).  The damaged inputs are made here from its real
files, each named for what was done to it (synthetic edits of real
recordings): a text file that is not a trace, trace.dat cut short in its
headers and in its event data, a text line of a catalogued event whose
print format the text reader does not know, a known event's line whose
text does not follow its format, a text copy cut mid-line, and a text
dump with the kernel's LOST markers inserted.
"""
import lzma
import os
import sqlite3
import sys

from mmrtest import check, finish, fresh_dir, run, summary_json

mmr, fixture, work = sys.argv[1:4]
fresh_dir(work)


def unxz(name):
    with lzma.open(os.path.join(fixture, name + ".xz")) as f:
        return f.read()


def write(name, data):
    path = os.path.join(work, name)
    with open(path, "wb") as f:
        f.write(data)
    return path


def leftovers():
    return sorted(f for f in os.listdir(work) if ".db" in f)


def ingest(src, code, what, lines=1, names=None):
    db = os.path.join(work, "out.db")
    if os.path.exists(db):
        os.remove(db)
    r = run([mmr, "ingest", src, "-o", db, "-q"])
    err = r.stderr.strip().splitlines()
    check(r.returncode == code, "%s: exit %d, want %d (%s)"
          % (what, r.returncode, code, r.stderr.strip()))
    check(len(err) == lines, "%s: want %d stderr line(s), got %r"
          % (what, lines, err))
    check(not err or (names or src) in err[0],
          "%s: message does not name %s: %r" % (what, names or src, err))
    if code in (0, 3):
        check(os.path.exists(db), what + ": no DB")
    else:
        check(leftovers() == [], "%s: files left: %s" % (what, leftovers()))
    return r, db


dat = unxz("trace.dat")
text = unxz("ftrace-text.txt").decode()
tlines = text.splitlines(keepends=True)
ev_idx = [i for i, l in enumerate(tlines) if not l.startswith("#")]

# Not a trace: text of another kind, and binary garbage.
ingest(write("notes.txt", b"incident notes: the VM stalled at 10:42\n"), 2,
       "text that is not a trace")
ingest(write("noise.bin", bytes(range(256)) * 8), 2, "binary noise")

# trace.dat cut short: inside its headers / formats, and inside its
# events (the fixture's file version 6: CPU 0's data is cut; and the same
# recording in version 7, compressed, cut before its end).  Both are
# refused whole (libtracecmd cannot read a cut file), never a crash.
ingest(write("trace-cut-head.dat", dat[:4096]), 2, "trace.dat cut in the "
       "headers")
at = dat.find(b"flyrecord\0") + 10
cpu0_off = int.from_bytes(dat[at:at + 8], "little")
cpu0_size = int.from_bytes(dat[at + 8:at + 16], "little")
check(0 < cpu0_off < len(dat) and cpu0_size > 0, "fixture CPU table")
r, db = ingest(write("trace-cut-data.dat",
                     dat[:cpu0_off + cpu0_size // 2]), 2,
               "trace.dat cut in CPU 0's events")
check("cut short" in r.stderr, "cut data: %s" % r.stderr)
# Cut anywhere: refused, never a crash (libtracecmd faulted inside
# tracecmd_open() on a version 6 file cut in its CPU data).
for k in range(1, 20):
    ingest(write("trace-cut-%02d.dat" % k, dat[:len(dat) * k // 20]), 2,
           "trace.dat cut at %d/20" % k)
    os.remove(os.path.join(work, "trace-cut-%02d.dat" % k))
full = write("trace-full.dat", dat)
v7 = os.path.join(work, "trace-v7.dat")
r = run(["trace-cmd", "convert", "--file-version", "7", "--compression",
         "any", "-i", full, "-o", v7])
check(r.returncode == 0, "trace-cmd convert: %s" % r.stderr[-300:])
if r.returncode == 0:
    with open(v7, "rb") as f:
        d7 = f.read()
    os.remove(v7)
    for frac in (2, 3, 5):
        ingest(write("trace-v7-cut.dat", d7[:len(d7) * (frac - 1) // frac]),
               2, "version 7 trace.dat cut at %d/%d" % (frac - 1, frac))
os.remove(full)

# A catalogued event with no text format (a patched kernel's event): the
# line of a real kvm_exit with the event renamed.
i = next(i for i in ev_idx if ": kvm_exit: " in tlines[i])
edit = list(tlines)
edit[i] = edit[i].replace(": kvm_exit: ", ": kvm_invalidate_range_start: ")
r, db = ingest(write("text-unknown-format.txt", "".join(edit).encode()), 0,
               "an event whose format the text reader does not know",
               names="text-unknown-format.txt:%d" % (i + 1))
check("kvm_invalidate_range_start" in r.stderr, "unknown format: event "
      "not named: %s" % r.stderr)
if r.returncode == 0:
    note = sqlite3.connect(db).execute(
        "SELECT count, canonical, note FROM raw_event WHERE name = "
        "'kvm:kvm_invalidate_range_start'").fetchall()
    check(note and note[0][0] == 1 and note[0][1] is None and
          "print format unknown" in (note[0][2] or ""),
          "unknown format: raw_event %s" % note)

# A known event whose text does not follow its print format.
edit = list(tlines)
edit[i] = edit[i].replace(" reason ", " cause ")
ingest(write("text-bad-format.txt", "".join(edit).encode()), 2,
       "a kvm_exit line off its format",
       names="text-bad-format.txt:%d" % (i + 1))

# A copy cut mid-line: what precedes is kept, marked truncated.
cut = "".join(tlines[:ev_idx[len(ev_idx) // 2]]) + \
    tlines[ev_idx[len(ev_idx) // 2]][:30]
r, db = ingest(write("text-cut.txt", cut.encode()), 3, "text cut mid-line")
if r.returncode == 3:
    s = summary_json(mmr, db)
    check(s["truncated"] and s["events"] == len(ev_idx) // 2,
          "cut text: %d events, want %d" % (s["events"], len(ev_idx) // 2))

# The kernel's LOST markers (trace_output: "CPU:%d [LOST %lu EVENTS]",
# and "##### CPU %u buffer started ####" when the ring overwrote): each
# becomes a lost range on its CPU, from its previous event to its next.
cpu_of = {}
for k in ev_idx:
    cpu_of[k] = int(tlines[k].split("[", 1)[1].split("]", 1)[0])
mid = ev_idx[len(ev_idx) // 3]
cpu = cpu_of[mid]
prev = max(k for k in ev_idx if k < mid and cpu_of[k] == cpu)
edit = list(tlines)
edit.insert(mid, "CPU:%d [LOST 7 EVENTS]\n" % cpu)
edit.insert(ev_idx[0], "##### CPU %d buffer started ####\n" % cpu)
r, db = ingest(write("text-lost.txt", "".join(edit).encode()), 0,
               "LOST markers", lines=0)
if r.returncode == 0:
    s = summary_json(mmr, db)
    check(s["lost"]["events"] == 7, "lost events %s" % s["lost"])
    con = sqlite3.connect(db)
    rows = con.execute("SELECT s.name, l.kind, l.begin_ts, l.end_ts, "
                       "l.count FROM lost l JOIN stream s ON s.id = "
                       "l.stream_id ORDER BY l.id").fetchall()
    base = con.execute("SELECT value FROM meta WHERE key = "
                       "'ts_base_ns'").fetchone()[0]

    def ts_of(line):
        sec = line.split("]", 1)[1].split(":", 1)[0].split()[-1]
        a, b = sec.split(".")
        return int(a) * 10**9 + int(b.ljust(9, "0")) - base
    check(len(rows) == 2, "lost rows %s" % rows)
    if len(rows) == 2:
        check(rows[0][0] == "cpu%d" % cpu and rows[0][4] is None and
              rows[0][2] is None, "buffer started: %s" % (rows[0],))
        check(rows[1] == ("cpu%d" % cpu, "events", ts_of(tlines[prev]),
                          ts_of(tlines[mid]), 7),
              "LOST 7: %s, want %s" % (rows[1], ("cpu%d" % cpu,
                                                 ts_of(tlines[prev]),
                                                 ts_of(tlines[mid]))))
    r = run([mmr, "fidelity", db])
    check("lost" in (r.stdout + r.stderr).lower() or
          "damage" in (r.stdout + r.stderr).lower(),
          "fidelity does not call the capture damaged: %s" % r.stderr)
finish()
