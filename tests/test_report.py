"""mmureplay report is complete from a freshly ingested DB.

On a real fixture ingested just now (no replay stored):
  - the report replays the capture itself and says so; its self-check and
    what-if rows equal `mmureplay replay --json` on a copy of the DB
    (faults and leaf zaps of every policy), and it draws the per-second
    charts;
  - the DB stays as it was (the report only reads: no stored run, no
    packed stream);
  - after `mmureplay replay` the report shows the stored runs, without
    the note;
  - a source that cannot be replayed (Debian's probes) gets a report with
    its summary and one line saying why there is no replay, exit 0;
  - a capture of two VMs under KSM: the capture section lists each VM
    (pid, process, NPF faults, leaf zaps) and who invalidated and zapped
    per thread and VM (ksmd for each VM), as `summary --json` gives them,
    and the per-VM self-check of `fidelity --json`.

usage: test_report.py MMUREPLAY DATA_DIR WORK_DIR
"""
import json
import os
import re
import shutil
import sys

from mmrtest import check, db_rows, finish, fresh_dir, ingest_fixture, run

mmr, data, work = sys.argv[1:4]
fresh_dir(work)


def ingest(name):
    return ingest_fixture(mmr, os.path.join(data, name),
                          os.path.join(work, name))[1]


def report(db):
    out = db + ".html"
    r = run([mmr, "report", db, "-o", out])
    check(r.returncode == 0, "report %s: %s" % (db, r.stderr))
    with open(out) as f:
        return f.read()


def whatif_rows(page):
    """{policy: [cells]} of the what-if table."""
    sec = re.split(r"<h2[^>]*>What-if</h2>", page, maxsplit=1)
    if len(sec) < 2:
        return {}
    table = sec[1].split("</table>", 1)[0]
    rows = {}
    for tr in re.findall(r"<tr><td>(.*?)</td>(.*?)</tr>", table):
        rows[tr[0]] = re.findall(r"<td[^>]*>(.*?)</td>", tr[1])
    return rows


db = ingest("lttng-kernel-6.1.192-stock-basic")
page = report(db)
check("Replayed for this report" in page, "the report says it replayed")
check("Self-check: replay under baseline" in page and
      "does NOT reproduce" not in page, "the self-check section")
check(page.index("Self-check (replay under baseline): the model "
                 "reproduces") < page.index("<h2>Capture</h2>"),
      "the verdict comes first")
check(page.count("<svg") >= 2, "per-second charts drawn")
# The per-second charts: a chart per policy that can act (small
# multiples: no line under another), both axes labelled with units; a
# policy whose series is the recorded one's says so.  A capture without
# a probe says so once, and nothing of spikes it does not have.
figs = re.findall(r"<figure><svg.*?</svg><figcaption>(.*?)</figcaption>",
                  page, re.S)
half = len(figs) // 2
check(len(figs) >= 2 and figs[:half] == figs[half:] and
      page.count("seconds of trace time") == len(figs) and
      page.count(">faults / s</text>") == len(figs) // 2 and
      page.count(">leaf zaps / s</text>") == len(figs) // 2,
      "a labelled chart per policy and series (%d)" % len(figs))
check(all(("(recorded)" in f) != ("the recorded run" in f) for f in figs),
      "each chart says how it stands to the recorded run: %s" % figs)
check(page.count("No latency probe in this capture.") == 1 and
      "largest probe spikes" not in page,
      "a capture without a probe says so once")
check(db_rows(db, "SELECT count(*) FROM replay_run") == [(0,)] and
      db_rows(db, "SELECT count(*) FROM sqlite_master WHERE name = "
              "'replay_stream'") == [(0,)], "the report wrote to the DB")

copy = db + ".replayed"
shutil.copy(db, copy)
r = run([mmr, "replay", copy, "--json"])
check(r.returncode == 0, "replay: %s" % r.stderr)
pols = json.loads(r.stdout)["policies"]
rows = whatif_rows(page)
check(set(rows) == set(pols), "what-if policies %s, replay %s"
      % (sorted(rows), sorted(pols)))
for name, p in pols.items():
    cells = rows.get(name, ["", "", ""]) + ["", "", ""]
    if not p["applicable"]:
        # A policy that cannot act here: its reason, no figures.
        check(cells[0].startswith("not applicable here") and
              "%s does not apply: %s." % (name, p["not_applicable"])
              in page.replace("&#39;", "'"),
              "%s: report %s, replay says not applicable" %
              (name, cells[:1]))
        continue
    check(cells[0] == "{:,}".format(int(p["faults"])) and
          cells[2] == "{:,}".format(int(p["leaf_zaps"])),
          "%s: report %s, replay faults %s leaf zaps %s"
          % (name, cells[:3], p["faults"], p["leaf_zaps"]))

stored = report(copy)
check("Replayed for this report" not in stored and
      whatif_rows(stored) == rows, "after replay: the stored runs, the same")

# Two VMs: the capture's VMs and who invalidated, per VM.


def table_rows(page, ident):
    table = page.split('<table id="%s">' % ident, 1)[-1].split("</table>")[0]
    return [re.findall(r"<td[^>]*>(.*?)</td>", tr)
            for tr in re.findall(r"<tr>(<td.*?)</tr>", table)]


mv = ingest("lttng-kernel-6.1.192-patched-multivm-basic-basic-ksm-vm-identity")
page = report(mv)
sm = json.loads(run([mmr, "summary", mv, "--json"]).stdout)
fid = json.loads(run([mmr, "fidelity", mv, "--json"]).stdout)
got = [(r[0], r[1], r[2], r[6], r[7])
       for r in table_rows(page, "capture-vms") if r[0] != "none"]
want = [(str(v["vm"]), str(v["pid"]), v["procname"],
         "{:,}".format(v["faults"]), "{:,}".format(v["leaf_zaps"]))
        for v in sm["vms"]]
check(got == want and len(got) == 2,
      "two VMs: the report's VMs %s, summary's %s" % (got, want))
got = sorted((r[0], r[1], r[2], r[3])
             for r in table_rows(page, "capture-sources"))
want = sorted((x["thread"], str(x["vm"]) if x["vm"] else "-",
               "{:,}".format(x["invalidations"]),
               "{:,}".format(x["leaf_zaps"])) for x in sm["sources"])
check(got == want and ("ksmd", "1") in [g[:2] for g in got] and
      ("ksmd", "2") in [g[:2] for g in got],
      "two VMs: who invalidated, per thread and VM: %s, summary %s"
      % (got, want))
vm_rows = page.split('<h2 id="vms">', 1)[-1].split("</table>")[0]
check([v["ok"] for v in fid["vms"]] == [True, True] and
      vm_rows.count('<td class="ok">ok</td>') == 2,
      "two VMs: each VM's self-check in the report, as fidelity's")

deb = ingest("lttng-kernel-6.1.192-stock-basic-debian-probes")
page = report(deb)
check("No replay: the source declares no spte_change events" in page and
      "<td>unknown</td>" in page, "a source that cannot be replayed")
finish()
