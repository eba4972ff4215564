#!/usr/bin/env python3
"""tests/run/check_daemon_default_socket.py: `heapledger daemon` and
`heapledger env` without --socket agree on a socket in a private 0700
directory under $XDG_RUNTIME_DIR, and programs started with env's exports
are stored. A directory that is not private (world-writable, or a symbolic
link planted there) is refused.

Usage: check_daemon_default_socket.py HEAPLEDGER FAKE_CLIENT
"""
import os
import signal
import sqlite3
import stat
import subprocess
import sys
import tempfile
import time


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    hl, client = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        runtime = os.path.join(tmp, "run")
        os.mkdir(runtime, 0o700)
        env = dict(os.environ, XDG_RUNTIME_DIR=runtime)
        db = os.path.join(tmp, "d.db")
        sock = os.path.join(runtime, "heapledger", "daemon.sock")
        daemon = subprocess.Popen([hl, "daemon", "-q", "--db", db], env=env,
                                  stderr=subprocess.PIPE, text=True)
        for _ in range(200):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        else:
            daemon.kill()
            fail("no socket at %s: %s" % (sock, daemon.communicate()[1]))
        mode = stat.S_IMODE(os.stat(os.path.dirname(sock)).st_mode)
        if mode != 0o700:
            fail("socket directory mode %o" % mode)
        exports = subprocess.run([hl, "env"], env=env, capture_output=True, text=True,
                                 check=True).stdout
        if "HEAPLEDGER_SOCKET='%s'" % sock not in exports:
            fail("env printed: " + exports)
        if subprocess.run(["sh", "-c", exports + 'exec "$@"', "sh", client, "leak"],
                          env=env, timeout=60).returncode != 3:
            fail("client failed")
        time.sleep(1.0)
        daemon.send_signal(signal.SIGTERM)
        _, err = daemon.communicate(timeout=60)
        con = sqlite3.connect(db)
        n = con.execute("SELECT count(*) FROM processes").fetchone()[0]
        con.close()
        if daemon.returncode != 0 or n != 1:
            fail("daemon exit %d, %d processes stored: %s" % (daemon.returncode, n, err))
        print("default socket %s: 1 of 1 stored" % sock)

        # Not private: a world-writable directory, then a planted symlink.
        for name, plant in (("open", lambda d: (os.mkdir(d), os.chmod(d, 0o777))),
                            ("link", lambda d: os.symlink(tmp, d))):
            runtime = os.path.join(tmp, "run-" + name)
            os.mkdir(runtime, 0o700)
            plant(os.path.join(runtime, "heapledger"))
            env = dict(os.environ, XDG_RUNTIME_DIR=runtime)
            for cmd in ([hl, "daemon", "--no-db"], [hl, "env"]):
                r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=30)
                if r.returncode == 0 or "not a private directory" not in r.stderr:
                    fail("%s accepted a %s directory: %s" % (cmd[1], name, r.stderr))
            print("%s directory refused" % name)
    print("PASS")


if __name__ == "__main__":
    main()
