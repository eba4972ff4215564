#!/usr/bin/env python3
"""tests/run/check_altstack.py: a program whose signal handlers run on
8 KiB alternate stacks and allocate (progs/altstack.c) under checks=full,
through `heapledger run` and standalone, with the stack memo on and off,
at the default depth, 256 (whose frame buffers overran the handler's
stack, 4 KiB, while they were on it: a crash), and at depth=64:
it exits 0, no heap error is reported (the hook's walks wrote past the
alternate stack's end into the heap before: false errors, or a crash), and
the block leaked in the handler has its stack through the handler.

usage: check_altstack.py HEAPLEDGER LIBHEAPLEDGER ALTSTACK
"""
import os
import subprocess
import sys
import tempfile

hl, lib, prog = sys.argv[1:4]
tmp = tempfile.mkdtemp()


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


for memo in ("1", "0", "1:depth=64", "0:depth=64"):
    env = dict(os.environ, HEAPLEDGER_DB=os.path.join(tmp, "hl.db"),
               HEAPLEDGER_OPTIONS="stack_cache=" + memo)
    r = subprocess.run([hl, "run", "--checks", "full", "--", prog], capture_output=True,
                       text=True, timeout=120, env=env)
    if r.returncode != 0 or "handled 900" not in r.stdout or \
            "ERROR SUMMARY: 0 errors from 0 contexts" not in r.stderr:
        fail("run, stack_cache=%s: exit %d\n%s%s" % (memo, r.returncode, r.stdout, r.stderr))
    if "leak_in_handler" not in r.stderr or "handler (altstack.c" not in r.stderr:
        fail("run, stack_cache=%s: the handler's leak has no stack through it:\n%s" % (
            memo, r.stderr))
    env = dict(os.environ, LD_PRELOAD=lib,
               HEAPLEDGER_OPTIONS="checks=full:stack_cache=" + memo)
    r = subprocess.run([prog], capture_output=True, text=True, timeout=120, env=env)
    if r.returncode != 0 or "ERROR SUMMARY: 0 errors from 0 contexts" not in r.stderr:
        fail("standalone, stack_cache=%s: exit %d\n%s" % (memo, r.returncode, r.stderr))
    print("ok: stack_cache=%s: run and standalone exit 0, no errors" % memo)
print("PASS")
