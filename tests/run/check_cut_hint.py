#!/usr/bin/env python3
"""tests/run/check_cut_hint.py: the text report of a stack cut at depth=
frames says where it was cut and how to keep it whole: progs/leak_deep.c's
leak, 300 calls deep, under `heapledger run --depth 128` names --depth 256,
and at the default (256, the most the hook captures) says no depth keeps
more.

usage: check_cut_hint.py HEAPLEDGER LEAK_DEEP
"""
import os
import subprocess
import sys
import tempfile

hl, prog = sys.argv[1:3]
tmp = tempfile.mkdtemp()

for args, want in ((["--depth", "128"], "... (stack truncated at 128 frames: --depth 256 keeps up to 256)"),
                   ([], "... (stack truncated at 256 frames, the most heapledger captures)")):
    env = dict(os.environ, HEAPLEDGER_DB=os.path.join(tmp, "hl.db"))
    env.pop("HEAPLEDGER_OPTIONS", None)
    r = subprocess.run([hl, "run"] + args + ["--", prog], capture_output=True, text=True,
                       timeout=120, env=env)
    if r.returncode != 0 or want not in r.stderr:
        print("FAIL: run %s: exit %d, no %r in:\n%s" % (args, r.returncode, want, r.stderr))
        sys.exit(1)
    print("ok: run %s: %s" % (args, want))
print("PASS")
