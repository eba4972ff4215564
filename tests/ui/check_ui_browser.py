#!/usr/bin/env python3
"""tests/ui/check_ui_browser.py: the web UI in a real browser. Makes a
database of real runs (ui_fixture.py), serves it with `heapledger ui`, and
has headless Chromium, driven by playwright-core (browser/check_pages.mjs),
open each page, expand leaks, count the timeline's points, zoom the flame
graph, diff two runs and open the HTML report with the network off.
Screenshots go to BUILD_DIR/ui-screenshots/.

playwright-core is installed into the build directory from the committed
browser/package-lock.json (npm ci), once; the test is skipped (77) only
when /usr/bin/chromium, node or playwright-core cannot be had.

A second database holds one `heapledger run` of ui_misuser (a double free,
a free inside a block, a scalar delete of an array): its run page must show
each error with its stacks, each naming the right function at the line of
the source's marker.

A third holds runs that once showed wrong data: an overrun (headed as one),
a run whose leak_alpha is suppressed (never shown as lost), a run whose
fork child leaks most (the charts open on it), and runs of a program built
without debug information (its leaks named by its own frames, not libc's).

Usage: check_ui_browser.py HEAPLEDGER UI_LEAKER SOURCE BUILD_DIR UI_MISUSER MISUSER_SOURCE
                           SCAN_CHECKPOINTS UI_NODEBUG
"""
import fcntl
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ui_fixture import Daemon, Server, count, fail, make_db, marker_line  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
CHROMIUM = "/usr/bin/chromium"


def skip(msg):
    print("SKIP: " + msg)
    sys.exit(77)


def need(msg):
    """What CI must have (scripts/setup.sh installs it): a failure there, a
    skip elsewhere; only a missing chromium skips everywhere."""
    if os.environ.get("CI"):
        fail(msg + " (CI is set: scripts/setup.sh should have provided it)")
    skip(msg)


def prepare_browser(build_dir, script_name, shots_name, clean=True):
    """What a browser test needs before it runs browser/SCRIPT_NAME: chromium,
    node and npm (a skip, or under CI a failure, without them),
    playwright-core in BUILD_DIR/ui-browser, the script and the harness it
    imports copied there, and BUILD_DIR/SHOTS_NAME for its screenshots
    (emptied first when CLEAN). Returns (script, where, shots)."""
    if not os.access(CHROMIUM, os.X_OK):
        skip("%s is absent (Debian package chromium; scripts/setup.sh installs it)" % CHROMIUM)
    if not shutil.which("node") or not shutil.which("npm"):
        need("node and npm are absent: they install playwright-core")
    where = install_playwright(build_dir)
    shots = os.path.join(build_dir, shots_name)
    if clean:
        shutil.rmtree(shots, ignore_errors=True)
    os.makedirs(shots, exist_ok=True)
    for name in (script_name, "harness.mjs"):
        shutil.copy(os.path.join(HERE, "browser", name), os.path.join(where, name))
    return os.path.join(where, script_name), where, shots


