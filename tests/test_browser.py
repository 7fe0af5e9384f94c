"""The HTML report in a real browser (Debian's chromium, headless).

For every fixture: ingest, `mmureplay report`, then chromium loads the
page from the file and dumps its DOM, logging its console and its
network (a NetLog).  Checked:
  - no console message at all (errors, warnings, uncaught exceptions);
  - no network request made for the page (requests whose isolation key
    is the file:// page; chromium's own background requests have
    another and are not the page's);
  - the numbers on the rendered page equal `summary --json` of the same
    DB: events, NPF faults, leaf zaps, invalidations (or "unknown"), and
    each latency row's p99;
  - the timeline has a row per series the source records, and its
    zoom script ran (it relabels the time axis);
  - each what-if chart labels both axes with units and draws its
    policy's line in a colour of its own;
  - a screenshot of every fourth report in WORK_DIR/screenshots for
    people to look at (kept after a pass; each is a second chromium run).
The checks are shown to bite first: a page with a console error and an
image from the network must be flagged by the same code.

usage: test_browser.py MMUREPLAY DATA_DIR WORK_DIR
"""
import html
import json
import os
import re
import shutil
import subprocess
import sys

from mmrtest import (check, done_with, extract_fixture, finish, fresh_dir,
                     run, trace_fixtures)

mmr, data, work = sys.argv[1:4]
fresh_dir(work, keep=True)
shots = os.path.join(work, "screenshots")
os.makedirs(shots)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-headless-shell")
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu",
         "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync",
         "--enable-logging=stderr", "--v=0"]


def load(page, netlog, shot=None):
    """(rendered DOM, console lines, page network URLs) of a file."""
    url = "file://" + os.path.abspath(page)
    args = [CHROMIUM] + FLAGS + ["--log-net-log=" + netlog, "--dump-dom",
                                 url]
    r = subprocess.run(args, capture_output=True, text=True, timeout=120)
    console = [ln for ln in r.stderr.splitlines() if ":CONSOLE" in ln]
    urls = []
    try:
        with open(netlog) as f:
            events = json.load(f)["events"]
    except (OSError, ValueError):
        events = []
        console.append("no NetLog written")
    for e in events:
        p = e.get("params", {})
        if "url" in p and not p["url"].startswith("file:") and \
                "file://" in p.get("network_isolation_key", ""):
            urls.append(p["url"])
    if shot:
        subprocess.run([CHROMIUM] + FLAGS + ["--screenshot=" + shot,
                                             "--window-size=1100,2400",
                                             url],
                       capture_output=True, timeout=120)
    return r.stdout, console, urls


if not CHROMIUM:
    check(False, "chromium is not installed (scripts/setup.sh installs it)")
    finish()

# The checks bite: a console error and a network image are seen.
probe = os.path.join(work, "probe.html")
with open(probe, "w") as f:
    f.write('<html><body><img src="http://127.0.0.1:9/x.png"><script>'
            'console.error("probe")</script></body></html>')
_, console, urls = load(probe, os.path.join(work, "probe.netlog"))
check(any("probe" in c for c in console), "a console error is seen")
check(urls == ["http://127.0.0.1:9/x.png"], "a page request is seen: %s"
      % urls)


def cells(dom, first):
    """The cells of the table row whose first cell is `first`."""
    m = re.search(r"<tr><td>%s</td>(.*?)</tr>" % re.escape(first), dom)
    return [html.unescape(c) for c in
            re.findall(r"<td>(.*?)</td>", m.group(1))] if m else None


fixtures = trace_fixtures(data)
for i, fx in enumerate(fixtures):
    d = os.path.join(work, fx)
    trace = extract_fixture(os.path.join(data, fx), d)
    db = os.path.join(d, "capture.db")
    r = run([mmr, "ingest", "-q", trace, "-o", db])
    check(r.returncode == 0, "%s: ingest: %s" % (fx, r.stderr))
    page = os.path.join(d, "report.html")
    r = run([mmr, "report", db, "-o", page])
    check(r.returncode == 0, "%s: report: %s" % (fx, r.stderr))
    shot = os.path.join(shots, fx + ".png") if i % 4 == 0 else None
    dom, console, urls = load(page, os.path.join(d, "netlog.json"), shot)
    check(console == [], "%s: console: %s" % (fx, console[:3]))
    check(urls == [], "%s: network requests: %s" % (fx, urls[:3]))
    s = json.loads(run([mmr, "summary", db, "--json"]).stdout)

    def fmt(v):
        return "unknown" if v is None else "{:,}".format(int(v))

    check(cells(dom, "events") and cells(dom, "events")[0] ==
          fmt(s["events"]), "%s: events %s" % (fx, cells(dom, "events")))
    for label, key in (("NPF faults", "npf_faults"),
                       ("leaf zaps", "leaf_zaps"),
                       ("notifier invalidations", "notifier_invalidations")):
        c = cells(dom, label)
        check(c and c[0] == fmt(s["totals"][key]),
              "%s: %s on the page %s, JSON %s" % (fx, label, c,
                                                  s["totals"][key]))
    lat = s["latency"]
    rows = [("probe %s" % k, v) for k, v in lat["probes"].items()]
    if lat["npf_service"]["n"]:
        rows.append(("NPF exit -&gt; entry", lat["npf_service"]))
    for name, dist in rows:
        c = cells(dom, name)
        check(c and c[2] == "%.1f" % (dist["p99_ns"] / 1e3),
              "%s: %s p99 on the page %s, JSON %s" % (fx, name, c,
                                                      dist["p99_ns"]))
    check(not shot or os.path.getsize(shot) > 10000, "%s: screenshot" % fx)
    # The timeline: one row per series the source has; its script ran
    # (it relabels the axis: "%.3f s" in the file, fewer digits after).
    with open(page) as f:
        src = f.read()
    if s["basis"]["npf_faults"] == "measured":
        rows = len(re.findall(r'<svg class="row"', dom))
        check(rows >= 3 and 'id="tl"' in dom, "%s: timeline rows %d"
              % (fx, rows))
        static = re.findall(r'class="tick"[^>]*>([^<]*)<', src)
        live = re.findall(r'class="tick"[^>]*>([^<]*)<', dom)
        check(len(live) == 6 and live != static,
              "%s: the timeline script did not run: %s" % (fx, live))
    # The what-if charts as rendered: each labels both axes with units,
    # and draws the policy's line in a colour of its own beside the
    # recorded run's dashed grey one.
    for fig in re.findall(r"<figure>(.*?)</figure>", dom, re.S):
        strokes = re.findall(r'<polyline[^>]*stroke="([^"]+)"[^>]*class='
                             r'"(policy|recorded)"', fig)
        check("seconds of trace time" in fig and
              re.search(r">(faults|leaf zaps) / s</text>", fig) and
              len([c for c, k in strokes if k == "policy"]) == 1 and
              all(c != "#888" for c, k in strokes if k == "policy"),
              "%s: a what-if chart without labelled axes or a line of "
              "its own: %s" % (fx, strokes))
    done_with(d)
print("browser: %d reports loaded; %d screenshots in %s"
      % (len(fixtures), len(fixtures[::4]), shots))
finish()
