#!/usr/bin/env python3
"""tests/libhook/check_malloc_api.py LIB PROG: the preloaded allocator answers
glibc's malloc API as glibc does.

PROG (malloc_api.c) calls every malloc-family entry point and edge case and
prints lines that must not depend on which allocator answers; figures that
legitimately differ (statistics, sizes) are checked inside PROG for
consistency and print as "ok"/"yes". This runs PROG with and without the
preload and diffs the two. Lines tagged "glibc-2.38:" follow glibc 2.38's
aligned_alloc rule (a bad alignment fails with EINVAL): the preload must
answer EINVAL on any libc, glibc itself only from 2.38 on.
"""
import difflib
import os
import subprocess
import sys

LIB, PROG = sys.argv[1:3]
failures = []


def run(preload):
    env = dict(os.environ)
    for key in ("LD_PRELOAD", "HEAPLEDGER_SOCKET", "HEAPLEDGER_LOG", "HEAPLEDGER_PID"):
        env.pop(key, None)
    if preload:
        env["LD_PRELOAD"] = LIB
        env["HEAPLEDGER_OPTIONS"] = "leaks=0:summary=0"
    out = subprocess.run([PROG], env=env, capture_output=True, text=True, timeout=120)
    if out.returncode != 0:
        failures.append("%s exited %d" % ("preloaded" if preload else "plain", out.returncode))
        print(out.stderr)
    return out.stdout.splitlines()


def glibc_at_least(major, minor):
    version = os.confstr("CS_GNU_LIBC_VERSION").split()[-1]
    return tuple(int(x) for x in version.split(".")[:2]) >= (major, minor)


plain = run(False)
hooked = run(True)
plain_rest = [l for l in plain if not l.startswith("glibc-2.38:")]
hooked_rest = [l for l in hooked if not l.startswith("glibc-2.38:")]
if plain_rest != hooked_rest:
    failures.append("output differs from glibc's")
    sys.stdout.writelines(l + "\n" for l in difflib.unified_diff(
        plain_rest, hooked_rest, "glibc", "preloaded", lineterm=""))
for line in hooked:
    if line.startswith("glibc-2.38:") and not line.endswith(": EINVAL"):
        failures.append("preloaded: " + line)
if glibc_at_least(2, 38):
    if [l for l in plain if l.startswith("glibc-2.38:")] != \
       [l for l in hooked if l.startswith("glibc-2.38:")]:
        failures.append("aligned_alloc differs from glibc >= 2.38")
for name, lines in (("glibc", plain), ("preloaded", hooked)):
    for line in lines:
        if line.startswith("mallinfo2 ") and not line.endswith(": ok"):
            failures.append("%s: %s" % (name, line))
        if ("uordblks" in line or "hblks" in line) and not line.endswith(": yes"):
            failures.append("%s: %s" % (name, line))
    if not any(l.startswith("malloc_stats: Total (incl. mmap):") for l in lines):
        failures.append(name + ": no malloc_stats output")
    if not any(l == "malloc_info: </malloc>" for l in lines):
        failures.append(name + ": no malloc_info output")
if len(hooked) < 80:
    failures.append("only %d lines from the preloaded run" % len(hooked))
for f in failures:
    print("FAIL:", f)
print("%d lines compared" % len(hooked))
sys.exit(1 if failures else 0)
