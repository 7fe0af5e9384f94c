"""cmake --install into a fresh prefix: the binary, the capture tool, the
schemas and both man pages land under the GNUInstallDirs paths; the
installed mmureplay runs; and mmureplay.1 names every command, every long
option and every exit code meaning that --help prints (the man page is
written by hand: this is what keeps it from drifting).

usage: test_install.py BUILD_DIR PREFIX BINDIR DATADIR MANDIR
"""
import os
import re
import sys

from mmrtest import check, finish, fresh_dir, run

build, prefix, bindir, datadir, mandir = sys.argv[1:6]
fresh_dir(prefix)
r = run(["cmake", "--install", build, "--prefix", prefix])
check(r.returncode == 0, "cmake --install: %s" % r.stderr)

want = [os.path.join(bindir, "mmureplay"),
        os.path.join(bindir, "mmureplay-capture"),
        os.path.join(bindir, "mmureplay-fleet")]
want += [os.path.join(datadir, "mmureplay", "schemas", f)
         for f in ("capture.sql", "events.json", "manifest.schema.json",
                   "summary.schema.json", "fidelity.schema.json",
                   "replay.schema.json", "spikes.schema.json",
                   "compare.schema.json", "fleet.sql",
                   "shard.schema.json", "fleet-report.schema.json")]
want += [os.path.join(mandir, "man1", f)
         for f in ("mmureplay.1", "mmureplay-capture.1")]
for rel in want:
    check(os.path.isfile(os.path.join(prefix, rel)), "installed: " + rel)
for rel in want[:3]:
    check(os.access(os.path.join(prefix, rel), os.X_OK), "executable: " + rel)

mmr = os.path.join(prefix, bindir, "mmureplay")
r = run([mmr, "--version"])
check(r.returncode == 0 and r.stdout.startswith("mmureplay "),
      "installed mmureplay runs: %r" % r.stdout)

# The man page against --help (groff's "\-" is a plain "-" here).
with open(os.path.join(prefix, mandir, "man1", "mmureplay.1")) as f:
    man = " ".join(f.read().replace("\\-", "-").split())
top = run([mmr, "--help"]).stdout
cmds = re.findall(r"^  ([\w-]+) +\S", top.split("Commands:")[1].split("\n\n")[0],
                  re.M)
check(len(cmds) == 11, "--help lists the commands: %r" % cmds)
for cmd in cmds:
    check(".B " + cmd in man, "mmureplay.1 describes " + cmd)
    text = run([mmr, cmd, "--help"]).stdout
    for opt in re.findall(r"--([a-z][a-z0-9-]*)", text.split("Options:")[1]):
        check("--" + opt in man, "mmureplay.1 names %s --%s" % (cmd, opt))
# One page per command, from its option table: every option, every code.
for cmd in cmds:
    page = os.path.join(prefix, mandir, "man1", "mmureplay-%s.1" % cmd)
    check(os.path.isfile(page), "installed: mmureplay-%s.1" % cmd)
    if not os.path.isfile(page):
        continue
    with open(page) as f:
        cman = " ".join(f.read().replace("\\-", "-").split())
    text = run([mmr, cmd, "--help"]).stdout
    for opt in re.findall(r"--([a-z][a-z0-9-]*)", text.split("Options:")[1]):
        check("--" + opt in cman, "mmureplay-%s.1 names --%s" % (cmd, opt))
    for code in re.findall(r"^  (\d+) ", text.split("Exit status:")[1], re.M):
        check(".B %s " % code in cman, "mmureplay-%s.1: exit %s" % (cmd, code))
    r = run(["man", "-l", page], env=dict(os.environ, MANWIDTH="80"))
    check(r.returncode == 0 and "mmureplay-" + cmd in r.stdout,
          "man renders mmureplay-%s.1" % cmd)
codes = top.split("Exit status:\n")[1]
meanings = re.findall(r"^  (\d+) +(.*?)(?=^  \d+ |\Z)", codes.strip("\n"),
                      re.M | re.S)
check(len(meanings) == 11, "11 exit codes in --help: %r" % meanings)
for i, m in meanings:
    m = " ".join(m.split())
    check(".B %s %s" % (i, m) in man, "mmureplay.1 exit %s: %s" % (i, m))
cap = os.path.join(prefix, bindir, "mmureplay-capture")
r = run([cap, "--help"])
with open(os.path.join(prefix, mandir, "man1", "mmureplay-capture.1")) as f:
    capman = " ".join(f.read().replace("\\-", "-").split())
opts = set(re.findall(r"--([a-z][a-z-]*)", r.stdout.split("\n\n")[0]))
check(r.returncode == 0 and len(opts) >= 9, "capture --help: %r" % opts)
for opt in sorted(opts):
    check("--" + opt in capman, "mmureplay-capture.1 names --" + opt)
finish()
