"""Damage made to a copy of a CTF trace directory, as post-mortem input
arrives: used by the damage matrix (test_damage_matrix.py) and by the
merge-against-muxer check (test_ingest_merge.py).
"""
import os
import shutil
import struct


def streams_of(tdir):
    return sorted((f for f in os.listdir(tdir)
                   if os.path.isfile(os.path.join(tdir, f)) and
                   f != "metadata" and not f.startswith(".")),
                  key=lambda f: os.path.getsize(os.path.join(tdir, f)))


def index_entries(tdir, stream):
    """(offset, packet bytes, ts_begin) per packet from LTTng's index."""
    p = os.path.join(tdir, "index", stream + ".idx")
    if not os.path.exists(p):
        return []
    with open(p, "rb") as f:
        blob = f.read()
    if blob[:4] != bytes.fromhex("c1f1dcc1"):
        return []
    size = struct.unpack(">I", blob[12:16])[0]
    out = []
    for off in range(16, len(blob) - size + 1, size):
        o, psize, _, tsb = struct.unpack(">QQQQ", blob[off:off + 32])
        out.append((o, psize // 8, tsb))
    return out


def invert(path, at, n):
    with open(path, "r+b") as f:
        f.seek(at)
        b = f.read(n)
        f.seek(at)
        f.write(bytes(x ^ 0xff for x in b))


def kernel_dir(root):
    for dp, _, fs in sorted(os.walk(root)):
        if "metadata" in fs and os.path.basename(dp) == "kernel":
            return dp
    for dp, _, fs in sorted(os.walk(root)):
        if "metadata" in fs:
            return dp
    return None


def damage(kind, tdir):
    """Apply one damage to the trace directory tdir; False: n/a."""
    ss = streams_of(tdir)
    big = os.path.join(tdir, ss[-1])
    size = os.path.getsize(big)
    idx = index_entries(tdir, ss[-1])
    if kind == "cut-header":
        os.truncate(big, 50)
    elif kind == "cut-third":
        os.truncate(big, size // 3)
    elif kind == "cut-two-thirds":
        os.truncate(big, size * 2 // 3)
    elif kind == "flip-payload":
        invert(big, size // 2, 64)
    elif kind == "flip-packet-magic":
        if len(idx) < 2:
            return False
        invert(big, idx[1][0], 4)
    elif kind == "flip-metadata":
        meta = os.path.join(tdir, "metadata")
        invert(meta, os.path.getsize(meta) // 2, 16)
    elif kind == "stream-deleted":
        if len(ss) < 2:
            return False
        # A copy that missed a file: LTTng's index still names it.
        os.unlink(os.path.join(tdir, ss[0]))
    elif kind == "stream-duplicated":
        shutil.copy(big, big + "_dup")
    elif kind == "packets-reordered":
        if len(idx) < 2:
            return False
        with open(big, "rb") as f:
            blob = f.read()
        (o0, s0, _), (o1, s1, _) = idx[0], idx[1]
        blob = blob[o1:o1 + s1] + blob[o0:o0 + s0] + blob[o1 + s1:]
        with open(big, "wb") as f:
            f.write(blob)
        shutil.rmtree(os.path.join(tdir, "index"))
    elif kind == "discarded-records":
        # LTTng's packet context: timestamp_begin, timestamp_end,
        # content_size, packet_size, packet_seq_num, events_discarded.
        if len(idx) < 2:
            return False
        o1, _, tsb = idx[1]
        with open(big, "r+b") as f:
            f.seek(o1)
            head = f.read(256)
            at = head.find(struct.pack("<Q", tsb))
            if at < 0:
                return False
            f.seek(o1 + at + 40)
            f.write(struct.pack("<Q", 7))
        shutil.rmtree(os.path.join(tdir, "index"))
    return True


KINDS = ("cut-header", "cut-third", "cut-two-thirds", "flip-payload",
         "flip-packet-magic", "flip-metadata", "stream-deleted",
         "stream-duplicated", "packets-reordered", "discarded-records")
