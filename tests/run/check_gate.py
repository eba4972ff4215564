#!/usr/bin/env python3
"""tests/run/check_gate.py: exit-code gating on leaks of known classes and
heap errors, for `heapledger run --error-exitcode`, `heapledger gate --run`
on the same stored runs, and `heapledger daemon --error-exitcode`.

fake_client's "gate_classes" scenario leaks, as a reachability scan reports them:
definite 100 bytes in 1 block, indirect 50 in 2, possible 30 in 1,
reachable 20 in 1 ("gate_classes error" adds a double free); it exits 0.

usage: check_gate.py HEAPLEDGER FAKE_CLIENT
(HEAPLEDGER_LIB names the empty library fake_client runs with)
"""
import os
import re
import subprocess
import sys
import tempfile
import time

import daemon_util


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


# (options, fake_client arguments, whether the gate fails)
CASES = [
    ([], ["gate_classes"], True),                                   # definite,indirect: 150/3
    (["--errors-for-leak-kinds=none"], ["gate_classes"], False),
    (["--errors-for-leak-kinds=possible"], ["gate_classes"], True),
    (["--errors-for-leak-kinds=reachable"], ["gate_classes"], True),
    (["--errors-for-leak-kinds=definite", "--leak-bytes-threshold=99"], ["gate_classes"], True),
    (["--errors-for-leak-kinds=definite", "--leak-bytes-threshold=100"], ["gate_classes"], False),
    (["--leak-blocks-threshold=2"], ["gate_classes"], True),        # 3 blocks counted
    (["--leak-blocks-threshold=3"], ["gate_classes"], False),
    (["--leak-bytes-threshold=149", "--leak-blocks-threshold=2"], ["gate_classes"], True),
    (["--leak-bytes-threshold=150", "--leak-blocks-threshold=2"], ["gate_classes"], False),
    (["--errors-for-leak-kinds=all", "--leak-bytes-threshold=199"], ["gate_classes"], True),
    (["--errors-for-leak-kinds=all", "--leak-bytes-threshold=200"], ["gate_classes"], False),
    (["--errors-for-leak-kinds=definite,indirect", "SUPPRESS"], ["gate_classes"], False),
    (["--errors-for-leak-kinds=definite,possible", "SUPPRESS"], ["gate_classes"], True),
    (["--errors-for-leak-kinds=none"], ["gate_classes", "error"], True),  # heap errors always count
    (["--leak-bytes-threshold=1000000"], ["gate_classes", "error"], True),
]


def expand(opts, supp):
    return [("--suppressions=" + supp) if o == "SUPPRESS" else o for o in opts]


