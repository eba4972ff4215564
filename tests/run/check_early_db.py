#!/usr/bin/env python3
"""tests/run/check_early_db.py HEAPLEDGER: `heapledger run` opens (creates and
migrates) its database while the program runs, so the disk syncs of a new
database are not waited for after the program's exit.

The program under test waits until the database exists with its schema (it
reads it as SQLite does, while the reporter holds it open) and then exits;
before, the database was created only after the exit, so the program would
wait its whole bound (60 s) and fail. The run is then stored as usual.
"""
import os
import subprocess
import sys
import tempfile

WAITER = r"""
import sqlite3, sys, time, os
db = sys.argv[1]
for _ in range(6000):
    if os.path.exists(db):
        try:
            c = sqlite3.connect("file:%s?mode=ro" % db, uri=True, timeout=1)
            n = c.execute("select count(*) from sqlite_master where name = 'runs'").fetchone()[0]
            c.close()
            if n:
                print("schema there")
                sys.exit(0)
        except sqlite3.Error:
            pass
    time.sleep(0.01)
sys.exit(3)
"""


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    heapledger = sys.argv[1]
    with tempfile.TemporaryDirectory() as work:
        db = os.path.join(work, "early.db")
        p = subprocess.run([heapledger, "run", "--db", db, "--", sys.executable, "-c", WAITER,
                            db], capture_output=True, text=True, timeout=120)
        if p.returncode != 0 or "schema there" not in p.stdout:
            fail("the program did not see the database during the run (exit %d)\n%s%s"
                 % (p.returncode, p.stdout, p.stderr))
        if "stored in " + db not in p.stderr:
            fail("the run was not stored:\n" + p.stderr)
        r = subprocess.run([heapledger, "history", "--db", db], capture_output=True, text=True)
        if r.returncode != 0 or "in 1 run\n" not in r.stdout + r.stderr:
            fail("history does not count the run:\n%s%s" % (r.stdout, r.stderr))
    print("ok")


if __name__ == "__main__":
    main()