def run_browser_script(script, where, shots, expect, tmp):
    """Runs SCRIPT with EXPECT (written to TMP/expect.json) and SHOTS; its
    output is this test's, and its failure ends this test."""
    path = os.path.join(tmp, "expect.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(expect, f)
    r = subprocess.run(["node", script, path, shots], cwd=where, capture_output=True, text=True,
                       timeout=240)
    sys.stdout.write(r.stdout + r.stderr[-3000:])
    if r.returncode != 0:
        sys.exit(1)


def install_playwright(build_dir):
    """npm ci into BUILD_DIR/ui-browser once per lock file; the directory."""
    where = os.path.join(build_dir, "ui-browser")
    os.makedirs(where, exist_ok=True)
    # Two browser tests may start at once: one installs, the other waits.
    with open(os.path.join(build_dir, "ui-browser.lock"), "w", encoding="utf-8") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
        return install_locked(where)


def install_locked(where):
    lock = os.path.join(HERE, "browser", "package-lock.json")
    stamp = os.path.join(where, "node_modules", ".installed-lock")
    with open(lock, encoding="utf-8") as f:
        want = f.read()
    if os.path.exists(stamp) and open(stamp, encoding="utf-8").read() == want:
        return where
    for name in ("package.json", "package-lock.json"):
        shutil.copy(os.path.join(HERE, "browser", name), where)
    r = subprocess.run(["npm", "ci", "--no-audit", "--no-fund", "--loglevel=error"],
                       cwd=where, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        need("playwright-core could not be installed (npm ci in %s): %s" % (where, r.stderr[-1500:]))
    with open(stamp, "w", encoding="utf-8") as f:
        f.write(want)
    return where


def misuse_expect(heapledger, misuser, source, tmp):
    """One `heapledger run` of ui_misuser; what its run page must show."""
    db = os.path.join(tmp, "misuse.db")
    r = subprocess.run([heapledger, "run", "--db", db, "--", misuser],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("heapledger run ui_misuser: %d\n%s" % (r.returncode, r.stderr[-2000:]))
    kinds = [k for (k,) in sqlite3.connect("file:%s?mode=ro" % db, uri=True).execute(
        "SELECT kind FROM errors ORDER BY id")]
    if kinds != ["double_free", "interior_free", "mismatch"]:
        fail("ui_misuser's errors in the database: %s" % kinds)
    line = lambda m: marker_line(source, m)  # noqa: E731
    # kind: [where function, line], [alloc function, line], [free function, line] or None
    errors = {
        "double_free": [["second_free", line("FREE-SECOND")], ["make_twice_freed", line("ALLOC-TWICE")],
                        ["first_free", line("FREE-FIRST")]],
        "interior_free": [["free_inside", line("FREE-INSIDE")], ["make_record", line("ALLOC-RECORD")], None],
        "mismatch": [["delete_scalar", line("DELETE-SCALAR")], ["make_table", line("ALLOC-TABLE")], None],
    }
    # The free stack of a double free is shown when the hook recorded one;
    # when it did not, the page must say so (checked by the page test).
    recorded = count(db, "SELECT count(*) FROM errors WHERE kind = 'double_free'"
                     " AND free_stack_id IS NOT NULL")
    return {"db": db, "errors": errors, "free_recorded": recorded == 1,
            "source_name": os.path.basename(source)}


def hostile_report(heapledger, prog, tmp):
    """An HTML report of a run whose argv holds "<!--<script>" (which, inlined
    as it was, put the HTML tokenizer where "</script>" no longer ends the
    data and left a blank page); its page must show every leak record."""
    db = os.path.join(tmp, "hostile.db")
    argv = [prog, "a", "</script><b>x</b>", "<!--<script>"]
    r = subprocess.run([heapledger, "run", "--db", db, "--"] + argv,
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("heapledger run %s: %d\n%s" % (argv, r.returncode, r.stderr[-2000:]))
    report = os.path.join(tmp, "hostile.html")
    with open(report, "w", encoding="utf-8") as out:
        r = subprocess.run([heapledger, "report", "--db", db, "--run", "1", "--format", "html"],
                           stdout=out, stderr=subprocess.PIPE, text=True, timeout=60)
    if r.returncode != 0:
        fail("report --format html of the hostile run: %d %s" % (r.returncode, r.stderr))
    # What leaks (the page's default view): lost classes, not suppressed.
    return {"report": report, "argv": " ".join(argv[1:]),
            "leaks": count(db, "SELECT count(*) FROM leaks WHERE NOT suppressed"
                           " AND leak_class IN ('unknown', 'definitely', 'indirectly', 'possibly')")}


def data_expect(heapledger, prog, misuser, nodebug, tmp):
    """Runs 1 `ui_leaker a`, 2 `ui_misuser overflow` (checks=full), 3
    `ui_leaker c` with leak_alpha suppressed (its child leaks most), 4 and 5
    `ui_nodebug b` (no debug information), 6 a shell running the tests
    t_alpha (`ui_leaker a`) and t_beta (`ui_leaker b`)."""
    db = os.path.join(tmp, "data.db")
    supp = os.path.join(tmp, "alpha.supp")
    with open(supp, "w", encoding="utf-8") as f:
        f.write("leak:leak_alpha\n")
    full = dict(os.environ, HEAPLEDGER_OPTIONS="scan=0:checks=full")
    for cmd, env in ([[prog, "a"], None], [[misuser, "overflow"], full],
                     [["--suppressions", supp, "--", prog, "c"], None],
                     [[nodebug, "b"], None], [[nodebug, "b"], None]):
        args = cmd if cmd[0] == "--suppressions" else ["--"] + cmd
        r = subprocess.run([heapledger, "run", "--db", db] + args, capture_output=True, text=True,
                           timeout=60, env=env)
        if r.returncode != 0:
            fail("heapledger run %s: %d\n%s" % (cmd, r.returncode, r.stderr[-2000:]))
    # Run 6: a suite of two tests, named as a test runner names them.
    suite = 'HEAPLEDGER_TEST_NAME=t_alpha "$1" a && HEAPLEDGER_TEST_NAME=t_beta "$1" b'
    r = subprocess.run([heapledger, "run", "--db", db, "--", "sh", "-c", suite, "sh", prog],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("heapledger run of a suite: %d\n%s" % (r.returncode, r.stderr[-2000:]))
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    tests = {name: [n, 0] for name, n in con.execute(
        "SELECT test_name, count(*) FROM processes WHERE run_id = 6 AND test_name IS NOT NULL"
        " GROUP BY test_name")}
    for name, cls, b in con.execute(
            "SELECT p.test_name, l.leak_class, l.bytes FROM leaks l JOIN processes p ON p.id = l.process_id"
            " WHERE p.run_id = 6 AND p.test_name IS NOT NULL AND NOT l.suppressed"):
        if cls in ("unknown", "definitely", "indirectly", "possibly"):
            tests[name][1] += b
    con.close()
    if sorted(tests) != ["t_alpha", "t_beta"]:
        fail("the suite's processes were not named by their tests: %s" % tests)
    kinds = [k for (k,) in sqlite3.connect("file:%s?mode=ro" % db, uri=True).execute(
        "SELECT kind FROM errors")]
    if kinds != ["overflow"]:
        fail("ui_misuser overflow stored errors %s" % kinds)
    if count(db, "SELECT count(*) FROM leaks l JOIN processes p ON p.id = l.process_id"
             " WHERE p.run_id = 3 AND l.suppressed = 1") < 1:
        fail("run 3 has no suppressed leak")
    child = count(db, "SELECT pid FROM processes WHERE run_id = 3 AND origin = 'fork'")
    # The gate's verdict of each run, the badges' oracle.
    gate = {}
    for run in range(1, 7):
        r = subprocess.run([heapledger, "gate", "--db", db, "--run", str(run)],
                           capture_output=True, text=True, timeout=60)
        if r.returncode not in (0, 1):
            fail("heapledger gate --run %d: %d %s" % (run, r.returncode, r.stderr))
        gate[run] = "failed" if r.returncode == 1 else "passed"
    if gate[2] != "failed":
        fail("the gate passes the overrun run")
    return {"db": db, "child_pid": child, "gate": gate, "tests": tests,
            "suppressed_bytes": count(db, "SELECT sum(l.bytes) FROM leaks l JOIN processes p"
                                      " ON p.id = l.process_id WHERE p.run_id = 3 AND l.suppressed = 1")}


def checks_expect(heapledger, checker, tmp):
    """One `heapledger run` of scan_checkpoints (tests/scan): two on-demand
    checks, with the leak scan on (the classes come from it)."""
    db = os.path.join(tmp, "checks.db")
    env = {k: v for k, v in os.environ.items() if k != "HEAPLEDGER_OPTIONS"}
    r = subprocess.run([heapledger, "run", "--db", db, "--", checker],
                       capture_output=True, text=True, timeout=60, env=env)
    if r.returncode != 0:
        fail("heapledger run scan_checkpoints: %d\n%s" % (r.returncode, r.stderr[-2000:]))
    checks = count(db, "SELECT count(DISTINCT seq) FROM checks")
    if checks != 2:
        fail("scan_checkpoints stored %d checks, want 2" % checks)
    return {"db": db}


# ui_leaker b's allocations by power-of-two bin (bin k: 2^(k-1) .. 2^k - 1),
# counted by hand from its source: the parent's 800 blocks of 1024 bytes
# (bin 11), leak_alpha's 300 (bin 9), leak_beta's 700 (bin 10); the fork
# child's 48 (bin 6). The run's table lists the empty bins between.
SIZES_PARENT = {9: [1, 300], 10: [1, 700], 11: [800, 800 * 1024]}
SIZES_CHILD = {6: [1, 48]}
SIZES_RUN = {6: [1, 48], 7: [0, 0], 8: [0, 0], **SIZES_PARENT}


def main():
    heapledger, prog, source, build_dir, misuser, misuser_src, checker, nodebug = sys.argv[1:9]
    script, where, shots = prepare_browser(build_dir, "check_pages.mjs", "ui-screenshots")
    with tempfile.TemporaryDirectory() as tmp:
        db = make_db(heapledger, prog, tmp)
        report = os.path.join(tmp, "report.html")
        with open(report, "w", encoding="utf-8") as out:
            r = subprocess.run([heapledger, "report", "--db", db, "--run", "2", "--format", "html"],
                               stdout=out, stderr=subprocess.PIPE, text=True, timeout=60)
        if r.returncode != 0:
            fail("report --format html: %d %s" % (r.returncode, r.stderr))
        hostile = hostile_report(heapledger, prog, tmp)
        expect = {
            "runs": 3,
            "program_runs": count(db, "SELECT count(*) FROM runs WHERE program = 'ui_leaker'"),
            "beta_line": marker_line(source, "LEAK-BETA"),
            "alpha_line": marker_line(source, "LEAK-ALPHA"),
            "source_name": os.path.basename(source),
            # Timeline points by pid of run 2: the charts show one process's.
            "timeline_points": dict(sqlite3.connect("file:%s?mode=ro" % db, uri=True).execute(
                "SELECT p.pid, (SELECT count(*) FROM timeline t WHERE t.process_id = p.id)"
                " FROM processes p WHERE p.run_id = 2").fetchall()),
            "report": report,
            "hostile": hostile,
            # Bytes lost (lost classes, not suppressed) by runs 1 and 2, of
            # ui_leaker: run 2's sparkline, whatever the page shows.
            "lost_by_run": [count(db, "SELECT coalesce(sum(l.bytes), 0) FROM leaks l JOIN processes p"
                                  " ON p.id = l.process_id WHERE p.run_id = ? AND NOT l.suppressed AND"
                                  " l.leak_class IN ('unknown', 'definitely', 'indirectly', 'possibly')", run)
                            for run in (1, 2)],
            "sizes_run": SIZES_RUN,
            # By pid of run 2: the charts show one process's.
            "sizes_by_pid": {pid: SIZES_CHILD if origin == "fork" else SIZES_PARENT
                             for pid, origin in sqlite3.connect("file:%s?mode=ro" % db, uri=True).execute(
                                 "SELECT pid, origin FROM processes WHERE run_id = 2")},
        }
        expect["misuse"] = misuse_expect(heapledger, misuser, misuser_src, tmp)
        expect["checks"] = checks_expect(heapledger, checker, tmp)
        expect["data"] = data_expect(heapledger, prog, misuser, nodebug, tmp)
        # A daemon run still being written: one client stored, the page
        # open; the page runs a second client and must show its processes.
        live = Daemon(heapledger, os.path.join(tmp, "live.db"), os.path.join(tmp, "live.sock"))
        live_sv = sv = misuse_sv = checks_sv = data_sv = None
        try:
            live.run(prog, "a")
            live.wait_processes(1, 2)
            live_sv = Server(heapledger, live.db)
            misuse_sv = Server(heapledger, expect["misuse"]["db"])
            expect["misuse"]["url"] = misuse_sv.url
            checks_sv = Server(heapledger, expect["checks"]["db"])
            expect["checks"]["url"] = checks_sv.url
            data_sv = Server(heapledger, expect["data"]["db"])
            expect["data"]["url"] = data_sv.url
            expect["live"] = {"url": live_sv.url, "env": live.env, "prog": prog}
            sv = Server(heapledger, db)
            expect["url"] = sv.url
            with open(os.path.join(tmp, "expect.json"), "w", encoding="utf-8") as f:
                json.dump(expect, f)
            r = subprocess.run(["node", script, os.path.join(tmp, "expect.json"), shots],
                               cwd=where, capture_output=True, text=True, timeout=240)
        finally:
            for server in (sv, live_sv, misuse_sv, checks_sv, data_sv):
                if server:
                    server.stop()
            live.stop()
        sys.stdout.write(r.stdout + r.stderr[-3000:])
        if r.returncode != 0:
            sys.exit(1)


if __name__ == "__main__":
    main()
