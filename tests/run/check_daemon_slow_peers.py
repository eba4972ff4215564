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
   (--stall-timeout-ms 0: no peer is cut here, so the cap alone is seen.)
2. Idle timeout: with --idle-timeout-ms 1000, 3 peers stuck inside a record and
   2 that never say HELLO are closed with a log line each; a program that
   rests between records (no EXIT yet) is not, and is stored once it ends.
   The stuck peers' connections were ended by the reporter while they ran
   on: each is stored as connection_lost, and its report says so.
3. Fair share: under a 2 MiB cap, 20 slow peers hold all the room and wait
   for more; alloc_loop, a real program under the hook whose every batch
   (128 KiB) needs room past 64 KiB, runs meanwhile. It is read (each batch
   is all in its socket when it asks for room, so it is read past the cap
   and gives the room back at once): stored in full (every allocation and
   free, its exit record) and never goes standalone (it used to wait
   wait_ms, 10 s, and go on without the reporter). The peers that held room without finishing their record for
   --stall-timeout-ms while others waited are cut: each named in the log
   with why, counted when no connection waits any more, and stored as cut
   by the reporter (exit.standalone "cut_by_reporter"); the last holders,
   once none waits, are kept until their peer closes.

Every wait is for an event (a log line, a line from a client, a process's
end), and all of them share one budget (--budget SECONDS, set by meson.build
inside the test's own timeout): a slow machine makes the wait that ran out
fail and say what it was waiting for, never a bare timeout.

Usage: check_daemon_slow_peers.py HEAPLEDGER FAKE_CLIENT [--sanitized]
       [--budget SECONDS] --hook LIBHEAPLEDGER --alloc-loop ALLOC_LOOP
--sanitized: the daemon runs under AddressSanitizer, whose own quarantine of
freed memory makes its RSS say nothing about the daemon's buffers; the RSS
bound is then skipped (said on stdout) and everything else is checked.
"""
import atexit
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
FAIR_SLOW = 20
LOOPS = 400000
LOST = ("warning: data missing: the hook went on standalone after its connection to the"
        " reporter failed mid-run")


def status_kib(pid, key):
    with open("/proc/%d/status" % pid, encoding="utf-8") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    fail("no %s for pid %d" % (key, pid))


class Budget:
    """The time all waits share; what ran out is named."""

    def __init__(self, seconds):
        self.end = time.monotonic() + seconds
        self.seconds = seconds

    def left(self, what):
        left = self.end - time.monotonic()
        if left <= 0:
            fail("the test's %d s ran out before %s" % (self.seconds, what))
        return left


BUDGET = Budget(100)


class Lines:
    """A stream read line by line as it comes; waits wake on each line."""

    def __init__(self, stream):
        self.lines = []
        self.ended = False
        self.cond = threading.Condition()
        self.reader = threading.Thread(target=self._read, args=(stream,), daemon=True)
        self.reader.start()

    def _read(self, stream):
        for line in stream:
            with self.cond:
                self.lines.append(line)
                self.cond.notify_all()
        with self.cond:
            self.ended = True
            self.cond.notify_all()

    def count(self, what):
        return sum(what in l for l in self.lines)

    def wait_for(self, what, count, name):
        """Until `count` lines contain `what`; fails if the stream ends or
        the budget runs out first."""
        with self.cond:
            while self.count(what) < count:
                if self.ended:
                    break
                self.cond.wait(BUDGET.left("%s said %r %d times (%d so far):\n%s"
                                           % (name, what, count, self.count(what),
                                              self.text()[-3000:])))
            if self.count(what) < count:
                fail("%s ended after saying %r %d of %d times:\n%s"
                     % (name, what, self.count(what), count, self.text()[-3000:]))

    def text(self):
        return "".join(self.lines)


STARTED = []


@atexit.register
def kill_started():
    """A failed check leaves nothing running: an orphaned daemon would keep
    meson's output pipe open and turn the failure into a timeout."""
    for proc in STARTED:
        if proc.poll() is None:
            proc.kill()


def wait_exit(proc, what):
    try:
        return proc.wait(timeout=BUDGET.left(what))
    except subprocess.TimeoutExpired:
        proc.kill()
        fail("the test's %d s ran out before %s" % (BUDGET.seconds, what))


class Daemon:
    """A daemon whose stderr is collected line by line as it comes."""

    def __init__(self, hl, tmp, extra):
        self.sock = os.path.join(tmp, "hl.sock")
        self.db = os.path.join(tmp, "d.db")
        self.proc = daemon_util.start(hl, self.sock, self.db, extra)
        STARTED.append(self.proc)
        self.log = Lines(self.proc.stderr)

    def wait_for(self, what, count):
        self.log.wait_for(what, count, "the daemon")

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        wait_exit(self.proc, "the daemon stopped on SIGTERM")
        self.log.reader.join()
        text = self.log.text()
        if self.proc.returncode != 0:
            fail("daemon exit status %d:\n%s" % (self.proc.returncode, text[-3000:]))
        return text

    def report(self, hl):
        what = "`heapledger report` ended"
        try:
            rep = subprocess.run([hl, "report", "--db", self.db, "--format", "json"],
                                 capture_output=True, text=True,
                                 timeout=BUDGET.left(what))
        except subprocess.TimeoutExpired:
            fail("the test's %d s ran out before %s" % (BUDGET.seconds, what))
        if rep.returncode != 0:
            fail("report: " + rep.stderr)
        return json.loads(rep.stdout)["processes"]


def client(fake, sock, args, **kw):
    env = dict(os.environ, HEAPLEDGER_SOCKET=sock)
    proc = subprocess.Popen([fake] + args, env=env, text=True, **kw)
    STARTED.append(proc)
    return proc


class SlowClient:
    """fake_client's `slow` scenario: its lines are read as they come; it
    ends once its stdin closes."""

    def __init__(self, fake, sock, args):
        self.proc = client(fake, sock, ["slow"] + args,
                           stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.out = Lines(self.proc.stdout)

    def line(self, starts, name):
        """Its first line starting with `starts`."""
        self.out.wait_for(starts, 1, name)
        return next(l for l in self.out.lines if starts in l)

    def finish(self):
        """Closes its stdin; what it printed once it has exited."""
        self.proc.stdin.close()
        wait_exit(self.proc, "the slow client ended")
        self.out.reader.join()
        return self.out.text()


def check_buffering_cap(hl, fake, tmp, sanitized):
    d = Daemon(hl, tmp, ["-q", "--idle-timeout-ms", "0", "--stall-timeout-ms", "0"])
    base = status_kib(d.proc.pid, "VmRSS")
    slow = SlowClient(fake, d.sock, [str(SLOW), "700000", "0"])
    line = slow.line("sent ", "the slow client")
    print("slow peers: " + line.strip())
    d.wait_for("connection buffers at their cap", 1)
    # A program arriving now is read: its records are small.
    leak = client(fake, d.sock, ["leak"])
    if wait_exit(leak, "the normal client ended beside the slow peers") != 3:
        fail("a normal client exited %d beside the slow peers" % leak.returncode)
    peak = status_kib(d.proc.pid, "VmHWM")
    print("daemon RSS at start %d KiB, peak with %d slow peers %d KiB (+%.1f MiB)"
          % (base, SLOW, peak, (peak - base) / 1024))
    if sanitized:
        print("RSS bound not checked: the daemon runs under AddressSanitizer")
    elif peak - base > 64 * 1024:
        fail("%d slow peers raised the daemon's RSS by %.1f MiB (cap: 32 MiB of"
             " buffers beyond 64 KiB each)" % (SLOW, (peak - base) / 1024))
    out = slow.finish()
    if "closed by the reporter: 0" not in out:
        fail("the reporter closed slow peers without an idle timeout: " + out)
    # Said however the last waiting connection stopped waiting (read
    # again, or its peer gone).
    d.wait_for("connection buffers below their cap again", 1)
    text = d.stop()
    procs = d.report(hl)
    if len(procs) != SLOW + 1:
        fail("%d processes stored, expected %d" % (len(procs), SLOW + 1))
    normal = [p for p in procs if p["pid"] == leak.pid]
    if len(normal) != 1 or normal[0]["summary"]["in_use_bytes"] != 23760 \
            or not normal[0]["exit"]["exit_record"]:
        fail("the normal client was not stored whole: %s" % normal)
    cut = [p for p in procs if p["pid"] == slow.proc.pid]
    if len(cut) != SLOW or any(p["exit"]["exit_record"] or not p["stream_incomplete"]
                               for p in cut):
        fail("the slow peers are not all stored as cut short")
    if text.count("ended inside a record") != SLOW:
        fail("%d of %d slow peers logged as ended inside a record"
             % (text.count("ended inside a record"), SLOW))


def check_idle_timeout(hl, fake, tmp):
    # 1 s: the resting program must not look stuck to a daemon that waits
    # for it on a loaded machine (its HELLO follows its connect at once).
    d = Daemon(hl, tmp, ["--idle-timeout-ms", "1000"])
    hold = client(fake, d.sock, ["hold"], stdin=subprocess.PIPE)
    slow = SlowClient(fake, d.sock, ["3", "100000", "2"])
    line = slow.line("sent ", "the slow client")
    if line.strip() != "sent 3 of 3":
        fail("slow client printed %r" % line)
    d.wait_for("inside a record (", 3)
    d.wait_for("no HELLO within 1000 ms", 2)
    out = slow.finish()
    if "closed by the reporter: 5" not in out:
        fail("the idle peers were not closed: " + out)
    hold.stdin.close()
    if wait_exit(hold, "the resting program ended") != 3:
        fail("a program idle between records was cut off (exit %d)" % hold.returncode)
    text = d.stop()
    procs = d.report(hl)
    rested = [p for p in procs if p["pid"] == hold.pid]
    if len(rested) != 1 or not rested[0]["exit"]["exit_record"]:
        fail("the resting program was not stored with its exit: %s" % rested)
    stuck = [p for p in procs if p["pid"] == slow.proc.pid]
    if len(stuck) != 3 or any(not p["stream_incomplete"] for p in stuck):
        fail("the stuck peers are not stored as cut short: %s" % stuck)
    for p in stuck:
        if p["exit"]["standalone"] != "connection_lost":
            fail("a peer the reporter cut off is not connection_lost: %s" % p["exit"])
        if "==%d== %s" % (p["pid"], LOST) not in text:
            fail("no connection-lost warning in the daemon's report:\n" + text[-3000:])


def check_fair_share(hl, fake, hook, loop, tmp):
    d = Daemon(hl, tmp, ["-q", "--idle-timeout-ms", "0", "--buffer-cap-kib", "2048",
                         "--stall-timeout-ms", "1000"])
    slow = SlowClient(fake, d.sock, [str(FAIR_SLOW), "700000", "0"])
    d.wait_for("connection buffers at their cap", 1)
    env = dict(os.environ, LD_PRELOAD=hook, HEAPLEDGER_SOCKET=d.sock)
    env.pop("HEAPLEDGER_OPTIONS", None)  # wait_ms as users have it: 10 s
    prog = subprocess.Popen([loop, str(LOOPS)], env=env, stderr=subprocess.PIPE, text=True)
    STARTED.append(prog)
    try:
        _, err = prog.communicate(timeout=BUDGET.left("alloc_loop ended beside the slow peers"))
    except subprocess.TimeoutExpired:
        prog.kill()
        fail("the test's %d s ran out before alloc_loop ended" % BUDGET.seconds)
    if prog.returncode != 3:
        fail("alloc_loop exited %d beside the slow peers:\n%s" % (prog.returncode, err))
    if "standalone" in err:
        fail("alloc_loop went on standalone beside the slow peers:\n" + err)
    # Each slow peer is read in its turn and stalls; while others wait it
    # is cut, until none waits (the last holders harm nobody: kept).
    d.wait_for("connection buffers below their cap again", 1)
    out = slow.finish()
    text = d.stop()
    named = [l for l in text.splitlines() if "completed no record for 1000 ms" in l]
    print("slow peers: %s; %d cut" % (out.strip().replace("\n", "; "), len(named)))
    if not named or "closed by the reporter: %d\n" % len(named) not in out \
            or "%d connections were cut" % len(named) not in text:
        fail("the slow peers cut are not the ones named (%d):\n%s\n%s"
             % (len(named), out, text[-3000:]))
    if any("(pid %d)" % slow.proc.pid not in l for l in named):
        fail("a cut peer is not named with its pid:\n" + "\n".join(named))
    procs = d.report(hl)
    real = [p for p in procs if p["pid"] == prog.pid]
    if len(real) != 1:
        fail("alloc_loop stored %d times" % len(real))
    summary, end = real[0]["summary"], real[0]["exit"]
    if not end["exit_record"] or end.get("standalone") or real[0]["stream_incomplete"] \
            or summary["allocs"] != LOOPS + 16 or summary["frees"] != LOOPS \
            or summary["in_use_bytes"] != 1600:
        fail("alloc_loop was not stored in full: exit %s, summary %s" % (end, summary))
    peers = [p for p in procs if p["pid"] == slow.proc.pid]
    cut = [p for p in peers if p["exit"].get("standalone") == "cut_by_reporter"]
    if len(peers) != FAIR_SLOW or len(cut) != len(named) \
            or any(not p["stream_incomplete"] for p in peers) \
            or any("cut its connection" not in p["stream_incomplete"] for p in cut):
        fail("%d slow peers stored, %d as cut by the reporter (%d named): %s"
             % (len(peers), len(cut), len(named),
                [(p["exit"], p["stream_incomplete"]) for p in peers]))
    print("alloc_loop stored in full beside %d slow peers; cut: %s" % (FAIR_SLOW, named[0]))


def main():
    global BUDGET
    hl, fake = sys.argv[1], sys.argv[2]
    sanitized = "--sanitized" in sys.argv[3:]
    if "--budget" in sys.argv[3:]:
        BUDGET = Budget(int(sys.argv[sys.argv.index("--budget") + 1]))
    hook = sys.argv[sys.argv.index("--hook") + 1]
    loop = sys.argv[sys.argv.index("--alloc-loop") + 1]
    # The fair share needs a program under the real hook, and a sanitizer
    # build's hook cannot be preloaded into a plain program (the sanitizer's
    # runtime must come first): the plain build runs it.
    if not sanitized:
        with tempfile.TemporaryDirectory() as tmp:
            check_fair_share(hl, fake, hook, loop, tmp)
    else:
        print("fair share: not run under a sanitizer build (the plain build runs it)")
    with tempfile.TemporaryDirectory() as tmp:
        check_buffering_cap(hl, fake, tmp, sanitized)
    with tempfile.TemporaryDirectory() as tmp:
        check_idle_timeout(hl, fake, tmp)
    print("PASS")


if __name__ == "__main__":
    main()
