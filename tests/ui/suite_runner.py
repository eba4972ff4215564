#!/usr/bin/env python3
"""tests/ui/suite_runner.py: a test runner as meson's is one, for the web
UI's suite tests: it starts each test of a suite file (one a line: NAME
[VAR=VALUE...] PROGRAM ARGS..., a relative PROGRAM taken from BUILD_DIR) as
a child of its own with HEAPLEDGER_TEST_NAME=NAME and the VARs ("{build}"
in an argument is BUILD_DIR, "{here}" this file's directory), waits for it,
and prints "NAME: how it ended". A test named with the prefix "timeout_" is stopped as a runner stops
a test that overran: SIGTERM after 0.3 s, and "kill9_" with SIGKILL.

Run it under `heapledger daemon`'s environment (`heapledger env`) and the
daemon's run holds the whole suite, the runner itself among its processes.

Usage: suite_runner.py BUILD_DIR SUITE_FILE
"""
import os
import signal
import subprocess
import sys


def run_one(build, name, argv):
    env = dict(os.environ, HEAPLEDGER_TEST_NAME=name)
    while "=" in argv[0]:
        key, value = argv.pop(0).split("=", 1)
        env[key] = value
    if not argv[0].startswith("/"):
        argv[0] = os.path.join(build, argv[0])
    here = os.path.dirname(os.path.abspath(__file__))
    argv = [a.replace("{build}", build).replace("{here}", here) for a in argv]
    child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    stop = {"timeout_": signal.SIGTERM, "kill9_": signal.SIGKILL}
    for prefix, sig in stop.items():
        if name.startswith(prefix):
            try:
                child.wait(timeout=0.3)
            except subprocess.TimeoutExpired:
                child.send_signal(sig)
    status = child.wait()
    return "signal %d" % -status if status < 0 else "exit %d" % status


def main():
    build, suite = sys.argv[1:3]
    with open(suite, encoding="utf-8") as f:
        tests = [line.split() for line in f if line.strip() and not line.startswith("#")]
    for name, *argv in tests:
        print("%s: %s" % (name, run_one(build, name, argv)), flush=True)


if __name__ == "__main__":
    main()
