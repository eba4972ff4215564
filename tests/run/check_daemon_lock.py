#!/usr/bin/env python3
"""tests/run/check_daemon_lock.py: another connection holds the database's
write lock for a while during a daemon run (longer than SQLite's busy
timeout). Every process is still stored once the lock is released, forks
get their parent_id and unique serials, and the run is closed.

Usage: check_daemon_lock.py HEAPLEDGER FAKE_CLIENT
"""
import os
import sqlite3
import subprocess
import sys
import tempfile
import time

import daemon_util


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    heapledger, client = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        sock = os.path.join(tmp, "hl.sock")
        db = os.path.join(tmp, "d.db")
        daemon = daemon_util.start(heapledger, sock, db, ["-q"])
        env = dict(os.environ, HEAPLEDGER_SOCKET=sock)

        def clients(args, n):
            ps = [subprocess.Popen([client] + args, env=env) for _ in range(n)]
            for p in ps:
                if p.wait(timeout=60) not in (0, 3):
                    fail("client %s exited %d" % (args, p.returncode))

        clients(["leak"], 2)  # stored before the lock
        time.sleep(1.0)
        lock = sqlite3.connect(db, isolation_level=None, timeout=30)
        lock.execute("BEGIN IMMEDIATE")
        t0 = time.monotonic()
        clients(["leak"], 3)
        clients(["fork"], 2)
        time.sleep(1.0)  # settled: the daemon is trying to store them now
        # A client that sends ~2 MB (more than a socket buffer) must not
        # wait for the database.
        t1 = time.monotonic()
        clients(["sites", "20000"], 1)
        big = time.monotonic() - t1
        held = time.monotonic() - t0
        time.sleep(max(0.0, 6.5 - held))  # past SQLite's 5 s busy timeout
        held = time.monotonic() - t0
        lock.execute("COMMIT")
        lock.close()
        clients(["leak"], 2)  # after the lock
        time.sleep(1.0)
        err = daemon_util.stop(daemon)
        sys.stdout.write(err[-3000:])
        if daemon.returncode != 0:
            fail("daemon exit status %d" % daemon.returncode)
        if "not stored" in err or "failed" in err:
            fail("the daemon gave up on the database")
        con = sqlite3.connect(db)
        runs = con.execute("SELECT count(*), max(ended_ns IS NOT NULL) FROM runs").fetchone()
        procs = con.execute("SELECT count(*), count(DISTINCT serial) FROM processes").fetchone()
        forks = con.execute("SELECT count(*), count(parent_id) FROM processes"
                            " WHERE origin = 'fork'").fetchone()
        linked = con.execute("SELECT count(*) FROM processes c JOIN processes p"
                             " ON p.id = c.parent_id WHERE c.origin = 'fork'"
                             " AND p.pid = c.ppid").fetchone()[0]
        con.close()
        print("lock held %.1f s; a 20000-site client took %.2f s meanwhile; stored %s"
              % (held, big, procs))
        if runs != (1, 1):
            fail("expected one closed run, got %s" % (runs,))
        # 2 + 3 leak, 2 x (fork parent + child), 1 sites, 2 leak
        if procs != (12, 12):
            fail("expected 12 processes with 12 distinct serials, got %s" % (procs,))
        if forks != (2, 2) or linked != 2:
            fail("fork children without their parent_id: %s, linked %d" % (forks, linked))
    print("PASS")


if __name__ == "__main__":
    main()
