#!/usr/bin/env python3
"""tests/run/check_valgrind_frontend.py: `heapledger valgrind` against
valgrind itself. The same valgrind command lines are run with valgrind
memcheck (the oracle, run here) and with `heapledger valgrind`, on leaking,
clean and misusing programs:
 - the exit status is the same (--error-exitcode with --leak-check=full,
   summary and the default, --errors-for-leak-kinds, suppressions, heap
   errors, --trace-children, the program's own status);
 - with --leak-check=full the LEAK SUMMARY's definitely lost line is the same;
 - the ERROR SUMMARY counts the same errors (leak records of
   --errors-for-leak-kinds with --leak-check=full), as scripts grep it;
 - --xml=yes --xml-file=F.%p.xml writes, for each, a file named by the pid
   that parses as memcheck's XML protocol 4 with the same errors (kind,
   leaked bytes and blocks, the allocating function);
 - --log-file=F.%p writes the loss records to a file named by the pid, and
   nothing of the report to stderr;
 - `heapledger report --format valgrind-xml` writes the stored run's XML;
 - options valgrind refuses, and the few it takes that heapledger cannot
   honour (another tool, --xml=yes without a file), exit 1 as valgrind's
   bad options do, naming the option, and the program is not run.

usage: check_valgrind_frontend.py HEAPLEDGER LEAK_CHOICE NO_LEAK MISUSE SPAWN_SYSTEM END_HOW
                                  LEAK_DIRECT
"""
import glob
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


hl, leak_choice, no_leak, misuse, spawn_system, end_how, leak_direct = sys.argv[1:8]
tmp = tempfile.mkdtemp()
env = dict(os.environ, HEAPLEDGER_DB=os.path.join(tmp, "hl.db"))
supp = os.path.join(tmp, "leak_a.supp")
with open(supp, "w") as f:
    f.write("{\n   leak_a_is_known\n   Memcheck:Leak\n   match-leak-kinds: definite\n"
            "   ...\n   fun:leak_a\n   ...\n}\n")

# (valgrind options, program and arguments)
CASES = [
    (["--leak-check=full", "--error-exitcode=7"], [leak_choice, "a"]),
    (["--error-exitcode=7"], [leak_choice, "a"]),                      # summary: leaks are no errors
    (["--leak-check=summary", "--error-exitcode=7"], [leak_choice, "many"]),
    (["--leak-check=no", "--error-exitcode=7"], [leak_choice, "many"]),
    (["--leak-check=yes", "--error-exitcode=7", "--errors-for-leak-kinds=none"], [leak_choice, "a"]),
    (["--leak-check=full", "--error-exitcode=7", "--errors-for-leak-kinds=possible"], [leak_choice, "a"]),
    (["-q", "--tool=memcheck", "--leak-check=full"], [leak_choice, "a", "exit=3"]),
    (["--leak-check=full", "--error-exitcode=7", "--show-reachable=yes"], [no_leak]),
    (["--leak-check=full", "--error-exitcode=7", "--suppressions=" + supp], [leak_choice, "a"]),
    (["--leak-check=full", "--error-exitcode=7", "--suppressions=" + supp], [leak_choice, "a", "b"]),
    (["--leak-check=full", "--error-exitcode=7", "--num-callers=50", "--trace-children=yes"],
     [leak_choice, "many"]),
    # spawn_system's children (itself again, by posix_spawn and system())
    # leak; by default (--trace-children=no) they are not checked
    (["--leak-check=full", "--error-exitcode=7"], [spawn_system]),
    (["--leak-check=full", "--error-exitcode=7", "--trace-children=no"], [spawn_system]),
    # end_how execs leak_direct, which leaks: checked with --trace-children=yes
    (["--leak-check=full", "--error-exitcode=7", "--trace-children=yes"],
     [end_how, "execv", leak_direct]),
    (["--leak-check=full", "--error-exitcode=7"], [end_how, "execv", leak_direct]),
    (["-q", "--error-exitcode=7"], ["/nonexistent/prog"]),             # 127: not found
    (["-q", "--error-exitcode=7"], ["no-such-command-for-heapledger"]),
    (["--error-exitcode=7"], [misuse, "double"]),                      # heap errors always count
    (["--leak-check=full", "--error-exitcode=7"], [misuse, "array_delete"]),
]
DEFINITE = re.compile(r"==\d+==    definitely lost: ([\d,]+) bytes in ([\d,]+) blocks")
ERRORS = re.compile(r"==\d+== ERROR SUMMARY: ([\d,]+) errors from ([\d,]+) contexts")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=300, env=env, **kw)


