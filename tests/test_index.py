"""tests/README.md's index against the suite ctest knows.

usage: test_index.py BUILD_DIR README SCENARIO_EXE

The suite is what `ctest -N` lists in BUILD_DIR (every label, the lab's
included); the index is every test name written in backquotes in the
README's "## Index" section: FAMILY.NAME, where `<...>` stands for any
part (a fixture, a case) and `*` for any text.  Checked:
  - every test of the suite is named by the index, and every name in
    the index is a test of the suite (a stale or mistyped name fails);
  - every test's family (the part of its name before the first dot) has
    a section of the index ("### FAMILY: ...");
  - every scenario SCENARIO_EXE --list prints (LAYER.NAME) has a row
    in the README's "## replay_rules scenarios" table of its layer
    ("### LAYER: ..."), and every row is a scenario of that layer.
The check bites: a test and a scenario planted in copies of the lists
must be reported.  What it cannot catch: whether a bullet says truly
what its test proves.
"""
import re
import subprocess
import sys

from mmrtest import check, finish

build, readme, scenario_exe = sys.argv[1:4]
text = open(readme).read()


def section(title):
    m = re.search(r"^## %s\n(.*?)(?=^## |\Z)" % re.escape(title), text,
                  re.S | re.M)
    return m.group(1) if m else ""


def suite():
    r = subprocess.run(["ctest", "--test-dir", build, "-N"],
                       capture_output=True, text=True)
    names = re.findall(r"^\s*Test\s+#\d+: (\S+)$", r.stdout, re.M)
    check(r.returncode == 0 and names, "ctest -N in %s: %s"
          % (build, r.stderr))
    return names


def index_patterns(index):
    """{written name: regex} for every test name the index writes."""
    fams = set(re.findall(r"^### ([a-z_]+):", index, re.M))
    pats = {}
    for tok in re.findall(r"`([a-z_]+\.[^`\s]+)`", index):
        if tok.split(".")[0] not in fams:
            continue
        rx = re.escape(tok)
        rx = re.sub(r"\\<[^>]*\\>|<[^>]*>", ".+", rx).replace(r"\*", ".*")
        pats[tok] = re.compile("^%s$" % rx)
    return fams, pats


def compare(tests, fams, pats, what):
    """The failures of one comparison, as lines."""
    bad = []
    for t in tests:
        if not any(p.match(t) for p in pats.values()):
            bad.append("%s: test %s is not in the index" % (what, t))
        if t.split(".")[0] not in fams:
            bad.append("%s: family %s has no section in the index"
                       % (what, t.split(".")[0]))
    for tok, p in sorted(pats.items()):
        if not any(p.match(t) for t in tests):
            bad.append("%s: the index names %s, which is no test"
                       % (what, tok))
    return bad


def scenario_rows():
    """LAYER.NAME of every row, by the "### LAYER: ..." it is under."""
    rows, layer = [], None
    for line in section("replay_rules scenarios").splitlines():
        m = re.match(r"^### ([a-z_]+):", line)
        if m:
            layer = m.group(1)
        m = re.match(r"^\| `([A-Za-z0-9_]+)` \|", line)
        if m:
            rows.append("%s.%s" % (layer, m.group(1)))
    return rows


tests = [t for t in suite() if t != "replay_rules.list"]
fams, pats = index_patterns(section("Index"))
check(len(pats) > 20, "the index names %d tests" % len(pats))
# The check bites: a planted test and a planted name are reported.
planted = compare(tests + ["ingest.planted_test"], fams,
                  dict(pats, **{"outputs.planted": re.compile(
                      "^outputs\\.planted$")}), "planted")
check(any("ingest.planted_test" in b for b in planted) and
      any("outputs.planted" in b for b in planted),
      "planted names are not reported: %s" % planted)
for b in compare(tests, fams, pats, "README.md"):
    check(False, b)

r = subprocess.run([scenario_exe, "--list"], capture_output=True, text=True)
scenarios = r.stdout.split()
check(r.returncode == 0 and scenarios, "%s --list" % scenario_exe)
rows = scenario_rows()
for s in scenarios:
    check(s in rows, "scenario %s has no row in its layer's scenario "
          "table" % s)
for s in rows:
    check(s in scenarios, "the scenario tables name %s, which is no "
          "scenario of that layer" % s)
print("index: %d tests in %d families, %d names; %d scenarios"
      % (len(tests), len(fams), len(pats), len(scenarios)))
finish()
