#!/usr/bin/env python3
"""tests/ui/check_ui_cli_counts.py: the web UI's API and `heapledger report
--format json` tell the same of a run. For each stored run (loss records of
every class, suppressed, zero-byte, heap errors, a fork child) the run
list's row, the run's page, a program's history and the leak table's total
are compared with what the CLI's JSON report of the same run adds up to:
processes, heap errors, loss records, bytes by the class each record is
shown as (a suppressed record as "suppressed"), lost bytes and records per
process; the run's labels. And each record is the same object from both
doors: a loss record of the leak table, a heap error, an on-demand check
(with its loss records) is, field for field and frame for frame, the
report's record of the same process (the UI's adds only where the record
is: its row id, process, rank, stack id and the frame that names it).

usage: check_ui_cli_counts.py HEAPLEDGER VERDICT_CASES UI_LEAKER SCAN_CHECKPOINTS
"""
import json
import os
import subprocess
import sys
import tempfile
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ui_fixture import Server, fail  # noqa: E402

HL, CASES, LEAKER, CHECKER = sys.argv[1:5]
# what a row of the leak table adds to the record: where it is
LEAK_PLACE = {"id", "process_id", "pid", "rank", "stack_id", "function", "file", "line", "module",
              "module_offset"}
LOST = ("definitely", "indirectly", "possibly", "unknown")


def api(sv, path):
    url = "http://127.0.0.1:%d%s%stoken=%s" % (sv.port, path, "&" if "?" in path else "?", sv.token)
    with urllib.request.urlopen(url, timeout=30) as r:
        return json.loads(r.read())


def cli_report(db, run):
    r = subprocess.run([HL, "report", "--db", db, "--run", str(run), "--format", "json"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("report --run %d: %d %s" % (run, r.returncode, r.stderr[-1000:]))
    return json.loads(r.stdout)


def shown(leak):
    return "suppressed" if leak["suppressed"] else leak["kind"]


def by_class(procs):
    out = {}
    for p in procs:
        for l in p["leaks"]:
            out[shown(l)] = out.get(shown(l), 0) + l["bytes"]
    return out


def same(run, what, ui, cli):
    if ui != cli:
        fail("run %d, %s: the UI says %r, report --format json says %r" % (run, what, ui, cli))


def same_records(run, what, ui_rows, procs, field, place):
    """Each process's records (field of the JSON report's processes) are the
    UI's rows of that pid less the keys in place, as a multiset (the leak
    table orders by size, the report by loss record)."""
    def key(record):
        return json.dumps(record, sort_keys=True)
    want, got = {}, {}
    for p in procs:
        want.setdefault(p["pid"], []).extend(key(r) for r in p[field])
    for r in ui_rows:
        extra = set(r) - place
        got.setdefault(r["pid"], []).append(key({k: r[k] for k in extra}))
    for pid in set(want) | set(got):
        w, g = sorted(want.get(pid, [])), sorted(got.get(pid, []))
        if w != g:
            fail("run %d pid %d, %s: the UI's records are not the report's\nUI:   %s\n"
                 "JSON: %s" % (run, pid, what, [x for x in g if x not in w][:2],
                               [x for x in w if x not in g][:2]))


def compare(sv, db, row, history):
    run = row["id"]
    doc = cli_report(db, run)
    procs = doc["processes"]
    same(run, "processes", row["processes"], len(procs))
    same(run, "heap errors (run list)", row["errors"], sum(len(p["errors"]) for p in procs))
    same(run, "bytes by class (run list)", row["leaked"], by_class(procs))
    same(run, "bytes by class (history)", history[run], by_class(procs))
    page = api(sv, "/api/runs/%d" % run)
    ui_procs = sorted(page["processes"], key=lambda p: p["pid"])
    cli_procs = sorted(procs, key=lambda p: p["pid"])
    same(run, "process pids", [p["pid"] for p in ui_procs], [p["pid"] for p in cli_procs])
    for u, c in zip(ui_procs, cli_procs):
        lost = [l for l in c["leaks"] if l["kind"] in LOST and not l["suppressed"]]
        same(run, "pid %d loss records" % u["pid"], u["leak_records"], len(c["leaks"]))
        same(run, "pid %d lost records" % u["pid"], u["leaked_records"], len(lost))
        same(run, "pid %d lost bytes" % u["pid"], u["leaked_bytes"], sum(l["bytes"] for l in lost))
        same(run, "pid %d heap errors" % u["pid"], u["errors"], len(c["errors"]))
        same(run, "pid %d bytes in use" % u["pid"], u["in_use_bytes"],
             c["summary"]["in_use_bytes"])
    same(run, "labels (run page)", page["labels"], doc["run"]["labels"])
    same(run, "labels (run list)", row["labels"], doc["run"]["labels"])
    leaks = api(sv, "/api/runs/%d/leaks?limit=5000" % run)
    same(run, "leak table rows", leaks["total"], sum(len(p["leaks"]) for p in procs))
    same_records(run, "loss records", leaks["rows"], procs, "leaks", LEAK_PLACE)
    same_records(run, "heap errors", api(sv, "/api/runs/%d/errors" % run), procs, "errors",
                 {"pid", "test"})
    same_records(run, "on-demand checks", api(sv, "/api/runs/%d/checks" % run)["checks"], procs,
                 "checks", {"pid", "test"})
    return doc


def main():
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "counts.db")
        supp = os.path.join(tmp, "cases.supp")
        with open(supp, "w") as f:
            f.write("{\n   counts-suppressed\n   Memcheck:Leak\n   ...\n   fun:leak_suppressed\n}\n")
        # ui_leaker unscanned: its records are not classified ("unknown")
        cmds = [([CASES, c], "") for c in ("indirect", "suppressed", "zero", "heaperror",
                                           "reachable", "possible", "_exit")] + \
            [([LEAKER, "a"], "scan=0"), ([CHECKER], "")]
        for n, (cmd, options) in enumerate(cmds):
            labels = ["--label", "case=%d" % n, "--label", "a=%s" % cmd[-1]] if n % 2 else []
            r = subprocess.run([HL, "run", "--db", db, "--suppressions", supp] + labels +
                               ["--"] + cmd,
                               capture_output=True, text=True, timeout=60,
                               env=dict(os.environ, HEAPLEDGER_OPTIONS=options))
            if "stored" not in r.stderr:
                fail("run %s: %d %s" % (cmd, r.returncode, r.stderr[-1000:]))
        sv = Server(HL, db)
        try:
            rows = api(sv, "/api/runs?limit=100")["rows"]
            same(0, "runs listed", len(rows), len(cmds))
            history = {}
            for program in {r["program"] for r in rows}:
                for h in api(sv, "/api/history?program=" + program)["runs"]:
                    history[h["id"]] = h["leaked"]
            kinds = set()
            for row in rows:
                doc = compare(sv, db, row, history)
                kinds |= {shown(l) for p in doc["processes"] for l in p["leaks"]}
                for field in ("errors", "checks"):
                    if any(p[field] for p in doc["processes"]):
                        kinds.add(field)
            # the runs above must show every class, or the comparison proves little
            for k in ("definitely", "indirectly", "possibly", "reachable", "suppressed", "unknown",
                      "errors", "checks"):
                if k not in kinds:
                    fail("no run showed a %s record" % k)
        finally:
            sv.stop()
    print("ok")


main()
