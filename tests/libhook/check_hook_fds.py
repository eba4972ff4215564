#!/usr/bin/env python3
"""tests/libhook/check_hook_fds.py HEAPLEDGER LIB PROG: the hook keeps out of
the program's descriptors and never waits on the reporter for long.

 - bash's `exec 3>f` then 200 writes: f gets all 200 lines (the hook's socket
   is no longer fd 3);
 - a program dup2s a file onto the hook's (high) socket number: the hook
   neither writes into it nor closes it, and goes on standalone;
 - a program that closes fd 2 at exit (grep, sort) still gets its summary;
 - a reporter that never accepts (full backlog) or never reads: the program
   finishes, standalone, with the summary and a notice;
 - a socket bound by another user (when run as root): nothing is sent.
Each program run has a generous hang guard; no timing is asserted.
"""
import os
import socket
import subprocess
import sys
import tempfile
import threading

HEAPLEDGER, LIB, PROG = sys.argv[1:4]
failures = []


def check(cond, what, detail=""):
    if not cond:
        failures.append(what)
        print("FAIL: %s\n%s" % (what, detail))


def hook_env(**extra):
    env = dict(os.environ)
    for k in ("HEAPLEDGER_SOCKET", "HEAPLEDGER_LOG", "HEAPLEDGER_PID"):
        env.pop(k, None)
    env["LD_PRELOAD"] = LIB
    env.update(extra)
    return env


def run(args, env, timeout=120):
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=timeout)


def under_run(tmp, args):
    env = dict(os.environ, HEAPLEDGER_LIB=LIB)
    return run([HEAPLEDGER, "run", "--db", os.path.join(tmp, "runs.db"), "--"] + args, env)


def case_bash_fd3(tmp):
    f = os.path.join(tmp, "f")
    p = under_run(tmp, ["bash", "-c", 'exec 3>"$1"; for i in $(seq 200); do echo x >&3; [ $i = 100 ] && /bin/true; done',
                        "bash", f])
    with open(f) as fh:
        lines = fh.read().count("x\n")
    check(lines == 200, "bash fd 3: %d of 200 lines in the file" % lines, p.stderr[-2000:])
    check("Bad file descriptor" not in p.stderr, "bash fd 3: bash lost its fd 3", p.stderr[-2000:])


def case_take_socket(tmp):
    data = os.path.join(tmp, "data")
    p = under_run(tmp, [PROG, "take", data])
    check(p.returncode == 0, "take: program exit %d (5: the hook closed its file)" % p.returncode,
          p.stderr[-2000:])
    with open(data) as fh:
        content = fh.read()
    check(content == "program data\nend\n", "take: the program's file holds more than it wrote",
          repr(content[:300]))
    check("took the reporter connection's descriptor" in p.stderr, "take: no notice",
          p.stderr[-2000:])
    check("in use at exit: " in p.stderr, "take: no standalone summary", p.stderr[-2000:])


def case_closes_stderr(tmp):
    p = run([PROG, "closes-stderr"], hook_env())
    check(p.returncode == 0, "closes-stderr: exit %d" % p.returncode, p.stderr)
    check("in use at exit: 100 bytes in 1 blocks" in p.stderr,
          "closes-stderr: no summary after the program closed fd 2", p.stderr)


def listener(path, backlog):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(backlog)
    return s


def case_never_accepts(tmp):
    path = os.path.join(tmp, "backlog.sock")
    s = listener(path, 0)
    filler = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    filler.setblocking(False)
    filler.connect(path)  # the backlog is now full
    p = run([PROG, "churn"], hook_env(HEAPLEDGER_SOCKET=path, HEAPLEDGER_OPTIONS="wait_ms=200"))
    check(p.returncode == 0, "never accepts: exit %d" % p.returncode, p.stderr)
    check("is not accepting" in p.stderr, "never accepts: no notice", p.stderr)
    check("in use at exit: 100 bytes in 1 blocks" in p.stderr, "never accepts: no summary",
          p.stderr)
    filler.close()
    s.close()


