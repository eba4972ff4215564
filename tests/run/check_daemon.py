#!/usr/bin/env python3
"""tests/run/check_daemon.py: `heapledger daemon` collects several processes
started with the environment `heapledger env` prints, stores them as one run,
and on SIGTERM finishes writing and exits 0.

Usage: check_daemon.py HEAPLEDGER FAKE_CLIENT
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import time


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    heapledger, client = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        sock = os.path.join(tmp, "hl.sock")
        db = os.path.join(tmp, "d.db")
        daemon = subprocess.Popen([heapledger, "daemon", "--socket", sock, "--db", db],
                                  stderr=subprocess.PIPE, text=True)
        for _ in range(100):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        else:
            fail("daemon did not create its socket")
        env_out = subprocess.run([heapledger, "env", "--socket", sock],
                                 capture_output=True, text=True, check=True).stdout
        if "export LD_PRELOAD=" not in env_out or "export HEAPLEDGER_SOCKET='%s'" % sock not in env_out:
            fail("env printed: " + env_out)
        # Apply the exports through a shell, as a user would.
        script = env_out + 'exec "$@"'
        clients = [subprocess.Popen(["sh", "-c", script, "sh", client, "leak"])
                   for _ in range(3)]
        for c in clients:
            if c.wait() != 3:
                fail("client exit status %d" % c.returncode)
        # One killed before its EXIT record: reported and stored with a warning.
        killed = subprocess.Popen(["sh", "-c", script, "sh", client, "kill"])
        if killed.wait() != -signal.SIGKILL:
            fail("killed client exit status %d" % killed.returncode)
        time.sleep(0.3)
        daemon.send_signal(signal.SIGTERM)
        try:
            _, err = daemon.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            daemon.kill()
            fail("daemon did not stop on SIGTERM")
        sys.stdout.write(err[-3000:])
        if daemon.returncode != 0:
            fail("daemon exit status %d" % daemon.returncode)
        rep = subprocess.run([heapledger, "report", "--db", db, "--format", "json"],
                             capture_output=True, text=True)
        if rep.returncode != 0:
            fail("report: " + rep.stderr)
        doc = json.loads(rep.stdout)
        if doc["run"]["mode"] != "daemon" or len(doc["processes"]) != 4:
            fail("expected one daemon run with 4 processes: %s" % doc["run"])
        cut = [p for p in doc["processes"] if p["pid"] == killed.pid]
        if len(cut) != 1 or cut[0]["exit"]["exit_record"] or not cut[0]["stream_incomplete"]:
            fail("the killed client is not marked as cut short: %s" % cut)
        if "==%d== warning: the event stream ended without its exit record" % killed.pid \
                not in err:
            fail("the daemon's report does not warn that pid %d's stream was cut" % killed.pid)
        for p in doc["processes"]:
            if p is cut[0]:
                continue
            if not p["exit"]["exit_record"] or p["stream_incomplete"] is not None:
                fail("pid %d ended normally but is marked as cut short" % p["pid"])
            if p["summary"]["in_use_blocks"] != 990 or p["leaks"][0]["bytes"] != 23760:
                fail("wrong summary for pid %d" % p["pid"])
            if p["leaks"][0]["stack"][0]["function"] != "fake_leaker":
                fail("leak not symbolized: %s" % p["leaks"][0]["stack"][0])
    print("PASS")


if __name__ == "__main__":
    main()
