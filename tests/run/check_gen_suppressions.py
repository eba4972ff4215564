#!/usr/bin/env python3
"""tests/run/check_gen_suppressions.py: suppressions both ways, with
valgrind (the oracle) run here on progs/supp_sites.cpp.
 - `heapledger valgrind --gen-suppressions=all` writes entries that look like
   valgrind's own: the same frame lines for every loss record (the
   allocator's frame first, mangled C++ names, ending at main; no symbol
   versions, nothing below main);
 - fed to valgrind, they suppress every record they were written for;
 - valgrind's own entries suppress the same records under heapledger.

usage: check_gen_suppressions.py HEAPLEDGER SUPP_SITES
"""
import os
import re
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


hl, prog = sys.argv[1:3]
tmp = tempfile.mkdtemp()
env = dict(os.environ, HEAPLEDGER_DB=os.path.join(tmp, "hl.db"))
env.pop("HEAPLEDGER_OPTIONS", None)
OPTS = ["--leak-check=full", "--show-leak-kinds=all", "--error-exitcode=9"]
RECORD = re.compile(r"==\d+== [\d,()a-z ]+ bytes in [\d,]+ blocks are (\w+ \w+) in loss record")
SUPPRESSED = re.compile(r"==\d+==\s+suppressed: ([\d,]+) bytes in ([\d,]+) blocks")


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def entries(stderr):
    """The suppression entries in a report: (kind line, frame lines) each."""
    out, cur = [], None
    for line in stderr.splitlines():
        if line == "{":
            cur = []
        elif line == "}" and cur is not None:
            kinds = [l for l in cur if l.startswith("match-leak-kinds:")]
            out.append((kinds[0] if kinds else None,
                        tuple(l for l in cur if l.startswith(("fun:", "obj:", "...")))))
            cur = None
        elif cur is not None:
            cur.append(line.strip())
    return out


def write(path, found):
    with open(path, "w") as f:
        for i, (kind, frames) in enumerate(found):
            f.write("{\n   entry-%d\n   Memcheck:Leak\n" % i)
            if kind:
                f.write("   %s\n" % kind)
            f.write("".join("   %s\n" % l for l in frames) + "}\n")


vg = run(["valgrind", "--gen-suppressions=all"] + OPTS + [prog])
ours = run([hl, "valgrind", "--gen-suppressions=all"] + OPTS + [prog])
want, got = entries(vg.stderr), entries(ours.stderr)
if len(want) < 7:
    fail("valgrind wrote %d entries:\n%s" % (len(want), vg.stderr))
if sorted(got) != sorted(want):
    fail("entries differ from valgrind's:\n valgrind   %s\n heapledger %s" % (sorted(want),
                                                                          sorted(got)))
for _, frames in got:
    if any("@" in l or "_start" in l for l in frames) or frames[-1] != "fun:main":
        fail("an entry goes below main or names a symbol version: %s" % (frames,))
print("ok: %d entries, the same frames as valgrind's, e.g. %s" % (len(got), got[0][1]))

# each set fed to the other tool suppresses every record
for name, found in (("heapledger's", got), ("valgrind's", want)):
    supp = os.path.join(tmp, "entries.supp")
    write(supp, found)
    for tool in (["valgrind"], [hl, "valgrind"]):
        r = run(tool + ["--suppressions=" + supp] + OPTS + [prog])
        left = RECORD.findall(r.stderr)
        total = SUPPRESSED.findall(r.stderr)
        if left or r.returncode != 0 or not total or total[-1][1] != "8":
            fail("%s entries under %s: exit %d, records left %s, suppressed %s\n%s" % (
                name, tool[0], r.returncode, left, total, r.stderr))
        print("ok: %s entries suppress all %s blocks under %s" % (name, total[-1][1],
                                                                 " ".join(tool)))
print("PASS")
