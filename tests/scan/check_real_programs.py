#!/usr/bin/env python3
"""tests/scan/check_real_programs.py HEAPLEDGER: real programs (python3,
perl, sqlite3, git, bash) on small inputs, run under `heapledger run` and
under `valgrind --leak-check=full --show-leak-kinds=all` (its defaults
otherwise, so glibc's freeres runs): the definitely lost bytes and blocks of
each program must be equal. Both totals are computed here, never written in.

A program is its first process and its fork children: valgrind follows fork
but not exec (--trace-children=no), and `heapledger run` reports an image
replaced by exec with no loss records, so exec'd images and processes the
program spawned are left out of heapledger's side."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

DEFINITE = re.compile(r"definitely lost: ([\d,]+) bytes in ([\d,]+) blocks")


def program(name):
    # The real binary, not a version manager's shim script in PATH.
    for d in ("/usr/bin", "/bin"):
        if os.access(os.path.join(d, name), os.X_OK):
            return os.path.join(d, name)
    return shutil.which(name)


def valgrind_definite(argv, cwd):
    with tempfile.NamedTemporaryFile("r", suffix=".log") as log:
        subprocess.run(["valgrind", "--leak-check=full", "--show-leak-kinds=all",
                        "--log-file=" + log.name] + argv, cwd=cwd, check=True,
                       stdout=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        text = log.read()
    if "LEAK SUMMARY" not in text and "All heap blocks were freed" not in text:
        sys.exit("valgrind printed no leak summary for %s:\n%s" % (argv, text))
    total = [0, 0]
    # One LEAK SUMMARY per process (fork children included); a process
    # that freed everything prints none and counts 0.
    for b, n in DEFINITE.findall(text):
        total[0] += int(b.replace(",", ""))
        total[1] += int(n.replace(",", ""))
    return tuple(total)


def heapledger_definite(heapledger, argv, cwd):
    with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
        subprocess.run([heapledger, "run", "--no-db", "--json", out.name, "--"] + argv,
                       cwd=cwd, check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        doc = json.load(open(out.name))
    procs = doc["processes"]
    if not procs:
        sys.exit("heapledger: no process reported for %s" % argv)
    first = procs[0]
    # A process that freed everything has nothing to scan.
    if not first["scan"]["scanned"] and first["summary"]["in_use_blocks"]:
        sys.exit("heapledger: %s was not scanned: %s" % (argv, first["scan"]))
    total = [0, 0]
    for p in procs:
        if p is not first and p["origin"] != "fork":
            continue
        for leak in p["leaks"]:
            if leak["kind"] == "definitely":
                total[0] += leak["bytes"]
                total[1] += leak["blocks"]
    return tuple(total)


def main():
    heapledger = sys.argv[1]
    with tempfile.TemporaryDirectory() as work:
        with open(os.path.join(work, "in.sql"), "w") as f:
            f.write("create table t(a, b);\ninsert into t values (1, 'x'), (2, 'y');\n"
                    "select b, count(*) from t group by b;\n")
        subprocess.run([program("git"), "init", "-q", "repo"], cwd=work, check=True)
        with open(os.path.join(work, "repo", "a.txt"), "w") as f:
            f.write("hello\n")
        cases = [
            ("python3", ["-c", "import json; print(json.dumps({'a': [1, 2]}))"]),
            ("perl", ["-e", "my %h = (a => 1); print join(',', keys %h), qq(\\n)"]),
            ("sqlite3", [":memory:", ".read in.sql"]),
            ("git", ["-C", "repo", "status", "--short"]),
            ("bash", ["-c", "x=$(echo hi); for i in 1 2 3; do y=$x$i; done; echo $y"]),
        ]
        failed = []
        for name, args in cases:
            path = program(name)
            if path is None:
                sys.exit("%s is not installed (scripts/setup.sh installs it)" % name)
            argv = [path] + args
            hl = heapledger_definite(heapledger, argv, work)
            vg = valgrind_definite(argv, work)
            print("%-8s heapledger: %d bytes in %d blocks, valgrind: %d bytes in %d blocks"
                  % (name, hl[0], hl[1], vg[0], vg[1]))
            if hl != vg:
                failed.append(name)
    if failed:
        sys.exit("definitely lost totals differ from valgrind's: " + ", ".join(failed))


main()
