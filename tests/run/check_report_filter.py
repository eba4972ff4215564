#!/usr/bin/env python3
"""report --process/--program/--kind: a shell runs leak_choice twice (each a
fork of the shell that execs it); the filters keep exactly the processes and
loss records they name, in JSON and text, and the streamed JSON of the whole
run is the document `run --json` wrote.

usage: check_report_filter.py HEAPLEDGER LEAK_CHOICE"""
import json
import os
import re
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def main():
    hl, prog = sys.argv[1:3]
    with tempfile.TemporaryDirectory(prefix="hl-filter-") as tmp:
        db = os.path.join(tmp, "f.db")
        whole = os.path.join(tmp, "run.json")
        p = subprocess.run([hl, "run", "-q", "--db", db, "--json", whole, "--", "sh", "-c",
                            '"$1" a b; "$1" c', "sh", prog], capture_output=True, text=True)
        if p.returncode != 0:
            fail("run: exit %d\n%s" % (p.returncode, p.stderr[-2000:]))

        def report(*args, expect=0):
            r = subprocess.run([hl, "report", "--db", db] + list(args),
                               capture_output=True, text=True)
            if r.returncode != expect:
                fail("report %s: exit %d, expected %d\n%s" % (args, r.returncode, expect, r.stderr))
            return r.stdout

        def doc(*args):
            return json.loads(report("--format", "json", *args))

        full = doc()
        written = json.load(open(whole))
        for key in ("id", "uuid"):
            written["run"][key] = full["run"][key]
        if full != written:
            fail("the stored report, streamed, differs from run --json")
        base = os.path.basename(prog)
        ours = [pr for pr in full["processes"] if os.path.basename(pr["exe"]) == base]
        if len(ours) != 2 or len({pr["pid"] for pr in ours}) != 2:
            fail("expected two %s processes: %s" % (base, [pr["exe"] for pr in full["processes"]]))
        kinds = {l["kind"] for pr in full["processes"] for l in pr["leaks"]}
        if "definitely" not in kinds:
            fail("no definitely lost record to filter: %s" % kinds)

        # --program: the basename of the executable or of argv[0]
        got = doc("--program", base)["processes"]
        if sorted(pr["pid"] for pr in got) != sorted(pr["pid"] for pr in ours):
            fail("--program %s kept %s" % (base, [(pr["pid"], pr["exe"]) for pr in got]))
        if any(os.path.basename(pr["exe"]) != base and
               os.path.basename(pr["argv"][0]) != base for pr in got):
            fail("--program kept another program")
        shells = doc("--program", "sh")["processes"]
        if not shells or any(os.path.basename(pr["exe"]) == base for pr in shells):
            fail("--program sh: %s" % [pr["exe"] for pr in shells])

        # --process: every image of that pid, nothing else
        pid = ours[0]["pid"]
        got = doc("--process", str(pid))["processes"]
        want = [pr for pr in full["processes"] if pr["pid"] == pid]
        if got != want:
            fail("--process %d kept %s" % (pid, [(pr["pid"], pr["exe"]) for pr in got]))

        # --kind: only records of those kinds, only processes that have one
        for arg, names in (("definite", {"definitely"}), ("definitely,reachable",
                                                          {"definitely", "reachable"})):
            got = doc("--kind", arg)["processes"]
            want = [dict(pr, leaks=[l for l in pr["leaks"] if l["kind"] in names])
                    for pr in full["processes"]]
            want = [pr for pr in want if pr["leaks"] or pr["errors"]]
            if got != want:
                fail("--kind %s: %d processes, expected %d" % (arg, len(got), len(want)))
        if doc("--kind", "all") != full:
            fail("--kind all is not the whole report")

        # filters together, in text
        text = report("--program", base, "--kind", "definite")
        pids = {int(m) for m in re.findall(r"^==(\d+)==", text, re.M)}
        if pids != {pr["pid"] for pr in ours}:
            fail("text --program --kind: pids %s, expected %s" % (pids, [pr["pid"] for pr in ours]))
        if re.search(r"still reachable in loss record|possibly lost in loss record", text):
            fail("text --kind definite shows other kinds")
        text = report("--process", "999999999")
        if "no process of run" not in text:
            fail("an empty selection is not said: %r" % text)
        report("--kind", "most", expect=125)
    print("PASS")


if __name__ == "__main__":
    main()
