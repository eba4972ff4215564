#!/usr/bin/env python3
"""tests/run/check_unreported.py HEAPLEDGER EXEC_UNSET UNREPORTED: what
`heapledger run` says when a process ends without reporting its exit.

- A program that unsets LD_PRELOAD and execs: its image is "replaced by exec
  of X (not tracked)" in the text, JSON ("tracked": false) and the report
  read back from the database; never "_exit".
- No process reported because the program (statically linked, so no hook)
  was killed by SIGINT, or because `heapledger run` was sent SIGTERM and
  passed it on: the message says what happened, not "was libheapledger.so
  preloaded", and the exit code is 128+N.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile

HINT = "was libheapledger.so preloaded"


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check_exec(heapledger, exec_unset, work):
    db = os.path.join(work, "exec.db")
    out = os.path.join(work, "exec.json")
    p = subprocess.run([heapledger, "run", "--db", db, "--json", out, "--", exec_unset,
                        "/bin/true"], capture_output=True, text=True)
    if p.returncode != 0:
        fail("exec: exit code %d\n%s" % (p.returncode, p.stderr))
    want = "replaced by exec of /bin/true (not tracked)"
    if want not in p.stderr or "_exit" in p.stderr:
        fail("exec: expected %r, not _exit, in:\n%s" % (want, p.stderr))
    procs = json.load(open(out))["processes"]
    end = procs[0]["exit"]
    if len(procs) != 1 or end != {"how": "exec", "image": "/bin/true", "tracked": False,
                                "fatal": None, "exit_record": True}:
        fail("exec: JSON exit %s (%d processes)" % (end, len(procs)))
    p = subprocess.run([heapledger, "report", "--db", db], capture_output=True, text=True)
    if "replaced by exec (not tracked)" not in p.stdout + p.stderr:
        fail("exec: the stored run says:\n%s%s" % (p.stdout, p.stderr))


def check_killed(heapledger, unreported, work):
    out = os.path.join(work, "killed.json")
    p = subprocess.run([heapledger, "run", "--no-db", "--json", out, "--", unreported, "raise"],
                       capture_output=True, text=True)
    want = unreported + " was killed by signal 2 (Interrupt) before it reported"
    if p.returncode != 128 + signal.SIGINT or want not in p.stderr or HINT in p.stderr:
        fail("killed: exit code %d, expected %r in:\n%s" % (p.returncode, want, p.stderr))
    run = json.load(open(out))["run"]
    if want not in (run.get("unreported") or ""):
        fail("killed: JSON run.unreported %r" % run.get("unreported"))


def check_interrupted(heapledger, unreported):
    p = subprocess.Popen([heapledger, "run", "--no-db", "--", unreported, "pause"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if p.stdout.readline() != "ready\n":
        fail("interrupted: the program did not start")
    p.send_signal(signal.SIGTERM)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        fail("interrupted: heapledger run did not end after SIGTERM")
    want = ("heapledger run was interrupted by SIGTERM and passed it on; " + unreported +
            " was killed by signal 15 (Terminated) before it reported")
    if p.returncode != 128 + signal.SIGTERM or want not in err or HINT in err:
        fail("interrupted: exit code %d, expected %r in:\n%s" % (p.returncode, want, err))


def main():
    heapledger, exec_unset, unreported = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as work:
        check_exec(heapledger, exec_unset, work)
        check_killed(heapledger, unreported, work)
        check_interrupted(heapledger, unreported)
    print("ok")


main()
