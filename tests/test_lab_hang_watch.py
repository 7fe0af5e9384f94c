"""The lab's host-side hang watch (capture/lab/hang-watch.sh) against a
fake guest (lab_fake_guest.sh: SYNTHETIC console and monitor output in
the format of the real ones), without the lab: a guest that powers off
is left alone (exit 0, no hang.txt); a guest silent after its init line,
one that never prints its init line, and one that never powers off are
taken for hung (exit 5), with the reason, the blocked tasks, the
backtraces the keys brought and the vCPUs' RIPs named through a
System.map (relocated by the console's _text line) in hang.txt; a guest
that ignores the monitor's `quit` is killed.  The real lab's hang is
checked by a lab run (capture/lab/README.md, "Hangs").

usage: test_lab_hang_watch.py SOURCE_DIR WORK
"""
import os
import subprocess
import sys
import threading
import time

from mmrtest import check, finish, fresh_dir

src, work = sys.argv[1:3]
WATCH = os.path.join(src, "capture", "lab", "hang-watch.sh")
FAKE = os.path.join(src, "tests", "lab_fake_guest.sh")
fresh_dir(work)

# A System.map in the real format; the fake guest's RIPs are
# ffffffff9a123450 and ffffffff9a200010 with _text at ffffffff9a000000.
SYSMAP = os.path.join(work, "System.map")
with open(SYSMAP, "w") as f:
    f.write("0000000000000000 D __per_cpu_start\n"
            "ffffffff81000000 T _text\n"
            "ffffffff81123000 T kvm_tdp_mmu_zap_leafs\n"
            "ffffffff81124000 t tdp_iter_next\n"
            "ffffffff81200000 T default_idle\n"
            "ffffffff81300000 D jiffies\n")


def case(name, mode, args, results):
    d = fresh_dir(os.path.join(work, name))
    mon = os.path.join(d, "mon")
    os.mkfifo(mon + ".in")
    os.mkfifo(mon + ".out")
    serial = os.path.join(d, "serial.log")
    open(serial, "w").close()
    guest = subprocess.Popen([FAKE, serial, mon, mode])
    t0 = time.monotonic()
    r = subprocess.run([WATCH, "--pid", str(guest.pid), "--serial", serial,
                        "--monitor", mon, "--out", d] + args,
                       capture_output=True, text=True, timeout=120)
    elapsed = time.monotonic() - t0
    try:
        guest.wait(timeout=5)
        gone = True
    except subprocess.TimeoutExpired:
        guest.kill()
        gone = False
    hang = os.path.join(d, "hang.txt")
    text = open(hang).read() if os.path.exists(hang) else None
    results[name] = (r, elapsed, gone, text)


fast = ["--hang-after", "3", "--boot-limit", "3", "--limit", "60",
        "--key-wait", "3"]
cases = {
    "ok": ("ok", fast),
    "hang": ("hang", fast + ["--system-map", SYSMAP]),
    "deaf": ("deaf", fast),
    "boot": ("boot", fast),
    "chatty": ("chatty", ["--hang-after", "3", "--limit", "6",
                        "--key-wait", "3"]),
}
results = {}
threads = [threading.Thread(target=case, args=(n, m, a, results))
           for n, (m, a) in cases.items()]
for t in threads:
    t.start()
for t in threads:
    t.join()

r, el, gone, text = results["ok"]
check(r.returncode == 0, "ok: exit %d (%s)" % (r.returncode, r.stderr))
check(text is None, "ok: a guest that powered off got a hang.txt")
check(not os.path.exists(os.path.join(work, "ok", "monitor.log")),
      "ok: monitor.log kept for a guest that did not hang")
check(el < 15, "ok: the watch outlived the guest (%.1f s)" % el)

r, el, gone, text = results["hang"]
check(r.returncode == 5, "hang: exit %d, not 5 (%s)" % (r.returncode, r.stderr))
check(gone, "hang: the guest still runs after the watch")
check(text is not None and text.startswith(
    "guest hung: no console output for 3s (--hang-after)"),
    "hang: hang.txt gives no reason: %r" % (text or "")[:200])
text = text or ""
check("workload start: nxrecovery" in text.split("== blocked")[0],
      "hang: the console lines before the hang are not in hang.txt")
check("task:nxrecovery      state:D" in text,
      "hang: sysrq-w's blocked task is not listed")
check("kvm_tdp_mmu_zap_leafs+0x1a0/0x2b0 [kvm]" in text,
      "hang: sysrq-l's backtrace is not in hang.txt")
# 0x...9a123450 - (0x...9a000000 - 0x...81000000) = 0x...81123450
check("CPU#0 RIP=ffffffff9a123450 kvm_tdp_mmu_zap_leafs+0x450\n" in text,
      "hang: CPU#0's RIP not named by the System.map:\n" + text)
check("CPU#1 RIP=ffffffff9a200010 default_idle+0x10 (halted)" in text,
      "hang: CPU#1's RIP not named by the System.map")
check(text.count("CPU#0 RIP=") == 2,
      "hang: not two register samples (at detection, after the keys)")

r, el, gone, text = results["deaf"]
check(r.returncode == 5, "deaf: exit %d, not 5" % r.returncode)
check(gone, "deaf: a guest that ignores quit was not killed")
check(text is not None and
      "(nothing: the guest did not answer the keys)" in text,
      "deaf: hang.txt does not say the keys got no answer")
check(text is not None and "CPU#1 RIP=ffffffff9a200010 (halted)\n" in text,
      "deaf: RIPs without a System.map are not listed plain")

r, el, gone, text = results["boot"]
check(r.returncode == 5, "boot: exit %d, not 5" % r.returncode)
check(text is not None and text.startswith(
    'guest hung: no guest init line ("LAB: ") 3s after the start'),
    "boot: wrong reason: %r" % (text or "")[:120])

r, el, gone, text = results["chatty"]
check(r.returncode == 5, "chatty: exit %d, not 5" % r.returncode)
check(text is not None and text.startswith(
    "guest hung: not powered off 6s after the start (--limit)"),
    "chatty: wrong reason: %r" % (text or "")[:120])
check(el >= 6, "chatty: a guest that prints was taken for hung after %.1f s"
      % el)

# Bad usage: one line, exit 2.
r = subprocess.run([WATCH, "--pid", "1"], capture_output=True, text=True)
check(r.returncode == 2 and r.stderr.count("\n") == 1 and
      "hang-watch.sh:" in r.stderr, "no --serial: %d %r" % (r.returncode,
                                                          r.stderr))
r = subprocess.run([WATCH, "--pid", "1", "--serial", "x", "--monitor",
                    os.path.join(work, "nofifo"), "--out", work,
                    "--hang-after", "0"], capture_output=True, text=True)
check(r.returncode == 2 and "positive number" in r.stderr,
      "--hang-after 0: %d %r" % (r.returncode, r.stderr))
finish()
