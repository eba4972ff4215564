#!/usr/bin/env python3
"""tests/run/check_supp_kinds.py HEAPLEDGER PROG: PROG's three processes
report one block from the same stack, reachable in two and definitely lost
in one. Of two suppressions for that stack, one for definite leaks and one
for reachable ones, each process's leak gets the one of its class, however
many processes came before with the same stack in another class, and the
used-suppression counts are per process: 1 and 2."""
import json
import os
import subprocess
import sys
import tempfile

SUPP = """{
   definite-only
   Memcheck:Leak
   match-leak-kinds: definite
   fun:shared_site
}
{
   reachable-only
   Memcheck:Leak
   match-leak-kinds: reachable
   fun:shared_site
}
"""
WANT = {"definitely": "definite-only", "reachable": "reachable-only"}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    hl, prog = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        supp = os.path.join(tmp, "kinds.supp")
        js = os.path.join(tmp, "r.json")
        with open(supp, "w") as f:
            f.write(SUPP)
        run = subprocess.run([hl, "run", "--no-db", "--json", js, "--suppressions", supp,
                              "--", prog], stdin=subprocess.DEVNULL, capture_output=True,
                             text=True, timeout=120)
        if run.returncode != 0:
            fail("exit %d: %s" % (run.returncode, run.stderr[-3000:]))
        doc = json.load(open(js))
    procs = doc["processes"]
    if len(procs) != 3:
        fail("%d processes, want 3" % len(procs))
    kinds = []
    for p in procs:
        leaks = [l for l in p["leaks"] if l["bytes"] == 48]
        if len(leaks) != 1:
            fail("process %s: %d leaks of 48 bytes, want 1" % (p.get("pid"), len(leaks)))
        l = leaks[0]
        kinds.append(l["kind"])
        if l["kind"] not in WANT or l["suppression"] != WANT[l["kind"]] or not l["suppressed"]:
            fail("process %s: %s leak suppressed by %s, want %s" %
                 (p.get("pid"), l["kind"], l["suppression"], WANT.get(l["kind"])))
    if sorted(kinds) != ["definitely", "reachable", "reachable"]:
        fail("classes %s, want one definitely and two reachable" % kinds)
    used = {}
    for line in run.stderr.splitlines():
        if "used_suppression:" in line and "unused_suppression:" not in line:
            words = line.split("used_suppression:")[1].split()
            used[words[1]] = (int(words[0]), line)
    for name, count in (("definite-only", 1), ("reachable-only", 2)):
        if used.get(name, (0,))[0] != count:
            fail("%s used %s times, want %d: %s" % (name, used.get(name), count,
                                                     run.stderr[-2000:]))
        if "%d bytes in %d blocks" % (48 * count, count) not in used[name][1]:
            fail("%s: %s" % (name, used[name][1]))
    print("ok: " + ", ".join("%s %d" % (n, used[n][0]) for n in sorted(used)))


main()
