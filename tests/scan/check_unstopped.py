#!/usr/bin/env python3
"""tests/scan/check_unstopped.py HEAPLEDGER SCAN_UNSTOPPED: a thread that
blocks the leak scan's stop signal is running during an on-demand check and
at exit. The report says a thread did not stop for the leak scan, that its
stack was read whole, and names it by thread id (for the check and for the
exit scan); the JSON (scan.all_threads_stopped, scan.unstopped_tids, each
check's unstopped_tids) and the database (read back by `heapledger report`,
JSON and text) carry it; the scan still ran and found the lost block.
Standalone (no reporter), the hook names the thread too. A program whose
threads all stop says nothing of the kind."""
import json
import os
import re
import subprocess
import sys
import tempfile

WARNING = "a thread did not stop for the leak scan; its whole stack was read while it ran"


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    heapledger, prog = sys.argv[1:3]
    with tempfile.TemporaryDirectory() as work:
        db, out = os.path.join(work, "u.db"), os.path.join(work, "u.json")
        p = subprocess.run([heapledger, "run", "--db", db, "--json", out, "--", prog],
                           capture_output=True, text=True, timeout=60)
        m = re.fullmatch(r"blocker (\d+)\ndone\n", p.stdout)
        if p.returncode != 0 or not m:
            fail("exit code %d, stdout %r\n%s" % (p.returncode, p.stdout, p.stderr))
        tid = int(m.group(1))
        named = "thread %d did not stop for the scan; its stack was read while it ran" % tid
        if WARNING not in p.stderr:
            fail("no warning in:\n" + p.stderr)
        # Named twice: under LEAK CHECK 1 and with the exit scan's warning.
        if p.stderr.count(named) != 2 or \
                "LEAK CHECK 1 (heapledger_check_leaks(), " not in p.stderr:
            fail("thread %d is not named for the check and the exit:\n%s" % (tid, p.stderr))
        proc = json.load(open(out))["processes"][0]
        if proc["scan"] != {"scanned": True, "not_scanned": None, "all_threads_stopped": False,
                            "unstopped_tids": [tid]}:
            fail("JSON scan %s" % proc["scan"])
        check = proc["checks"][0]
        if check["all_threads_stopped"] or check["unstopped_tids"] != [tid]:
            fail("JSON check %s" % {k: v for k, v in check.items() if k != "records"})
        definite = [l for l in proc["leaks"] if l["kind"] == "definitely"]
        if [(l["bytes"], l["blocks"]) for l in definite] != [(48, 1)]:
            fail("definitely lost records %s" % definite)
        p = subprocess.run([heapledger, "report", "--db", db, "--format", "json"],
                           capture_output=True, text=True)
        stored = json.loads(p.stdout)["processes"][0]
        if stored["scan"] != proc["scan"] or stored["checks"] != proc["checks"]:
            fail("stored scan %s, checks %s\n%s" % (stored["scan"], stored["checks"], p.stderr))
        p = subprocess.run([heapledger, "report", "--db", db], capture_output=True, text=True)
        if WARNING not in p.stdout + p.stderr or p.stdout.count(named) != 2:
            fail("the stored run does not say it:\n" + p.stdout + p.stderr)
        # Standalone: the hook's own report names the thread too.
        lib = os.path.join(os.path.dirname(os.path.dirname(heapledger)), "libhook",
                           "libheapledger.so")
        env = dict(os.environ, LD_PRELOAD=lib)
        env.pop("HEAPLEDGER_SOCKET", None)
        p = subprocess.run([prog], capture_output=True, text=True, timeout=60, env=env)
        tid = int(re.match(r"blocker (\d+)", p.stdout).group(1))
        alone = "thread %d did not stop for the leak scan within 2 s; its stack was read" % tid
        if p.stderr.count(alone) != 2:
            fail("standalone does not name thread %d twice:\n%s" % (tid, p.stderr))
        # Control: every thread stops, no warning.
        p = subprocess.run([heapledger, "run", "--no-db", "--", "/bin/true"],
                           capture_output=True, text=True)
        if "did not stop" in p.stderr:
            fail("warning for a program whose threads all stopped:\n" + p.stderr)
    print("ok")


main()
