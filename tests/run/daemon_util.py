"""tests/run/daemon_util.py: start and stop a `heapledger daemon` for the
daemon tests, one way for all of them.

The socket file exists from bind(), a moment before the daemon listens, so a
daemon counts as started once a connection to it is accepted (a connection
that sends nothing is dropped by the daemon without a trace)."""
import signal
import socket
import subprocess
import sys
import time


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def wait_listening(path):
    for _ in range(400):
        try:
            with socket.socket(socket.AF_UNIX) as s:
                s.connect(path)
            return
        except OSError:
            time.sleep(0.05)
    fail("daemon did not listen on " + path)


def start(hl, sock, db, extra=(), **popen_args):
    """`heapledger daemon --socket SOCK --db DB EXTRA...`, listening."""
    daemon = subprocess.Popen([hl, "daemon", "--socket", sock, "--db", db] + list(extra),
                              stderr=subprocess.PIPE, text=True, **popen_args)
    wait_listening(sock)
    return daemon


def stop(daemon, hung="daemon did not stop on SIGTERM"):
    """SIGTERM, then the daemon's stderr once it has exited."""
    daemon.send_signal(signal.SIGTERM)
    try:
        _, err = daemon.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        daemon.kill()
        fail(hung)
    return err
