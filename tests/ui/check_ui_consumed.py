#!/usr/bin/env python3
"""tests/ui/check_ui_consumed.py: heap consumed over time by the top
functions (GET /api/processes/ID/consumed) of a real run of ui_phases, whose
three functions hold known bytes in turn: each site's most at one sample is
what the program held there (512, 256 and 128 KiB), the sites come in that
order, at every sample the sites and "other" add up to the heap in use of
the timeline (the same samples as /timeline), hold_first holds nothing once
hold_third holds anything, and a process of a database made before the
store kept series says it has none.

With --browser BUILD_DIR, the run page in headless chromium instead
(browser/check_consumed.mjs): the "most temporary allocations" card and
the consumed chart show the names and numbers these queries answer;
skipped (77) as tests/ui/check_ui_browser.py is when there is no chromium.

usage: check_ui_consumed.py HEAPLEDGER UI_PHASES [--browser BUILD_DIR]
"""
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import urllib.error
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ui_fixture import Server, fail  # noqa: E402

HL, PHASES = sys.argv[1:3]
BROWSER = sys.argv[4] if len(sys.argv) > 4 and sys.argv[3] == "--browser" else None
KIB = 1024


def api(sv, path):
    url = "http://127.0.0.1:%d/api/%s?token=%s" % (sv.port, path, sv.token)
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def check_phases(c, tl):
    names = [s["function"] for s in c["sites"]]
    if names[:3] != ["hold_first", "hold_second", "hold_third"]:
        fail("top sites %s, want hold_first, hold_second, hold_third first" % names)
    peaks = [s["peak"] for s in c["sites"][:3]]
    if peaks != [512 * KIB, 256 * KIB, 128 * KIB]:
        fail("the sites' peaks %s, want 512, 256, 128 KiB" % peaks)
    if not c["sites"][0]["file"].endswith("ui_phases.c"):
        fail("hold_first's file %r" % c["sites"][0]["file"])
    if c["time_ns"] != sorted(tl["time_ns"]) or sorted(c["total"]) != sorted(tl["bytes"]):
        fail("consumed has other samples than the timeline")
    n = len(c["time_ns"])
    first, second, third = (c["sites"][k]["bytes"] for k in range(3))
    for i in range(n):
        held = sum(s["bytes"][i] for s in c["sites"])
        if held + c["other"][i] != c["total"][i]:
            fail("sample %d: sites %d + other %d != heap in use %d" % (i, held, c["other"][i], c["total"][i]))
        if third[i] and first[i]:
            fail("sample %d: hold_first still holds %d beside hold_third" % (i, first[i]))
    both = [i for i in range(n) if first[i] == 512 * KIB and second[i] == 256 * KIB]
    if not both:
        fail("no sample at the peak with both hold_first and hold_second full")


def browser(sv, pid, tmp):
    """The page against the query layer's answers (check_consumed.mjs)."""
    import check_ui_browser as cb
    script, where, shots = cb.prepare_browser(BROWSER, "check_consumed.mjs", "ui-screenshots-consumed")
    c = api(sv, "processes/%d/consumed" % pid)
    temporaries = api(sv, "runs/1/summary")["most_temporaries"]
    if not temporaries or temporaries[0]["function"] != "churn":
        fail("the summary's most temporaries: %s" % temporaries)
    expect = {"url": sv.url, "temporaries": temporaries,
              "consumed": {"sites": [{"function": s["function"], "bytes": s["bytes"]} for s in c["sites"]],
                           "other": c["other"], "total": c["total"], "points": len(c["time_ns"])}}
    cb.run_browser_script(script, where, shots, expect, tmp)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "consumed.db")
        r = subprocess.run([HL, "run", "--db", db, "--", PHASES], capture_output=True,
                           text=True, timeout=120)
        if r.returncode != 0:
            fail("heapledger run: %d %s" % (r.returncode, r.stderr[-2000:]))
        sv = Server(HL, db)
        try:
            pid = api(sv, "runs/1")["processes"][0]["id"]
            if BROWSER:
                browser(sv, pid, tmp)
                return
            check_api(sv, db, pid)
        finally:
            sv.stop()
    print("ok: consumed over time by hold_first, hold_second, hold_third")


def check_api(sv, db, pid):
    c = api(sv, "processes/%d/consumed" % pid)
    tl = api(sv, "processes/%d/timeline" % pid)
    if not c["has_series"] or len(c["time_ns"]) < 4:
        fail("too few samples or no series: %s" % json.dumps(c)[:500])
    check_phases(c, tl)
    # A process stored before the database kept series: none.
    con = sqlite3.connect(db)
    con.execute("DELETE FROM stack_series")
    con.commit()
    con.close()
    c = api(sv, "processes/%d/consumed" % pid)
    if c["has_series"] or c["sites"] or c["other"] != c["total"]:
        fail("without series: %s" % json.dumps(c)[:500])
    try:
        api(sv, "processes/999999/consumed")
        fail("a process that is not there answered")
    except urllib.error.HTTPError as e:
        if e.code != 404:
            fail("no such process: %d" % e.code)


main()
