#!/usr/bin/env python3
"""tests/run/check_daemon_max_leaks.py: the daemon prints at most max_leaks
loss records per process (by default 50, the hook's own standalone default;
--max-leaks=N; a process whose HEAPLEDGER_OPTIONS set max_leaks=N, sent by
the hook in its OPTIONS record, gets its own N), the largest ones, and says
how many it left out; the database keeps every record. heapledger run
honours a program's max_leaks the same way.

leak_sites leaks from 5000 distinct functions (5000 records); leak_choice
"a b c many" from 4.

usage: check_daemon_max_leaks.py HEAPLEDGER LEAK_SITES LEAK_CHOICE
"""
import json
import os
import re
import subprocess
import sys
import tempfile

import daemon_util

hl, sites, choice = sys.argv[1:4]
tmp = tempfile.mkdtemp()
RECORD = re.compile(r"==\d+== [\d,]+ bytes in [\d,]+ blocks are definitely lost in loss record "
                    r"([\d,]+) of ([\d,]+)")


def suite(extra, prog, options=None):
    sock, db = os.path.join(tmp, "s.sock"), os.path.join(tmp, "s.db")
    for f in (sock, db):
        if os.path.exists(f):
            os.unlink(f)
    daemon = daemon_util.start(hl, sock, db, extra)
    exports = subprocess.run([hl, "env", "--socket", sock], capture_output=True, text=True,
                             check=True).stdout
    env = dict(os.environ)
    env.pop("HEAPLEDGER_OPTIONS", None)
    progs = prog if isinstance(prog[0], list) else [prog]
    for i, one in enumerate(progs):
        if options and options[i]:
            env["HEAPLEDGER_OPTIONS"] = options[i]
        else:
            env.pop("HEAPLEDGER_OPTIONS", None)
        subprocess.run(["sh", "-c", exports + "\nexec \"$@\"", "sh"] + one, check=True,
                       timeout=120, stdout=subprocess.DEVNULL, env=env)
    err = daemon_util.stop(daemon)
    rep = subprocess.run([hl, "report", "--db", db, "--format", "json"], capture_output=True,
                         text=True, check=True)
    stored = sum(len(p["leaks"]) for p in json.loads(rep.stdout)["processes"])
    return err, [int(m.group(1).replace(",", "")) for m in RECORD.finditer(err)], stored


err, printed, stored = suite([], [sites])
if printed != list(range(4951, 5001)) or "the 4,950 smallest loss records are not shown" not in err:
    daemon_util.fail("default: printed records %s...\n%s" % (printed[:5], err[-2000:]))
if stored != 5000:
    daemon_util.fail("default: %d records stored, want 5000" % stored)
print("ok: default: the 50 largest of 5000 records printed, 5000 stored")

err, printed, stored = suite(["--max-leaks=2"], [choice, "a", "b", "c", "many"])
if printed != [3, 4] or "the 2 smallest loss records are not shown: --max-leaks=2" not in err:
    daemon_util.fail("--max-leaks=2: printed %s\n%s" % (printed, err))
print("ok: --max-leaks=2: records 3 and 4 of 4")

err, printed, stored = suite(["--max-leaks=0"], [choice, "a", "b", "c", "many"])
if printed != [1, 2, 3, 4] or "not shown" in err:
    daemon_util.fail("--max-leaks=0: printed %s\n%s" % (printed, err))
print("ok: --max-leaks=0: all 4 records")

# Two programs under one daemon: one sets max_leaks=1 in its own options,
# the other keeps the daemon's --max-leaks=3.
args = [choice, "a", "b", "c", "many"]
err, printed, stored = suite(["--max-leaks=3"], [args, args], ["max_leaks=1", None])
if (printed != [4, 2, 3, 4] or
        "the 3 smallest loss records are not shown: max_leaks=1 in its HEAPLEDGER_OPTIONS"
        not in err or "the 1 smallest loss records are not shown: --max-leaks=3" not in err):
    daemon_util.fail("per-process max_leaks=1: printed %s\n%s" % (printed, err))
if stored != 8:
    daemon_util.fail("per-process max_leaks=1: %d records stored, want 8" % stored)
print("ok: a program's own max_leaks=1 wins over the daemon's --max-leaks=3, for it alone")

# max_leaks=0 in a program's options: all of its records, over the default 50.
err, printed, stored = suite([], [sites], ["max_leaks=0"])
if printed != list(range(1, 5001)) or "not shown" in err:
    daemon_util.fail("max_leaks=0: printed %d records\n%s" % (len(printed), err[-2000:]))
print("ok: a program's own max_leaks=0 prints all 5000 records")

# heapledger run: the same rule (its default prints all).
env = dict(os.environ, HEAPLEDGER_OPTIONS="max_leaks=2")
res = subprocess.run([hl, "run", "--no-db", "--max-leaks=3", "--"] + args, capture_output=True,
                     text=True, env=env, timeout=120)
printed = [int(m.group(1)) for m in RECORD.finditer(res.stderr)]
if (printed != [3, 4] or
        "the 2 smallest loss records are not shown: max_leaks=2 in its HEAPLEDGER_OPTIONS"
        not in res.stderr):
    daemon_util.fail("run with max_leaks=2: printed %s\n%s" % (printed, res.stderr))
print("ok: run: the program's max_leaks=2")

# Standalone (no reporter), max_leaks=0 means all there too.
env = dict(os.environ, HEAPLEDGER_OPTIONS="max_leaks=0", LD_PRELOAD=os.environ["HEAPLEDGER_LIB"])
env.pop("HEAPLEDGER_SOCKET", None)
res = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
printed = [int(m.group(1)) for m in RECORD.finditer(res.stderr)]
if printed != [1, 2, 3, 4] or "not shown" in res.stderr:
    daemon_util.fail("standalone max_leaks=0: printed %s\n%s" % (printed, res.stderr))
print("ok: standalone: max_leaks=0 prints all 4 records")
env["HEAPLEDGER_OPTIONS"] = "max_leaks=1"
res = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
printed = [int(m.group(1)) for m in RECORD.finditer(res.stderr)]
if printed != [4] or "the 3 smallest loss records are not shown: max_leaks=1" not in res.stderr:
    daemon_util.fail("standalone max_leaks=1: printed %s\n%s" % (printed, res.stderr))
print("ok: standalone: max_leaks=1 prints the largest record and says 3 were left out")
print("PASS")
