#!/usr/bin/env python3
"""Storing a run costs what the run holds, not what the history holds.

Runs one program RUNS times under `heapledger run` into one database and reads
how many database pages each store wrote (HEAPLEDGER_TIMING's line). The last
run must write about as many as the second (the first also creates the
schema). An index whose new entries land all over it, as the function-name
index of schema version 2 did, makes every run rewrite pages in proportion to
the runs before it.

usage: check_store_growth.py HEAPLEDGER RUNS -- PROG [ARGS...]
(HEAPLEDGER_LIB in the environment names the hook, as for check_run.py)
"""
import os
import re
import subprocess
import sys
import tempfile

PAGES = re.compile(r"\((\d+) database pages written\)")
# Pages may vary a little with where B-tree pages happen to split.
ALLOWED_GROWTH = 1.5


def store_pages(heapledger, db, prog):
    env = dict(os.environ, HEAPLEDGER_TIMING="1")
    proc = subprocess.run([heapledger, "run", "--db", db, "--"] + prog,
                          env=env, stdout=subprocess.DEVNULL,
                          stderr=subprocess.PIPE, text=True, check=False)
    found = PAGES.search(proc.stderr)
    if proc.returncode != 0 or not found:
        sys.exit("check_store_growth: run failed (exit %d) or printed no page count:\n%s"
                 % (proc.returncode, proc.stderr[-2000:]))
    return int(found.group(1))


def main():
    if len(sys.argv) < 5 or sys.argv[3] != "--":
        sys.exit(__doc__)
    heapledger, runs, prog = sys.argv[1], int(sys.argv[2]), sys.argv[4:]
    with tempfile.TemporaryDirectory(prefix="hl-growth-") as tmp:
        db = os.path.join(tmp, "history.db")
        pages = [store_pages(heapledger, db, prog) for _ in range(runs)]
    print("pages written per run:", " ".join(str(p) for p in pages))
    second, last = pages[1], pages[-1]
    if second <= 0:
        sys.exit("check_store_growth: the second run wrote no pages")
    if last > second * ALLOWED_GROWTH:
        sys.exit("check_store_growth: run %d wrote %d pages, run 2 wrote %d: the store's "
                 "cost grows with the history" % (runs, last, second))


if __name__ == "__main__":
    main()
