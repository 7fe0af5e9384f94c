"""The collapse of dirty logging's 4K tables is its own zap cause, not a
teardown, and so are the refaults after it.

usage: test_dirty_log_collapse.py MMUREPLAY DATA_DIR WORK_DIR

When a memslot's dirty logging stops, KVM_SET_USER_MEMORY_REGION's
thread frees every 4K table that maps what could be a huge page
(kvm_mmu_zap_collapsible_sptes()); a memslot's deletion instead zaps
whole roots, freeing tables above 4K too.  So, from the capture alone
(SQL on the canonical tables, no model): the collapse's leaf zaps are
the 4K leaf zaps its thread traced inside a memslot ioctl (either
version) that freed 4K tables and no table above them.  Checked on
real captures where logging stops (stock 6.1 and 6.12 nxrecovery with
dirty logging, patched 6.1, KVM's kvm_page_table_test, which also
deletes a memslot): the baseline replay's leaf_zaps.dirty_log_collapse
equals that count, and is not in leaf_zaps.teardown; refaults after
it are refaults.dirty_log_collapse.
What this cannot catch: a collapse in a capture whose memslot ioctls
are not traced (no syscall events): the model then calls it teardown,
as the SQL cannot tell it either.
"""
import json
import os
import sys

from mmrtest import check, done_with, finish, fresh_dir, ingest_fixture, run
from mmrtest import db_rows

mmr, data, work = sys.argv[1:4]
fresh_dir(work)
FIXTURES = [
    "lttng-kernel-6.1.192-stock-nxrecovery-dirtylog",
    "lttng-kernel-6.1.192-patched-nxrecovery-skip-dirty-off",
    "lttng-kernel-6.12.117-stock-nxrecovery-dirtylog",
    "lttng-kernel-6.1.192-stock-selftest-kvm-page-table-2vcpu",
]
SET_REGION = (0x4020ae46, 0x40a0ae49)   # KVM_SET_USER_MEMORY_REGION{,2}
SQL = """
WITH spans AS (
  SELECT e.seq AS s, e.tid AS tid,
         (SELECT min(x.seq) FROM syscall x
          WHERE x.tid = e.tid AND x.seq > e.seq) AS t
  FROM syscall e WHERE e.raw_id = 0 AND e.a1 IN (%d, %d)),
frees AS (
  SELECT s, t, spans.tid AS tid,
    (SELECT count(*) FROM sp_free f WHERE f.tid = spans.tid AND f.seq > s
       AND f.seq < t AND (f.role & 15) = 1) AS l1,
    (SELECT count(*) FROM sp_free f WHERE f.tid = spans.tid AND f.seq > s
       AND f.seq < t AND (f.role & 15) > 1) AS up
  FROM spans)
SELECT coalesce(sum((SELECT count(*) FROM spte_change c
    WHERE c.tid = frees.tid AND c.seq > s AND c.seq < t AND c.level = 1
      AND (c.old_spte & 1) AND (c.new_spte & 1) = 0)), 0)
FROM frees WHERE l1 > 0 AND up = 0
""" % SET_REGION

for name in FIXTURES:
    w = fresh_dir(os.path.join(work, name))
    _, db = ingest_fixture(mmr, os.path.join(data, name), w)
    want = db_rows(db, SQL)[0][0]
    r = run([mmr, "replay", db, "--policy", "baseline", "--json"])
    check(r.returncode == 0, "%s: replay exits %d: %s"
          % (name, r.returncode, r.stderr))
    b = json.loads(r.stdout)["policies"]["baseline"]
    got = b["leaf_zaps.dirty_log_collapse"]
    check(want > 0 and got == want,
          "%s: collapse zaps %d, the ioctl spans hold %d" % (name, got, want))
    causes = sum(v for k, v in b.items() if k.startswith("leaf_zaps."))
    check(causes == b["leaf_zaps"], "%s: the causes sum to the leaf zaps "
          "(%d, %d)" % (name, causes, b["leaf_zaps"]))
    r = run([mmr, "fidelity", db, "--json", "--rule-off",
             "dirty_log_collapse"])
    check(r.returncode == 0 and json.loads(r.stdout)["ok"],
          "%s: the cause is no part of the self-check" % name)
    print("%s: %d collapse zaps (teardown %d, refaults after the collapse "
          "%d)" % (name, got, b["leaf_zaps.teardown"],
                   b["refaults.dirty_log_collapse"]))
    done_with(w)
finish()
