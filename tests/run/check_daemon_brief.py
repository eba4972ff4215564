#!/usr/bin/env python3
"""tests/run/check_daemon_brief.py: under a daemon, a process with nothing to
show costs one line, so a suite's stderr is read for what leaks.

A dash script runs leak_choice five times clean and once leaking ("a": 16
bytes definitely lost), under `heapledger daemon` through `heapledger env`:
- each clean process (the leak_choice runs, and dash itself, which `_exit`s
  holding still-reachable blocks) prints exactly one line, naming how it
  ended, "no leaks, no errors" and what it still held; no HEAP SUMMARY;
- the leaking one prints its whole report (HEAP SUMMARY, the loss record,
  LEAK SUMMARY);
- `--clean-processes full` prints every process's whole report again;
- the daemon's stderr for the script is no longer than valgrind's
  (`--trace-children=yes --leak-check=full`, run here as the oracle), where
  before it was longer.

usage: check_daemon_brief.py HEAPLEDGER LEAK_CHOICE
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

import daemon_util

HL, PROG = sys.argv[1], sys.argv[2]
CLEAN_RUNS = 5


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def script():
    lines = ["%s exit=0" % PROG] * CLEAN_RUNS + ["%s a" % PROG]
    return "; ".join(lines)


def under_daemon(tmp, extra=()):
    sock, db = os.path.join(tmp, "d.sock"), os.path.join(tmp, "d.db")
    for f in (db, db + "-wal", db + "-shm"):
        if os.path.exists(f):
            os.remove(f)
    daemon = daemon_util.start(HL, sock, db, list(extra))
    env = dict(os.environ, SCRIPT=script())
    r = subprocess.run(["sh", "-c", 'eval "$("$0" env --socket "$1")"; exec sh -c "$SCRIPT"',
                        HL, sock], env=env, capture_output=True, text=True, timeout=120)
    err = daemon_util.stop(daemon)
    if r.returncode != 0:
        fail("the script failed: %s" % r.stderr)
    return err


def per_pid(text):
    lines = {}
    for line in text.splitlines():
        m = re.match(r"==(\d+)== ", line)
        if m:
            lines.setdefault(m.group(1), []).append(line)
    return lines


def main():
    with tempfile.TemporaryDirectory(prefix="hl-brief-") as tmp:
        brief = under_daemon(tmp)
        procs = per_pid(brief)
        leaking = [pid for pid, ls in procs.items() if any("definitely lost in loss record" in l
                                                          for l in ls)]
        if len(leaking) != 1:
            fail("expected one leaking process with its loss record:\n" + brief)
        whole = procs[leaking[0]]
        if not any("HEAP SUMMARY:" in l for l in whole) or \
                not any("LEAK SUMMARY:" in l for l in whole):
            fail("the leaking process's report is not whole:\n" + "\n".join(whole))
        clean = {pid: ls for pid, ls in procs.items() if pid not in leaking}
        # CLEAN_RUNS leak_choice processes and the dash that ran them
        if len(clean) != CLEAN_RUNS + 1:
            fail("expected %d clean processes:\n%s" % (CLEAN_RUNS + 1, brief))
        for pid, ls in clean.items():
            if len(ls) != 1 or "no leaks, no errors" not in ls[0]:
                fail("clean process %s did not print one line:\n%s" % (pid, "\n".join(ls)))
        shell = [ls[0] for ls in clean.values() if "(sh -c" in ls[0]]
        if len(shell) != 1 or "still reachable)" not in shell[0] or "_exit" not in shell[0]:
            fail("the shell's line does not say how it ended and what it held: %s" % shell)
        print("ok: %d clean processes in one line each, the leaking one whole" % len(clean))

        full = per_pid(under_daemon(tmp, ["--clean-processes", "full"]))
        summaries = sum(1 for ls in full.values() if any("HEAP SUMMARY:" in l for l in ls))
        if summaries != CLEAN_RUNS + 2:
            fail("--clean-processes full: %d HEAP SUMMARY sections, expected %d"
                 % (summaries, CLEAN_RUNS + 2))
        print("ok: --clean-processes full prints every report")

        if shutil.which("valgrind"):
            vg = subprocess.run(["valgrind", "--trace-children=yes", "--leak-check=full",
                                 "sh", "-c", script()], capture_output=True, text=True,
                                timeout=600)
            ours = sum(len(ls) for ls in procs.values())
            theirs = len([l for l in vg.stderr.splitlines() if re.match(r"==\d+==", l)])
            if ours > theirs:
                fail("the daemon printed %d report lines, valgrind %d" % (ours, theirs))
            print("ok: %d report lines, valgrind's %d" % (ours, theirs))
    print("PASS")


if __name__ == "__main__":
    main()
