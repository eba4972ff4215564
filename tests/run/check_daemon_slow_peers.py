#!/usr/bin/env python3
"""tests/run/check_daemon_slow_peers.py: slow daemon peers hold bounded
memory, and what happens at each limit is said.

1. Buffering cap: 150 peers each send the first 700 KB of a 786 KB record
   and stall. Each used to hold a buffer of about 1 MiB (600 such peers: 642
   MB). Now what the connections hold beyond 64 KiB each is capped at 32
   MiB: the peers past the cap are not read (back-pressure, logged once),
   the daemon's peak RSS stays within 64 MiB of its RSS at start, a normal
   program is still stored meanwhile, and once the peers close, every one
   is read, reported and stored with the stream-cut warning.
2. Idle timeout: with --idle-timeout-ms, 3 peers stuck inside a record and
   2 that never say HELLO are closed with a log line each; a program that
   rests between records (no EXIT yet) is not, and is stored once it ends.

Usage: check_daemon_slow_peers.py HEAPLEDGER FAKE_CLIENT [--sanitized]
--sanitized: the daemon runs under AddressSanitizer, whose own quarantine of
freed memory makes its RSS say nothing about the daemon's buffers; the RSS
bound is then skipped (said on stdout) and everything else is checked.
"""
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import daemon_util  # noqa: E402
from daemon_util import fail  # noqa: E402

SLOW = 150
CUT = "warning: the event stream ended without its exit record"


def status_kib(pid, key):
    with open("/proc/%d/status" % pid, encoding="utf-8") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    fail("no %s for pid %d" % (key, pid))


class Daemon:
    """A daemon whose stderr is collected line by line as it comes."""

    def __init__(self, hl, tmp, extra):
        self.sock = os.path.join(tmp, "hl.sock")
        self.db = os.path.join(tmp, "d.db")
        self.proc = daemon_util.start(hl, self.sock, self.db, extra)
        self.lines = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self):
        for line in self.proc.stderr:
            self.lines.append(line)

    def wait_for(self, what, count, guard=60):
        """Until `count` lines contain `what` (guard: a hang, not a speed)."""
        end = time.monotonic() + guard
        while sum(what in l for l in self.lines) < count:
            if time.monotonic() > end:
                fail("daemon logged %d of %d lines with %r:\n%s"
                     % (sum(what in l for l in self.lines), count, what,
                        "".join(self.lines)[-3000:]))
            time.sleep(0.05)

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            fail("daemon did not stop on SIGTERM")
        self.reader.join()
        text = "".join(self.lines)
        if self.proc.returncode != 0:
            fail("daemon exit status %d:\n%s" % (self.proc.returncode, text[-3000:]))
        return text

    def report(self, hl):
        rep = subprocess.run([hl, "report", "--db", self.db, "--format", "json"],
                             capture_output=True, text=True)
        if rep.returncode != 0:
            fail("report: " + rep.stderr)
        return json.loads(rep.stdout)["processes"]


def client(fake, sock, args, **kw):
    env = dict(os.environ, HEAPLEDGER_SOCKET=sock)
    return subprocess.Popen([fake] + args, env=env, text=True, **kw)


def check_buffering_cap(hl, fake, tmp, sanitized):
    d = Daemon(hl, tmp, ["-q", "--idle-timeout-ms", "0"])
    base = status_kib(d.proc.pid, "VmRSS")
    slow = client(fake, d.sock, ["slow", str(SLOW), "700000", "0"],
                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    line = slow.stdout.readline()
    print("slow peers: " + line.strip())
    if not line.startswith("sent "):
        fail("slow client printed %r" % line)
    d.wait_for("connection buffers at their cap", 1)
    # A program arriving now is read: its records are small.
    leak = client(fake, d.sock, ["leak"])
    if leak.wait(timeout=120) != 3:
        fail("a normal client exited %d beside the slow peers" % leak.returncode)
    peak = status_kib(d.proc.pid, "VmHWM")
    print("daemon RSS at start %d KiB, peak with %d slow peers %d KiB (+%.1f MiB)"
          % (base, SLOW, peak, (peak - base) / 1024))
    if sanitized:
        print("RSS bound not checked: the daemon runs under AddressSanitizer")
    elif peak - base > 64 * 1024:
        fail("%d slow peers raised the daemon's RSS by %.1f MiB (cap: 32 MiB of"
             " buffers beyond 64 KiB each)" % (SLOW, (peak - base) / 1024))
    out, _ = slow.communicate("", timeout=120)
    if "closed by the reporter: 0" not in out:
        fail("the reporter closed slow peers without an idle timeout: " + out)
    d.wait_for("connection buffers below their cap again", 1)
    text = d.stop()
    procs = d.report(hl)
    if len(procs) != SLOW + 1:
        fail("%d processes stored, expected %d" % (len(procs), SLOW + 1))
    normal = [p for p in procs if p["pid"] == leak.pid]
    if len(normal) != 1 or normal[0]["summary"]["in_use_bytes"] != 23760 \
            or not normal[0]["exit"]["exit_record"]:
        fail("the normal client was not stored whole: %s" % normal)
    cut = [p for p in procs if p["pid"] == slow.pid]
    if len(cut) != SLOW or any(p["exit"]["exit_record"] or not p["stream_incomplete"]
                               for p in cut):
        fail("the slow peers are not all stored as cut short")
    if text.count("ended inside a record") != SLOW:
        fail("%d of %d slow peers logged as ended inside a record"
             % (text.count("ended inside a record"), SLOW))


def check_idle_timeout(hl, fake, tmp):
    d = Daemon(hl, tmp, ["--idle-timeout-ms", "300"])
    hold = client(fake, d.sock, ["hold"], stdin=subprocess.PIPE)
    slow = client(fake, d.sock, ["slow", "3", "100000", "2"],
                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    line = slow.stdout.readline()
    if line.strip() != "sent 3 of 3":
        fail("slow client printed %r" % line)
    d.wait_for("inside a record (", 3)
    d.wait_for("no HELLO within 300 ms", 2)
    out, _ = slow.communicate("", timeout=120)
    if "closed by the reporter: 5" not in out:
        fail("the idle peers were not closed: " + out)
    hold.communicate("", timeout=120)
    if hold.returncode != 3:
        fail("a program idle between records was cut off (exit %d)" % hold.returncode)
    text = d.stop()
    procs = d.report(hl)
    rested = [p for p in procs if p["pid"] == hold.pid]
    if len(rested) != 1 or not rested[0]["exit"]["exit_record"]:
        fail("the resting program was not stored with its exit: %s" % rested)
    stuck = [p for p in procs if p["pid"] == slow.pid]
    if len(stuck) != 3 or any(not p["stream_incomplete"] for p in stuck):
        fail("the stuck peers are not stored as cut short: %s" % stuck)
    for p in stuck:
        if "==%d== %s" % (p["pid"], CUT) not in text:
            fail("no stream-cut warning in the daemon's report")


def main():
    hl, fake = sys.argv[1], sys.argv[2]
    sanitized = "--sanitized" in sys.argv[3:]
    with tempfile.TemporaryDirectory() as tmp:
        check_buffering_cap(hl, fake, tmp, sanitized)
    with tempfile.TemporaryDirectory() as tmp:
        check_idle_timeout(hl, fake, tmp)
    print("PASS")


if __name__ == "__main__":
    main()
