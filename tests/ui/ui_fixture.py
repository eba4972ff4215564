"""tests/ui/ui_fixture.py: what the web UI tests share: a database made by
real `heapledger run` and `heapledger daemon` runs of ui_leaker, and a
`heapledger ui` server on a free loopback port.

Runs in the database: 1 = `run ui_leaker a`, 2 = `run ui_leaker b` (one new
leak site, leak_beta), 3 = a daemon run of `ui_leaker a`. Daemon also serves
the test of a run still being written.
"""
import os
import re
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.parse


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def marker_line(source, marker):
    with open(source, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if marker in line:
                return n
    fail("marker %s not in %s" % (marker, source))


class Daemon:
    """`heapledger daemon` writing into db; env is what `heapledger env`
    prints for it."""

    def __init__(self, heapledger, db, sock):
        self.db = db
        self.proc = subprocess.Popen([heapledger, "daemon", "--socket", sock, "--db", self.db, "-q"],
                                     stderr=subprocess.PIPE, text=True)
        for _ in range(200):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        else:
            fail("daemon did not create its socket")
        self.env = subprocess.run([heapledger, "env", "--socket", sock],
                                  capture_output=True, text=True, check=True).stdout

    def run(self, prog, *args):
        subprocess.run(["sh", "-c", self.env + 'exec "$@"', "sh", prog] + list(args),
                       check=True, timeout=60)

    def wait_processes(self, run_id, n):
        """Until the daemon has stored n processes of its run (it stores each
        when its stream ends)."""
        for _ in range(600):
            try:
                if count(self.db, "SELECT count(*) FROM processes WHERE run_id = ?", run_id) >= n:
                    return
            except sqlite3.Error:
                pass  # not created, or not migrated yet
            time.sleep(0.05)
        self.proc.kill()
        fail("the daemon did not store %d processes" % n)

    def stop(self):
        if self.proc.poll() is not None:
            return
        self.proc.send_signal(signal.SIGTERM)
        _, err = self.proc.communicate(timeout=30)
        if self.proc.returncode != 0:
            fail("daemon exit %d: %s" % (self.proc.returncode, err[-2000:]))


def make_db(heapledger, prog, tmp):
    # Each run must hold both processes (the parent and its fork child);
    # a run that stored only the parent (seen under heavy load: a reporter
    # matter, not the UI's) is said so and the database made again.
    for attempt in range(3):
        db = os.path.join(tmp, "ui%d.db" % attempt)
        for arg in ("a", "b"):
            r = subprocess.run([heapledger, "run", "--db", db, "--", prog, arg],
                               capture_output=True, text=True, timeout=60)
            if r.returncode != 0:
                fail("heapledger run %s: %d\n%s" % (arg, r.returncode, r.stderr[-2000:]))
        daemon = Daemon(heapledger, db, os.path.join(tmp, "d%d.sock" % attempt))
        daemon.run(prog, "a")
        daemon.wait_processes(3, 2)
        daemon.stop()
        if count(db, "SELECT count(*) FROM runs") != 3:
            fail("expected 3 runs in the database")
        per_run = [count(db, "SELECT count(*) FROM processes WHERE run_id = ?", i) for i in (1, 2, 3)]
        if per_run == [2, 2, 2]:
            return db
        print("NOTE: processes stored per run: %s, want 2 each; making the database again" % per_run)
    fail("three times a run lost its fork child")


def count(db, sql, *args):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        return con.execute(sql, args).fetchone()[0]
    finally:
        con.close()


class Server:
    """`heapledger ui` on a free port; stop() ends it with SIGTERM. url
    is the address it printed, with its secret token (token)."""

    def __init__(self, heapledger, db, *extra, env=None):
        self.proc = subprocess.Popen([heapledger, "ui", "--db", db, "--port", "0"] + list(extra),
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                     env=env)
        line = self.proc.stdout.readline()
        m = re.search(r" at (http://\S+)", line)
        if not m:
            self.proc.kill()
            fail("ui printed %r, stderr %r" % (line, self.proc.stderr.read()))
        self.url = m.group(1)
        parts = urllib.parse.urlsplit(self.url)
        self.port = parts.port
        self.token = urllib.parse.parse_qs(parts.query)["token"][0]

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            out, err = self.proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail("ui did not stop on SIGTERM")
        if self.proc.returncode != 0:
            fail("ui exit %d: %s" % (self.proc.returncode, err))
        return err
