#!/usr/bin/env python3
"""tests/run/check_fifo_module.py: a peer names a FIFO as a module (or plants
a FIFO where the module's .gnu_debuglink file would be). Opening either
would block forever; the reporter must skip it, report the rest, and a
daemon must go on collecting other programs.

Usage: check_fifo_module.py HEAPLEDGER FAKE_CLIENT SPLIT_DEBUG_BINARY
"""
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time

import daemon_util


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run_case(hl, client, module, tmp, name):
    db = os.path.join(tmp, name + ".db")
    try:
        r = subprocess.run([hl, "run", "--db", db, "--", client, "module", module],
                           capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        fail("%s: heapledger run hung on the FIFO" % name)
    if r.returncode != 3:
        fail("%s: exit %d: %s" % (name, r.returncode, r.stderr[-2000:]))
    if "120 bytes in 3 blocks" not in r.stderr or "23,760 bytes in 990 blocks" not in r.stderr:
        fail("%s: leaks missing from the report: %s" % (name, r.stderr[-3000:]))
    print("%s: run reported both leaks" % name)
    return r.stderr


def daemon_case(hl, client, module, tmp):
    sock = os.path.join(tmp, "hl.sock")
    db = os.path.join(tmp, "d.db")
    daemon = daemon_util.start(hl, sock, db, ["-q"])
    env = dict(os.environ, HEAPLEDGER_SOCKET=sock)
    for args in (["module", module], ["leak"], ["leak"]):
        if subprocess.run([client] + args, env=env, timeout=60).returncode != 3:
            fail("client %s failed" % args)
    time.sleep(1.0)
    err = daemon_util.stop(daemon, "daemon hung on the FIFO")
    con = sqlite3.connect(db)
    n = con.execute("SELECT count(*) FROM processes").fetchone()[0]
    con.close()
    if n != 3:
        fail("daemon stored %d of 3 processes: %s" % (n, err[-2000:]))
    print("daemon: 3 of 3 stored")


def main():
    hl, client, split = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as tmp:
        fifo = os.path.join(tmp, "libevil.so")
        os.mkfifo(fifo)
        err = run_case(hl, client, fifo, tmp, "module-fifo")
        if "not a regular file" not in err:
            fail("the FIFO module was not named")
        # A real module whose debuglink file is a FIFO.
        mod = os.path.join(tmp, os.path.basename(split))
        shutil.copy(split, mod)
        os.mkfifo(mod + ".debug")
        run_case(hl, client, mod, tmp, "debuglink-fifo")
        daemon_case(hl, client, fifo, tmp)
    print("PASS")


if __name__ == "__main__":
    main()
