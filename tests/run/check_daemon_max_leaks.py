#!/usr/bin/env python3
"""tests/run/check_daemon_max_leaks.py: the daemon prints at most max_leaks
loss records per process (by default 50, the hook's own standalone default;
--max-leaks=N), the largest ones, and says how many it left out; the
database keeps every record.

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


def suite(extra, prog):
    sock, db = os.path.join(tmp, "s.sock"), os.path.join(tmp, "s.db")
    for f in (sock, db):
        if os.path.exists(f):
            os.unlink(f)
    daemon = daemon_util.start(hl, sock, db, extra)
    exports = subprocess.run([hl, "env", "--socket", sock], capture_output=True, text=True,
                             check=True).stdout
    subprocess.run(["sh", "-c", exports + "\nexec \"$@\"", "sh"] + prog, check=True, timeout=120,
                   stdout=subprocess.DEVNULL)
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
print("PASS")
