#!/usr/bin/env python3
"""tests/run/check_valgrind_checks.py: `heapledger valgrind` checks what
memcheck checks, on the programs of progs/memcheck_cases.cpp, each run with
valgrind (the oracle, run here) and with `heapledger valgrind` on the same
command line:
 - the exit status is valgrind's, with and without --error-exitcode, with
   --leak-check=full and the default (overflow, write after free, double
   free, mismatch, leak, 0-byte leak, and all of them together);
 - "ERROR SUMMARY: N errors from M contexts" is valgrind's on every program,
   a read of freed memory included (guarded blocks fault at the read), and
   the combined program's reads and writes after free are at valgrind's
   source lines;
 - the mismatch is named as valgrind names it;
 - valgrind's classic command line (--leak-check=full --show-leak-kinds=all
   --track-origins=yes --verbose --log-file=F) runs, with the options that
   have no effect named once on stderr, and every memcheck option a user
   may pass is accepted;
 - -q prints only errors and loss records, as valgrind's -q does;
 - --time-stamp=yes stamps every line as valgrind stamps its own;
 - `heapledger run` in the default mode (no checks=full) shows where a
   double-freed block was first freed, at valgrind's line;
 - an option valgrind does not know, or a value it refuses, exits as
   valgrind exits (1), in valgrind's words, and runs nothing; so does
   --log-file=%q{VAR} with VAR unset, naming VAR.

usage: check_valgrind_checks.py HEAPLEDGER MEMCHECK_CASES
"""
import os
import re
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


hl, cases = sys.argv[1:3]
tmp = tempfile.mkdtemp()
env = dict(os.environ, HEAPLEDGER_DB=os.path.join(tmp, "hl.db"))
env.pop("HEAPLEDGER_OPTIONS", None)
ERRORS = re.compile(r"==\d+== ERROR SUMMARY: ([\d,]+) errors from ([\d,]+) contexts")


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env)


def both(a, b):
    """Runs the two command lines side by side."""
    procs = [subprocess.Popen(c, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=env) for c in (a, b)]
    out = []
    for p, cmd in zip(procs, (a, b)):
        stdout, stderr = p.communicate(timeout=300)
        out.append(subprocess.CompletedProcess(cmd, p.returncode, stdout, stderr))
    return out


ACCESS = re.compile(r"==\d+== (Invalid (?:read|write) of size \d+)\n==\d+==    at 0x[0-9A-Fa-f]+: "
                    r"(\S+) \((memcheck_cases\.cpp:\d+)\)")


def at_the_instruction(stderr):
    """The invalid reads and writes after free, with the top frame's function
    and line. (The off-by-one write lands between the block's end and its
    guard page, malloc's 16-byte alignment, and is found at the free.)"""
    return set(a for a in ACCESS.findall(stderr) if a[1].startswith("uaf_"))


MODES = ["overflow", "uaf_write", "uaf_read", "double", "mismatch", "leak", "leak0", "combo"]
LINES = [["--error-exitcode=9", "--leak-check=full"], ["--error-exitcode=9"],
         ["-q", "--error-exitcode=9", "--leak-check=full"]]
checked = 0
for mode in MODES:
    for opts in LINES:
        vg, ours = both(["valgrind"] + opts + [cases, mode], [hl, "valgrind"] + opts + [cases, mode])
        line = " ".join(opts + [mode])
        want = ERRORS.findall(vg.stderr)
        got = ERRORS.findall(ours.stderr)
        if "-q" in opts:
            if got or "HEAP SUMMARY" in ours.stderr or "heapledger" in ours.stderr:
                fail("%s: -q printed more than errors and loss records:\n%s" % (line, ours.stderr))
        elif not want or not got:
            fail("%s: no ERROR SUMMARY:\nvalgrind:\n%s\nheapledger:\n%s" % (line, vg.stderr,
                                                                        ours.stderr))
        if want and got and got[-1] != want[-1]:
            fail("%s: ERROR SUMMARY: valgrind %s, heapledger %s\n%s" %
                 (line, want[-1], got[-1], ours.stderr))
        vg_status, expect_status = vg.returncode, vg.returncode
        if vg_status != 9 and "--error-exitcode=9" in opts and \
                (mode not in ("leak", "leak0") or "--leak-check=full" in opts):
            fail("%s: valgrind itself exits %d" % (line, vg_status))
        if ours.returncode != expect_status:
            fail("%s: valgrind exits %d, heapledger valgrind %d (expected %d)\n%s" % (
                line, vg_status, ours.returncode, expect_status, ours.stderr))
        if mode == "combo" and "--leak-check=full" in opts:
            missing = at_the_instruction(vg.stderr) - at_the_instruction(ours.stderr)
            if missing:
                fail("%s: not reported where valgrind reports them: %s\n%s" % (
                    line, sorted(missing), ours.stderr))
        if mode == "mismatch" and "Mismatched free() / delete / delete []" not in ours.stderr:
            fail("%s: the mismatch is not named as valgrind names it:\n%s" % (line, ours.stderr))
        checked += 1
        print("ok: %s: exit %d as valgrind's%s" % (
            line, ours.returncode, ", %s errors" % got[-1][0] if got else ""))

# the classic line: accepted, the options with no effect named once
log = os.path.join(tmp, "classic.log")
r = run([hl, "valgrind", "--leak-check=full", "--show-leak-kinds=all", "--track-origins=yes",
         "--verbose", "--track-origins=yes", "--log-file=" + log, cases, "leak"])
notes = [l for l in r.stderr.splitlines() if "has no effect here" in l]
if r.returncode != 0 or len(notes) != 1 or "--track-origins=yes" not in notes[0]:
    fail("classic line: exit %d, stderr:\n%s" % (r.returncode, r.stderr))
