#!/usr/bin/env python3
"""tests/ui/check_ui_suite.py: the web UI on a whole test suite run under
`heapledger daemon`, as CI runs one: suite_runner.py (a runner forking and
executing each test, as meson does) runs suite.txt's tests, the project's
own small programs: most clean, some leaking, some with heap errors, some
crashing, one killed by the runner with SIGTERM and one with SIGKILL, a
bash script whose heap is still reachable; about 90 processes in one run.

The expectations are read from the database the daemon wrote (SQL here is
the oracle, not the query layer's); headless Chromium (browser/
check_suite.mjs, playwright-core as in check_ui_browser.py) then checks the
run page served by `heapledger ui` and the run's HTML report: processes
grouped by test with their names, argv and how they ended; leak and error
counts per test; the leak table opening on what leaks, one click from the
rest; "where" in each test's own code; the charts on the leakiest process;
record and byte counts that agree; every process, record and error named by
its test; the HTML report small. Screenshots go to BUILD_DIR/ui-screenshots/
(suite-*.png).

Usage: check_ui_suite.py HEAPLEDGER BUILD_DIR
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_ui_browser import prepare_browser  # noqa: E402
from ui_fixture import Daemon, Server, fail  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
LOST = ("unknown", "definitely", "indirectly", "possibly")
# The HTML report of the whole suite must stay an artifact one opens: what
# leaks inline, with its stacks once each, not every reachable block.
REPORT_MAX_BYTES = 2 * 1024 * 1024


def run_suite(heapledger, build, tmp):
    """The suite under one daemon; the database it wrote."""
    db = os.path.join(tmp, "suite.db")
    daemon = Daemon(heapledger, db, os.path.join(tmp, "suite.sock"))
    try:
        r = subprocess.run(["sh", "-c", daemon.env + 'exec "$@"', "sh", sys.executable,
                            os.path.join(HERE, "suite_runner.py"), build, os.path.join(HERE, "suite.txt")],
                           capture_output=True, text=True, timeout=240)
    finally:
        daemon.stop()
    if r.returncode != 0:
        fail("suite_runner.py: %d\n%s" % (r.returncode, r.stderr[-2000:]))
    return db, dict(line.split(": ", 1) for line in r.stdout.splitlines())


def expect_tests(con, ended):
    """By test name: processes, argv of its first, lost bytes and records,
    heap errors, and how the runner saw it end."""
    tests = {}
    for name, n, argv in con.execute(
            "SELECT test_name, count(*), (SELECT argv FROM processes q WHERE q.test_name = p.test_name"
            " ORDER BY serial LIMIT 1) FROM processes p WHERE test_name IS NOT NULL GROUP BY test_name"):
        tests[name] = {"procs": n, "argv": " ".join(json.loads(argv)), "bytes": 0, "records": 0,
                       "errors": 0, "ended": ended.get(name)}
    marks = ",".join("?" * len(LOST))
    for name, b, n in con.execute(
            "SELECT p.test_name, coalesce(sum(l.bytes), 0), count(l.id) FROM processes p JOIN leaks l"
            " ON l.process_id = p.id WHERE p.test_name IS NOT NULL AND NOT l.suppressed"
            " AND l.leak_class IN (%s) GROUP BY p.test_name" % marks, LOST):
        tests[name].update(bytes=b, records=n)
    for name, n in con.execute("SELECT p.test_name, count(*) FROM errors e JOIN processes p"
                               " ON p.id = e.process_id WHERE p.test_name IS NOT NULL GROUP BY p.test_name"):
        tests[name]["errors"] = n
    return tests


def expect_processes(con):
    """By process id: its test, pid, lost bytes and records (lost classes,
    not suppressed), and whether its stream ended without an exit record."""
    procs = {}
    for pid_, pid, test, cut in con.execute("SELECT id, pid, test_name, no_exit_record FROM processes"):
        procs[pid_] = {"pid": pid, "test": test, "bytes": 0, "records": 0, "cut": bool(cut)}
    for pid_, b, n in con.execute(
            "SELECT process_id, sum(bytes), count(*) FROM leaks WHERE NOT suppressed AND leak_class IN"
            " (%s) GROUP BY process_id" % ",".join("?" * len(LOST)), LOST):
        procs[pid_].update(bytes=b, records=n)
    return procs


def expect(db, ended):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    one = lambda sql, *a: con.execute(sql, a).fetchone()[0]  # noqa: E731
    marks = ",".join("?" * len(LOST))
    procs = expect_processes(con)
    leakiest = max(procs, key=lambda i: (procs[i]["bytes"], -i))
    out = {
        "processes": one("SELECT count(*) FROM processes"),
        "tests": expect_tests(con, ended),
        "by_process": procs,
        "leakiest": {"pid": procs[leakiest]["pid"], "test": procs[leakiest]["test"]},
        "lost_records": one("SELECT count(*) FROM leaks WHERE NOT suppressed AND leak_class IN (%s)" % marks,
                            *LOST),
        # the leak table's default rows: one per leak site (fingerprint;
        # a record without one stands alone) and class, over every process
        "lost_sites": one("SELECT count(DISTINCT coalesce(fingerprint, 'stack ' || stack_id, 'record ' || id)"
                          " || ' ' || leak_class) FROM leaks WHERE NOT suppressed AND leak_class IN (%s)" % marks,
                          *LOST),
        # by site (fingerprint) and class, what leaks: how many tests
        "site_tests": {"%s|%s" % (fp, cls): n for fp, cls, n in con.execute(
            "SELECT fingerprint, leak_class, count(DISTINCT p.test_name) FROM leaks l JOIN processes p"
            " ON p.id = l.process_id WHERE NOT suppressed AND fingerprint IS NOT NULL AND leak_class IN (%s)"
            " GROUP BY fingerprint, leak_class" % marks, LOST)},
        "all_records": one("SELECT count(*) FROM leaks"),
        "reachable_records": one("SELECT count(*) FROM leaks WHERE leak_class = 'reachable'"),
        "suppressed_records": one("SELECT count(*) FROM leaks WHERE suppressed"),
        # The summary's chips: bytes and blocks by class as shown
        # (suppressed apart, whatever its class).
        "by_class": {c: [b, n] for c, b, n in con.execute(
            "SELECT CASE WHEN suppressed THEN 'suppressed' ELSE leak_class END AS c, sum(bytes), sum(blocks)"
            " FROM leaks GROUP BY c")},
        # The process whose heap peaked highest, as the summary names it.
        "peak": con.execute("SELECT p.pid, p.exe, p.test_name FROM processes p JOIN summaries m"
                            " ON m.process_id = p.id ORDER BY m.peak_bytes DESC, p.serial LIMIT 1").fetchone(),
        "errors": [t for (t,) in con.execute("SELECT p.test_name FROM errors e JOIN processes p"
                                             " ON p.id = e.process_id ORDER BY e.id")],
    }
    con.close()
    if out["processes"] < 80:
        fail("the suite stored %d processes, want about 90" % out["processes"])
    # What the checks below rely on: the suite holds each kind of test.
    t = out["tests"]
    for name, want in (("many_leak", lambda x: x["bytes"] == 16000), ("misuse_three", lambda x: x["errors"] == 3),
                       ("end_abort", lambda x: x["records"] == 1), ("kill9_loop", lambda x: x["ended"] == "signal 9"),
                       ("alloc_clean_1", lambda x: x["records"] == 0)):
        if name not in t or not want(t[name]):
            fail("the suite's test %s is not as suite.txt means it: %s" % (name, t.get(name)))
    if out["reachable_records"] < 10 * out["lost_records"]:
        fail("the suite has %d still reachable records beside %d lost: the default view would not be tested"
             % (out["reachable_records"], out["lost_records"]))
    return out


def main():
    heapledger, build = sys.argv[1:3]
    script, where, shots = prepare_browser(build, "check_suite.mjs", "ui-screenshots", clean=False)
    with tempfile.TemporaryDirectory() as tmp:
        db, ended = run_suite(heapledger, build, tmp)
        want = expect(db, ended)
        report = os.path.join(tmp, "suite.html")
        with open(report, "w", encoding="utf-8") as out:
            r = subprocess.run([heapledger, "report", "--db", db, "--run", "1", "--format", "html"],
                               stdout=out, stderr=subprocess.PIPE, text=True, timeout=120)
        if r.returncode != 0:
            fail("report --format html of the suite: %d %s" % (r.returncode, r.stderr))
        size = os.path.getsize(report)
        print("the suite: %d processes, %d tests, %d loss records (%d lost); HTML report %d bytes"
              % (want["processes"], len(want["tests"]), want["all_records"], want["lost_records"], size))
        want["report"] = report
        # The text report says where a stack was cut (deep_leak: 300 calls
        # deep, past the default depth 256, the most the hook captures).
        r = subprocess.run([heapledger, "report", "--db", db, "--run", "1"], capture_output=True,
                           text=True, timeout=120)
        cut = "... (stack truncated at 256 frames, the most heapledger captures)"
        if r.returncode != 0 or cut not in r.stdout + r.stderr:
            fail("report --db: no %r in the text report (exit %d):\n%s" % (
                cut, r.returncode, "\n".join(l for l in (r.stdout + r.stderr).splitlines() if "truncated" in l)[:2000]))
        sv = Server(heapledger, db)
        try:
            want["url"] = sv.url
            with open(os.path.join(tmp, "expect.json"), "w", encoding="utf-8") as f:
                json.dump(want, f)
            r = subprocess.run(["node", script, os.path.join(tmp, "expect.json"), shots],
                               cwd=where, capture_output=True, text=True, timeout=240)
        finally:
            sv.stop()
        sys.stdout.write(r.stdout + r.stderr[-3000:])
        if r.returncode != 0:
            sys.exit(1)
        # After the pages, so that a failure there is seen too.
        if size > REPORT_MAX_BYTES:
            fail("the suite's HTML report is %d bytes, over %d" % (size, REPORT_MAX_BYTES))


if __name__ == "__main__":
    main()
