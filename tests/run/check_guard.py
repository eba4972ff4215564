#!/usr/bin/env python3
"""tests/run/check_guard.py: checks=guard and guard_sample= catch reads and
writes past a block and after its free at the faulting instruction, as
valgrind does; valgrind, run here on the same program, is the oracle for the
heading ("Invalid read of size 1"), the top frame's file:line, the address
phrase ("is 0 bytes after a block of size 10 alloc'd") and the free and
allocation stacks' first frames in the program.

Those run with guard_align=1, a block's end against the guard page; with
the default alignment (16) a write one past a 10-byte block lands in the gap
and is reported as checks=full reports an overrun of its guard bytes, found
at free, realloc or exit, with the allocation stack valgrind gives, and the
exit status --error-exitcode and on_error=abort ask for (checks=guard and
guard_sample=1); a read of the gap is not seen; one past a 16-byte block
faults.

Then: the error reaches `heapledger run`'s JSON and database as a heap
error; guard_sample=1 catches the same faults; on_error=abort ends the
program with SIGABRT after the report; the program's own SIGSEGV handler
(installed with sigaction or signal after the hook) still gets its own
faults, not the guard faults; a fault that is not a guard fault still
kills the program with SIGSEGV; a real program (python3) runs to the same
output under guard_sample=1000 and 100.

Usage: check_guard.py HEAPLEDGER LIBHEAPLEDGER GUARD_FAULTS SOURCE
"""
import json
import os
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import tempfile

PHRASE = {
    "read": ("Invalid read of size 1", "is 0 bytes after a block of size 10 alloc'd"),
    "write": ("Invalid write of size 1", "is 0 bytes after a block of size 10 alloc'd"),
    "uaf": ("Invalid read of size 1", "is 4 bytes inside a block of size 10 free'd"),
}
KIND = {"read": ("overflow", "read"), "write": ("overflow", "write"),
        "uaf": ("use_after_free", "read")}
MARKER = {"read": "GUARD-READ", "write": "GUARD-WRITE", "uaf": "GUARD-UAF"}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, env=None, timeout=300):
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          env=env, timeout=timeout)


def marker_line(source, marker):
    with open(source) as f:
        for n, line in enumerate(f, 1):
            if "/* %s */" % marker in line:
                return n
    fail("no marker " + marker)


def first_error(text):
    """heading, top frame "file:line", address phrase, then the first frame
    in the program of each further stack, from valgrind-style text."""
    lines = [re.sub(r"^==\d+== ?", "", l) for l in text.splitlines() if l.startswith("==")]
    for i, l in enumerate(lines):
        if l.startswith("Invalid read") or l.startswith("Invalid write"):
            break
    else:
        return None
    heading, top, phrase, later = lines[i], None, None, []
    for l in lines[i + 1:]:
        m = re.search(r"\((\S+?):(\d+)\)$", l)
        if l.strip() == "":
            break
        if m and top is None:
            top = os.path.basename(m.group(1)) + ":" + m.group(2)
        elif l.lstrip().startswith("Address "):
            phrase = re.sub(r"^Address 0x[0-9a-fA-F]+ ", "", l.strip())
            later.append(None)
        elif m and later and later[-1] is None and "guard_faults.c" in m.group(1):
            later[-1] = os.path.basename(m.group(1)) + ":" + m.group(2)
        elif l.strip() == "Block was alloc'd at":
            later.append(None)
    return heading, top, phrase, later


def check_against_valgrind(hl, prog, source, tmp):
    for mode in ("read", "write", "uaf"):
        want = run(["valgrind", "-q", prog, mode])
        expect = first_error(want.stderr)
        if expect is None:
            fail("valgrind found no error in mode %s:\n%s" % (mode, want.stderr))
        line = "guard_faults.c:%d" % marker_line(source, MARKER[mode])
        if expect[1] != line or expect[0] != PHRASE[mode][0] or expect[2] != PHRASE[mode][1]:
            fail("valgrind says %r for %s, the test expects %s %r" % (expect, mode, line,
                                                                       PHRASE[mode]))
        db = os.path.join(tmp, mode + ".db")
        js = os.path.join(tmp, mode + ".json")
        got = run([hl, "run", "--db", db, "--json", js, "--checks", "guard", "--", prog, mode],
                  env=dict(os.environ, HEAPLEDGER_OPTIONS="guard_align=1"))
        if got.returncode != 0 or "done" not in got.stdout:
            fail("%s under --checks guard: exit %d, stdout %r\n%s" % (
                mode, got.returncode, got.stdout, got.stderr))
        if first_error(got.stderr) != expect:
            fail("%s: heapledger says %r, valgrind %r\n%s" % (
                mode, first_error(got.stderr), expect, got.stderr))
        if "ERROR SUMMARY: 1 errors from 1 contexts" not in got.stderr:
            fail("%s: no error summary of one error\n%s" % (mode, got.stderr))
        check_json(mode, js, line)
        check_db(hl, mode, db)


