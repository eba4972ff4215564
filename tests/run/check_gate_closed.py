#!/usr/bin/env python3
"""tests/run/check_gate_closed.py: a gated run fails closed. Whatever made
heapledger's verdict incomplete fails `run --error-exitcode`, `daemon
--error-exitcode` and `heapledger gate`, each with its own reason line, and
a zero-byte leak is a leak (valgrind, run here as the oracle, exits 1 on
"0 bytes in 1 blocks are definitely lost"). A hook that went on standalone
says why: the reporter stalled, its connection was lost (the daemon
stopped mid-run), the program took its descriptor; the events its hook
dropped after it went on standalone are counted; a fork child, a program
started by posix_spawn or vfork and exec, and an exec'd image that never
connected are "not observed". The SARIF that carries a
standalone reason as a toolExecutionNotification passes sarif-multitool
validate (sarif_validator.py).

usage: check_gate_closed.py HEAPLEDGER VERDICT_CASES VFORK_CLONE BUILD_DIR
(HEAPLEDGER_LIB names libheapledger.so)
"""
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time

import daemon_util
import sarif_validator

HL, CASES, VFORK, BUILD = sys.argv[1:5]
VALIDATOR = sarif_validator.install(BUILD)
INCOMPLETE = "gate FAILED: the verdict is incomplete: "
MISSING = "data missing: the hook went on standalone after "
DESCRIPTOR = "the program closed or replaced (dup2) heapledger's descriptor"
STALLED = "the reporter stopped reading for wait_ms"
LOST = "its connection to the reporter failed mid-run"
UNOBSERVED = "not observed: a forked child its parent reported never connected to heapledger"


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(args, want, what, **kw):
    p = subprocess.run(args, capture_output=True, text=True, timeout=300, **kw)
    if p.returncode != want:
        fail("%s: exit %d, expected %d\n%s%s" % (what, p.returncode, want, p.stdout[-3000:],
                                                  p.stderr[-3000:]))
    return p.stdout + p.stderr


def expect(text, needle, what):
    if needle not in text:
        fail("%s: no %r in:\n%s" % (what, needle, text[-3000:]))


def zero_byte_leak(tmp):
    db = os.path.join(tmp, "zero.db")
    out = run([HL, "run", "--db", db, "--error-exitcode=7", "--", CASES, "zero"], 7, "run zero")
    expect(out, "0 bytes in 1 blocks are definitely lost", "run zero")
    expect(out, "ERROR SUMMARY: 1 errors from 1 contexts", "run zero")
    expect(out, "heapledger: gate FAILED: 0 bytes in 1 block", "run zero")
    run([HL, "gate", "--db", db], 1, "gate zero")
    sock, ddb = os.path.join(tmp, "zero.sock"), os.path.join(tmp, "zerod.db")
    daemon = daemon_util.start(HL, sock, ddb, ["--error-exitcode=7"])
    env = dict(os.environ, HEAPLEDGER_SOCKET=sock, LD_PRELOAD=os.environ["HEAPLEDGER_LIB"])
    run([CASES, "zero"], 0, "zero under the daemon", env=env)
    err = daemon_util.stop(daemon)
    if daemon.returncode != 7 or "gate FAILED: 0 bytes in 1 block" not in err:
        fail("daemon zero: exit %d, expected 7\n%s" % (daemon.returncode, err[-3000:]))
    run([HL, "valgrind", "--leak-check=full", "--error-exitcode=1", "--", CASES, "zero"], 1,
        "heapledger valgrind zero")
    if shutil.which("valgrind"):
        run(["valgrind", "-q", "--leak-check=full", "--error-exitcode=1", CASES, "zero"], 1,
            "valgrind zero (the oracle)")


