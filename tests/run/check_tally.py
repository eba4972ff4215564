#!/usr/bin/env python3
"""tests/run/check_tally.py HEAPLEDGER PROG: counting in the hook gives the
report the events would have.

PROG is tests/run/progs/tally_cases. Each of its modes (one thread; a thread
started halfway, by pthread_create and by glibc for a SIGEV_THREAD timer; two
threads, each freeing the other's blocks; exec; fork) runs under
`heapledger run --db` twice, with the hook counting (the default) and with
every event sent (tally=0), and every figure the database keeps of each
process must be the same: the HEAP SUMMARY, each stack's aggregates, the
timeline's samples, the size histogram, the per-stack series and the loss
records. With threads running at once the figures that depend on the order
of events across threads (the peak, what each stack held then, temporaries,
the timeline) are what each way makes of its own order, so only the rest is
compared. HEAPLEDGER_TIMING's line shows which way the events went: counted
in the hook, the reporter reads almost none."""
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

HL, PROG = sys.argv[1], sys.argv[2]
failed = False


def fail(msg):
    global failed
    failed = True
    print("FAIL: " + msg)


QUERIES = {
    "summary": "SELECT in_use_bytes, in_use_blocks, allocs, frees, bytes_allocated, peak_bytes,"
               " inherited_bytes, inherited_blocks, dropped_events, unmatched_frees"
               " FROM summaries WHERE process_id = ?",
    "aggregates": "SELECT allocs, bytes, frees, peak_live_bytes, leaked_bytes, leaked_blocks,"
                  " temporaries, at_peak_bytes FROM stack_aggregate_rows WHERE process_id = ?"
                  " ORDER BY 1, 2, 3, 4, 5, 6, 7, 8",
    "timeline": "SELECT in_use_bytes, in_use_blocks FROM timeline WHERE process_id = ?"
                " ORDER BY time_ns, rowid",
    "sizes": "SELECT * FROM size_bins WHERE process_id = ? ORDER BY 2",
    "series": "SELECT sample, bytes FROM stack_series WHERE process_id = ? ORDER BY 1, 2",
    "leaks": "SELECT bytes, blocks, leak_class FROM leaks WHERE process_id = ? ORDER BY 1, 2, 3",
}


def figures(db):
    con = sqlite3.connect(db)
    procs = [r[0] for r in con.execute("SELECT id FROM processes ORDER BY serial")]
    out = []
    for pid in procs:
        fig = {}
        for name, q in QUERIES.items():
            rows = con.execute(q, (pid,)).fetchall()
            if name == "sizes":
                rows = [r[1:] for r in rows]  # without the process id
            fig[name] = rows
        out.append(fig)
    con.close()
    return out


def run(mode, tally, tmp):
    db = os.path.join(tmp, "%s-%d.db" % (mode, tally))
    env = dict(os.environ, HEAPLEDGER_OPTIONS="tally=%d" % tally, HEAPLEDGER_TIMING="1")
    p = subprocess.run([HL, "run", "--db", db, "--", PROG, mode], capture_output=True,
                       text=True, env=env, timeout=300)
    if p.returncode != 0:
        fail("%s tally=%d: exit %d\n%s" % (mode, tally, p.returncode, p.stderr[-2000:]))
    m = re.search(r"for (\d+) alloc/free events .*?, (\d+) more counted in the hooks",
                  p.stderr)
    if not m:
        fail("%s tally=%d: no timing line\n%s" % (mode, tally, p.stderr[-2000:]))
        return db, 0, 0
    return db, int(m.group(1)), int(m.group(2))


with tempfile.TemporaryDirectory(prefix="hl-tally-") as tmp:
    for mode in ("single", "thread", "timer", "xthread", "exec", "fork"):
        db1, read1, counted1 = run(mode, 1, tmp)
        db0, read0, counted0 = run(mode, 0, tmp)
        if counted0 != 0 or read0 < 1000000:
            fail("%s tally=0: %d events read, %d counted in the hook" % (mode, read0, counted0))
        # The work before the thread, the exec and the fork is counted.
        if counted1 < 1000000 or read1 > counted1 // 10:
            fail("%s: counting in the hook read %d events and counted %d" %
                 (mode, read1, counted1))
        f1, f0 = figures(db1), figures(db0)
        if len(f1) != len(f0):
            fail("%s: %d processes counted in the hook, %d sent" % (mode, len(f1), len(f0)))
        for i, (a, b) in enumerate(zip(f1, f0)):
            if mode == "xthread":
                for f in (a, b):
                    # in use, allocations, frees, bytes: not the peak
                    f["summary"] = [r[:5] + r[6:] for r in f["summary"]]
                    # allocations, bytes, frees, what leaked
                    f["aggregates"] = sorted(r[:3] + r[4:6] for r in f["aggregates"])
            for name in QUERIES:
                if mode in ("thread", "timer", "xthread") and name in ("timeline", "series"):
                    # With two threads the reporter samples in the order
                    # batches arrive (state.h), which varies run to run.
                    continue
                if mode == "timer" and name == "aggregates":
                    # glibc's timer thread runs beside the first thread
                    # while the counts are handed over: its first block
                    # may go to its stack's counts apart from the rest.
                    continue
                if a[name] != b[name]:
                    at = next((k for k, (x, y) in enumerate(zip(a[name], b[name])) if x != y),
                              min(len(a[name]), len(b[name])))
                    fail("%s, process %d: %s differ from row %d of %d/%d:\n counted %s\n"
                         " sent    %s" % (mode, i + 1, name, at, len(a[name]), len(b[name]),
                                          a[name][at:at + 4], b[name][at:at + 4]))
            if not a["timeline"] or not a["series"] or not a["aggregates"]:
                fail("%s, process %d: nothing to compare: %s" % (mode, i + 1, a["summary"]))
        if not f1 or not f1[-1]["leaks"]:
            fail("%s: the last process has no loss records to compare" % mode)
        print("%s: %d processes the same; read %d events, counted %d" %
              (mode, len(f1), read1, counted1))
sys.exit(1 if failed else 0)