def check_run_and_gate(hl, client, tmp):
    db = os.path.join(tmp, "g.db")
    supp = os.path.join(tmp, "fake.supp")
    with open(supp, "w") as f:
        f.write("{\n   fake-leaker\n   Memcheck:Leak\n   fun:fake_leaker\n}\n")
    for n, (opts, args, fails) in enumerate(CASES, 1):
        opts = expand(opts, supp)
        p = subprocess.run([hl, "run", "--db", db, "--error-exitcode=7"] + opts +
                           ["--", client] + args, capture_output=True, text=True)
        want = 7 if fails else 0
        if p.returncode != want:
            fail("run %s %s: exit %d, expected %d\n%s" % (opts, args, p.returncode, want,
                                                          p.stderr[-2000:]))
        verdict = "FAILED" if fails else "passed"
        if "heapledger: gate %s:" % verdict not in p.stderr:
            fail("run %s: no 'gate %s' line:\n%s" % (opts, verdict, p.stderr[-2000:]))
        # The stored run, judged again: the same verdict (exit 1 by default).
        for extra, code in (([], 1), (["--error-exitcode", "42"], 42)):
            g = subprocess.run([hl, "gate", "--db", db, "--run", str(n)] + opts + extra,
                               capture_output=True, text=True)
            want = code if fails else 0
            if g.returncode != want:
                fail("gate --run %d %s: exit %d, expected %d\n%s%s" % (
                    n, opts + extra, g.returncode, want, g.stdout, g.stderr))
    # Without --error-exitcode (or with 0) run keeps the program's status.
    for opts in ([], ["--error-exitcode=0"]):
        p = subprocess.run([hl, "run", "--db", db] + opts + ["--", client, "gate_classes", "error"],
                           capture_output=True, text=True)
        if p.returncode != 0:
            fail("run %s: exit %d, expected the program's 0" % (opts, p.returncode))
    # Leaks no scan classified ("unknown": the client ends without a scan and
    # exits 3) count only when asked for, as valgrind (which classifies such
    # a process's blocks) would not fail them; the verdict says they exist.
    p = subprocess.run([hl, "run", "--no-db", "--error-exitcode=7", "--", client, "leak"],
                       capture_output=True, text=True)
    if p.returncode != 3 or "gate passed" not in p.stderr or \
            not re.search(r"not counted: [\d,]+ bytes? in [\d,]+ blocks? that no leak scan", p.stderr):
        fail("unclassified leaks by default: exit %d, expected the program's 3 and the"
             " uncounted bytes named\n%s" % (p.returncode, p.stderr[-2000:]))
    for kinds in ("definite,indirect,unknown", "unknown", "all"):
        p = subprocess.run([hl, "run", "--no-db", "--error-exitcode=7",
                            "--errors-for-leak-kinds=" + kinds, "--", client, "leak"],
                           capture_output=True, text=True)
        if p.returncode != 7:
            fail("--errors-for-leak-kinds=%s: unclassified leaks did not fail the gate: %d"
                 % (kinds, p.returncode))
    # heapledger's own failures: 125.
    for args in (["gate", "--db", db, "--run", "999"],
                 ["gate", "--db", os.path.join(tmp, "none.db")],
                 ["gate", "--db", db, "--baseline", os.path.join(tmp, "no-such-file")],
                 ["run", "--errors-for-leak-kinds=most", "--", client, "gate_classes"],
                 ["run", "--error-exitcode=256", "--", client, "gate_classes"]):
        p = subprocess.run([hl] + args, capture_output=True, text=True)
        if p.returncode != 125:
            fail("%s: exit %d, expected 125\n%s" % (args, p.returncode, p.stderr))


def run_daemon(hl, client, tmp, opts, clients):
    sock = os.path.join(tmp, "d.sock")
    db = os.path.join(tmp, "d.db")
    for path in (db, sock):
        if os.path.exists(path):
            os.unlink(path)
    daemon = daemon_util.start(hl, sock, db, opts)
    env_out = subprocess.run([hl, "env", "--socket", sock], capture_output=True, text=True,
                             check=True).stdout
    for args in clients:
        c = subprocess.run(["sh", "-c", env_out + 'exec "$@"', "sh", client] + args)
        if c.returncode != 0:
            fail("client %s exited %d" % (args, c.returncode))
    err = daemon_util.stop(daemon, "daemon did not stop")
    return daemon.returncode, err


def check_daemon(hl, client, tmp):
    two = [["gate_classes"], ["gate_classes"]]
    for opts, clients, want in (
            (["--error-exitcode=7"], two, 7),
            (["--error-exitcode=7", "--errors-for-leak-kinds=none"], two, 0),
            (["--error-exitcode=7", "--leak-bytes-threshold=300"], two, 0),
            (["--error-exitcode=7", "--leak-bytes-threshold=299"], two, 7),
            (["--error-exitcode=7", "--errors-for-leak-kinds=none"],
             [["gate_classes"], ["gate_classes", "error"]], 7),
            ([], two, 0)):   # the verdict is printed; without --error-exitcode, exit 0
        rc, err = run_daemon(hl, client, tmp, opts, clients)
        if rc != want:
            fail("daemon %s: exit %d, expected %d\n%s" % (opts, rc, want, err[-3000:]))
        summary = re.search(r"suite summary: (\d+) process(?:es)?, (\d+) with leaks or heap errors;"
                            r" run (\d+) in ", err)
        if not summary or summary.group(1) != str(len(clients)):
            fail("daemon %s: no suite summary with %d processes:\n%s" % (
                opts, len(clients), err[-3000:]))
        listed = re.findall(r"heapledger:   pid \d+ \((.*)\): ", err)
        counted = int(summary.group(2))
        if len(listed) != counted or any("fake_client gate_classes" not in c for c in listed):
            fail("daemon %s: leaking processes listed: %s" % (opts, listed))
        if (want == 7 or not opts) != ("gate FAILED" in err):
            fail("daemon %s: verdict line:\n%s" % (opts, err[-2000:]))


def main():
    hl, client = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="hl-gate-") as tmp:
        check_run_and_gate(hl, client, tmp)
        check_daemon(hl, client, tmp)
    print("PASS")


if __name__ == "__main__":
    main()
