#!/usr/bin/env python3
"""tests/run/check_classes.py: a leak scan's verdicts end to end, from the
wire (fake_client's `classes` scenario) to the text report in valgrind's
words, the --json document, the database (leaks.leak_class) and `heapledger
report`, with the display options on run and report.

Usage: check_classes.py HEAPLEDGER FAKE_CLIENT
"""
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile
from xml.etree import ElementTree


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def lines_of(text):
    """Report lines without the ==pid== prefix."""
    return [re.sub(r"^==\d+== ?", "", l) for l in text.splitlines() if l.startswith("==")]


def records(text):
    return [l for l in lines_of(text) if " in loss record " in l]


def run(hl, *args):
    r = subprocess.run([hl] + list(args), stdin=subprocess.DEVNULL, capture_output=True,
                       text=True, timeout=60)
    sys.stdout.write(r.stdout[-3000:] + r.stderr[-3000:])
    return r


# valgrind's order: by size (largest last), then reachable, possible,
# indirect, definite; all five are numbered whatever is shown.
DEFAULT_RECORDS = [
    "40 bytes in 1 blocks are possibly lost in loss record 1 of 4",
    "48 bytes in 3 blocks are indirectly lost in loss record 2 of 4",
    "48 bytes in 2 blocks are definitely lost in loss record 3 of 4",
]
SUMMARY = [
    "LEAK SUMMARY:",
    "   definitely lost: 48 bytes in 2 blocks",
    "   indirectly lost: 48 bytes in 3 blocks",
    "     possibly lost: 40 bytes in 1 blocks",
    "   still reachable: 100 bytes in 1 blocks",
    "        suppressed: 0 bytes in 0 blocks",
]


def check_checkpoints(hl, client, tmp):
    """On-demand checks: each one's totals by kind and what is new since the
    check before, in text, JSON, the database and `heapledger report`."""
    db, js = os.path.join(tmp, "c.db"), os.path.join(tmp, "c.json")
    r = run(hl, "run", "--db", db, "--json", js, "--", client, "checks")
    text = lines_of(r.stderr)
    want = [
        "LEAK CHECK 2 (check_signal, 0.000 s after start):",
        "   definitely lost: 40 (-8) bytes in 2 (+0) blocks",
        "   indirectly lost: 0 (+0) bytes in 0 (+0) blocks",
        "     possibly lost: 0 (+0) bytes in 0 (+0) blocks",
        "   still reachable: 100 (+0) bytes in 1 (+0) blocks",
        "        suppressed: 0 (+0) bytes in 0 (+0) blocks",
    ]
    if "LEAK CHECK 2" not in r.stderr or text[text.index(want[0]):][:6] != want:
        fail("check 2 in text: %s" % text)
    if "   definitely lost: 48 (+48) bytes in 2 (+2) blocks" not in text:
        fail("check 1 in text: %s" % text)
    with open(js, encoding="utf-8") as f:
        doc = json.load(f)
    checks = doc["processes"][0]["checks"]
    if [(c["seq"], c["by"]) for c in checks] != [(1, "call"), (2, "signal")]:
        fail("JSON checks: %s" % checks)
    if checks[1]["kinds"]["definitely"] != {"bytes": 40, "blocks": 2, "new_bytes": -8,
                                            "new_blocks": 0}:
        fail("JSON check 2: %s" % checks[1]["kinds"])
    stored = run(hl, "report", "--db", db, "--format", "json")
    if json.loads(stored.stdout) != doc:
        fail("the stored checks differ from the --json report")
    # valgrind's XML: each check's records that grew, as a leak_check's
    # <error>s, before the records at exit.
    xml = run(hl, "report", "--db", db, "--format", "valgrind-xml").stdout
    texts = [(e.findtext("kind"), e.findtext("xwhat/text"))
             for e in ElementTree.fromstring(xml).iter("error")]
    want_xml = [
        ("Leak_DefinitelyLost",
         "48 (+48) bytes in 2 (+2) blocks are definitely lost in new loss record 1 of 2"),
        ("Leak_DefinitelyLost",
         "16 (+16) bytes in 1 (+1) blocks are definitely lost in new loss record 1 of 3"),
        ("Leak_DefinitelyLost", "16 bytes in 1 blocks are definitely lost in loss record 1 of 3"),
        ("Leak_DefinitelyLost", "24 bytes in 1 blocks are definitely lost in loss record 2 of 3"),
    ]
    if texts != want_xml:
        fail("the checks in valgrind's XML: %s" % texts)
    con = sqlite3.connect(db)
    rows = con.execute("SELECT seq, bytes, blocks FROM checks WHERE leak_class = 'definitely'"
                       " ORDER BY seq").fetchall()
    con.close()
    if rows != [(1, 48, 2), (2, 40, 2)]:
        fail("database checks: %s" % rows)


