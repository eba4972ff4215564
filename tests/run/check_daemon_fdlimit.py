#!/usr/bin/env python3
"""tests/run/check_daemon_fdlimit.py: a daemon at its file descriptor limit
(RLIMIT_NOFILE 32) with 40 programs connected at once. It must not spin:
the connections it cannot take are closed at once (those programs see the
end of the connection instead of hanging), it says so once, it uses little
CPU meanwhile, every program it took is stored, and once descriptors are
free again new programs are stored.

Usage: check_daemon_fdlimit.py HEAPLEDGER FAKE_CLIENT
"""
import os
import resource
import sqlite3
import subprocess
import sys
import tempfile
import time

import daemon_util

CLIENTS = 40


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def low_limit():
    resource.setrlimit(resource.RLIMIT_NOFILE, (32, 32))


def cpu_seconds(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main():
    heapledger, client = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        sock = os.path.join(tmp, "hl.sock")
        db = os.path.join(tmp, "d.db")
        daemon = daemon_util.start(heapledger, sock, db, ["-q"], preexec_fn=low_limit)
        env = dict(os.environ, HEAPLEDGER_SOCKET=sock)
        holders = [subprocess.Popen([client, "hold"], env=env, stdin=subprocess.PIPE)
                   for _ in range(CLIENTS)]
        time.sleep(1.0)  # all connected; the daemon is at its limit
        cpu0, t0 = cpu_seconds(daemon.pid), time.monotonic()
        time.sleep(2.0)
        cpu = cpu_seconds(daemon.pid) - cpu0
        wall = time.monotonic() - t0
        for h in holders:
            h.stdin.close()
        codes = [h.wait(timeout=60) for h in holders]
        stored_now = codes.count(3)
        refused = sum(1 for c in codes if c in (4, 92))
        if stored_now + refused != CLIENTS:
            fail("unexpected client exits: %s" % codes)
        time.sleep(1.0)
        after = subprocess.run([client, "leak"], env=env, timeout=60)
        if after.returncode != 3:
            fail("a program after the limit exited %d" % after.returncode)
        time.sleep(1.0)
        err = daemon_util.stop(daemon)
        sys.stdout.write(err[-3000:])
        con = sqlite3.connect(db)
        procs = con.execute("SELECT count(*) FROM processes").fetchone()[0]
        con.close()
        print("%d held, %d refused at the limit; daemon CPU %.2f s in %.1f s at the limit;"
              " %d processes stored" % (stored_now, refused, cpu, wall, procs))
        if refused == 0:
            fail("no connection was refused: the limit was not reached")
        # Logged once per time the limit is reached, not per refused
        # connection. The limit may be left and reached again while the
        # test runs: the daemon's writer thread opens and closes files
        # (the database, debug files) and frees a descriptor for a moment.
        logged = err.count("at the file descriptor limit")
        if logged < 1 or logged >= max(refused, 2):
            fail("the limit was logged %d times for %d refused connections" % (logged, refused))
        if cpu > 0.5 * wall:
            fail("the daemon spun at its limit: %.2f s of CPU in %.1f s" % (cpu, wall))
        if procs != stored_now + 1:
            fail("%d processes stored, expected the %d it took and the one after"
                 % (procs, stored_now + 1))
    print("PASS")


if __name__ == "__main__":
    main()
