"""mmureplay-capture --snapshot, with the real LTTng session daemon: the
flight recorder, its snapshots on request, on SIGUSR1 and on a latency
spike (an LTTng trigger).  UST only (--no-kernel: this host has no
kernel tracer; the lab records kernel snapshots); the events come from
ust_gen (SYNTHETIC values: sample i has ns = 1000 + (i * 7919) % 100000,
so samples of 100 us and more come every few hundred).

usage: test_capture_snapshot.py CAPTURE MMUREPLAY UST_GEN WORK

Checked:
  - --on-latency-us 100: the trigger records exactly one snapshot (its
    rate policy: once), which holds latency samples, fewer than were
    written (the ring buffers overwrote the rest; a snapshot the writer
    overwrote whole while it was copied is recorded again, at most
    three attempts); the manifest says
    {"on_latency_us": 100, "records": 1} and sits beside the snapshot
    too, and mmureplay ingests the snapshot with the CLI's count;
  - 'snapshot -o DIR' records one on request, SIGUSR1 to 'record' one
    while its command runs; without --on-latency-us the manifest says
    null; no snapshot is written without a request;
  - bad use: 'snapshot' on a capture not started with --snapshot, a
    latency that is not a whole number, --on-latency-us without the UST
    channel: exit 1 and one line naming the problem.
What this cannot catch: that the spike itself is in the snapshot (the
daemon records it asynchronously; a fast writer may overwrite it first).
"""
import glob
import json
import os
import sys

from mmrtest import bt_counts, check, finish, fresh_dir, run

cap, mmr, gen, work = sys.argv[1:5]
fresh_dir(work)
SMALL = ["--subbuf-size", "4K", "--num-subbuf", "2"]


def snapshots(d):
    return sorted(glob.glob(os.path.join(d, "trace", "snapshot-*")))


def manifest(d):
    with open(os.path.join(d, "manifest.json")) as f:
        return json.load(f)


# On a latency spike: the trigger.  The daemon takes the snapshot while
# the writer runs on: on a loaded machine the writer can overwrite every
# sub-buffer the consumer is copying, and the snapshot holds none of the
# samples (seen once in CI with 4 KiB sub-buffers, 0 in 6 runs on a quiet
# machine).  Sub-buffers of 64 KiB (256 KiB a CPU: about 7,000 samples,
# far fewer than the 200,000 written) make that rarer, and a snapshot
# with no sample is recorded again, at most twice more, each attempt said.
BIG = ["--subbuf-size", "64K", "--num-subbuf", "4"]
for attempt in range(3):
    d = os.path.join(work, "spike%d" % attempt)
    r = run([cap, "record", "-o", d, "--no-kernel",
             "--on-latency-us", "100"] + BIG + ["--", gen, "200000", "0"])
    snaps = snapshots(d)
    n = (bt_counts(snaps[0]).get("mmureplay:latency_sample", 0)
         if r.returncode == 0 and len(snaps) == 1 else -1)
    if n != 0:
        break
    print("attempt %d: the snapshot holds no sample (overwritten while "
          "it was copied); recording again" % (attempt + 1))
check(r.returncode == 0, "record --on-latency-us: %s" % r.stderr)
check(len(snaps) == 1, "one snapshot on the spike, got %s" % snaps)
m = manifest(d)
check(m["trace"].get("snapshot") == {"on_latency_us": 100, "records": 1},
      "manifest snapshot %s" % m["trace"].get("snapshot"))
if snaps:
    check(os.path.exists(os.path.join(snaps[0], "manifest.json")),
          "the manifest beside the snapshot")
    cli = bt_counts(snaps[0])
    n = cli.get("mmureplay:latency_sample", 0)
    check(0 < n < 200000, "the snapshot holds %d of 200000 samples" % n)
    db = os.path.join(work, "spike.db")
    r = run([mmr, "ingest", snaps[0], "-o", db])
    check(r.returncode == 0, "ingest the snapshot: %s" % r.stderr)
    s = json.loads(run([mmr, "summary", db, "--json"]).stdout)
    check(s["raw_event_counts"] == dict(cli),
          "ingest counts %s, the CLI's %s" % (s["raw_event_counts"], cli))

# On request: the snapshot command, and none without one.
d = os.path.join(work, "request")
r = run([cap, "start", "-o", d, "--no-kernel",
         "--snapshot"] + SMALL)
check(r.returncode == 0, "start --snapshot: %s" % r.stderr)
run([gen, "20000", "0"])
check(snapshots(d) == [], "nothing written before a request")
r = run([cap, "snapshot", "-o", d])
check(r.returncode == 0, "snapshot: %s" % r.stderr)
r = run([cap, "stop", "-o", d])
check(r.returncode == 0, "stop: %s" % r.stderr)
check(len(snapshots(d)) == 1 and
      manifest(d)["trace"]["snapshot"] == {"on_latency_us": None,
                                           "records": 1},
      "one snapshot on request: %s" % snapshots(d))
# The channel the start made, not the defaults (stop is another run).
check((manifest(d)["trace"]["kernel_subbuf_size"],
       manifest(d)["trace"]["kernel_num_subbuf"]) == ("4K", 2),
      "the manifest gives the channel start made: %s"
      % manifest(d)["trace"])

# SIGUSR1 to 'record' while its command runs.
d = os.path.join(work, "signal")
r = run([cap, "record", "-o", d, "--no-kernel",
         "--snapshot"] + SMALL +
        ["--", "sh", "-c", '"$0" 20000 0 && kill -USR1 $PPID && sleep 1',
         gen])
check(r.returncode == 0, "record --snapshot with SIGUSR1: %s" % r.stderr)
check(len(snapshots(d)) == 1, "one snapshot on SIGUSR1: %s" % snapshots(d))

# Bad use.
d = os.path.join(work, "plain")
r = run([cap, "start", "-o", d, "--no-kernel"])
check(r.returncode == 0, "start: %s" % r.stderr)
r = run([cap, "snapshot", "-o", d])
check(r.returncode == 1 and "not a --snapshot capture" in r.stderr and
      len(r.stderr.strip().splitlines()) == 1,
      "snapshot of a plain capture: %d %r" % (r.returncode, r.stderr))
run([cap, "stop", "-o", d])
for args, what in ((["--on-latency-us", "1.5"], "whole number"),
                   (["--on-latency-us", "100", "--no-ust"], "UST channel")):
    r = run([cap, "start", "-o", os.path.join(work, "bad"),
             "--no-kernel"] + args)
    check(r.returncode == 1 and what in r.stderr,
          "%s: exit %d %r" % (args, r.returncode, r.stderr))
finish()
