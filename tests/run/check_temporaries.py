#!/usr/bin/env python3
"""tests/run/check_temporaries.py HEAPLEDGER PROG: `heapledger run --db` of
progs/temporaries.c stores each allocation site's temporary allocations
(stack_aggregates.temporaries: freed right after being allocated, no other
allocation or free of the same thread in between) exactly as the program
makes them."""
import os
import sqlite3
import subprocess
import sys
import tempfile

# (allocations, bytes) of each site's stack -> its temporary allocations
EXPECTED = {
    (100, 100 * 24): 100,                         # temp_site
    (50, 50 * 40): 0,                             # pair_site, first block
    (50, 50 * 56): 0,                             # pair_site, second block
    (30, 30 * 72): 30,                            # realloc_site's malloc
    (30, sum(4096 + i for i in range(30))): 30,   # realloc_site's realloc
    (400, 400 * 88): 400,                         # thread_site, two threads
}


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    hl, prog = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "h.db")
        run = subprocess.run([hl, "run", "--db", db, "--", prog], stdin=subprocess.DEVNULL,
                             capture_output=True, text=True, timeout=120)
        if run.returncode != 0 or run.stdout != "done\n":
            fail("exit %d: %s" % (run.returncode, run.stderr[-3000:]))
        con = sqlite3.connect(db)
        rows = con.execute("SELECT allocs, bytes, temporaries FROM stack_aggregates").fetchall()
        total = con.execute("SELECT sum(temporaries) FROM stack_aggregates").fetchone()[0]
        con.close()
    found = {(a, b): t for a, b, t in rows if (a, b) in EXPECTED}
    for key, want in sorted(EXPECTED.items()):
        if key not in found:
            fail("no stack row with %d allocations of %d bytes in %s" % (key[0], key[1], rows))
        print("%d allocations, %d bytes: %d temporary (expected %d)" %
              (key[0], key[1], found[key], want))
        if found[key] != want:
            fail("%d allocations of %d bytes: %d temporary, expected %d" %
                 (key[0], key[1], found[key], want))
    # The program's own sites, and what its libc does around them (stdio's
    # buffer, the threads' setup), which is not known here: at least ours.
    if total < sum(EXPECTED.values()):
        fail("%d temporary allocations stored in all, fewer than the sites'" % total)
    print("ok")


main()