def check_json(mode, path, line):
    with open(path) as f:
        doc = json.load(f)
    errors = [e for p in doc["processes"] for e in p.get("errors", [])]
    if len(errors) != 1:
        fail("%s: %d errors in the JSON" % (mode, len(errors)))
    e = errors[0]
    if (e["kind"], e["call"]) != KIND[mode] or e.get("access_size") != 1 or \
            e["block_size"] != 10:
        fail("%s: JSON error %r" % (mode, {k: e.get(k) for k in (
            "kind", "call", "access_size", "block_size")}))
    top = e["stack"][0]
    if "%s:%s" % (os.path.basename(top["file"] or ""), top["line"]) != line:
        fail("%s: JSON top frame %r, not %s" % (mode, top, line))
    if mode == "uaf" and not e["free_stack"]:
        fail("uaf: no free stack in the JSON")


def check_db(hl, mode, db):
    with sqlite3.connect(db) as c:
        rows = c.execute("SELECT kind, call, detail FROM errors").fetchall()
    if rows != [KIND[mode] + (1,)]:
        fail("%s: database errors %r" % (mode, rows))
    again = run([hl, "report", "--db", db])
    if PHRASE[mode][0] not in again.stdout + again.stderr:
        fail("%s: `heapledger report` from the database lacks %r\n%s" % (
            mode, PHRASE[mode][0], again.stdout + again.stderr))


def hooked(lib, options):
    env = dict(os.environ)
    env["LD_PRELOAD"] = lib
    env["HEAPLEDGER_OPTIONS"] = options
    env.pop("HEAPLEDGER_SOCKET", None)
    return env


OVERRUN = "Heap block overrun: the guard bytes after a block were overwritten"
# With the default alignment a write one past a 10-byte block lands in the
# gap before the guard page: found by the check at free, realloc or exit.
GAP_FOUND_AT = {"write": "free", "gaprealloc": "realloc", "gaplive": "exit"}


def overrun(text):
    """The address phrase and the allocation stack's first frame in the
    program of the first overrun in valgrind-style text, with its heading."""
    lines = [re.sub(r"^==\d+== ?", "", l) for l in text.splitlines() if l.startswith("==")]
    for i, l in enumerate(lines):
        if l.startswith(OVERRUN) or l.startswith("Invalid write"):
            break
    else:
        return None
    phrase, frame = None, None
    for l in lines[i + 1:]:
        if l.strip() == "":
            break
        m = re.search(r"\((\S+?):(\d+)\)$", l)
        if l.lstrip().startswith("Address "):
            phrase = re.sub(r"^Address 0x[0-9a-fA-F]+ ", "", l.strip())
        elif m and phrase and frame is None and "guard_faults.c" in m.group(1):
            frame = os.path.basename(m.group(1)) + ":" + m.group(2)
    return lines[i], phrase, frame


def check_default_alignment(hl, lib, prog):
    for mode, found_at in GAP_FOUND_AT.items():
        want = overrun(run(["valgrind", "-q", prog, mode]).stderr)
        if want is None or want[1] != "is 0 bytes after a block of size 10 alloc'd":
            fail("valgrind on %s: %r" % (mode, want))
        heading = "%s (found at %s)" % (OVERRUN, found_at)
        for options in ("checks=guard", "guard_sample=1"):
            got = run([prog, mode], env=hooked(lib, options))
            if got.returncode != 0 or "done" not in got.stdout or \
                    overrun(got.stderr)[:2] != (heading, want[1]) or \
                    "ERROR SUMMARY: 1 errors from 1 contexts" not in got.stderr:
                fail("%s, a write into the alignment gap (%s): exit %d\n%s" % (
                    options, mode, got.returncode, got.stderr))
        for flags in (["--checks", "guard"], ["--guard-sample", "1"]):
            got = run([hl, "run", "--no-db", "--error-exitcode", "7"] + flags + ["--", prog, mode])
            if got.returncode != 7 or overrun(got.stderr) != (heading, want[1], want[2]):
                fail("%s %s: exit %d, %r; valgrind %r\n%s" % (
                    " ".join(flags), mode, got.returncode, overrun(got.stderr), want,
                    got.stderr))
    got = run([prog, "write"], env=hooked(lib, "checks=guard:on_error=abort"))
    if got.returncode != -signal.SIGABRT or OVERRUN not in got.stderr or "done" in got.stdout:
        fail("checks=guard:on_error=abort, a write into the gap: exit %d\n%s" % (
            got.returncode, got.stderr))
    got = run([prog, "read"], env=hooked(lib, "checks=guard"))
    if got.returncode != 0 or "ERROR SUMMARY: 0 errors" not in got.stderr:
        fail("checks=guard, a read of the gap is not seen (doc/manual.md): exit %d\n%s" % (
            got.returncode, got.stderr))
    got = run([prog, "read16"], env=hooked(lib, "checks=guard"))
    if got.returncode != 0 or "Invalid read of size 1" not in got.stderr or \
            "is 0 bytes after a block of size 16 alloc'd" not in got.stderr:
        fail("checks=guard read16: exit %d\n%s" % (got.returncode, got.stderr))


