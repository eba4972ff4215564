#!/usr/bin/env python3
"""tests/run/check_import_json.py: `heapledger import` of JSON reports.

A leaking program (fork_exec: four processes, three leak sites) runs with
--json and --label; its report is imported into a fresh database twice (the
second adds nothing: the run's UUID is there); `report --db`, `history` and
`gate` then say of the imported run what they say of the original. Heap
errors (misuse) and on-demand checks (fake_client) arrive too, a report
written by `report --format json` and one with its keys sorted ("processes"
before "run") import as the same run. A truncated, a malformed and a
mistyped file are refused naming the file and the place (the byte for the
first two), and leave nothing; the status is 125.

usage: check_import_json.py HEAPLEDGER FORK_EXEC LEAK_DIRECT MISUSE FAKE_CLIENT LIBHLNOTHING
"""
import json
import os
import subprocess
import sys
import tempfile

hl, fork_exec, leak_direct, misuse, fake_client, nothing = sys.argv[1:7]
tmp = tempfile.mkdtemp()


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def path(name):
    return os.path.join(tmp, name)


def hlrun(args, env=None, ok=(0,)):
    r = subprocess.run([hl] + args, capture_output=True, text=True, timeout=120, env=env)
    if r.returncode not in ok:
        fail("%s: status %d\n%s%s" % (args, r.returncode, r.stdout, r.stderr))
    return r


def runs(db):
    """Every run of db as `report --format json` prints it, by UUID (ids differ)."""
    out = {}
    for i in range(1, 20):
        r = subprocess.run([hl, "report", "--db", db, "--run", str(i), "--format", "json"],
                           capture_output=True, text=True)
        if r.returncode == 0:
            d = json.loads(r.stdout)
            d["run"]["id"] = None
            out[d["run"]["uuid"]] = d
    return out


def table_counts(db):
    r = subprocess.run(["sqlite3", db, "SELECT (SELECT count(*) FROM runs),"
                        " (SELECT count(*) FROM processes), (SELECT count(*) FROM leak_sites)"],
                       capture_output=True, text=True, check=True)
    return r.stdout.strip()


orig, new = path("orig.db"), path("new.db")
hlrun(["run", "--db", orig, "--json", path("r.json"), "--label", "machine=ci-7", "--",
       fork_exec, leak_direct])
r = hlrun(["import", "--db", new, path("r.json")])
if "1 run (4 processes) imported, 0 already present" not in r.stdout:
    fail("first import: " + r.stdout)
r = hlrun(["import", "--db", new, path("r.json")])
if "0 runs (0 processes) imported, 1 already present" not in r.stdout:
    fail("second import: " + r.stdout)
a, b = runs(orig), runs(new)
if len(b) != 1 or a != b:
    fail("report --db differs:\n%s\n%s" % (json.dumps(a, indent=1)[:3000],
                                           json.dumps(b, indent=1)[:3000]))
run = next(iter(b.values()))["run"]
if run["labels"].get("machine") != "ci-7":
    fail("labels: %s" % run["labels"])
print("ok: imported twice, one run: the same report as the original (labels, leaks, stacks)")

text_a = hlrun(["report", "--db", orig]).stdout + hlrun(["report", "--db", orig]).stderr
text_b = hlrun(["report", "--db", new]).stdout + hlrun(["report", "--db", new]).stderr
if text_a != text_b or "child_leak (fork_exec.c" not in text_b:
    fail("text report differs or lacks symbolized frames:\n%s\n---\n%s" % (text_a, text_b))
hist_a, hist_b = hlrun(["history", "--db", orig]), hlrun(["history", "--db", new])
if hist_a.stdout != hist_b.stdout or "leak_direct" not in hist_b.stdout:
    fail("history differs:\n%s\n%s" % (hist_a.stdout, hist_b.stdout))
gate_a = hlrun(["gate", "--db", orig], ok=(0, 1))
gate_b = hlrun(["gate", "--db", new], ok=(0, 1))
if (gate_a.returncode, gate_a.stdout, gate_a.stderr) != \
        (gate_b.returncode, gate_b.stdout, gate_b.stderr) or gate_b.returncode != 1:
    fail("gate differs:\n%s%s\n%s%s" % (gate_a.stdout, gate_a.stderr, gate_b.stdout,
                                        gate_b.stderr))
