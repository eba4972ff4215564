#!/usr/bin/env python3
"""tests/run/check_trace_children.py: --trace-children=no (the hook option
children=0) means one thing under `heapledger run`, under a daemon (through
the exports of `heapledger env`) and under `heapledger valgrind`: the
program started reports with its forks; the programs they execute send
nothing and are not stored; the image that exec'd is reported as replaced
by an untracked exec. With yes (run's and env's default) they report.

Programs: fork_exec forks a child that leaks and exits, and a child that
execs leak_direct (which leaks 64 bytes); spawn_system starts itself through
posix_spawn and system(), paths the hook does not interpose (the children
still inherit the pid the first image wrote over the zeros run and env
export).

usage: check_trace_children.py HEAPLEDGER FORK_EXEC LEAK_DIRECT SPAWN_SYSTEM
"""
import json
import os
import subprocess
import sys
import tempfile

import daemon_util

hl, fork_exec, leak_direct, spawn = sys.argv[1:5]
tmp = tempfile.mkdtemp()
sock, db = os.path.join(tmp, "d.sock"), os.path.join(tmp, "d.db")
fail = daemon_util.fail


def clean_env(**extra):
    env = dict(os.environ)
    for k in ("HEAPLEDGER_OPTIONS", "HEAPLEDGER_PID", "HEAPLEDGER_SOCKET"):
        env.pop(k, None)
    env.update(extra)
    return env


def stored(path):
    """(exe basename, origin, how, tracked, leaked bytes) of each process of
    the last run, read back from the database."""
    rep = subprocess.run([hl, "report", "--db", path, "--format", "json"], capture_output=True,
                         text=True, check=True)
    out = []
    for p in json.loads(rep.stdout)["processes"]:
        e = p["exit"]
        out.append((os.path.basename(p["exe"]), p["origin"], e["how"], e.get("tracked"),
                    sum(l["bytes"] for l in p["leaks"] if l["kind"] == "definitely")))
    return sorted(out)


FORK_EXEC_YES = sorted([
    ("fork_exec", "start", "exit", None, 0),
    ("fork_exec", "fork", "exit", None, 24),
    ("fork_exec", "fork", "exec", True, 0),
    ("leak_direct", "exec", "exit", None, 64),
])
FORK_EXEC_NO = sorted([
    ("fork_exec", "start", "exit", None, 0),
    ("fork_exec", "fork", "exit", None, 24),
    ("fork_exec", "fork", "exec", False, 0),
])
SPAWN_YES = 4  # the program, its posix_spawn child, system()'s sh and its child
SPAWN_NO = [("spawn_system", "start", "exit", None, 0)]


def check(what, got, want):
    if got != want:
        fail("%s: stored %s, want %s" % (what, got, want))
    print("ok: " + what)


def run(opts, prog, env=None):
    if os.path.exists(db):
        os.unlink(db)
    r = subprocess.run([hl, "run", "--db", db] + opts + ["--"] + prog, capture_output=True,
                       text=True, timeout=120, env=env or clean_env())
    if r.returncode != 0:
        fail("run %s %s: status %d\n%s" % (opts, prog, r.returncode, r.stderr))
    return stored(db)


def daemon(env_opts, progs, env=None):
    if os.path.exists(db):
        os.unlink(db)
    d = daemon_util.start(hl, sock, db)
    try:
        exports = subprocess.run([hl, "env", "--socket", sock] + env_opts, capture_output=True,
                                 text=True, env=env or clean_env())
        if exports.returncode != 0:
            fail("env %s: %s" % (env_opts, exports.stderr))
        for prog in progs:
            subprocess.run(["sh", "-c", exports.stdout + "\nexec \"$@\"", "sh"] + prog,
                           check=True, timeout=120, stdout=subprocess.DEVNULL,
                           env=env or clean_env())
    finally:
        daemon_util.stop(d)
    return stored(db)


fe = [fork_exec, leak_direct]
check("run: children traced by default", run([], fe), FORK_EXEC_YES)
check("run --trace-children=no", run(["--trace-children=no"], fe), FORK_EXEC_NO)
check("run with HEAPLEDGER_OPTIONS=children=0", run([], fe, clean_env(HEAPLEDGER_OPTIONS="children=0")),
      FORK_EXEC_NO)
check("run --trace-children=no, posix_spawn and system()", run(["--trace-children=no"], [spawn]),
      SPAWN_NO)
if len(run([], [spawn])) != SPAWN_YES:
    fail("run: spawn_system's four processes")

check("daemon: children traced by default", daemon([], [fe]), FORK_EXEC_YES)
check("daemon, env --trace-children=no", daemon(["--trace-children=no"], [fe]), FORK_EXEC_NO)
check("daemon, HEAPLEDGER_OPTIONS=children=0",
      daemon([], [fe], clean_env(HEAPLEDGER_OPTIONS="children=0")), FORK_EXEC_NO)
check("daemon, env --trace-children=no, posix_spawn and system()",
      daemon(["--trace-children=no"], [[spawn]]), SPAWN_NO)
got = daemon(["--trace-children=no"], [fe, [spawn]])
check("daemon, env --trace-children=no: each program the shell starts is traced",
      got, sorted(FORK_EXEC_NO + SPAWN_NO))
if len(daemon([], [[spawn]])) != SPAWN_YES:
    fail("daemon: spawn_system's four processes")

# valgrind's default is no; yes traces them.
env = clean_env(HEAPLEDGER_DB=db)
for opts, want in (([], FORK_EXEC_NO), (["--trace-children=yes"], FORK_EXEC_YES)):
    if os.path.exists(db):
        os.unlink(db)
    r = subprocess.run([hl, "valgrind"] + opts + fe, capture_output=True, text=True,
                       timeout=120, env=env)
    if r.returncode != 0:
        fail("valgrind %s: status %d\n%s" % (opts, r.returncode, r.stderr))
    check("valgrind %s" % (opts or "(default no)"), stored(db), want)
print("PASS")
