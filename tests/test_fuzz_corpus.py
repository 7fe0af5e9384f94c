"""The fuzz targets over their committed corpus and past crashes.

Every input under tests/fuzz/corpus/TARGET and tests/fuzz/regress/TARGET
(an input that once crashed a target, kept when it was fixed) is run
once through its target, built with tests/fuzz/driver.c's main(): in the
regular and the sanitizer build alike, so a fixed crash stays fixed.
The DB target edits a real capture DB: the thp-split fixture, ingested
here.  (Coverage-guided fuzzing for a while is scripts/fuzz.sh.)

usage: test_fuzz_corpus.py MMUREPLAY TESTS_BINARY_DIR FUZZ_SRC_DIR
                           DATA_DIR WORK_DIR
"""
import os
import sys

from mmrtest import check, extract_fixture, finish, fresh_dir, run

mmr, bindir, fuzzdir, data, work = sys.argv[1:6]
fresh_dir(work)
trace = extract_fixture(
    os.path.join(data, "lttng-kernel-6.1.192-stock-basic-thp-split"), work)
db = os.path.join(work, "fuzz.db")
r = run([mmr, "ingest", "-q", trace, "-o", db])
check(r.returncode == 0, "ingest: %s" % r.stderr)
env = dict(os.environ, MMR_FUZZ_DB=db)
for t in ("metaguard", "ftrace_text", "stream", "db"):
    dirs = [d for d in (os.path.join(fuzzdir, "corpus", t),
                        os.path.join(fuzzdir, "regress", t))
            if os.path.isdir(d)]
    n = sum(len(os.listdir(d)) for d in dirs)
    check(n > 0, "%s: no corpus" % t)
    r = run([os.path.join(bindir, "fuzz_" + t)] + dirs, env=env)
    check(r.returncode == 0 and ("%d inputs run" % n) in r.stdout,
          "fuzz_%s over %d inputs: exit %d\n%s" % (t, n, r.returncode,
                                                   r.stderr[-2000:]))
    print("fuzz_%s: %d inputs, exit %d" % (t, n, r.returncode))
finish()
