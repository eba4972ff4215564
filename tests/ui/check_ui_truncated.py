#!/usr/bin/env python3
"""tests/ui/check_ui_truncated.py: stacks the hook cut at depth= frames are
shown in the flame graph (GET /api/processes/ID/flame) under one synthetic
root, "[stack truncated at N frames]", not as roots of their own whose
outermost frame is whatever frame the cut fell on. ui_phases run with
depth=3: each of its allocation stacks is deeper than 3 frames (the hook's
own frames aside: malloc's caller, its caller, main, the C runtime), so
every stack is cut, every root of the graph is the synthetic one, and it
holds every byte; with the default depth nothing is cut and the graph has
no such root.

usage: check_ui_truncated.py HEAPLEDGER UI_PHASES
"""
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ui_fixture import Server, count, fail  # noqa: E402

HL, PHASES = sys.argv[1:3]


def api(sv, path):
    url = "http://127.0.0.1:%d/api/%s%stoken=%s" % (sv.port, path, "&" if "?" in path else "?", sv.token)
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def flame_roots(db):
    sv = Server(HL, db)
    try:
        pid = api(sv, "runs/1")["processes"][0]["id"]
        return api(sv, "processes/%d/flame?kind=all" % pid)
    finally:
        sv.stop()


def run(tmp, name, options):
    db = os.path.join(tmp, name)
    env = dict(os.environ, HEAPLEDGER_OPTIONS=options)
    r = subprocess.run([HL, "run", "--db", db, "--", PHASES], capture_output=True, text=True,
                       timeout=120, env=env)
    if r.returncode != 0:
        fail("heapledger run (%s): %d %s" % (options, r.returncode, r.stderr[-2000:]))
    return db


def main():
    with tempfile.TemporaryDirectory() as tmp:
        db = run(tmp, "cut.db", "depth=3")
        if count(db, "SELECT count(*) FROM stacks WHERE NOT truncated") != 0:
            fail("a stack of 3 frames was not cut: the test needs deeper ones")
        tree = flame_roots(db)
        roots = [(c["name"], c["value"]) for c in tree["children"]]
        if roots != [("[stack truncated at 3 frames]", tree["value"])]:
            fail("roots of a graph of cut stacks: %s (total %d)" % (roots, tree["value"]))
        below = [c["name"] for c in tree["children"][0]["children"]]
        if not below or any(n.startswith("[") for n in below):
            fail("under the synthetic root: %s" % below)
        db = run(tmp, "whole.db", "scan=0")
        if count(db, "SELECT count(*) FROM stacks WHERE truncated") != 0:
            fail("ui_phases' stacks were cut at the default depth")
        names = [c["name"] for c in flame_roots(db)["children"]]
        if any("truncated" in n for n in names):
            fail("whole stacks under a truncated root: %s" % names)
    print("ok: cut stacks under \"[stack truncated at 3 frames]\"")


main()