def case_never_reads(tmp):
    path = os.path.join(tmp, "stopped.sock")
    s = listener(path, 8)
    held = []
    t = threading.Thread(target=lambda: held.append(s.accept()), daemon=True)
    t.start()
    # Every event sent (tally=0), as threads send them: counted in the hook,
    # a one-thread program sends too little to fill the socket.
    p = run([PROG, "churn"], hook_env(HEAPLEDGER_SOCKET=path, HEAPLEDGER_OPTIONS="wait_ms=200:tally=0"))
    check(p.returncode == 0, "never reads: exit %d" % p.returncode, p.stderr)
    check("stopped reading" in p.stderr, "never reads: no notice", p.stderr)
    check("events were not sent" in p.stderr, "never reads: dropped events not counted",
          p.stderr)
    check("in use at exit: 100 bytes in 1 blocks" in p.stderr, "never reads: no summary",
          p.stderr)
    # A child forked after the wait timed out does not wait again.
    p = run([PROG, "churn-fork"],
            hook_env(HEAPLEDGER_SOCKET=path, HEAPLEDGER_OPTIONS="wait_ms=200:tally=0"))
    check(p.returncode == 0, "never reads, fork: exit %d" % p.returncode, p.stderr)
    check(p.stderr.count("stopped reading") + p.stderr.count("not accepting") == 1,
          "never reads, fork: the child waited for the stuck reporter again", p.stderr)
    s.close()


def case_other_user(tmp):
    if os.geteuid() != 0:
        print("skip other-user listener: not root")
        return
    path = os.path.join(tmp, "squat.sock")
    os.chmod(os.path.dirname(tmp), 0o711)
    os.chmod(tmp, 0o777)
    rd, wr = os.pipe()
    pid = os.fork()
    if pid == 0:  # the squatter: nobody, reads and counts bytes
        try:
            os.close(rd)
            os.setgid(65534)
            os.setuid(65534)
            s = listener(path, 8)
            os.chmod(path, 0o777)
            os.write(wr, b"r")
            c, _ = s.accept()
            n = 0
            while True:
                b = c.recv(65536)
                if not b:
                    break
                n += len(b)
            os.write(wr, str(n).encode())
        finally:
            os._exit(0)
    os.close(wr)
    if os.read(rd, 1) != b"r":
        check(False, "other user: the squatter could not listen")
        os.waitpid(pid, 0)
        return
    p = run([PROG, "churn"], hook_env(HEAPLEDGER_SOCKET=path))
    got = os.read(rd, 64).decode()
    os.waitpid(pid, 0)
    check(p.returncode == 0, "other user: exit %d" % p.returncode, p.stderr)
    check("belongs to another user" in p.stderr, "other user: no notice", p.stderr)
    check(got == "0", "other user: the squatter received %s bytes" % got)
    check("in use at exit: 100 bytes in 1 blocks" in p.stderr, "other user: no summary",
          p.stderr)


def case_log_file(tmp):
    # A planted link is not followed; the summary goes to stderr instead.
    target = os.path.join(tmp, "target")
    link = os.path.join(tmp, "planted")
    os.symlink(target, link)
    p = run([PROG, "churn"], hook_env(HEAPLEDGER_LOG=link))
    check(not os.path.exists(target), "log: a planted symlink was followed")
    check("in use at exit: 100 bytes" in p.stderr, "log: no summary after refusing the link",
          p.stderr)
    # A new log is private; the unreachable reporter's notice goes there, not
    # to the program's stderr.
    log = os.path.join(tmp, "log.%p")
    p = run([PROG, "churn"], hook_env(HEAPLEDGER_LOG=log,
                                      HEAPLEDGER_SOCKET=os.path.join(tmp, "none.sock")))
    logs = [f for f in os.listdir(tmp) if f.startswith("log.")]
    check(len(logs) == 1, "log: log.%%p gave %s" % logs)
    if logs:
        path = os.path.join(tmp, logs[0])
        check(os.stat(path).st_mode & 0o777 == 0o600, "log: mode %o" % os.stat(path).st_mode)
        with open(path) as fh:
            text = fh.read()
        check("cannot reach the reporter" in text, "log: the notice is not in the log", text)
    check("heapledger" not in p.stderr, "log: the hook wrote on the program's stderr", p.stderr)
    # quiet=1: no notice at all.
    p = run([PROG, "churn"], hook_env(HEAPLEDGER_OPTIONS="quiet=1",
                                      HEAPLEDGER_SOCKET=os.path.join(tmp, "none.sock")))
    check("cannot reach" not in p.stderr, "quiet=1: the notice was printed", p.stderr)


with tempfile.TemporaryDirectory() as tmp:
    for case in (case_bash_fd3, case_take_socket, case_closes_stderr, case_never_accepts,
                 case_never_reads, case_other_user, case_log_file):
        sub = os.path.join(tmp, case.__name__)
        os.mkdir(sub)
        case(sub)
sys.exit(1 if failures else 0)
