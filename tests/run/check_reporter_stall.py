#!/usr/bin/env python3
"""A reporter that is stopped (SIGSTOP) while its program runs, and then
continued, reports the process as it really ended, with the hook's counts.

reporter_stall keeps 200 blocks and waits; the test stops `heapledger run`
(the reporter), lets the program go on: its events fill the socket, its hook
waits wait_ms (100) and goes on standalone, it frees 184 blocks, leaks 16 and
exits with status 3. Once it has ended (a zombie of the stopped reporter),
the reporter is continued. Its --json report must then say the process
exited with status 3 through exit (not _exit), that its stream was cut, and
give the hook's own figures: 16 blocks (1600 bytes) in use at exit, 16
blocks definitely lost, nothing left unclassified.

usage: check_reporter_stall.py HEAPLEDGER PROGRAM
(HEAPLEDGER_LIB in the environment names the hook, as for check_run.py)
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time


def fail(msg):
    sys.exit("check_reporter_stall: " + msg)


def wait_until(what, pred, seconds=60):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if pred():
            return
        time.sleep(0.02)
    fail("waited %d s for %s" % (seconds, what))


def state(pid):
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return "gone"


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    heapledger, prog = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="hl-stall-") as tmp:
        ready, go, js = (os.path.join(tmp, n) for n in ("ready", "go", "r.json"))
        # Every event sent (tally=0), as threads send them: counted in the
        # hook, a one-thread program has nothing to stall on until its exit.
        env = dict(os.environ, HEAPLEDGER_OPTIONS="wait_ms=100:tally=0")
        run = subprocess.Popen([heapledger, "run", "--no-db", "--json", js, "--",
                                prog, ready, go], env=env, stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        stopped = False
        try:
            wait_until("the program to start", lambda: os.path.exists(ready)
                       and open(ready).read().endswith("\n"))
            pid = int(open(ready).read())
            os.kill(run.pid, signal.SIGSTOP)
            stopped = True
            open(go, "w").close()
            wait_until("the program to end", lambda: state(pid) in ("Z", "gone"))
            os.kill(run.pid, signal.SIGCONT)
            stopped = False
            out, err = run.communicate(timeout=120)
        finally:
            if stopped:
                os.kill(run.pid, signal.SIGCONT)
            if run.poll() is None:
                run.kill()
                run.wait()
        err = err.decode(errors="replace")
        if run.returncode != 3:
            fail("run exited %d, expected the program's 3:\n%s" % (run.returncode, err))
        if "continuing standalone" not in err:
            fail("the hook never went on standalone (no stall?):\n" + err)
        with open(js) as f:
            doc = json.load(f)
    procs = doc["processes"]
    if len(procs) != 1:
        fail("%d processes in the report" % len(procs))
    p = procs[0]
    ex = p["exit"]
    if ex.get("how") != "exit" or ex.get("status") != 3:
        fail("ending %r, expected exit with status 3:\n%s" % (ex, err))
    if not p.get("stream_incomplete"):
        fail("the cut stream is not named: %r" % p.get("stream_incomplete"))
    heap = p["summary"]
    if (heap["in_use_blocks"], heap["in_use_bytes"]) != (16, 1600):
        fail("in use at exit %d bytes in %d blocks, expected the hook's 1600 in 16"
             % (heap["in_use_bytes"], heap["in_use_blocks"]))
    got = {}
    for leak in p["leaks"]:
        got[leak["kind"]] = got.get(leak["kind"], 0) + leak["blocks"]
    if got.get("definitely") != 16 or got.get("unknown", 0) != 0:
        fail("leaked blocks by kind %r, expected the hook's: 16 definitely lost, none "
             "unclassified" % got)
    print("PASS")


if __name__ == "__main__":
    main()
