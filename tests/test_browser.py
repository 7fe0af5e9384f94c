"""The HTML report in a real browser (Debian's chromium, headless).

For every fixture: ingest, `mmureplay report`, then chromium loads the
page from the file (one headless browser for all pages, driven by the
DevTools protocol over a pipe) and gives its DOM, its console and the
requests it made.  Checked:
  - no console message at all (errors, warnings, uncaught exceptions);
  - no network request made for the page (the page's own requests;
    chromium's background requests are not the page target's);
  - the numbers on the rendered page equal `summary --json` of the same
    DB: events, NPF faults, leaf zaps, invalidations (or "unknown"), and
    each latency row's p99;
  - the timeline has a row per series the source records, and its
    zoom script ran (it relabels the time axis);
  - each what-if chart labels both axes with units and draws its
    policy's line in a colour of its own;
  - a screenshot of every fourth report in WORK_DIR/screenshots for
    people to look at (kept after a pass).
The checks are shown to bite first: a page with a console error and an
image from the network must be flagged by the same code.

usage: test_browser.py MMUREPLAY DATA_DIR WORK_DIR
"""
import base64
import html
import json
import os
import re
import select
import shutil
import subprocess
import sys
import time

from mmrtest import (check, done_with, extract_fixture, finish, fresh_dir,
                     run, trace_fixtures)

mmr, data, work = sys.argv[1:4]
fresh_dir(work, keep=True)
shots = os.path.join(work, "screenshots")
os.makedirs(shots)
CHROMIUM = shutil.which("chromium") or shutil.which("chromium-headless-shell")
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu",
         "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]


class Browser:
    """One headless chromium for every page, driven by the DevTools
    protocol over --remote-debugging-pipe (JSON messages ending in NUL:
    the browser reads fd 3 and writes fd 4).  A chromium per page cost
    two to four seconds of start-up each; the checks are the same."""

    def __init__(self, profile):
        r3, w3 = os.pipe()
        r4, w4 = os.pipe()

        def child():
            # os.pipe()'s ends close on exec; dup2 onto another number
            # gives 3 and 4 that stay open.
            a, b = os.dup(r3), os.dup(w4)
            os.dup2(a, 3)
            os.dup2(b, 4)
        self.proc = subprocess.Popen(
            [CHROMIUM] + FLAGS + ["--user-data-dir=" + profile,
                                  "--remote-debugging-pipe", "about:blank"],
            preexec_fn=child, close_fds=False, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        os.close(r3)
        os.close(w4)
        self.w, self.r = w3, r4
        self.buf, self.n, self.events = b"", 0, []
        target = self.call("Target.createTarget",
                           {"url": "about:blank"})["targetId"]
        self.sid = self.call("Target.attachToTarget",
                             {"targetId": target, "flatten": True}
                             )["sessionId"]
        for m in ("Page.enable", "Runtime.enable", "Log.enable",
                  "Network.enable"):
            self.call(m, page=True)

    def _recv(self, timeout=120):
        end = time.time() + timeout
        while b"\0" not in self.buf:
            left = end - time.time()
            if left <= 0 or not select.select([self.r], [], [], left)[0]:
                raise TimeoutError("chromium answered nothing in %d s"
                                   % timeout)
            chunk = os.read(self.r, 1 << 20)
            if not chunk:
                raise EOFError("chromium closed its pipe")
            self.buf += chunk
        msg, self.buf = self.buf.split(b"\0", 1)
        return json.loads(msg)

    def call(self, method, params=None, page=False):
        """A command's result; the events that come before it are kept."""
        self.n += 1
        msg = {"id": self.n, "method": method, "params": params or {}}
        if page:
            msg["sessionId"] = self.sid
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        while True:
            m = self._recv()
            if m.get("id") == self.n:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]))
                return m.get("result", {})
            self.events.append(m)

    def wait(self, method):
        i = 0
        while True:
            while i < len(self.events):
                if self.events[i].get("method") == method:
                    return self.events.pop(i)
                i += 1
            self.events.append(self._recv())

    def close(self):
        self.proc.kill()
        self.proc.wait()
        os.close(self.w)
        os.close(self.r)


def load(page, shot=None):
    """(rendered DOM, console lines, page network URLs) of a file: the
    DOM once the load event fired (as --dump-dom gives it), every
    console call, uncaught exception and browser log entry of the page,
    and every URL it requested that is not a file's."""
    url = "file://" + os.path.abspath(page)
    browser.events = []
    browser.call("Page.navigate", {"url": url}, page=True)
    browser.wait("Page.loadEventFired")
    dom = browser.call("Runtime.evaluate", {
        "expression": "document.documentElement.outerHTML",
        "returnByValue": True}, page=True)["result"]["value"]
    console, urls = [], []
    for e in browser.events:
        m, p = e.get("method"), e.get("params", {})
        if m == "Runtime.consoleAPICalled":
            console.append("%s: %s" % (p["type"], " ".join(
                str(a.get("value", a.get("description"))) for a in
                p.get("args", []))))
        elif m == "Runtime.exceptionThrown":
            console.append("exception: %s" % p["exceptionDetails"].get(
                "text"))
        elif m == "Log.entryAdded":
            console.append("%s: %s" % (p["entry"]["level"],
                                       p["entry"]["text"]))
        elif m == "Network.requestWillBeSent" and not \
                p["request"]["url"].startswith(("file:", "data:")):
            urls.append(p["request"]["url"])
    if shot:
        browser.call("Emulation.setDeviceMetricsOverride", {
            "width": 1100, "height": 2400, "deviceScaleFactor": 1,
            "mobile": False}, page=True)
        png = browser.call("Page.captureScreenshot", {"format": "png"},
                           page=True)["data"]
        with open(shot, "wb") as f:
            f.write(base64.b64decode(png))
        browser.call("Emulation.clearDeviceMetricsOverride", page=True)
    return dom, console, urls


if not CHROMIUM:
    check(False, "chromium is not installed (scripts/setup.sh installs it)")
    finish()

browser = Browser(os.path.join(work, "profile"))
# The checks bite: a console error and a network image are seen.
probe = os.path.join(work, "probe.html")
with open(probe, "w") as f:
    f.write('<html><body><img src="http://127.0.0.1:9/x.png"><script>'
            'console.error("probe")</script></body></html>')
_, console, urls = load(probe)
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
    dom, console, urls = load(page, shot)
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
browser.close()
print("browser: %d reports loaded; %d screenshots in %s"
      % (len(fixtures), len(fixtures[::4]), shots))
finish()
