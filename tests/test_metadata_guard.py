"""Damaged CTF metadata never hangs or crashes ingest.

babeltrace2 2.0.4 spins forever on a packetized metadata file whose last
packet is cut short.  For every trace of every fixture, the metadata is
cut at every packet boundary, in the middle of every packet and inside
every packet header: each case must end within seconds with exit 2 (or 3)
and one line naming the trace, and leave no file behind.  The same for
the plain-text form of one trace's metadata (written by the babeltrace2
CLI), which must first ingest whole, like the packetized one.  With the
guard switched off (a test-only environment variable), the watchdog must
stop the spinning read instead.

Prints the figure: N cases, hangs, crashes, silent.

usage: test_metadata_guard.py MMUREPLAY DATA_DIR WORK_DIR
"""
import os
import shutil
import sys
import time

from mmrtest import (check, extract_fixture, finish, fresh_dir, run,
                     trace_fixtures)

mmr, data, work = sys.argv[1:4]
fresh_dir(work)

PACKET_HEADER = 37
HANG_S = 60          # a case still running after this is a hang
SLOW_S = 10          # "ends within seconds"
stats = {"cases": 0, "hangs": 0, "crashes": 0, "silent": 0}


def packet_sizes(path):
    """Packet sizes in bytes, from each packet header (little-endian)."""
    sizes, off = [], 0
    with open(path, "rb") as f:
        blob = f.read()
    if blob[:4] != bytes.fromhex("571dd175"):
        return None
    while off < len(blob):
        psize = int.from_bytes(blob[off + 28:off + 32], "little") // 8
        sizes.append(psize)
        off += psize
    return sizes


def leftovers(d):
    return sorted(f for f in os.listdir(d)
                  if f not in ("trace", "metadata.orig"))


def case(trace, meta, cut, what, extra_env=None, extra_args=()):
    """Ingest trace with meta cut to `cut` bytes; check the outcome."""
    # Not beside it: every file of a trace directory is read as a stream.
    saved = os.path.join(os.path.dirname(trace), "metadata.orig")
    shutil.copy(meta, saved)
    with open(meta, "r+b") as f:
        f.truncate(cut)
    out = os.path.join(os.path.dirname(trace), "out.db")
    env = dict(os.environ, **(extra_env or {}))
    t0 = time.monotonic()
    try:
        r = run([mmr, "ingest", trace, "-o", out] + list(extra_args),
                timeout=HANG_S, env=env)
    except Exception:  # subprocess.TimeoutExpired
        stats["hangs"] += 1
        check(False, "%s: still running after %d s" % (what, HANG_S))
        r = None
    took = time.monotonic() - t0
    os.replace(saved, meta)
    stats["cases"] += 1
    if r is None:
        return None
    lines = r.stderr.strip().splitlines()
    if r.returncode < 0 or r.returncode >= 5:
        stats["crashes"] += 1
    if r.returncode == 0 or not lines:
        stats["silent"] += 1
    check(r.returncode in (2, 3), "%s: exit %d, want 2 or 3 (%s)"
          % (what, r.returncode, r.stderr.strip()))
    err = [ln for ln in lines if "warning" not in ln]
    check(len(err) == 1 and os.path.dirname(meta).split(os.sep)[-1] in
          err[0], "%s: one line naming the trace: %r" % (what, lines))
    check(took < SLOW_S, "%s: took %.1f s" % (what, took))
    if r.returncode == 2:
        check(leftovers(os.path.dirname(trace)) == [],
              "%s: left %s" % (what, leftovers(os.path.dirname(trace))))
    for f in leftovers(os.path.dirname(trace)):
        os.unlink(os.path.join(os.path.dirname(trace), f))
    return r


def cuts_of(sizes):
    """(offset, label): boundaries, mid-packet, inside each header."""
    out, off = [], 0
    for i, s in enumerate(sizes):
        if i:
            out.append((off, "at the boundary before packet %d" % i))
        out.append((off + PACKET_HEADER // 2, "inside packet %d's header" % i))
        out.append((off + s // 2, "in the middle of packet %d" % i))
        off += s
    return out


fixtures = trace_fixtures(data)
first = None
for fx in fixtures:
    fwork = fresh_dir(os.path.join(work, fx))
    trace = extract_fixture(os.path.join(data, fx), fwork, private=True)
    metas = sorted(os.path.join(dp, "metadata")
                   for dp, _, fs in os.walk(trace) if "metadata" in fs)
    for meta in metas:
        sizes = packet_sizes(meta)
        if sizes is None:
            continue
        check(sum(sizes) == os.path.getsize(meta),
              "%s: packets tile the file" % meta)
        rel = os.path.relpath(meta, fwork)
        for cut, label in cuts_of(sizes):
            case(trace, meta, cut, "%s: %s cut %s" % (fx, rel, label))
        if first is None and len(sizes) > 2:
            first = (trace, meta, sizes)
    if first is None or first[0] != trace:
        shutil.rmtree(fwork)

# The watchdog, with the guard off: the cut that makes babeltrace2 spin.
trace, meta, sizes = first
r = case(trace, meta, sizes[0] + sizes[1] + sizes[2] * 2 // 3,
         "guard off: mid-packet cut", {"MMUREPLAY_TEST_NO_METADATA_GUARD": "1"},
         ["--watchdog", "1"])
check(r is not None and r.returncode == 2 and "no progress" in r.stderr,
      "the watchdog stops the spinning read: %r" % (r and r.stderr))

# Plain-text metadata: the whole one ingests like the packetized one...
out = os.path.join(os.path.dirname(trace), "out.db")
r = run([mmr, "ingest", trace, "-o", out])
check(r.returncode == 0, "packetized: %s" % r.stderr)
want = r.stderr.strip().split(": ", 2)[-1]
r = run(["babeltrace2", "-o", "ctf-metadata", os.path.dirname(meta)])
check(r.returncode == 0 and "\ntrace {" in r.stdout,
      "babeltrace2 writes the plain-text metadata")
# The CLI leaves out the signature line the CTF spec puts first.
with open(meta, "w") as f:
    f.write("/* CTF 1.8 */\n" + r.stdout)
os.unlink(out)
r = run([mmr, "ingest", trace, "-o", out])
check(r.returncode == 0 and r.stderr.strip().split(": ", 2)[-1] == want,
      "plain text ingests like packets: %r vs %r" % (r.stderr, want))
os.unlink(out)
# ... and cut short it is refused.
size = os.path.getsize(meta)
for frac in (0.1, 0.5, 0.9):
    r = case(trace, meta, int(size * frac),
             "plain-text metadata cut at %d%%" % (frac * 100))
    check(r is not None and r.returncode == 2 and "metadata text" in r.stderr,
          "the guard names the cut text: %r" % (r and r.stderr))

print("damaged metadata: %(cases)d cases, %(hangs)d hangs, %(crashes)d "
      "crashes, %(silent)d silent" % stats)
check(stats["cases"] >= 15 * len(fixtures), "cases: %d" % stats["cases"])
check(stats["hangs"] == 0 and stats["crashes"] == 0 and stats["silent"] == 0,
      "no hang, crash or silent case")
finish()
