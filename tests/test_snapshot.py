"""A real LTTng snapshot: streams that lost their beginning are said so.

usage: test_snapshot.py MMUREPLAY UST_GEN WORK

An LTTng session in snapshot mode (flight recorder) keeps, per stream,
only the last packets of an overwriting ring buffer; `lttng snapshot
record` saves them.  babeltrace2 sees no gap between the saved packets,
so it reports nothing lost, but each stream's first packet carries the
tracer's packet number (packet_seq_num) and a stream that wrapped starts
above 0.  Recorded here with the real lttng-sessiond: ust_gen writes far
more events than two 4 KiB sub-buffers per stream hold.  Checked:
  - the babeltrace2 CLI reports no discarded packets or events, and far
    fewer events than ust_gen wrote; some stream's first packet, read
    here by LTTng's layout as the CLI dumps the metadata, is above 0
    (babeltrace2 never shows packet_seq_num: it consumes it);
  - ingest says, in one line, how many streams begin mid-way, and the
    DB's lost table holds, for exactly those streams, a 'packets' row
    whose count is that first packet number, with no begin and, as its
    end, the stream's first event (inside the capture);
  - the summary's lost packets are their sum, and its event counts are
    the CLI's.
What this cannot catch: a kernel-tracer snapshot (same packet context
field, but no kernel tracer on this host; the lab records those).
"""
import os
import re
import sqlite3
import struct
import subprocess
import sys

from mmrtest import bt_counts, check, finish, fresh_dir, run, summary_json

mmr, gen, work = sys.argv[1:4]
fresh_dir(work)
NLAT = 200000


def lttng(*args):
    r = run(["lttng"] + list(args))
    if r.returncode != 0:
        raise RuntimeError("lttng %s: %s" % (" ".join(args), r.stderr))
    return r.stdout


out = os.path.join(work, "snap")
sess = "mmrtest-snapshot-%d" % os.getpid()
lttng("create", sess, "--snapshot", "--output=" + out)
try:
    lttng("enable-channel", "-u", "-s", sess, "ch", "--subbuf-size=4096",
          "--num-subbuf=2")
    lttng("enable-event", "-u", "-s", sess, "-c", "ch", "mmureplay:*")
    lttng("start", sess)
    p = subprocess.run([gen, str(NLAT), "10"])
    lttng("snapshot", "record", "-s", sess)
    lttng("stop", sess)
finally:
    lttng("destroy", sess)
check(p.returncode == 0, "ust_gen failed")

# The snapshot's trace directory (snapshot-1-DATE/ust/uid/...).
trace = None
for root, _, files in os.walk(out):
    if "metadata" in files:
        trace = root
check(trace is not None, "no trace under %s" % out)

# The CLI's view: nothing discarded, far fewer events than written.
r = run(["babeltrace2", trace, "-c", "sink.text.details"])
check(r.returncode == 0, "babeltrace2 details: %s" % r.stderr[:300])
check(not re.search(r"^Discarded (events|packets)", r.stdout, re.M),
      "the CLI reports discarded items")
cli = dict(bt_counts(trace))
check(0 < cli.get("mmureplay:latency_sample", 0) < NLAT // 10,
      "the snapshot holds %s of %d events" % (cli, NLAT))

# Each stream's first packet number, read here by LTTng's packet layout
# as the CLI dumps the metadata: the header (magic, uuid[16], stream_id,
# stream_instance_id: 32 bytes), then the context's timestamp_begin,
# timestamp_end, content_size, packet_size (32 bytes), then
# packet_seq_num, all little-endian and byte-aligned.
meta = run(["babeltrace2", "-o", "ctf-metadata", trace]).stdout
check(re.search(r"packet\.header := struct \{\s*uint32_t magic;\s*"
                r"uint8_t\s+uuid\[16\];\s*uint32_t stream_id;\s*"
                r"uint64_t stream_instance_id;\s*\}", meta) and
      re.search(r"struct packet_context \{\s*uint64_clock_monotonic_t "
                r"timestamp_begin;\s*uint64_clock_monotonic_t "
                r"timestamp_end;\s*uint64_t content_size;\s*uint64_t "
                r"packet_size;\s*uint64_t packet_seq_num;", meta) and
      "byte_order = le;" in meta, "not the packet layout this test reads")
late = {}
for f in sorted(os.listdir(trace)):
    path = os.path.join(trace, f)
    if f == "metadata" or not os.path.isfile(path) or not \
            os.path.getsize(path):
        continue
    with open(path, "rb") as fp:
        head = fp.read(72)
    magic, = struct.unpack("<I", head[:4])
    seq, = struct.unpack("<Q", head[64:72])
    check(magic == 0xc1fc1fc1, "%s: not a CTF packet" % f)
    if seq:
        late[path] = seq
check(late, "the snapshot did not wrap: every stream begins at packet 0")

db = os.path.join(work, "snap.db")
r = run([mmr, "ingest", trace, "-o", db])
check(r.returncode == 0, "ingest: %s" % r.stderr)
check(len(re.findall(r"stream\(s\) begin mid-way", r.stderr)) == 1 and
      "%d stream(s)" % len(late) in r.stderr,
      "ingest does not say it once: %r" % r.stderr)
con = sqlite3.connect(db)
rows = con.execute("SELECT s.name, l.kind, l.begin_ts, l.end_ts, l.count "
                   "FROM lost l JOIN stream s ON s.id = l.stream_id"
                   ).fetchall()
last = int(con.execute("SELECT value FROM meta WHERE key = 'last_ts'")
           .fetchone()[0])
check({n: c for n, _, _, _, c in rows} == late and
      all(k == "packets" and b is None and e is not None and 0 <= e <= last
          for _, k, b, e, _ in rows),
      "lost rows %s, streams begun late %s" % (rows, late))
s = summary_json(mmr, db)
check(s["lost"]["packets"] == sum(late.values()) and
      s["lost"]["events"] == 0,
      "summary lost %s, want %d packets" % (s["lost"], sum(late.values())))
check(s["raw_event_counts"] == cli,
      "event counts differ from the CLI's")
finish()