print("ok: history, gate and the text report agree on the imported run")

# Heap errors and on-demand checks; a report written from a database.
for mode in ("size_mismatch", "overflow", "double"):
    hlrun(["run", "--db", orig, "--json", path("m-%s.json" % mode), "--checks", "full", "--",
           misuse, mode], ok=(0, 1, 134))
env = dict(os.environ, HEAPLEDGER_LIB=nothing)
hlrun(["run", "--db", orig, "--json", path("c.json"), "--", fake_client, "checks"], env=env,
      ok=range(0, 256))
files = [path("m-%s.json" % m) for m in ("size_mismatch", "overflow", "double")] + [path("c.json")]
hlrun(["import", "--db", new] + files)
a, b = runs(orig), runs(new)
if a != b or len(b) != 5:
    fail("errors and checks: %d runs here, %d imported, or they differ" % (len(a), len(b)))
if not any(p["checks"] for d in b.values() for p in d["processes"]) or \
        not any(p["errors"] for d in b.values() for p in d["processes"]):
    fail("no check or no heap error was imported")
with open(path("from-db.json"), "w") as f:
    f.write(hlrun(["report", "--db", orig, "--run", "1", "--format", "json"]).stdout)
r = hlrun(["import", "--db", new, path("from-db.json")])
if "1 already present" not in r.stdout:
    fail("report --format json of the same run: " + r.stdout)
print("ok: heap errors, checks; a report from `report --format json` is the same run")

# The same report with its members in another order (as `jq -S` writes it:
# "processes" before "run") is the same run: the header is read first.
with open(path("r.json")) as f:
    doc = json.load(f)
with open(path("sorted.json"), "w") as f:
    json.dump(doc, f, sort_keys=True)
sorted_db = path("sorted.db")
hlrun(["import", "--db", sorted_db, path("sorted.json")])
a, b = runs(orig), runs(sorted_db)
if len(b) != 1 or b[doc["run"]["uuid"]] != a[doc["run"]["uuid"]]:
    fail("a report with sorted keys imports differently:\n%s" % json.dumps(b, indent=1)[:3000])
print("ok: a report whose processes come before its run header is the same run")

# Refused files leave nothing.
with open(path("r.json")) as f:
    good = f.read()
doc = json.loads(good)
with open(path("truncated.json"), "w") as f:
    f.write(good[:len(good) // 2])
with open(path("syntax.json"), "w") as f:
    f.write(good.replace('"processes"', '"processes" "x"', 1))
doc["processes"][3]["leaks"][0]["bytes"] = "64"  # the last process: all parsed first
with open(path("mistyped.json"), "w") as f:
    json.dump(doc, f)
fresh = path("fresh.db")
for name, want in (("truncated.json", "truncated at byte %d, in processes[" % (len(good) // 2)),
                   ("syntax.json", "syntax error at byte %d (line " % (good.index('"processes"') + 12)),
                   ("mistyped.json", "processes[3].leaks[0].bytes: not a whole number")):
    r = subprocess.run([hl, "import", "--db", fresh, path(name)], capture_output=True,
                       text=True, timeout=60)
    if r.returncode != 125 or path(name) + ": " + want not in r.stderr or \
            "nothing of it was imported" not in r.stderr:
        fail("%s: status %d\n%s" % (name, r.returncode, r.stderr))
    if table_counts(fresh) != "0|0|0":
        fail("%s left rows: %s" % (name, table_counts(fresh)))
print("ok: truncated, malformed and mistyped files refused by name and place, nothing stored")

# A run without any process: an import that stores nothing fails (125),
# naming the file, and stores nothing.
doc = json.loads(good)
doc["processes"] = []
doc["run"]["uuid"] = "00000000-0000-4000-8000-000000000000"
with open(path("empty.json"), "w") as f:
    json.dump(doc, f)
r = hlrun(["import", "--db", fresh, path("empty.json")], ok=(125,))
if path("empty.json") not in r.stderr or "no process" not in r.stderr or \
        table_counts(fresh) != "0|0|0":
    fail("empty run: %s %s" % (r.stderr, table_counts(fresh)))
print("ok: a run without processes is refused, and said")
print("PASS")
