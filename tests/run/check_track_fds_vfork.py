#!/usr/bin/env python3
"""tests/run/check_track_fds_vfork.py: a vfork child's own descriptors, listed
as valgrind's --track-fds lists them (valgrind is run here, the oracle), on
progs/vfork_fds.c, whose parent opens a file and vforks a child that opens
another and then _exits (exit), execs /bin/true (exec) or fails to exec and
_exits (fail).

valgrind runs vfork as fork, so the child is a process of its own: at _exit
it lists both files with the stacks that opened them; after an exec the
image (when traced) lists both as inherited. For each mode and each
--trace-children, every process's "FILE DESCRIPTORS: N open (S std) at
exit." line and its headings with the first frame in vfork_fds.c (or
"<inherited from parent>") must be valgrind's, under `heapledger valgrind
--track-fds=yes`, under `heapledger run` with track_fds=yes, and (children
traced, frames not symbolized) under the standalone hook.

usage: check_track_fds_vfork.py HEAPLEDGER LIBHEAPLEDGER VFORK_FDS
"""
import os
import re
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


hl, lib, prog = sys.argv[1:4]
tmp = tempfile.mkdtemp()
env = dict(os.environ)
for name in ("HEAPLEDGER_OPTIONS", "LD_PRELOAD", "HEAPLEDGER_SOCKET", "HEAPLEDGER_PID"):
    env.pop(name, None)
SOURCE = os.path.basename(prog) + ".c"
PREFIX = re.compile(r"^==(\d+)== ?(.*)$")
FRAME = re.compile(r"^   (?:at|by) 0x[0-9A-Fa-f]+: (.*)$")
parent_path = os.path.join(tmp, "parent-file")
child_path = os.path.join(tmp, "child-file")
for path in (parent_path, child_path):
    with open(path, "w") as f:
        f.write(path + "\n")


def run(cmd, mode, extra_env=None):
    r = subprocess.run(cmd + [prog, mode, parent_path, child_path], capture_output=True,
                       text=True, timeout=240, env=dict(env, **(extra_env or {})))
    if r.returncode != 0:
        fail("%s %s: exit %d\n%s" % (" ".join(cmd), mode, r.returncode, r.stderr))
    return r.stderr


def one_listing(lines, i, symbolized):
    """The listing whose FILE DESCRIPTORS line is lines[i]: (that line,
    ((heading, where), ...)); where is the first frame in the program's
    source, '<inherited from parent>', or (symbolized False) 'stack'."""
    fds, start, i = [], lines[i], i + 1
    while i < len(lines) and lines[i].startswith("Open "):
        heading, where, i = lines[i], None, i + 1
        while i < len(lines) and lines[i].strip():
            m = FRAME.match(lines[i])
            if lines[i].strip() == "<inherited from parent>":
                where = "<inherited from parent>"
            elif m and where is None and (not symbolized or "(" + SOURCE + ":" in m.group(1)):
                where = m.group(1) if symbolized else "stack"
            i += 1
        fds.append((heading, where))
        i += 1
    return (start, tuple(fds))


def listings(stderr, symbolized=True):
    """Every process's listings, sorted (pids differ from run to run)."""
    by_pid = {}
    for line in stderr.splitlines():
        m = PREFIX.match(line)
        if m:
            by_pid.setdefault(m.group(1), []).append(m.group(2))
    found = []
    for lines in by_pid.values():
        found += [one_listing(lines, i, symbolized) for i, l in enumerate(lines)
                  if l.startswith("FILE DESCRIPTORS:")]
    return sorted(found)


def unsymbolized(want):
    return sorted((start, tuple((h, w if w == "<inherited from parent>" else "stack")
                                for h, w in fds)) for start, fds in want)


def compare(name, got, want):
    if got != want:
        fail("%s: the listings are not valgrind's\nours:\n  %s\nvalgrind:\n  %s" % (
            name, "\n  ".join(map(str, got)), "\n  ".join(map(str, want))))
    print("ok: %s: %d processes list their descriptors as valgrind's" % (name, len(got)))


def child_listed(want, inherited):
    """Does a listing show the child's file, opened in the program (or
    inherited, after the exec)?"""
    for _, fds in want:
        for heading, where in fds:
            if heading.endswith(child_path) and (
                    (where == "<inherited from parent>") == inherited) and where:
                return True
    return False


for mode in ("exit", "exec", "fail"):
    for children in ("yes", "no"):
        name = "%s, --trace-children=%s" % (mode, children)
        vg = ["--track-fds=yes", "--trace-children=" + children]
        want = listings(run(["valgrind", "-q"] + vg, mode))
        # valgrind's own output as this test expects it (else the program changed)
        lists_child = mode != "exec" or children == "yes"
        if len(want) != 1 + lists_child or (
                lists_child and not child_listed(want, inherited=mode == "exec")):
            fail("valgrind %s: unexpected listings %s" % (name, want))
        compare("heapledger valgrind, " + name,
                listings(run([hl, "valgrind", "-q"] + vg, mode)), want)
        compare("heapledger run, " + name,
                listings(run([hl, "run", "--no-db", "--trace-children=" + children, "--"],
                             mode, {"HEAPLEDGER_OPTIONS": "track_fds=yes"})), want)
        if children == "yes":
            compare("standalone hook, " + name,
                    listings(run([], mode, {"LD_PRELOAD": lib,
                                            "HEAPLEDGER_OPTIONS": "track_fds=yes"}),
                             symbolized=False), unsymbolized(want))
