#!/usr/bin/env python3
"""tests/run/check_store_sharing.py HEAPLEDGER PROG N K: a parent that leaks
from N stacks forks K children that exit without exec, each reporting the
parent's N records and one of its own. The run's stacks (and their frames)
are stored once for the run, not once per process; the children's loss
records, the same for all of them, once (the later children name the first
in processes.leaks_from). What `heapledger report --db` prints for each
process is what `heapledger run` printed for it, and the stored JSON report
is the --json one."""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def own_lines(text, pid):
    return [l for l in text.splitlines() if l.startswith("==%d==" % pid)]


def main():
    hl, prog, n, k = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "h.db")
        js = os.path.join(tmp, "r.json")
        run = subprocess.run([hl, "run", "--db", db, "--json", js, "--", prog, str(n), str(k)],
                             stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=120)
        if run.returncode != 0:
            fail("exit %d: %s" % (run.returncode, run.stderr[-3000:]))
        con = sqlite3.connect(db)
        q = lambda sql: con.execute(sql).fetchone()[0]
        procs = q("SELECT count(*) FROM processes")
        stacks = q("SELECT count(*) FROM stacks")
        frames = q("SELECT count(*) FROM frames")
        records = q("SELECT count(*) FROM leak_records")
        shown = q("SELECT count(*) FROM leaks")
        sharing = q("SELECT count(*) FROM processes WHERE leaks_from IS NOT NULL")
        child_leaks = [r[0] for r in con.execute(
            "SELECT count(*) FROM processes p JOIN leaks l ON l.process_id = p.id"
            " WHERE p.origin = 'fork' GROUP BY p.id")]
        pids = [r[0] for r in con.execute("SELECT pid FROM processes ORDER BY serial")]
        con.close()
        print("%d processes: %d stacks, %d frames, %d loss record rows for %d records, "
              "%d processes naming another's records" % (procs, stacks, frames, records,
                                                         shown, sharing))
        if procs != k + 1:
            fail("%d processes stored, expected %d" % (procs, k + 1))
        if len(child_leaks) != k or min(child_leaks) < n + 1:
            fail("a child lacks the records it inherited: %s" % child_leaks)
        # About N: the parent's stacks, the children's own, a few of libc's.
        # A copy per process would be N * (K + 1).
        if not n <= stacks <= n + 16:
            fail("%d stack rows for %d stacks in %d processes" % (stacks, n, procs))
        if records > 2 * (n + 16) or shown < (k + 1) * n:
            fail("%d loss record rows, %d records" % (records, shown))
        if sharing != k - 1:
            fail("%d children name the first one's records, expected %d" % (sharing, k - 1))
        stored = subprocess.run([hl, "report", "--db", db, "--format", "json"],
                                capture_output=True, text=True, timeout=60)
        with open(js, encoding="utf-8") as f:
            if stored.returncode != 0 or json.loads(stored.stdout) != json.load(f):
                fail("the stored report differs from the --json report")
        for pid in pids:
            text = subprocess.run([hl, "report", "--db", db, "--process", str(pid)],
                                  capture_output=True, text=True, timeout=60)
            live, again = own_lines(run.stderr, pid), own_lines(text.stdout, pid)
            if not live or live != again:
                fail("pid %d: the stored report differs from the live one:\n%s\n---\n%s"
                     % (pid, "\n".join(live[-20:]), "\n".join(again[-20:])))
    print("OK: stacks and loss records stored once, reports unchanged")


main()
