#!/usr/bin/env python3
"""tests/run/check_import_hostile.py: `heapledger import` of foreign files
fails closed and never writes to its input.

- An empty file (.json or .db), white space only, a truncated database, a
  file that is neither, a database without runs, a JSON report whose run has
  no process: exit 125 naming the file, nothing imported, the input byte for
  byte what it was (an empty file was rewritten into a database before).
- A database with a view or trigger heapledger did not write (here a
  recursive view named like ours, which ran forever while the target's
  write lock was held): refused at once.
- A database of an older schema: refused, not upgraded in place.
- A legitimate database and report import, the input unchanged.
- Leak totals that do not fit in 64 bits (crafted numbers in a report): the
  gate fails, it does not wrap them to a small number that passes, and the
  text LEAK SUMMARY shows them saturated and says so.

usage: check_import_hostile.py HEAPLEDGER VERDICT_CASES
"""
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import uuid

HL, CASES = sys.argv[1:3]


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def hl(args, want):
    try:
        p = subprocess.run([HL] + args, capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired:
        fail("heapledger %s hung" % " ".join(args))
    if p.returncode != want:
        fail("heapledger %s: exit %d, expected %d\n%s%s" % (" ".join(args), p.returncode, want,
                                                          p.stdout, p.stderr))
    return p


def refused(db, path, why):
    before = digest(path)
    p = hl(["import", "--db", db, path], 125)
    if path not in p.stderr or why not in p.stderr:
        fail("import %s: want the file named and %r: %s" % (path, why, p.stderr))
    if "imported," in p.stdout:
        fail("import %s reported an import: %s" % (path, p.stdout))
    if digest(path) != before:
        fail("import %s changed its input" % path)


def runs_in(db):
    with sqlite3.connect("file:%s?mode=ro" % db, uri=True) as c:
        return c.execute("SELECT count(*) FROM runs").fetchone()[0]


def main():
    with tempfile.TemporaryDirectory() as tmp:
        src, db = os.path.join(tmp, "src.db"), os.path.join(tmp, "target.db")
        report = os.path.join(tmp, "report.json")
        hl(["run", "--db", src, "--json", report, "--", CASES, "indirect"], 0)
        hl(["run", "--db", db, "--", CASES, "clean"], 0)

        for name, text in (("empty.json", ""), ("empty.db", ""), ("blank.json", " \n\t\n")):
            path = os.path.join(tmp, name)
            with open(path, "w") as f:
                f.write(text)
            refused(db, path, "empty file")
            if os.path.getsize(path) != len(text):
                fail("%s was rewritten" % name)
        truncated = os.path.join(tmp, "truncated.db")
        with open(src, "rb") as f, open(truncated, "wb") as g:
            g.write(f.read()[:os.path.getsize(src) // 2 + 100])
        refused(db, truncated, "truncated")
        junk = os.path.join(tmp, "junk.db")
        with open(junk, "w") as f:
            f.write("SQLite form" + "x" * 200)
        refused(db, junk, "neither a heapledger database nor a JSON report")

        no_runs = os.path.join(tmp, "no_runs.db")
        shutil.copy(src, no_runs)
        with sqlite3.connect(no_runs) as c:
            c.execute("PRAGMA foreign_keys=OFF")
            for table in ("checks", "check_records", "unstopped_threads", "timeline", "errors",
                          "leak_records", "stack_aggregate_rows", "summaries", "module_rows",
                          "processes", "run_labels", "runs"):
                c.execute("DELETE FROM %s" % table)
        refused(db, no_runs, "holds no run")

        hostile = os.path.join(tmp, "hostile.db")
        shutil.copy(src, hostile)
        with sqlite3.connect(hostile) as c:
            sql = c.execute("SELECT sql FROM sqlite_master WHERE name = 'leaks'").fetchone()[0]
            cols = sql[sql.index("(") + 1:sql.index(")")]
            c.execute("DROP VIEW leaks")
            c.execute("CREATE VIEW leaks(%s) AS WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL"
                      " SELECT x + 1 FROM n) SELECT %s FROM n, leak_records" %
                      (cols, ", ".join("x" for _ in cols.split(","))))
        refused(db, hostile, "views or triggers this heapledger did not write")
        trigger = os.path.join(tmp, "trigger.db")
        shutil.copy(src, trigger)
        with sqlite3.connect(trigger) as c:
            c.execute("CREATE TRIGGER t AFTER INSERT ON runs BEGIN DELETE FROM runs; END")
        refused(db, trigger, "views or triggers this heapledger did not write")

        older = os.path.join(tmp, "older.db")
        shutil.copy(src, older)
        with sqlite3.connect(older) as c:
            version = c.execute("PRAGMA user_version").fetchone()[0]
            c.execute("PRAGMA user_version = %d" % (version - 1))
        refused(db, older, "not upgraded")

        empty_run = os.path.join(tmp, "empty_run.json")
        doc = json.load(open(report))
        doc["run"]["uuid"] = str(uuid.uuid4())
        doc["processes"] = []
        json.dump(doc, open(empty_run, "w"))
        refused(db, empty_run, "no process")

        if runs_in(db) != 1:
            fail("a refused import changed the target: %d runs" % runs_in(db))
        before = digest(src)
        p = hl(["import", "--db", db, src], 0)
        if "1 run (1 process) imported" not in p.stdout or digest(src) != before:
            fail("import of a good database: %s (input changed: %s)" % (
                p.stdout, digest(src) != before))

        # Two loss records of 2^63 bytes: 2^64 wraps to 0, under any threshold.
        crafted = os.path.join(tmp, "crafted.json")
        doc = json.load(open(report))
        doc["run"]["uuid"] = str(uuid.uuid4())
        for leak in doc["processes"][0]["leaks"]:
            leak["bytes"] = 1 << 63
            leak["kind"] = "definitely"
        json.dump(doc, open(crafted, "w"))
        cdb = os.path.join(tmp, "crafted.db")
        p = subprocess.run([HL, "import", "--db", cdb, crafted], capture_output=True, text=True)
        if p.returncode == 0:
            g = hl(["gate", "--db", cdb, "--leak-bytes-threshold=1000"], 1)
            if "does not fit in 64 bits" not in g.stdout:
                fail("gate on crafted totals: %s" % g.stdout)
        elif p.returncode != 125 or crafted not in p.stderr:
            fail("import of crafted totals: exit %d\n%s" % (p.returncode, p.stderr))

        # Numbers JSON carries (below 2^63) whose sum passes 2^64 and would
        # wrap to 2: imported, the gate fails, and the text LEAK SUMMARY
        # agrees with it: saturated and said, not "2 bytes".
        crafted = os.path.join(tmp, "crafted3.json")
        doc = json.load(open(report))
        doc["run"]["uuid"] = str(uuid.uuid4())
        leaks = doc["processes"][0]["leaks"]
        leaks.append(dict(leaks[0]))
        for leak, size in zip(leaks, [(1 << 63) - 1, (1 << 63) - 1, 4]):
            leak["bytes"] = size
            leak["kind"] = "definitely"
        json.dump(doc, open(crafted, "w"))
        cdb = os.path.join(tmp, "crafted3.db")
        hl(["import", "--db", cdb, crafted], 0)
        g = hl(["gate", "--db", cdb, "--leak-bytes-threshold=1000"], 1)
        if "does not fit in 64 bits" not in g.stdout + g.stderr:
            fail("gate on crafted totals: %s%s" % (g.stdout, g.stderr))
        r = subprocess.run([HL, "report", "--db", cdb], capture_output=True, text=True)
        lost = [l for l in r.stdout.splitlines() if "definitely lost:" in l]
        if (len(lost) != 1 or "18,446,744,073,709,551,615 bytes" not in lost[0] or
                "does not fit in 64 bits" not in r.stdout):
            fail("text LEAK SUMMARY of crafted totals: %s%s" % (r.stdout, r.stderr))
    print("ok")


main()