def check_many_records(hl, client, tmp):
    """A check keeps at most 1,000 loss records: those that changed since
    the check before first (here the smallest, which grew by 8 bytes), then
    the largest; it says how many it had, in text, JSON and the database."""
    db, js = os.path.join(tmp, "m.db"), os.path.join(tmp, "m.json")
    r = run(hl, "run", "--db", db, "--json", js, "--", client, "many_checks")
    text = lines_of(r.stderr)
    for note in ("(200 loss records of this check were not kept, only the 1000 that changed"
                 " since the check before or are largest; the totals above count them)",
                 "1,008 (+8) bytes in 2 (+1) blocks are definitely lost in loss record 1 of 1,200"):
        if note not in text:
            fail("many checks: no %r in the text" % note)
    with open(js, encoding="utf-8") as f:
        checks = json.load(f)["processes"][0]["checks"]
    first, second = checks
    if (first["records_total"], len(first["records"])) != (1200, 1000) or \
            min(l["bytes"] for l in first["records"]) != 3000:
        fail("check 1 should keep the 1000 largest of 1200 records")
    grew = [l for l in second["records"] if l["new_bytes"]]
    if (second["records_total"], len(second["records"])) != (1200, 1000) or \
            [(l["bytes"], l["new_bytes"], l["loss_record"]) for l in grew] != [(1008, 8, 1)]:
        fail("check 2 should keep the record that changed: %s" % grew)
    con = sqlite3.connect(db)
    rows = con.execute("SELECT seq, count(*) FROM check_records GROUP BY seq").fetchall()
    con.close()
    if rows != [(1, 1000), (2, 1000)]:
        fail("database check_records per check: %s" % rows)


def main():
    hl, client = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        db, js = os.path.join(tmp, "h.db"), os.path.join(tmp, "r.json")
        r = run(hl, "run", "--db", db, "--json", js, "--", client, "classes")
        if r.returncode != 0:
            fail("run exited %d" % r.returncode)
        if records(r.stderr) != DEFAULT_RECORDS:
            fail("default records: %s" % records(r.stderr))
        got = lines_of(r.stderr)
        at = got.index("LEAK SUMMARY:")
        if got[at:at + 6] != SUMMARY:
            fail("LEAK SUMMARY: %s" % got[at:at + 6])
        if "To see them, rerun with: --show-leak-kinds=all" not in got:
            fail("no hint that reachable blocks are not shown")
        with open(js, encoding="utf-8") as f:
            proc = json.load(f)["processes"][0]
        kinds = [(l["kind"], l["bytes"], l["blocks"]) for l in proc["leaks"]]
        if kinds != [("possibly", 40, 1), ("indirectly", 48, 3), ("definitely", 48, 2),
                     ("reachable", 100, 1)]:
            fail("JSON leaks: %s" % kinds)
        if proc["scan"] != {"scanned": True, "not_scanned": None, "all_threads_stopped": True,
                             "unstopped_tids": []} or not proc["summary"]["scanned"]:
            fail("JSON scan: %s" % proc["scan"])
        con = sqlite3.connect(db)
        rows = con.execute("SELECT rank, leak_class, bytes FROM leaks ORDER BY rank").fetchall()
        if rows != [(1, "possibly", 40), (2, "indirectly", 48), (3, "definitely", 48),
                    (4, "reachable", 100)]:
            fail("database leaks: %s" % rows)
        if con.execute("SELECT scanned FROM processes").fetchall() != [(1,)]:
            fail("processes.scanned is not 1")
        con.close()

        # The stored run reads back the same, and the options apply there too.
        r = run(hl, "report", "--db", db)
        if records(r.stdout) != DEFAULT_RECORDS:
            fail("report: %s" % records(r.stdout))
        for opts in (["--show-leak-kinds=all"], ["--show-reachable=yes"],
                     ["--show-leak-kinds", "definite,indirect,possible,reachable"]):
            r = run(hl, "report", "--db", db, *opts)
            want = DEFAULT_RECORDS + ["100 bytes in 1 blocks are still reachable in loss record 4 of 4"]
            if records(r.stdout) != want:
                fail("report %s: %s" % (opts, records(r.stdout)))
            if "To see them, rerun with: --show-leak-kinds=all" in lines_of(r.stdout):
                fail("report %s still says reachable blocks are not shown" % opts)
        r = run(hl, "report", "--db", db, "--show-leak-kinds=definite", "--num-callers=1")
        text = lines_of(r.stdout)
        if records(r.stdout) != [DEFAULT_RECORDS[2]]:
            fail("--show-leak-kinds=definite: %s" % records(r.stdout))
        at = text.index(DEFAULT_RECORDS[2])
        if not text[at + 1].startswith("   at 0x") or text[at + 2] != "":
            fail("--num-callers=1 shows more than one frame: %s" % text[at:at + 3])
        r = run(hl, "report", "--db", db, "--show-leak-kinds=bogus")
        if r.returncode != 125 or "show-leak-kinds" not in r.stderr:
            fail("a bad --show-leak-kinds is not a usage error (%d)" % r.returncode)

        check_checkpoints(hl, client, tmp)
        check_many_records(hl, client, tmp)

        # run takes the same options.
        r = run(hl, "run", "--no-db", "--show-leak-kinds=none", "--", client, "classes")
        if records(r.stderr):
            fail("--show-leak-kinds=none on run: %s" % records(r.stderr))
    print("PASS")


if __name__ == "__main__":
    main()
