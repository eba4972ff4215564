#!/usr/bin/env python3
"""tests/run/check_unreported.py HEAPLEDGER EXEC_UNSET UNREPORTED: what
`heapledger run` says when a process ends without reporting its exit.

- A program that unsets LD_PRELOAD and execs: its image is "replaced by exec
  of X (not tracked)" in the text, JSON ("tracked": false) and the report
  read back from the database; never "_exit". The new image is a process
  heapledger did not observe ("not_observed_exec"), which fails the gate;
  with a --exclude glob (heapledger then cannot tell an image left out on
  purpose from one that lost LD_PRELOAD) it is not listed.
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
    text = p.stdout + p.stderr
    if p.returncode != 0:
        fail("exec: exit code %d\n%s" % (p.returncode, text))
    want = "replaced by exec of /bin/true (not tracked)"
    unseen = "(/bin/true), exec'd: exited with status 0\n"
    if want not in text or unseen not in text or "_exit" in text:
        fail("exec: expected %r and %r, not _exit, in:\n%s" % (want, unseen, text))
    procs = json.load(open(out))["processes"]
    end = procs[0]["exit"]
    if len(procs) != 2 or end != {"how": "exec", "image": "/bin/true", "tracked": False,
                                "fatal": None, "exit_record": True}:
        fail("exec: JSON exit %s (%d processes)" % (end, len(procs)))
    if procs[1]["exit"].get("standalone") != "not_observed_exec":
        fail("exec: the new image's JSON exit %s" % procs[1]["exit"])
    p = subprocess.run([heapledger, "report", "--db", db], capture_output=True, text=True)
    if want not in p.stdout + p.stderr or "not observed: the image an exec started" not in p.stdout:
        fail("exec: the stored run says:\n%s%s" % (p.stdout, p.stderr))
    p = subprocess.run([heapledger, "gate", "--db", db], capture_output=True, text=True)
    if p.returncode != 1 or "not observed: the image an exec started" not in p.stdout + p.stderr:
        fail("exec: gate exit %d\n%s" % (p.returncode, p.stderr))
    p = subprocess.run([heapledger, "run", "--no-db", "--exclude=no-such-program",
                        "--error-exitcode=7", "--", exec_unset, "/bin/true"],
                       capture_output=True, text=True)
    if p.returncode != 0 or want not in p.stdout + p.stderr or "not observed" in p.stdout:
        fail("exec --exclude: exit %d\n%s%s" % (p.returncode, p.stdout, p.stderr))


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
