#!/usr/bin/env python3
"""tests/run/check_verdict_matrix.py: one verdict, every door. Each case of
verdict_cases (definite, indirect, possible, reachable, suppressed, 0-byte,
heap error, _exit, a process not scanned, and none) has ONE expectation written below: whether the
gate fails it (default kinds definite,indirect) and its loss records. Every
output is asked and compared with it: the exit status of `run
--error-exitcode`, the text (ERROR SUMMARY, LEAK SUMMARY), the JSON, SARIF,
JUnit, valgrind's XML, the HTML report, the web UI's API, `heapledger gate`
on the stored run and `heapledger diff` from the clean run; then the same
programs as one suite under `heapledger daemon`, each a test by name: its
exit status, its suite summary, its JUnit (one testcase per test, failed
exactly where the gate fails) and `gate`.

usage: check_verdict_matrix.py HEAPLEDGER VERDICT_CASES
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import urllib.request
import xml.etree.ElementTree as ET

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "ui"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import daemon_util  # noqa: E402
import ui_fixture  # noqa: E402

HL, CASES = sys.argv[1:3]

# case: (gate fails, [(class, bytes, blocks, suppressed)], heap errors)
EXPECT = {
    "clean": (False, [], 0),
    "definite": (True, [("definitely", 64, 1, False)], 0),
    "indirect": (True, [("definitely", 32, 1, False), ("indirectly", 48, 1, False)], 0),
    "possible": (False, [("possibly", 40, 1, False)], 0),
    "reachable": (False, [("reachable", 24, 1, False)], 0),
    "suppressed": (False, [("definitely", 72, 1, True)], 0),
    "zero": (True, [("definitely", 0, 1, False)], 0),
    "heaperror": (True, [], 1),
    # Expected to change: once an _exit()ing process is scanned, its block
    # is definitely lost and the gate fails it (see expectation()).
    "_exit": (False, [("unknown", 64, 1, False)], 0),
    # a definite leak in a process whose hook ran no scan (scan=0): one
    # record no scan classified, which the gate counts only when asked
    "unscanned": (False, [("unknown", 64, 1, False)], 0),
}
# the program's case and the hook's options, where they are not the name's
MODE = {"unscanned": "definite"}
OPTIONS = {"unscanned": "scan=0"}


def case_env(case, env=None):
    env = dict(os.environ if env is None else env)
    if case in OPTIONS:
        env["HEAPLEDGER_OPTIONS"] = OPTIONS[case]
    return env
SUMMARY_LABELS = {"definitely": "definitely lost", "indirectly": "indirectly lost",
                  "possibly": "possibly lost", "reachable": "still reachable"}
XML_KINDS = {"definitely": "Leak_DefinitelyLost", "indirectly": "Leak_IndirectlyLost",
             "possibly": "Leak_PossiblyLost", "reachable": "Leak_StillReachable",
             "unknown": "Leak_StillReachable"}
# what a gate reading the XML fails on with the gate's default kinds
XML_COUNTED = {"Leak_DefinitelyLost", "Leak_IndirectlyLost", "InvalidFree", "MismatchedFree",
               "InvalidWrite"}
UNKNOWN_TOO = "--errors-for-leak-kinds=definite,indirect,unknown"


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def expectation(case, doc):
    fails, records, errors = EXPECT[case]
    if case == "_exit" and doc["processes"][0]["scan"].get("scanned"):
        return True, [("definitely", 64, 1, False)], 0
    return fails, records, errors


def hl(args, want=0, **kw):
    p = subprocess.run([HL] + args, capture_output=True, text=True, timeout=300, **kw)
    if want is not None and p.returncode != want:
        fail("heapledger %s: exit %d, expected %d\n%s%s" % (
            " ".join(args), p.returncode, want, p.stdout[-2000:], p.stderr[-2000:]))
    return p


def door(case, name, got, want):
    if got != want:
        fail("%s: %s says %r, the verdict is %r" % (case, name, got, want))


def records_of_json(proc):
    return sorted((l["kind"], l["bytes"], l["blocks"], l["suppressed"]) for l in proc["leaks"])


def check_text(case, text, fails, records):
    m = re.search(r"ERROR SUMMARY: (\d+) errors", text)
    door(case, "ERROR SUMMARY", bool(m and int(m.group(1))), fails)
    for cls, label in SUMMARY_LABELS.items():
        want = [(b, n) for c, b, n, s in records if c == cls and not s]
        m = re.search(r"%s: (\d+) bytes in (\d+) blocks" % label, text)
        if want or m:
            door(case, "LEAK SUMMARY " + label, (int(m.group(1)), int(m.group(2))) if m else None,
                 (sum(b for b, _ in want), sum(n for _, n in want)))
    supp = [(b, n) for c, b, n, s in records if s]
    if supp:
        m = re.search(r"suppressed: (\d+) bytes in (\d+) blocks", text)
        door(case, "LEAK SUMMARY suppressed", (int(m.group(1)), int(m.group(2))) if m else None,
             (sum(b for b, _ in supp), sum(n for _, n in supp)))


def check_stored(case, db, run, fails, records, errors, ui):
    doc = json.loads(hl(["report", "--db", db, "--run", run, "--format", "json"]).stdout)
    door(case, "report JSON records", records_of_json(doc["processes"][0]), sorted(records))
    door(case, "report JSON errors", len(doc["processes"][0]["errors"]), errors)
    door(case, "gate", hl(["gate", "--db", db, "--run", run], None).returncode, 1 if fails else 0)
    junit = ET.fromstring(hl(["report", "--db", db, "--run", run, "--format", "junit"]).stdout)
    door(case, "JUnit failures", int(junit.get("failures")), int(fails))
    door(case, "JUnit testcases", int(junit.get("tests")), 1)
    sarif = json.loads(hl(["report", "--db", db, "--run", run, "--format", "sarif"]).stdout)
    # a suppressed result carries its suppression: code scanning hides it
    levels = [r["level"] for r in sarif["runs"][0]["results"] if not r.get("suppressions")]
    unclassified = [b for c, b, n, s in records if c == "unknown" and not s]
    # Every door rates a record as the gate does (model/gate.h, one rule):
    # SARIF has an error exactly where the gate fails, and a record no scan
    # classified, which the gate counts only when asked
    # (--errors-for-leak-kinds=...,unknown), is a warning until then.
    door(case, "SARIF errors", "error" in levels, fails)
    door(case, "SARIF unclassified results",
         sorted((r["level"], r["properties"]["bytes"]) for r in sarif["runs"][0]["results"]
                if not r.get("suppressions") and r["ruleId"] == "leak/unknown"),
         sorted(("warning", b) for b in unclassified))
    if unclassified:
        # asked for, they count: the gate fails, SARIF errs, XML says lost
        door(case, "gate " + UNKNOWN_TOO,
             hl(["gate", "--db", db, "--run", run, UNKNOWN_TOO], None).returncode, 1)
        sarif = json.loads(hl(["report", "--db", db, "--run", run, "--format", "sarif",
                               UNKNOWN_TOO]).stdout)
        door(case, "SARIF levels " + UNKNOWN_TOO,
             sorted(r["level"] for r in sarif["runs"][0]["results"]
                    if r["ruleId"] == "leak/unknown"), ["error"] * len(unclassified))
        xml = ET.fromstring(hl(["report", "--db", db, "--run", run, "--format",
                                "valgrind-xml", UNKNOWN_TOO]).stdout)
        door(case, "valgrind XML kinds " + UNKNOWN_TOO,
             sorted(e.findtext("kind") for e in xml.iter("error")),
             ["Leak_DefinitelyLost"] * len(unclassified))
    xml = ET.fromstring(hl(["report", "--db", db, "--run", run, "--format",
                            "valgrind-xml"]).stdout)
    kinds = sorted(e.findtext("kind") for e in xml.iter("error"))
    want = sorted([XML_KINDS[c] for c, b, n, s in records
                   if not s and c in ("definitely", "indirectly", "possibly", "unknown")] +
                  ["InvalidFree"] * errors)
    door(case, "valgrind XML error kinds", [k for k in kinds if k != "Leak_StillReachable"],
         [k for k in want if k != "Leak_StillReachable"])
    door(case, "valgrind XML kinds the gate counts", bool(XML_COUNTED.intersection(kinds)),
         fails)
    html = hl(["report", "--db", db, "--run", run, "--format", "html"]).stdout
    door(case, "HTML report", "verdict_cases" in html, True)
    rows = ui_json(ui, "/api/runs/%s/leaks" % run)["rows"]
    door(case, "UI API records",
         sorted((r["kind"], r["bytes"], r["blocks"], bool(r["suppressed"])) for r in rows),
         sorted(records))
    procs = ui_json(ui, "/api/runs/%s" % run)["processes"]
    door(case, "UI API heap errors", procs[0]["errors"], errors)
    return doc


def ui_json(ui, path):
    url = "http://127.0.0.1:%d%s%stoken=%s" % (ui.port, path, "&" if "?" in path else "?",
                                               ui.token)
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def single_processes(tmp, supp):
    db = os.path.join(tmp, "single.db")
    runs, texts, docs = {}, {}, {}
    for case in EXPECT:
        js = os.path.join(tmp, case + ".json")
        p = hl(["run", "--db", db, "--json", js, "--error-exitcode=7", "--suppressions", supp,
                "--", CASES, MODE.get(case, case)], None, env=case_env(case))
        docs[case] = json.load(open(js))
        fails, records, errors = expectation(case, docs[case])
        door(case, "run's exit status", p.returncode, 7 if fails else 0)
        door(case, "run --json records", records_of_json(docs[case]["processes"][0]),
             sorted(records))
        check_text(case, p.stderr, fails, records)
        runs[case] = re.search(r"run (\d+) stored", p.stderr).group(1)
        texts[case] = p.stderr
    ui = ui_fixture.Server(HL, db)
    try:
        for case in EXPECT:
            fails, records, errors = expectation(case, docs[case])
            check_stored(case, db, runs[case], fails, records, errors, ui)
            # diff from the clean run: a new site for each lost record not
            # suppressed (still reachable memory is no leak to fix)
            sites = {l["fingerprint"] for l in docs[case]["processes"][0]["leaks"]
                     if not l["suppressed"] and l["fingerprint"] and l["kind"] != "reachable"}
            d = hl(["diff", "--db", db, runs["clean"], runs[case]]).stdout
            m = re.search(r"(\d+) new, (\d+) fixed", d)
            door(case, "diff new sites", int(m.group(1)), len(sites))
    finally:
        ui.stop()
    return docs


def suite(tmp, supp, docs):
    sock, db = os.path.join(tmp, "suite.sock"), os.path.join(tmp, "suite.db")
    daemon = daemon_util.start(HL, sock, db, ["--error-exitcode=7", "--suppressions", supp])
    for case in EXPECT:
        env = case_env(case, dict(os.environ, HEAPLEDGER_SOCKET=sock,
                                  LD_PRELOAD=os.environ["HEAPLEDGER_LIB"],
                                  HEAPLEDGER_TEST_NAME="t-" + case))
        subprocess.run([CASES, MODE.get(case, case)], env=env, capture_output=True, timeout=120)
    err = daemon_util.stop(daemon)
    failing = sorted("t-" + c for c in EXPECT if expectation(c, docs[c])[0])
    door("suite", "daemon's exit status", daemon.returncode, 7)
    door("suite", "suite summary", sorted(re.findall(r"\(test (t-\S+?):", err)), failing)
    junit = ET.fromstring(hl(["report", "--db", db, "--format", "junit"]).stdout)
    cases = junit.findall("testsuite/testcase")
    door("suite", "JUnit testcases", sorted(c.get("name") for c in cases),
         sorted("t-" + c for c in EXPECT))
    door("suite", "JUnit failed testcases",
         sorted(c.get("name") for c in cases if c.find("failure") is not None), failing)
    door("suite", "gate", hl(["gate", "--db", db], None).returncode, 1)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        supp = os.path.join(tmp, "cases.supp")
        with open(supp, "w") as f:
            f.write("{\n   verdict-suppressed\n   Memcheck:Leak\n   ...\n   fun:leak_suppressed\n}\n")
        docs = single_processes(tmp, supp)
        suite(tmp, supp, docs)
    print("ok")


main()
