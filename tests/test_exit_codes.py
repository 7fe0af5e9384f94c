"""Exit codes: one table (analyze/cli/cli.h, CLI_EXIT_LIST) prints them
in every --help; the README's table must say the same, code for code.
Also checks that each command's --help carries the same table, and that
an option error exits with the code the table gives a bad command line.

usage: test_exit_codes.py MMUREPLAY README
"""
import re
import sys

from mmrtest import check, finish, run

mmr, readme = sys.argv[1:3]


def help_codes(text):
    """{code: meaning} of the 'Exit status:' section, lines unwrapped."""
    codes, code = {}, None
    section = text.split("Exit status:\n", 1)[1]
    for line in section.splitlines():
        m = re.match(r"^  (\d+) +(.*)$", line)
        if m:
            code = int(m.group(1))
            codes[code] = m.group(2)
        elif line.startswith("       ") and code is not None:
            codes[code] += " " + line.strip()
    return codes


with open(readme) as f:
    text = f.read()
table = text.split("Exit status (all commands):", 1)[1].split("\n\n")[1]
doc = {int(m.group(1)): m.group(2) for m in
       re.finditer(r"^\| (\d+) \| (.*) \|$", table, re.M)}

r = run([mmr, "--help"])
top = help_codes(r.stdout)
check(r.returncode == 0 and len(top) == 11, "--help lists 11 codes: %r" % top)
check(top == doc, "README and --help differ:\n%r\n%r" % (doc, top))
for cmd in ("ingest", "summary", "fidelity", "replay", "report", "spikes",
            "compare"):
    r = run([mmr, cmd, "--help"])
    check(r.returncode == 0 and help_codes(r.stdout) == top,
          cmd + " --help: the same exit status table")
r = run([mmr, "spikes", "x.db", "--top", "x"])
check(r.returncode == 1 and "bad command line" in top[1],
      "an option error is code 1, the bad command line")
finish()
