#!/usr/bin/env python3
"""tests/run/check_fork_memo.py HEAPLEDGER PROG LIB N K: a fork-heavy run
(progs/fork_memo.c) whose children share their parent's stacks, which the
report symbolizes once for the run (reporter/symbols/stack_memo.h). Each child's
loss records must still be its own: the parent's, less the inherited block
it freed, plus its own leak (100 + c bytes, from its own stack), also in the
children that dlopen()ed a library (other modules, so other stack
identities). And the live text and JSON reports, made from the memo, must
be what `heapledger report` rebuilds from the database, which knows nothing
of it."""
import json
import os
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def own_lines(text, pid):
    return [l for l in text.splitlines() if l.startswith("==%d==" % pid)]


def site(leak):
    """(innermost program function, how many frames in a row it has)."""
    names = [f.get("function") for f in leak["stack"]]
    for i, name in enumerate(names):
        if name and (name.startswith("site") or name in ("child_own", "child_leak")):
            j = i + 1
            if name == "child_own":
                while j < len(names) and names[j] == "child_leak":
                    j += 1
                return ("child_own", j - i - 2)
            while j < len(names) and names[j] == name:
                j += 1
            return (name, j - i - 1)
    return None


def records(proc):
    out = {}
    for leak in proc["leaks"]:
        key = site(leak)
        if key:
            out[key] = (leak["bytes"], leak["blocks"], leak["inherited_blocks"])
    return out


def main():
    hl, prog, lib, n, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "h.db")
        js = os.path.join(tmp, "r.json")
        run = subprocess.run([hl, "run", "--db", db, "--json", js, "--show-leak-kinds=all",
                              "--", prog, str(n), str(k), lib],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=120)
        if run.returncode != 0:
            fail("exit %d: %s" % (run.returncode, run.stderr[-3000:]))
        with open(js, encoding="utf-8") as f:
            report = json.load(f)
        procs = report["processes"]
        if len(procs) != k + 1 or procs[0]["origin"] != "start":
            fail("%d processes, expected the parent and %d children" % (len(procs), k))
        parent = records(procs[0])
        expected_parent = {("site%d" % (i % 8), i // 8): (16 + i % 8, 1, 0) for i in range(n)}
        if parent != expected_parent:
            fail("the parent's records: %s" % sorted(parent.items()))
        for c, child in enumerate(procs[1:]):
            got = records(child)
            want = {key: (b, blocks, 1) for key, (b, blocks, _) in parent.items()}
            del want[("site%d" % (c % n % 8), c % n // 8)]
            want[("child_own", c % 4)] = (100 + c, 1, 0)
            if got != want:
                missing = sorted(set(want.items()) - set(got.items()))
                extra = sorted(set(got.items()) - set(want.items()))
                fail("child %d (pid %d): missing %s, unexpected %s"
                     % (c, child["pid"], missing, extra))
        stored = subprocess.run([hl, "report", "--db", db, "--format", "json"],
                                capture_output=True, text=True, timeout=60)
        if stored.returncode != 0 or json.loads(stored.stdout) != report:
            fail("the stored JSON report differs from the --json report")
        for proc in procs:
            pid = proc["pid"]
            text = subprocess.run([hl, "report", "--db", db, "--process", str(pid),
                                   "--show-leak-kinds=all"],
                                  capture_output=True, text=True, timeout=60)
            live, again = own_lines(run.stderr, pid), own_lines(text.stdout, pid)
            if not live or live != again:
                fail("pid %d: the stored report differs from the live one:\n%s\n---\n%s"
                     % (pid, "\n".join(live[-20:]), "\n".join(again[-20:])))
    print("OK: %d children, each with its own loss records; live and stored reports agree" % k)


main()
