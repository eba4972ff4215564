#!/usr/bin/env python3
"""tests/run/check_smallstack.py: a program whose threads have
PTHREAD_STACK_MIN (16 KiB) stacks and allocate ~100 frames deep, while its
main thread allocates under a profiling timer whose handler allocates too
(progs/smallstack.c), at depth=256 and at the default, through `heapledger
run` and standalone: it runs to completion (a capture's frame buffers on
the program's stack, 4 KiB at depth=256, overran those stacks: a crash),
and the block leaked in the handler has its stack through the handler.

usage: check_smallstack.py HEAPLEDGER LIBHEAPLEDGER SMALLSTACK
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


for opts in ("depth=256", "depth=256:stack_cache=0", ""):
    env = dict(os.environ, HEAPLEDGER_DB=os.path.join(tmp, "hl.db"),
               HEAPLEDGER_OPTIONS=opts)
    r = subprocess.run([hl, "run", "--", prog], capture_output=True, text=True,
                       timeout=120, env=env)
    if r.returncode != 0 or "smallstack done" not in r.stdout:
        fail("run, %r: exit %d\n%s%s" % (opts, r.returncode, r.stdout, r.stderr))
    if "leak_from_handler" not in r.stderr or "handler (smallstack.c" not in r.stderr:
        fail("run, %r: the handler's leak has no stack through it:\n%s" % (opts, r.stderr))
    env = dict(os.environ, LD_PRELOAD=lib, HEAPLEDGER_OPTIONS=opts)
    r = subprocess.run([prog], capture_output=True, text=True, timeout=120, env=env)
    if r.returncode != 0 or "smallstack done" not in r.stdout or \
            "ERROR SUMMARY: 0 errors from 0 contexts" not in r.stderr:
        fail("standalone, %r: exit %d\n%s%s" % (opts, r.returncode, r.stdout, r.stderr))
    print("ok: %r: run and standalone complete" % opts)
print("PASS")
