#!/usr/bin/env python3
"""tests/run/check_track_fds.py: the descriptors open at exit, listed as
valgrind's --track-fds lists them (valgrind is run here, the oracle), on
progs/open_fds.c, which opens a file, a socket pair, a pipe, streams, a copy
and an eventfd, closes some and inherits one from this script:
 - `heapledger valgrind --track-fds=yes` and `=all`: the "FILE DESCRIPTORS:
   N open (S std) at exit." line, and for each descriptor its heading
   ("Open file descriptor 3: /path", "Open AF_UNIX socket 4: <unknown>") and
   the first frame in open_fds.c (function and line), or "<inherited from
   parent>", all equal to valgrind's, in valgrind's order;
 - `heapledger run` with HEAPLEDGER_OPTIONS=track_fds=yes: the same, the
   same again from the database (`heapledger report`), the JSON report's
   file_descriptors (numbers, paths, the top frame's line), and that report
   imported into another database (`heapledger import`);
 - the standalone hook (LD_PRELOAD, no reporter): the same headings, a
   stack for each descriptor the program made;
 - without the option nothing is listed.

usage: check_track_fds.py HEAPLEDGER LIBHEAPLEDGER OPEN_FDS
"""
import json
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
env = dict(os.environ, HEAPLEDGER_DB=os.path.join(tmp, "hl.db"))
env.pop("HEAPLEDGER_OPTIONS", None)
env.pop("LD_PRELOAD", None)
SOURCE = os.path.basename(prog) + ".c"
PREFIX = re.compile(r"^==\d+== ?")
FRAME = re.compile(r"^   (?:at|by) 0x[0-9A-Fa-f]+: (.*)$")
# the descriptor the program inherits: a file of this test's own
inherited_path = os.path.join(tmp, "inherited")
with open(inherited_path, "w") as f:
    f.write("inherited\n")
opened_path = os.path.join(tmp, "opened")
with open(opened_path, "w") as f:
    f.write("opened\n")


def run(cmd, extra_env=None):
    fd = os.open(inherited_path, os.O_RDONLY)
    try:
        return subprocess.run(cmd + [prog, opened_path], capture_output=True, text=True,
                              timeout=300, env=dict(env, **(extra_env or {})),
                              pass_fds=(fd,))
    finally:
        os.close(fd)


def listing(stderr, symbolized=True):
    """The FILE DESCRIPTORS line and [(heading, where)]: where is the first
    frame in the program's source, '<inherited from parent>', or (with
    symbolized False) 'stack' for any stack."""
    lines = [PREFIX.sub("", l) for l in stderr.splitlines() if PREFIX.match(l)]
    start = [i for i, l in enumerate(lines) if l.startswith("FILE DESCRIPTORS:")]
    if len(start) != 1:
        fail("not one FILE DESCRIPTORS line:\n" + stderr)
    fds, i = [], start[0] + 1
    while i < len(lines) and lines[i].startswith("Open "):
        heading, where, i = lines[i], None, i + 1
        while i < len(lines) and lines[i].strip():
            m = FRAME.match(lines[i])
            if lines[i].strip() == "<inherited from parent>":
                where = "<inherited from parent>"
            elif m and where is None and (not symbolized or "(" + SOURCE + ":" in m.group(1)):
                where = "stack" if not symbolized else m.group(1)
            i += 1
        fds.append((heading, where))
        i += 1
    return lines[start[0]], fds


def compare(name, ours, want, symbolized=True):
    got = listing(ours.stderr, symbolized)
    if not symbolized:
        want = (want[0], [(h, w if w == "<inherited from parent>" else "stack")
                          for h, w in want[1]])
    if got != want:
        fail("%s: the listing is not valgrind's\nours:   %s\nvalgrind: %s\n%s" % (
            name, got, want, ours.stderr))
    print("ok: %s: %s, %d descriptors as valgrind lists them" % (name, got[0], len(got[1])))


vg = {}
for mode in ("yes", "all"):
    r = run(["valgrind", "-q", "--track-fds=" + mode])
    if r.returncode != 0:
        fail("valgrind --track-fds=%s: exit %d\n%s" % (mode, r.returncode, r.stderr))
    vg[mode] = listing(r.stderr)
kinds = " ".join(h for h, _ in vg["yes"][1])
for word in ("Open AF_UNIX socket", opened_path, inherited_path):
    if word not in kinds:
        fail("valgrind's own listing lacks %r (the program changed?): %s" % (word, vg["yes"]))

for mode in ("yes", "all"):
    compare("heapledger valgrind --track-fds=" + mode,
            run([hl, "valgrind", "-q", "--track-fds=" + mode]), vg[mode])

report = os.path.join(tmp, "report.json")
r = run([hl, "run", "--json", report, "--"], {"HEAPLEDGER_OPTIONS": "track_fds=yes"})
compare("heapledger run, track_fds=yes", r, vg["yes"])
stored = subprocess.run([hl, "report"], capture_output=True, text=True, timeout=120, env=env)
stored.stderr = stored.stdout  # the report of a stored run goes to stdout
compare("heapledger report of the stored run", stored, vg["yes"])
proc = json.load(open(report))["processes"][0]
fds = proc["file_descriptors"]
count = re.match(r"FILE DESCRIPTORS: (\d+) open \((\d+) std\)", vg["yes"][0])
if (fds["open"], fds["std"]) != (int(count.group(1)), int(count.group(2))):
    fail("JSON counts %s, valgrind's %s" % ((fds["open"], fds["std"]), vg["yes"][0]))
for entry, (heading, where) in zip(fds["listed"], vg["yes"][1]):
    number = int(re.search(r" (\d+):", heading).group(1))
    if entry["fd"] != number or (entry["text"] or "") not in heading:
        fail("JSON descriptor %s against valgrind's %r" % (entry, heading))
    if where != "<inherited from parent>":
        frame = next((f for f in entry["stack"] if (f.get("file") or "").endswith(SOURCE)),
                     None)
        if frame is None or "%s:%d" % (SOURCE, frame["line"]) not in where:
            fail("JSON descriptor %d: frame %s, valgrind's %s" % (number, frame, where))
    elif not entry["inherited"]:
        fail("JSON descriptor %d is not inherited: %s" % (number, entry))
if len(fds["listed"]) != len(vg["yes"][1]):
    fail("JSON lists %d descriptors, valgrind %d" % (len(fds["listed"]), len(vg["yes"][1])))
print("ok: the JSON report's file_descriptors are valgrind's (%d)" % len(fds["listed"]))

imported = dict(env, HEAPLEDGER_DB=os.path.join(tmp, "imported.db"))
r = subprocess.run([hl, "import", report], capture_output=True, text=True, timeout=120,
                   env=imported)
if r.returncode != 0:
    fail("import of the JSON report: exit %d\n%s" % (r.returncode, r.stderr))
stored = subprocess.run([hl, "report"], capture_output=True, text=True, timeout=120,
                        env=imported)
stored.stderr = stored.stdout
compare("heapledger report of the imported JSON report", stored, vg["yes"])

r = run([], {"LD_PRELOAD": lib, "HEAPLEDGER_OPTIONS": "track_fds=yes"})
compare("standalone hook, track_fds=yes", r, vg["yes"], symbolized=False)

r = run([hl, "run", "--no-db", "--"])
if "FILE DESCRIPTORS" in r.stderr or r.returncode != 0:
    fail("without track_fds: exit %d, stderr:\n%s" % (r.returncode, r.stderr))
print("ok: without track_fds nothing is listed")
