#!/usr/bin/env python3
"""tests/run/check_trace.py: --trace GLOB and --exclude GLOB choose which
programs report, under `heapledger run` and under a daemon (through the
exports of `heapledger env`); the others send nothing and print nothing.

A shell (dash) runs leak_choice twice: with --trace matching leak_choice
only its two processes are reported, the shell is not; with --exclude
matching it only the shell is, and the excluded leak_choice printed no
standalone report of its own either. Globs: a file name (no '/') or the
whole path, ?, [...], [!...], several --trace. A run where nothing matched
says so and exits with the program's status.

An image that execs a program not chosen is reported as replaced by exec
(the EXEC record), not as ended without exit handlers with its blocks
unclassified, so it does not fail the gate; an exec that fails leaves the
image reporting as before.

usage: check_trace.py HEAPLEDGER LEAK_CHOICE END_HOW LEAK_DIRECT
"""
import json
import os
import subprocess
import sys
import tempfile

import daemon_util


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


hl, prog = sys.argv[1], os.path.realpath(sys.argv[2])
end_how, leak_direct = sys.argv[3], sys.argv[4]
tmp = tempfile.mkdtemp()
script = "%s a; %s b" % (prog, prog)


def run(opts, cmd):
    out = os.path.join(tmp, "r.json")
    if os.path.exists(out):
        os.unlink(out)
    r = subprocess.run([hl, "run", "--no-db", "--json", out] + opts + ["--"] + cmd,
                       capture_output=True, text=True, timeout=120)
    exes = []
    if os.path.exists(out):
        with open(out) as f:
            exes = sorted(os.path.basename(p["exe"]) for p in json.load(f)["processes"])
    return r, exes


CASES = [
    (["--trace=*/leak_choice"], ["leak_choice", "leak_choice"]),
    (["--trace=leak_ch?ice"], ["leak_choice", "leak_choice"]),
    (["--trace=" + os.path.dirname(prog) + "/leak_[a-m]hoice"], ["leak_choice", "leak_choice"]),
    (["--trace=[!l]*"], ["dash"]),
    (["--trace=nothing", "--trace=dash"], ["dash"]),
    (["--exclude=leak_choice"], ["dash"]),
    (["--trace=*", "--exclude=*/leak_*"], ["dash"]),
    ([], ["dash", "leak_choice", "leak_choice"]),
]
for opts, want in CASES:
    r, exes = run(opts, ["dash", "-c", script])
    if r.returncode != 0 or exes != want:
        fail("%s: exit %d, processes %s, want %s\n%s" % (opts, r.returncode, exes, want, r.stderr))
    if "leak_choice" not in want and "leak_a" in r.stderr:
        fail("%s: the excluded leak_choice printed a report of its own:\n%s" % (opts, r.stderr))
    print("ok: %s: %s" % (" ".join(opts) or "(all)", exes))

r, exes = run(["--trace=nothing"], [prog, "a", "exit=4"])
if r.returncode != 4 or exes or "no process matched --trace/--exclude" not in r.stderr \
        or "leak_a" in r.stderr:
    fail("nothing matched: exit %d, %s\n%s" % (r.returncode, exes, r.stderr))
print("ok: nothing matched: said so, exit status 4 kept, nothing printed by the hook")

r = subprocess.run([hl, "run", "--trace=a:b", "--", "true"], capture_output=True, text=True)
if r.returncode != 125 or "--trace" not in r.stderr:
    fail("a glob with ':' accepted: %d %s" % (r.returncode, r.stderr))

# exec of a program that is not chosen
r = subprocess.run([hl, "run", "--no-db", "--exclude=leak_direct", "--error-exitcode=9", "--",
                    end_how, "execv", leak_direct], capture_output=True, text=True, timeout=120)
if r.returncode != 0 or "replaced by exec of " + leak_direct not in r.stderr \
        or "not classified" in r.stderr or "hello from leak_direct" not in r.stdout:
    fail("exec of an excluded program: exit %d\n%s" % (r.returncode, r.stderr))
print("ok: exec of an excluded program: replaced by exec, gate passed")
r = subprocess.run([hl, "run", "--no-db", "--", end_how, "execv", "/nonexistent/prog"],
                   capture_output=True, text=True, timeout=120)
if r.returncode != 126 or "exited with status 126" not in r.stderr \
        or "definitely lost" not in r.stderr or "leak_before_end" not in r.stderr:
    fail("failed exec: exit %d\n%s" % (r.returncode, r.stderr))
print("ok: a failed exec: the image reports its exit and its leak")

# a daemon: the exports of `heapledger env --trace`
sock, db = os.path.join(tmp, "d.sock"), os.path.join(tmp, "d.db")
daemon = daemon_util.start(hl, sock, db)
exports = subprocess.run([hl, "env", "--socket", sock, "--trace", "*/leak_choice"],
                         capture_output=True, text=True, check=True).stdout
if "HEAPLEDGER_TRACE='*/leak_choice'" not in exports:
    fail("env printed no HEAPLEDGER_TRACE:\n" + exports)
subprocess.run(["sh", "-c", exports + "\ndash -c '%s'" % script], check=True, timeout=60)
err = daemon_util.stop(daemon)
if "suite summary: 2 processes, 2 with leaks" not in err or "dash" in err:
    fail("daemon with --trace:\n" + err)
print("ok: daemon through env --trace: the two leak_choice processes only")
print("PASS")
