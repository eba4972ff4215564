#!/usr/bin/env python3
"""tests/ui/check_ui_sites.py: a site a suite's processes share is one
entry of the run's summary, "in N processes", never one per process.

A shell runs leak_many and leak_direct RUNS times each (2 * RUNS
processes, each exec'd image at its own addresses), all one run. Checked
against the database (SQL here is the oracle): every stored stack with
frames has its site's fingerprint, the one its loss records have; the
summary (GET /api/runs/1/summary, the one query layer) lists leak_many and
leak_direct once each among the top leak sites and the most allocations,
with every process's blocks and allocations added up and the number of
processes; the leak table by site has one row for each, by record one per
process, and `heapledger report`'s text ends with the same sites. With
--browser BUILD_DIR the run page (headless chromium,
browser/check_sites.mjs) shows them so: the cards with a processes column,
the leak table a row per site by default.

usage: check_ui_sites.py HEAPLEDGER LEAK_MANY LEAK_DIRECT [--browser BUILD_DIR]
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

HL, MANY, DIRECT = sys.argv[1:4]
BROWSER = sys.argv[5] if len(sys.argv) > 5 and sys.argv[4] == "--browser" else None
RUNS = 6
# leak_many: 1,000 blocks of 16 bytes; leak_direct: one of 64 (tests/run/progs)
MANY_BLOCKS, MANY_BYTES, DIRECT_BYTES = 1000, 16000, 64


def api(sv, path):
    url = "http://127.0.0.1:%d/api/%s%stoken=%s" % (sv.port, path, "&" if "?" in path else "?", sv.token)
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def check_store(db):
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        n, unnamed = con.execute("SELECT count(*), count(*) - count(fingerprint) FROM stacks"
                                 " WHERE leaf_frame_id IS NOT NULL").fetchone()
        if not n or unnamed:
            fail("%d of %d stacks with frames have no fingerprint" % (unnamed, n))
        odd = con.execute("SELECT count(*) FROM leaks l JOIN stacks k ON k.id = l.stack_id"
                          " WHERE l.fingerprint IS NOT k.fingerprint").fetchone()[0]
        if odd:
            fail("%d loss records' fingerprints differ from their stacks'" % odd)
        procs = con.execute("SELECT count(*) FROM processes WHERE exe LIKE '%/leak_many'").fetchone()[0]
        if procs != RUNS:
            fail("%d leak_many processes stored, want %d" % (procs, RUNS))
        return con.execute("SELECT count(DISTINCT stack_id) FROM leaks l JOIN processes p"
                           " ON p.id = l.process_id WHERE p.exe LIKE '%/leak_many'").fetchone()[0]
    finally:
        con.close()


def only(rows, function, what):
    got = [r for r in rows if (r.get("where") or r)["function"] == function]
    if len(got) != 1:
        fail("%s: %d entries for %s, want one: %s" % (what, len(got), function, json.dumps(rows)[:1500]))
    return got[0].get("where") or got[0]


def check_summary(sum_):
    top = sum_["top_sites"]
    if [t["function"] for t in top[:2]] != ["leak_many", "leak_direct"]:
        fail("top sites %s" % [t["function"] for t in top])
    many, direct = only(top, "leak_many", "top sites"), only(top, "leak_direct", "top sites")
    if (many["value"], many["count"], many["processes"]) != (RUNS * MANY_BYTES, RUNS * MANY_BLOCKS, RUNS):
        fail("top site leak_many: %s" % many)
    if (direct["value"], direct["count"], direct["processes"]) != (RUNS * DIRECT_BYTES, RUNS, RUNS):
        fail("top site leak_direct: %s" % direct)
    allocs = only(sum_["most_allocations"], "leak_many", "most allocations")
    if (allocs["value"], allocs["processes"]) != (RUNS * MANY_BLOCKS, RUNS):
        fail("most allocations, leak_many: %s" % allocs)
    if sum_["most_allocations"][0] is not allocs and sum_["most_allocations"][0]["stack_id"] != allocs["stack_id"]:
        fail("leak_many is not the most allocations: %s" % sum_["most_allocations"][0])
    only(sum_["most_bytes"], "leak_many", "most bytes")
    for k in ("most_allocations", "most_bytes", "most_temporaries"):
        seen = [(r["function"], r["file"], r["module"] and os.path.basename(r["module"]))
                for r in sum_[k] if r["function"] in ("leak_many", "leak_direct")]
        if len(seen) != len(set(seen)):
            fail("%s lists one site twice: %s" % (k, seen))
    return many, direct


def check_leak_table(sv):
    """The leak table by site (GET /api/runs/1/leaks?group=site): what
    leaks, one row per site with its processes' records added up; the text
    filter keeps a site whose frames match; by record (the API's default),
    a row per process."""
    d = api(sv, "runs/1/leaks?group=site&class=lost")
    got = [(r["function"], r["bytes"], r["blocks"], r["records"], r["processes"]) for r in d["rows"]]
    want = [("leak_many", RUNS * MANY_BYTES, RUNS * MANY_BLOCKS, RUNS, RUNS),
            ("leak_direct", RUNS * DIRECT_BYTES, RUNS, RUNS, RUNS)]
    if d["total"] != 2 or got != want:
        fail("leak table by site: total %d, rows %s, want %s" % (d["total"], got, want))
    if not d["rows"][0].get("stack"):
        fail("a site's row has no stack")
    d = api(sv, "runs/1/leaks?group=site&class=lost&filter=leak_dir")
    if d["total"] != 1 or [r["function"] for r in d["rows"]] != ["leak_direct"]:
        fail("leak table by site, filtered: %s" % json.dumps(d)[:800])
    d = api(sv, "runs/1/leaks?class=lost")
    if d["total"] != 2 * RUNS or any("processes" in r for r in d["rows"]):
        fail("leak table by record: %d rows, want %d" % (d["total"], 2 * RUNS))
    try:
        api(sv, "runs/1/leaks?group=program")
        fail("group=program answered")
    except urllib.error.HTTPError as e:
        if e.code != 400:
            fail("group=program: %d" % e.code)


def check_cli(db, sv):
    """`heapledger report`'s text ends with the run's sites, the lines
    the leak table's rows by site say."""
    r = subprocess.run([HL, "report", "--db", db], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("heapledger report: %d %s" % (r.returncode, r.stderr[-2000:]))
    rows = api(sv, "runs/1/leaks?group=site&class=lost")["rows"]
    want = ["heapledger: LEAK SITES (what leaks, every process added up; %d of %d):" % (len(rows), len(rows))]
    for row in rows:
        want.append("heapledger:   {:,} bytes in {:,} blocks definitely lost in {} processes: {} ({}:{})".format(
            row["bytes"], row["blocks"], row["processes"], row["function"], os.path.basename(row["file"]),
            row["line"]))
    got = r.stdout.splitlines()[-len(want):]
    if got != want:
        fail("the text report's sites:\n%s\nwant:\n%s" % ("\n".join(got), "\n".join(want)))
    one = subprocess.run([HL, "report", "--db", db, "--program", "leak_many"], capture_output=True,
                         text=True, timeout=60)
    if "LEAK SITES" in one.stdout:
        fail("a report filtered to some processes lists the run's sites")


def browser(sv, tmp, many, direct):
    import check_ui_browser as cb
    script, where, shots = cb.prepare_browser(BROWSER, "check_sites.mjs", "ui-screenshots-sites")
    cb.run_browser_script(script, where, shots,
                          {"url": sv.url, "runs": RUNS, "many": many, "direct": direct}, tmp)


def main():
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "sites.db")
        script = 'i=0; while [ $i -lt %d ]; do "$1"; "$2"; i=$((i + 1)); done' % RUNS
        r = subprocess.run([HL, "run", "--db", db, "--", "sh", "-c", script, "sh", MANY, DIRECT],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            fail("heapledger run: %d %s" % (r.returncode, r.stderr[-2000:]))
        check_store(db)
        sv = Server(HL, db)
        try:
            many, direct = check_summary(api(sv, "runs/1/summary"))
            check_leak_table(sv)
            check_cli(db, sv)
            if BROWSER:
                browser(sv, tmp, many, direct)
        finally:
            sv.stop()
    print("ok: leak_many and leak_direct are one site each, in %d processes" % RUNS)


main()
