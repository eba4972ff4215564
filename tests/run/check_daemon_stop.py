#!/usr/bin/env python3
"""tests/run/check_daemon_stop.py: "run the suite, then kill the daemon"
keeps every process. The clients connect, send everything and exit; SIGTERM
follows at once, while their connections may still wait in the listen
backlog. Every one must be stored, in each of REPEAT rounds (before the
daemon drained the backlog at stop, rounds lost some or all of them).

usage: check_daemon_stop.py HEAPLEDGER FAKE_CLIENT [REPEAT]
"""
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

import daemon_util

CLIENTS = 6


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def one_round(hl, client, tmp, n):
    sock = os.path.join(tmp, "s%d.sock" % n)
    db = os.path.join(tmp, "r%d.db" % n)
    daemon = daemon_util.start(hl, sock, db, ["-q"])
    env_out = subprocess.run([hl, "env", "--socket", sock], capture_output=True, text=True,
                             check=True).stdout
    clients = [subprocess.Popen(["sh", "-c", env_out + 'exec "$@"', "sh", client, "leak"])
               for _ in range(CLIENTS)]
    for c in clients:
        if c.wait() != 3:
            fail("client exited %d" % c.returncode)
    err = daemon_util.stop(daemon, "daemon did not stop")
    with sqlite3.connect(db) as c:
        stored = c.execute("SELECT count(*) FROM processes").fetchone()[0]
        leaks = c.execute("SELECT count(*) FROM leaks").fetchone()[0]
    if stored != CLIENTS or leaks != CLIENTS:
        fail("round %d: %d of %d processes stored (%d leak records)\n%s" % (
            n, stored, CLIENTS, leaks, err[-2000:]))
    if "suite summary: %d processes" % CLIENTS not in err:
        fail("round %d: suite summary:\n%s" % (n, err[-2000:]))


def main():
    hl, client = sys.argv[1], sys.argv[2]
    repeat = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    with tempfile.TemporaryDirectory(prefix="hl-stop-") as tmp:
        for n in range(repeat):
            one_round(hl, client, tmp, n)
    print("PASS: %d rounds of %d processes, none lost" % (repeat, CLIENTS))


if __name__ == "__main__":
    main()