def standalone_doors(db, reason, words, what):
    """Every output of the stored run says why its hook went on standalone."""
    out = run([HL, "gate", "--db", db], 1, "gate " + what)
    expect(out, INCOMPLETE + MISSING + words, "gate " + what)
    doc = json.loads(run([HL, "report", "--db", db, "--format", "json"], 0, "json " + what))
    exits = [p["exit"] for p in doc["processes"]]
    if [e.get("standalone") for e in exits] != [reason]:
        fail("%s: JSON exit.standalone %r, expected [%r]" % (what, exits, reason))
    xml = run([HL, "report", "--db", db, "--format", "valgrind-xml"], 0, "xml " + what)
    expect(xml, "<clientmsg>", "xml " + what)
    expect(xml, MISSING + words, "xml " + what)
    text = run([HL, "report", "--db", db, "--format", "sarif"], 0, "sarif " + what)
    sarif = json.loads(text)
    if VALIDATOR:
        with open(db + ".sarif", "w") as f:
            f.write(text)
        sarif_validator.validate(VALIDATOR, db + ".sarif")
    notes = sarif["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    if [n["properties"]["standalone"] for n in notes] != [reason] or \
            MISSING + words not in notes[0]["message"]["text"]:
        fail("%s: SARIF notifications %r" % (what, notes))
    junit = run([HL, "report", "--db", db, "--format", "junit"], 0, "junit " + what)
    expect(junit, MISSING + words, "junit " + what)
    # the JSON report keeps it through an import into another database
    js, idb = db + ".json", db + ".imported.db"
    with open(js, "w") as f:
        json.dump(doc, f)
    run([HL, "import", "--db", idb, js], 0, "import " + what)
    out = run([HL, "gate", "--db", idb], 1, "gate imported " + what)
    expect(out, INCOMPLETE + MISSING + words, "gate imported " + what)


def closed_descriptor(tmp):
    """The program closes heapledger's descriptor, then leaks: unseen, and
    every door says why."""
    db = os.path.join(tmp, "fds.db")
    out = run([HL, "run", "--db", db, "--error-exitcode=7", "--errors-for-leak-kinds=all",
               "--", CASES, "closefds"], 7, "run closefds")
    # Its leak is unseen, or seen only from the shared event buffers when
    # the hook had not tried a send since the close (timing): either way
    # the report says what it could not see, never that nothing leaked.
    if "heapledger could not see this process to its end" not in out and \
            "LEAK SUMMARY" not in out:
        fail("run closefds: neither unseen nor a leak report:\n" + out[-3000:])
    expect(out, MISSING + DESCRIPTOR, "run closefds")
    expect(out, INCOMPLETE + MISSING + DESCRIPTOR, "run closefds")
    if "All heap blocks were freed" in out:
        fail("run closefds claims no leaks are possible:\n" + out[-3000:])
    standalone_doors(db, "descriptor_taken", DESCRIPTOR, "closefds")
    # dup2 over it: the same, for the same reason
    db = os.path.join(tmp, "dup2.db")
    out = run([HL, "run", "--db", db, "--error-exitcode=7", "--", CASES, "dup2fds"], 7,
              "run dup2fds")
    expect(out, INCOMPLETE + MISSING + DESCRIPTOR, "run dup2fds")


def stalled_reporter(tmp):
    """The reporter stops reading for longer than wait_ms: the hook goes on
    standalone (as it must: the program comes first), the run says so and
    fails."""
    flag, db = os.path.join(tmp, "go"), os.path.join(tmp, "stall.db")
    # Every event sent (tally=0), as threads send them: counted in the hook,
    # a one-thread program has nothing to stall on until its exit.
    env = dict(os.environ, HEAPLEDGER_OPTIONS="wait_ms=100:tally=0")
    p = subprocess.Popen([HL, "run", "--db", db, "--error-exitcode=7", "--", CASES, "stall",
                          flag], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         env=env)
    while not os.path.exists(flag + ".ready"):
        if p.poll() is not None:
            fail("run stall ended early:\n" + p.stderr.read())
        time.sleep(0.01)
    child = int(open("/proc/%d/task/%d/children" % (p.pid, p.pid)).read().split()[0])
    os.kill(p.pid, signal.SIGSTOP)
    open(flag, "w").close()
    while open("/proc/%d/stat" % child).read().rsplit(")", 1)[1].split()[0] != "Z":
        time.sleep(0.02)
    os.kill(p.pid, signal.SIGCONT)
    out, err = p.communicate(timeout=300)
    if p.returncode != 7:
        fail("run stall: exit %d, expected 7\n%s" % (p.returncode, err[-3000:]))
    expect(err, "the reporter stopped reading (wait_ms passed)", "run stall")
    expect(err, MISSING + STALLED, "run stall")
    expect(err, INCOMPLETE + MISSING + STALLED, "run stall")
    # what the hook allocated and freed after it gave up is counted as
    # dropped (its churn: a million of each), not lost without a word
    expect(err, "most after it went on standalone: data may be missing", "run stall")
    doc = json.loads(run([HL, "report", "--db", db, "--format", "json"], 0, "json stall"))
    dropped = doc["processes"][0]["summary"]["dropped_events"]
    if dropped < 100000:
        fail("stall: %d events dropped after standalone, expected the churn's" % dropped)
    standalone_doors(db, "reporter_stalled", STALLED, "stall")


def lost_connection(tmp):
    """The daemon stops (SIGTERM) while a program it watches runs on: it
    ends the program's connection, so the hook goes on standalone at its
    next send (the program carries on and exits 0, its hook saying why).
    The run records connection_lost (not a descriptor the program took) and
    the gated daemon, the gate and every output fail or say so."""
    sock, db = os.path.join(tmp, "lost.sock"), os.path.join(tmp, "lost.db")
    flag = os.path.join(tmp, "lost-go")
    daemon = daemon_util.start(HL, sock, db, ["--error-exitcode=7"])
    env = dict(os.environ, HEAPLEDGER_SOCKET=sock, LD_PRELOAD=os.environ["HEAPLEDGER_LIB"])
    prog = subprocess.Popen([CASES, "stall", flag], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)
    while not os.path.exists(flag + ".ready"):
        if prog.poll() is not None:
            fail("stall under the daemon ended early:\n" + prog.stderr.read())
        time.sleep(0.01)
    err = daemon_util.stop(daemon)
    if daemon.returncode != 7 or INCOMPLETE + MISSING + LOST not in err:
        fail("daemon stopped mid-run: exit %d, expected 7 and %r\n%s" %
             (daemon.returncode, INCOMPLETE + MISSING + LOST, err[-3000:]))
    open(flag, "w").close()
    out, perr = prog.communicate(timeout=300)
    if prog.returncode != 0 or "reporter connection lost; continuing standalone" not in perr:
        fail("the program after its reporter went: exit %d\n%s" % (prog.returncode,
                                                                 perr[-3000:]))
    standalone_doors(db, "connection_lost", LOST, "lost")


def unobserved_fork(tmp):
    """A fork child its parent's FORK names never connects: not observed,
    and the gate fails closed, live, stored, imported and under the daemon."""
    db = os.path.join(tmp, "unseen.db")
    out = run([HL, "run", "--db", db, "--error-exitcode=7", "--", CASES, "forkunseen"], 7,
              "run forkunseen")
    expect(out, UNOBSERVED, "run forkunseen")
    expect(out, INCOMPLETE + UNOBSERVED, "run forkunseen")
    out = run([HL, "gate", "--db", db], 1, "gate forkunseen")
    expect(out, INCOMPLETE + UNOBSERVED, "gate forkunseen")
    doc = json.loads(run([HL, "report", "--db", db, "--format", "json"], 0, "json forkunseen"))
    procs = [(p["origin"], p["exit"].get("standalone")) for p in doc["processes"]]
    if sorted(procs) != [("fork", "not_observed"), ("start", None)]:
        fail("forkunseen: processes %r" % procs)
    daemon_fails_closed(tmp, "forkunseen", UNOBSERVED)


def daemon_fails_closed(tmp, case, reason):
    """CASES `case` under a gated daemon: it exits 7 for `reason`."""
    sock, ddb = os.path.join(tmp, case + ".sock"), os.path.join(tmp, case + "d.db")
    daemon = daemon_util.start(HL, sock, ddb, ["--error-exitcode=7"])
    env = dict(os.environ, HEAPLEDGER_SOCKET=sock, LD_PRELOAD=os.environ["HEAPLEDGER_LIB"])
    run([CASES, case], 0, case + " under the daemon", env=env)
    err = daemon_util.stop(daemon)
    if daemon.returncode != 7 or INCOMPLETE + reason not in err:
        fail("daemon %s: exit %d, expected 7\n%s" % (case, daemon.returncode, err[-3000:]))


UNSPAWNED = "not observed: a program its parent started (posix_spawn, or vfork and exec)"


def unobserved_spawn(tmp):
    """A program started by posix_spawn or vfork and exec with LD_PRELOAD
    gone never connects: not observed, the gate fails closed, live, stored
    and under the daemon; a vfork child whose exec failed started nothing
    and misses nothing."""
    for case in ("spawnunseen", "vforkunseen"):
        db = os.path.join(tmp, case + ".db")
        out = run([HL, "run", "--db", db, "--error-exitcode=7", "--", CASES, case], 7,
                  "run " + case)
        expect(out, INCOMPLETE + UNSPAWNED, "run " + case)
        out = run([HL, "gate", "--db", db], 1, "gate " + case)
        expect(out, INCOMPLETE + UNSPAWNED, "gate " + case)
        doc = json.loads(run([HL, "report", "--db", db, "--format", "json"], 0, "json " + case))
        procs = sorted((p["origin"], p["exit"].get("standalone") or "", p["exe"])
                       for p in doc["processes"])
        if [(o, s) for o, s, _ in procs] != [("start", ""), ("start", "not_observed_spawn")] \
                or not procs[1][2].endswith("/proc/self/exe"):
            fail("%s: processes %r" % (case, procs))
    out = run([HL, "run", "--no-db", "--error-exitcode=7", "--", CASES, "vforkfail"], 0,
              "run vforkfail")
    if "not observed" in out:
        fail("vforkfail: a failed exec reported as a program not observed:\n" + out[-3000:])
    daemon_fails_closed(tmp, "spawnunseen", UNSPAWNED)


def dropped_events(tmp):
    # Every event sent (tally=0): a vfork child's events past its parent's
    # full buffer are dropped. Counted in the hook, a vfork child's work is
    # counted with its parent's, on whose heap it runs: nothing is dropped.
    out = run([HL, "run", "--no-db", "--error-exitcode=7", "--", VFORK, "vfork-alloc"], 7,
              "run vfork-alloc", env=dict(os.environ, HEAPLEDGER_OPTIONS="tally=0"))
    expect(out, "the hook dropped", "run vfork-alloc")
    expect(out, INCOMPLETE + "a process's hook dropped events", "run vfork-alloc")


def run_stored(db):
    try:
        with sqlite3.connect("file:%s?mode=ro" % db, uri=True) as c:
            return c.execute("SELECT count(*) FROM runs").fetchone()[0] > 0
    except sqlite3.Error:
        return False


def run_never_closed(tmp):
    sock, db = os.path.join(tmp, "kill.sock"), os.path.join(tmp, "kill.db")
    daemon = daemon_util.start(HL, sock, db)
    # It listens before its database is ready: kill it once the run is stored.
    while not run_stored(db):
        time.sleep(0.02)
    daemon.kill()
    daemon.communicate()
    out = run([HL, "gate", "--db", db], 1, "gate on a SIGKILLed daemon's run")
    expect(out, "never closed (no end time)", "gate killed daemon")
    expect(out, INCOMPLETE + "the run was never closed", "gate killed daemon")


def run_without_process(tmp):
    sock, db = os.path.join(tmp, "none.sock"), os.path.join(tmp, "none.db")
    daemon = daemon_util.start(HL, sock, db, ["--error-exitcode=7"])
    err = daemon_util.stop(daemon)
    if daemon.returncode != 7 or INCOMPLETE + "no process reported" not in err:
        fail("daemon without processes: exit %d, expected 7\n%s" % (daemon.returncode, err))
    out = run([HL, "run", "--no-db", "--error-exitcode=7", "--trace=no-such-program", "--",
               CASES, "definite"], 7, "run --trace matching nothing")
    expect(out, INCOMPLETE + "no process reported", "run --trace matching nothing")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        zero_byte_leak(tmp)
        closed_descriptor(tmp)
        stalled_reporter(tmp)
        lost_connection(tmp)
        unobserved_fork(tmp)
        unobserved_spawn(tmp)
        dropped_events(tmp)
        run_never_closed(tmp)
        run_without_process(tmp)
    print("ok")


main()
