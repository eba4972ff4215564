#!/usr/bin/env python3
"""tests/run/check_busy_exit.py HEAPLEDGER PROG: a process that exits while
four threads allocate and free (progs/busy_exit.c), counted in the hook
(the default) and with events (tally=0), several runs each. Every run must
report exactly the one leaked block, at its line, and the stream may
disagree with the exit's live set only by the operations the threads had
in flight when the scan stopped them: at most one each. Before the
threads' events were ordered after the counts' end and sent inside the
stop, a run disagreed on 64-255 blocks."""
import json
import os
import subprocess
import sys
import tempfile

THREADS = 4  # busy_exit.c
RUNS = 4
CONSISTENCY = ("unmatched_frees", "unfreed_superseded", "live_mismatch")
SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "progs", "busy_exit.c")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def marker_line(marker):
    with open(SOURCE, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if marker in line:
                return n
    fail("no %s in %s" % (marker, SOURCE))


def run_once(heapledger, prog, options, tmp, n):
    js = os.path.join(tmp, "%s-%d.json" % (options or "default", n))
    env = dict(os.environ)
    if options:
        env["HEAPLEDGER_OPTIONS"] = options
    run = subprocess.run([heapledger, "run", "--no-db", "--json", js, "--", prog],
                         stdin=subprocess.DEVNULL, capture_output=True, text=True,
                         timeout=120, env=env)
    if run.returncode != 0:
        fail("%s: exit status %d\n%s" % (options, run.returncode, run.stderr[-3000:]))
    with open(js, encoding="utf-8") as f:
        (proc,) = json.load(f)["processes"]
    return proc, run.stderr


def main():
    heapledger, prog = sys.argv[1], sys.argv[2]
    line = marker_line("BUSY-LEAK")
    worst = {}
    with tempfile.TemporaryDirectory() as tmp:
        for options in ("", "tally=0"):
            for n in range(RUNS):
                proc, stderr = run_once(heapledger, prog, options, tmp, n)
                definite = [l for l in proc["leaks"] if l["kind"] == "definitely"]
                if len(definite) != 1 or definite[0]["bytes"] != 77 or definite[0]["blocks"] != 1:
                    fail("%s: definitely lost %s, expected one block of 77 bytes"
                         % (options, json.dumps(definite)[:2000]))
                if not any(fr.get("function") == "busy_leak" and fr.get("line") == line
                           for fr in definite[0]["stack"][:3]):
                    fail("%s: the leak's stack %s does not name busy_leak at line %d"
                         % (options, definite[0]["stack"][:3], line))
                s = proc["summary"]
                off = sum(s[k] for k in CONSISTENCY)
                if off > THREADS:
                    fail("%s: the stream disagrees on %d blocks (%s), more than the %d "
                         "operations in flight\n%s"
                         % (options, off, {k: s[k] for k in CONSISTENCY}, THREADS, stderr[-2000:]))
                worst[options or "default"] = max(worst.get(options or "default", 0), off)
    print("ok: at most %s blocks in flight at the stop" % worst)


main()
