#!/usr/bin/env python3
"""tests/run/check_bad_db.py: with a database that cannot be written,
`heapledger run` still prints the report, says clearly why nothing was
stored, writes --json, and exits with the program's status.

Usage: check_bad_db.py HEAPLEDGER FAKE_CLIENT
"""
import json
import os
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def main():
    heapledger, client = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        js = os.path.join(tmp, "r.json")
        for db in ("/nonexistent-dir/sub/x.db", tmp):  # missing dir; a directory
            run = subprocess.run([heapledger, "run", "--db", db, "--json", js, "--",
                                  client, "leak"], capture_output=True, text=True,
                                 timeout=60)
            sys.stdout.write(run.stderr[-1500:])
            if run.returncode != 3:
                fail("exit status %d, expected the program's 3" % run.returncode)
            if "HEAP SUMMARY:" not in run.stderr or "loss record 1 of 1" not in run.stderr:
                fail("no report printed")
            if "heapledger: database %s: open failed" % db not in run.stderr:
                fail("no clear database error")
            with open(js, encoding="utf-8") as f:
                doc = json.load(f)
            if doc["run"]["id"] is not None or len(doc["processes"]) != 1:
                fail("JSON should have no run id and one process: %s" % doc["run"])
    print("PASS")


if __name__ == "__main__":
    main()