def both(a, b):
    """Runs the two command lines side by side (the test's time halves)."""
    pa = subprocess.Popen(a, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    pb = subprocess.Popen(b, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    out = []
    for p, cmd in ((pa, a), (pb, b)):
        stdout, stderr = p.communicate(timeout=300)
        out.append(subprocess.CompletedProcess(cmd, p.returncode, stdout, stderr))
    return out


checked = 0
for opts, prog in CASES:
    vg, ours = both(["valgrind"] + opts + prog, [hl, "valgrind"] + opts + prog)
    line = " ".join(opts + [os.path.basename(p) for p in prog])
    if vg.returncode != ours.returncode:
        fail("%s: valgrind exits %d, heapledger valgrind %d\n%s" % (line, vg.returncode,
             ours.returncode, ours.stderr))
    want, got = DEFINITE.findall(vg.stderr), DEFINITE.findall(ours.stderr)
    if "--leak-check=full" in opts and "-q" not in opts and want != got:
        fail("%s: definitely lost: valgrind %s, heapledger %s\n%s" % (line, want, got, ours.stderr))
    # scripts grep "ERROR SUMMARY: 0 errors": the count must be valgrind's
    want, got = ERRORS.findall(vg.stderr), ERRORS.findall(ours.stderr)
    if want and want[-1:] != got[-1:]:
        fail("%s: ERROR SUMMARY: valgrind %s, heapledger %s\n%s" % (line, want, got, ours.stderr))
    checked += 1
    print("ok: %s: both exit %d%s" % (line, ours.returncode,
                                       ", %s errors" % got[-1][0] if got and want else ""))


def xml_errors(path, skip_obj):
    root = ET.parse(path).getroot()
    if root.tag != "valgrindoutput" or root.findtext("protocolversion") != "4":
        fail("%s is not protocol 4 XML" % path)
    for tag in ("pid", "ppid", "tool", "args", "status", "errorcounts", "suppcounts"):
        if root.find(tag) is None:
            fail("%s: no <%s>" % (path, tag))
    out = []
    for e in root.findall("error"):
        fn = [fr.findtext("fn") for fr in e.find("stack").findall("frame")
              if skip_obj not in (fr.findtext("obj") or "")]
        out.append((e.findtext("kind"), e.findtext("xwhat/leakedbytes"),
                    e.findtext("xwhat/leakedblocks"), fn[0] if fn else None))
    return out


# XML and log files, one per process, named by the pid
xml_opts = ["--leak-check=full", "--xml=yes"]
vg = run(["valgrind"] + xml_opts + ["--xml-file=" + tmp + "/vg.%p.xml", leak_choice, "a", "b", "many"])
ours = run([hl, "valgrind"] + xml_opts + ["--xml-file=" + tmp + "/hl.%p.xml",
           "--log-file=" + tmp + "/hl.%p.log", leak_choice, "a", "b", "many"])
vg_files, hl_files = glob.glob(tmp + "/vg.*.xml"), glob.glob(tmp + "/hl.*.xml")
logs = glob.glob(tmp + "/hl.*.log")
if len(vg_files) != 1 or len(hl_files) != 1 or len(logs) != 1:
    fail("xml/log files: valgrind %s, heapledger %s %s" % (vg_files, hl_files, logs))
pid = re.search(r"hl\.(\d+)\.xml$", hl_files[0]).group(1)
if ET.parse(hl_files[0]).getroot().findtext("pid") != pid or not logs[0].endswith(pid + ".log"):
    fail("%%p is not the process id: %s %s" % (hl_files[0], logs[0]))
want, got = xml_errors(vg_files[0], "vgpreload"), xml_errors(hl_files[0], "libheapledger")
if want != got or len(got) != 3:
    fail("XML errors differ:\n valgrind   %s\n heapledger %s" % (want, got))
print("ok: XML protocol 4, the same %d errors: %s" % (len(got), got))
log = open(logs[0]).read()
if "1,000 bytes in 10 blocks are definitely lost in loss record 3 of 3" not in log:
    fail("the log file has no loss records:\n" + log)
if "loss record" in ours.stderr:
    fail("--log-file: the report went to stderr too:\n" + ours.stderr)

# the stored run as XML, through the report layer
rep = run([hl, "report", "--format", "valgrind-xml"])
if rep.returncode != 0:
    fail("report --format valgrind-xml: %d %s" % (rep.returncode, rep.stderr))
with open(tmp + "/report.xml", "w") as f:
    f.write(rep.stdout)
if xml_errors(tmp + "/report.xml", "libheapledger") != got:
    fail("report --format valgrind-xml differs from --xml-file:\n" + rep.stdout)
print("ok: report --format valgrind-xml gives the same errors")

# refused options: 1 (valgrind's status for a bad option), named, nothing run
marker = os.path.join(tmp, "ran")
for opt in ["--leak=full", "--tool=helgrind", "--xml=yes", "--log-file=x%n", "--gen-suppressions=ask"]:
    r = run([hl, "valgrind", opt, "touch", marker])
    name = opt.split("=")[0]
    if r.returncode != 1 or name not in r.stderr or os.path.exists(marker):
        fail("%s: exit %d, ran %s, stderr %s" % (opt, r.returncode, os.path.exists(marker), r.stderr))
    print("ok: %s refused: %s" % (opt, r.stderr.splitlines()[0]))
print("PASS: %d command lines give valgrind's exit status" % checked)