text = open(log).read()
if "100 bytes in 1 blocks are definitely lost in loss record" not in text:
    fail("classic line: the log has no loss record:\n" + text)
print("ok: the classic command line; named once: " + notes[0])

# every memcheck option a user may pass is taken (valgrind --help's list)
ACCEPTED = [
    "-v", "-s", "-q", "--verbose", "--tool=memcheck", "--trace-children=no",
    "--child-silent-after-fork=yes", "--track-fds=yes", "--time-stamp=yes", "--log-fd=2",
    "--demangle=yes", "--num-callers=30", "--error-limit=no", "--show-error-list=yes",
    "--keep-debuginfo=yes", "--show-below-main=no", "--default-suppressions=yes",
    "--gen-suppressions=no", "--smc-check=all-non-file", "--read-inline-info=yes",
    "--read-var-info=no", "--run-libc-freeres=yes", "--run-cxx-freeres=yes",
    "--fair-sched=no", "--max-stackframe=2000000", "--main-stacksize=8388608",
    "--leak-resolution=high", "--leak-check=summary", "--show-leak-kinds=definite",
    "--errors-for-leak-kinds=definite", "--leak-check-heuristics=all",
    "--undef-value-errors=no", "--track-origins=no", "--partial-loads-ok=yes",
    "--expensive-definedness-checks=auto", "--freelist-vol=20000000",
    "--freelist-big-blocks=1000000", "--malloc-fill=0xab", "--free-fill=dd",
    "--keep-stacktraces=alloc-and-free", "--show-mismatched-frees=yes", "--redzone-size=16",
    "--vgdb=no", "--sim-hints=lax-ioctls", "--alignment=16", "--xml=no",
]
r = run([hl, "valgrind"] + ACCEPTED + [cases, "leak"])  # one line, as valgrind takes them
if r.returncode != 0 or "Unknown option" in r.stderr or "Bad option" in r.stderr:
    fail("%s: exit %d\n%s" % (" ".join(ACCEPTED), r.returncode, r.stderr))
print("ok: %d memcheck options accepted on one command line" % len(ACCEPTED))

# a double free in the default mode (`heapledger run`, no checks=full) says
# where the block was freed first, at valgrind's line
FREED = re.compile(r"==\d+==  Address 0x[0-9A-Fa-f]+ is 0 bytes inside a block of size 30 free'd\n"
                   r"(?:==\d+==    (?:at|by) 0x[0-9A-Fa-f]+: .*\n)*?"
                   r"==\d+==    (?:at|by) 0x[0-9A-Fa-f]+: (\S+) \((memcheck_cases\.cpp:\d+)\)")
vg, ours = both(["valgrind", cases, "double"], [hl, "run", "--no-db", "--", cases, "double"])
want, got = FREED.search(vg.stderr), FREED.search(ours.stderr)
if not want:
    fail("valgrind shows no free stack for the double free:\n" + vg.stderr)
if not got or got.groups() != want.groups():
    fail("double free in the default mode: free stack %s, valgrind's %s\n%s" % (
        got and got.groups(), want.groups(), ours.stderr))
print("ok: double free in the default mode, first freed at %s (%s) as valgrind says" % want.groups())

# --time-stamp=yes: every ==...== line carries valgrind's elapsed-time stamp
STAMPED = re.compile(r"^==\d\d:\d\d:\d\d:\d\d\.\d\d\d \d+==( |$)")
stamp_line = ["--time-stamp=yes", "--leak-check=full", cases, "leak"]
vg, ours = both(["valgrind"] + stamp_line, [hl, "valgrind"] + stamp_line)
for name, out in (("valgrind", vg.stderr), ("heapledger valgrind", ours.stderr)):
    lines = [l for l in out.splitlines() if l.startswith("==")]
    bad = [l for l in lines if not STAMPED.match(l)]
    if not lines or bad or "definitely lost in loss record" not in out:
        fail("--time-stamp=yes: %s printed lines without the stamp: %s\n%s" % (name, bad[:3], out))
if "--time-stamp" in ours.stderr:
    fail("--time-stamp=yes is named as having no effect:\n" + ours.stderr)
print("ok: --time-stamp=yes: " + [l for l in ours.stderr.splitlines() if "loss record" in l][0])

# refused as valgrind refuses: status 1, valgrind's words, nothing run
marker = os.path.join(tmp, "ran")
env["NOT_SET_FOR_HEAPLEDGER"] = ""
del env["NOT_SET_FOR_HEAPLEDGER"]
for opt, text in [("--bogus", "Unknown option: --bogus"),
                  ("--leak-check=bogus", "--leak-check"),
                  ("--malloc-fill=zz", "--malloc-fill"),
                  ("--track-origins=maybe", "Bad option: --track-origins=maybe"),
                  ("--log-file=" + tmp + "/x.%q{NOT_SET_FOR_HEAPLEDGER}",
                   "NOT_SET_FOR_HEAPLEDGER")]:
    vg = run(["valgrind", opt, "touch", marker])
    ours = run([hl, "valgrind", opt, "touch", marker])
    if vg.returncode != 1 or ours.returncode != vg.returncode or text not in ours.stderr or \
            os.path.exists(marker):
        fail("%s: valgrind exits %d, heapledger valgrind %d, ran %s:\n%s" % (
            opt, vg.returncode, ours.returncode, os.path.exists(marker), ours.stderr))
    print("ok: %s: exit 1: %s" % (opt, ours.stderr.splitlines()[0]))
print("PASS: %d command lines give valgrind's exit status" % checked)
