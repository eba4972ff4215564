#!/usr/bin/env python3
"""tests/scan/check_unstopped.py HEAPLEDGER SCAN_UNSTOPPED: a thread that
blocks the leak scan's stop signal is running at exit. The report says a
thread did not stop for the leak scan and that its stack was read whole;
the JSON (scan.all_threads_stopped) and the database (read back by
`heapledger report --json`) carry it; the scan still ran and found the lost
block. A program whose threads all stop says nothing of the kind."""
import json
import os
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
        if p.returncode != 0 or p.stdout != "done\n":
            fail("exit code %d, stdout %r\n%s" % (p.returncode, p.stdout, p.stderr))
        if WARNING not in p.stderr:
            fail("no warning in:\n" + p.stderr)
        proc = json.load(open(out))["processes"][0]
        if proc["scan"] != {"scanned": True, "not_scanned": None, "all_threads_stopped": False}:
            fail("JSON scan %s" % proc["scan"])
        definite = [l for l in proc["leaks"] if l["kind"] == "definitely"]
        if [(l["bytes"], l["blocks"]) for l in definite] != [(48, 1)]:
            fail("definitely lost records %s" % definite)
        p = subprocess.run([heapledger, "report", "--db", db, "--format", "json"],
                           capture_output=True, text=True)
        stored = json.loads(p.stdout)["processes"][0]["scan"]
        if stored.get("all_threads_stopped") is not False:
            fail("stored scan %s\n%s" % (stored, p.stderr))
        p = subprocess.run([heapledger, "report", "--db", db], capture_output=True, text=True)
        if WARNING not in p.stdout + p.stderr:
            fail("the stored run does not say it:\n" + p.stdout + p.stderr)
        # Control: every thread stops, no warning.
        p = subprocess.run([heapledger, "run", "--no-db", "--", "/bin/true"],
                           capture_output=True, text=True)
        if "did not stop" in p.stderr:
            fail("warning for a program whose threads all stopped:\n" + p.stderr)
    print("ok")


main()