def check_sampled(hl, lib, prog):
    for mode in ("read", "write", "uaf"):
        got = run([prog, mode], env=hooked(lib, "guard_sample=1:guard_align=1"))
        if got.returncode != 0 or PHRASE[mode][0] not in got.stderr or \
                PHRASE[mode][1] not in got.stderr:
            fail("guard_sample=1 %s: exit %d\n%s" % (mode, got.returncode, got.stderr))
    got = run([hl, "run", "--no-db", "--guard-sample", "1", "--", prog, "read16"])
    if "is 0 bytes after a block of size 16 alloc'd" not in got.stderr:
        fail("--guard-sample 1 read16 under heapledger run\n" + got.stderr)
    got = run([hl, "run", "--no-db", "--guard-sample", "1", "--", prog, "uaf"])
    if PHRASE["uaf"][1] not in got.stderr:
        fail("--guard-sample 1 uaf under heapledger run\n" + got.stderr)


def check_abort(lib, prog):
    got = run([prog, "write"], env=hooked(lib, "checks=guard:guard_align=1:on_error=abort"))
    if got.returncode != -signal.SIGABRT or PHRASE["write"][0] not in got.stderr or \
            "done" in got.stdout:
        fail("on_error=abort: exit %d\n%s" % (got.returncode, got.stderr))


def check_handlers(lib, prog):
    for mode in ("handler", "signal"):
        got = run([prog, mode], env=hooked(lib, "checks=guard:guard_align=1"))
        want = ("after guard fault: handler ran 0 times\n"
                "after own fault: handler ran 1 times\n"
                "sigaction reports the program's handler: yes\ndone\n")
        if got.returncode != 0 or got.stdout != want:
            fail("%s: exit %d, stdout %r\n%s" % (mode, got.returncode, got.stdout, got.stderr))
        if got.stderr.count("Invalid write of size 1") != 1:
            fail("%s: the guard fault was not reported once\n%s" % (mode, got.stderr))
    plain = run([prog, "wild"])
    got = run([prog, "wild"], env=hooked(lib, "checks=guard"))
    if plain.returncode != -signal.SIGSEGV or got.returncode != -signal.SIGSEGV:
        fail("a fault of the program's own: exit %d plain, %d hooked" % (
            plain.returncode, got.returncode))
    if "Invalid" in got.stderr:
        fail("a fault of the program's own was reported as a heap error\n" + got.stderr)


PYTHON_WORK = r"""
import json, re, collections
d = collections.Counter()
for i in range(5000):
    s = json.dumps({"k%d" % i: [i, str(i) * (i % 7), {"x": i / 3}]})
    d[re.sub(r"[0-9]", "", s)] += len(json.loads(s))
print(sorted(d.items())[:3], sum(d.values()))
"""


def check_real_program(lib):
    python = shutil.which("python3")
    plain = run([python, "-c", PYTHON_WORK])
    for options in ("guard_sample=1000", "guard_sample=100"):
        got = run([python, "-c", PYTHON_WORK], env=hooked(lib, options + ":leaks=0"))
        if got.returncode != 0 or got.stdout != plain.stdout or "Invalid" in got.stderr:
            fail("python3 under %s: exit %d, stdout %r (plain %r)\n%s" % (
                options, got.returncode, got.stdout, plain.stdout, got.stderr[-3000:]))


def main():
    hl, lib, prog, source = sys.argv[1:5]
    with tempfile.TemporaryDirectory() as tmp:
        check_against_valgrind(hl, prog, source, tmp)
    check_default_alignment(hl, lib, prog)
    check_sampled(hl, lib, prog)
    check_abort(lib, prog)
    check_handlers(lib, prog)
    check_real_program(lib)
    print("ok")


if __name__ == "__main__":
    main()
