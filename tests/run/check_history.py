#!/usr/bin/env python3
"""tests/run/check_history.py: leak sites across runs, run metadata, and the
commands built on them, on real runs of tests/run/progs/leak_choice.c.

usage: check_history.py SCENARIO HEAPLEDGER LEAK_CHOICE LEAK_CHOICE_SHIFTED RUNTIME_MEMORY
(HEAPLEDGER_LIB in the environment names the hook)

Scenarios:
  fingerprint  the same sites give the same fingerprints in two runs, in a
               rebuild at other addresses and lines run from another
               directory, and leak_sites records first and last run;
               distinct sites differ; the strdup wrapper frame is skipped
  metadata     --label, the git commit and branch from CI variables and from
               the working directory's repository, a run UUID
  history      three runs, leak_b fixed in the third and leak_c new: history
               (text and JSON, by program and by label), diff (new, fixed,
               changed; a site suppressed later is fixed), gate --baseline
               RUN and a file from baseline export
  suppress     valgrind and LSan files together: the suppressed leaks keep
               their class and are listed with the suppression's name, the
               used/unused list; --gen-suppressions=all entries suppress
               exactly their leak; a malformed file stops everything (exit
               125, FILE:LINE, the program never started); the built-in set
               covers glibc's memory and --default-suppressions=no turns it off
"""
import re
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


class Env:
    def __init__(self, tmp, heapledger, prog, shifted):
        self.tmp, self.hl, self.prog, self.shifted = tmp, heapledger, prog, shifted
        self.db = os.path.join(tmp, "h.db")

    def run(self, args, prog=None, expect=None, env=None, cwd=None, opts=()):
        cmd = [self.hl, "run", "--db", self.db] + list(opts) + ["--", prog or self.prog] + args
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=cwd)
        if expect is not None and p.returncode != expect:
            fail("%s exited %d, expected %d:\n%s" % (cmd, p.returncode, expect, p.stderr[-3000:]))
        return p

    def hl_cmd(self, args, expect=0):
        p = subprocess.run([self.hl] + args, capture_output=True, text=True)
        if expect is not None and p.returncode != expect:
            fail("heapledger %s exited %d, expected %d:\n%s%s" % (
                args, p.returncode, expect, p.stdout[-3000:], p.stderr[-3000:]))
        return p

    def report(self, run_id=None):
        args = ["report", "--db", self.db, "--format", "json"]
        if run_id:
            args += ["--run", str(run_id)]
        return json.loads(self.hl_cmd(args).stdout)

    def sql(self, query, params=()):
        with sqlite3.connect(self.db) as c:
            return c.execute(query, params).fetchall()


def sites(doc):
    """{innermost program function: fingerprint} of a report."""
    out = {}
    for p in doc["processes"]:
        for leak in p["leaks"]:
            names = [f["function"] for f in leak["stack"]]
            fn = next((n for n in names if n and n.startswith("leak_")), None)
            if not leak.get("fingerprint"):
                fail("leak without fingerprint: %s" % names)
            out[fn] = leak["fingerprint"]
    return out


def scenario_fingerprint(e):
    e.run(["a", "b", "s"], expect=0)
    first = sites(e.report())
    e.run(["a", "b", "s"], expect=0)
    second = sites(e.report())
    if first != second or set(first) != {"leak_a", "leak_b", "leak_strdup"}:
        fail("fingerprints differ between two runs: %s %s" % (first, second))
    if len(set(first.values())) != 3:
        fail("distinct sites share a fingerprint: %s" % first)
    # The rebuild, under the first build's name, from another directory.
    other = os.path.join(e.tmp, "elsewhere")
    os.mkdir(other)
    copy = os.path.join(other, os.path.basename(e.prog))
    shutil.copy(e.shifted, copy)
    e.run(["a", "b", "s"], prog=copy, expect=0, cwd=other)
    doc = e.report()
    shifted = sites(doc)
    if shifted != first:
        fail("the rebuild's fingerprints differ: %s vs %s" % (shifted, first))
    lines = {f["line"] for p in doc["processes"] for l in p["leaks"] for f in l["stack"]
             if f["function"] == "leak_a"}
    old_lines = {f["line"] for p in e.report(1)["processes"] for l in p["leaks"]
                 for f in l["stack"] if f["function"] == "leak_a"}
    if lines == old_lines:
        fail("the shifted build did not move leak_a (%s): the test proves nothing" % lines)
    e.run(["a", "c"], expect=0)
    rows = dict((r[0], r[1:]) for r in e.sql(
        "SELECT fingerprint, function, first_run_id, last_run_id FROM leak_sites"))
    want = {first["leak_a"]: ("leak_a", 1, 4), first["leak_b"]: ("leak_b", 1, 3),
            first["leak_strdup"]: ("leak_strdup", 1, 3)}
    for fp, row in want.items():
        if rows.get(fp) != row:
            fail("leak_sites row for %s: %s, expected %s" % (fp, rows.get(fp), row))
    c = [fp for fp, row in rows.items() if row[0] == "leak_c"]
    if len(c) != 1 or rows[c[0]][1:] != (4, 4):
        fail("leak_c's site: %s" % rows)
    stored = {r[0] for r in e.sql("SELECT fingerprint FROM leaks")}
    if stored != set(rows):
        fail("leaks.fingerprint %s vs leak_sites %s" % (stored, set(rows)))


def git(cwd, *args):
    return subprocess.run(["git"] + list(args), cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def scenario_metadata(e):
    ci_free = {k: v for k, v in os.environ.items()
               if k not in ("GITHUB_SHA", "GITHUB_HEAD_REF", "GITHUB_REF_NAME", "CI_COMMIT_SHA",
                            "CI_COMMIT_REF_NAME", "BUILDKITE_COMMIT", "CIRCLE_SHA1",
                            "TRAVIS_COMMIT", "BITBUCKET_COMMIT", "GIT_COMMIT")}
    repo = os.path.join(e.tmp, "repo")
    os.mkdir(repo)
    git(repo, "init", "-q", "-b", "topic")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty",
        "-m", "x")
    head = git(repo, "rev-parse", "HEAD")
    e.run(["a"], expect=0, env=ci_free, cwd=repo,
          opts=["--label", "suite=unit", "--label=os=debian 12", "--label", "suite=unit2"])
    run = e.report()["run"]
    if run["git_commit"] != head or run["git_branch"] != "topic":
        fail("git from the working directory: %s" % run)
    if run["labels"] != {"suite": "unit2", "os": "debian 12"}:
        fail("labels: %s" % run["labels"])
    if len(run["uuid"] or "") != 36 or run["uuid"][14] != "4":
        fail("uuid: %s" % run["uuid"])
    labels = sorted(e.sql("SELECT key, value FROM run_labels WHERE run_id = 1"))
    if labels != [("os", "debian 12"), ("suite", "unit2")]:
        fail("run_labels: %s" % labels)
    env = dict(ci_free, CI_COMMIT_SHA="c0ffee", CI_COMMIT_REF_NAME="main")
    e.run(["a"], expect=0, env=env, cwd=repo)
    run = e.report()["run"]
    if (run["git_commit"], run["git_branch"]) != ("c0ffee", "main"):
        fail("git from GitLab's variables: %s" % run)
    env = dict(ci_free, GITHUB_SHA="abc123", GITHUB_REF_NAME="42/merge", GITHUB_HEAD_REF="feature")
    e.run(["a"], expect=0, env=env, cwd=repo)
    run = e.report()["run"]
    if (run["git_commit"], run["git_branch"]) != ("abc123", "feature"):
        fail("git from GitHub's variables: %s" % run)
    e.run(["a"], expect=0, env=ci_free, cwd=e.tmp)
    run = e.report()["run"]
    if run["git_commit"] is not None or run["labels"] != {}:
        fail("outside a repository: %s" % run)
    if len({r[0] for r in e.sql("SELECT uuid FROM runs")}) != 4:
        fail("run UUIDs are not distinct")
    p = e.run(["a"], opts=["--label", "novalue"])
    if p.returncode == 0 or "KEY=VALUE" not in p.stderr:
        fail("--label without '=' was accepted: %d %s" % (p.returncode, p.stderr))


def scenario_history(e):
    e.run(["a", "b"], expect=0, opts=["--label", "branch=main"])
    e.run(["a", "b"], expect=0, opts=["--label", "branch=main"])
    e.run(["a", "a", "c"], expect=0, opts=["--label", "branch=topic"])
    fp = sites(e.report(3))
    fp.update(sites(e.report(1)))
    doc = json.loads(e.hl_cmd(["history", "--db", e.db, "--format", "json"]).stdout)
    got = {s["function"]: (s["first_run"], s["last_run"], s["runs"],
                           [r["bytes"] for r in s["bytes_by_run"]]) for s in doc["sites"]}
    want = {"leak_a": (1, 3, 3, [16, 16, 32]), "leak_b": (1, 2, 2, [32, 32, 0]),
            "leak_c": (3, 3, 1, [0, 0, 48])}
    if doc["runs"] != 3 or got != want:
        fail("history: %s runs, %s" % (doc["runs"], got))
    if {s["fingerprint"] for s in doc["sites"]} != {fp["leak_a"], fp["leak_b"], fp["leak_c"]}:
        fail("history fingerprints differ from the reports'")
    text = e.hl_cmd(["history", "--db", e.db]).stdout
    if not re.search(r"%s +1 +2 +2 +32 32 -  leak_b" % fp["leak_b"], text):
        fail("history text:\n" + text)
    doc = json.loads(e.hl_cmd(["history", "--db", e.db, "--format", "json",
                               "--label", "branch=main"]).stdout)
    if doc["runs"] != 2 or {s["function"] for s in doc["sites"]} != {"leak_a", "leak_b"}:
        fail("history --label branch=main: %s" % doc)
    doc = json.loads(e.hl_cmd(["history", "--db", e.db, "--format", "json",
                               "--program", "no_such_program"]).stdout)
    if doc["runs"] != 0 or doc["sites"]:
        fail("history --program no_such_program: %s" % doc)

    doc = json.loads(e.hl_cmd(["diff", "--db", e.db, "--format", "json", "1", "3"]).stdout)
    changes = {c["function"]: (c["change"], c["bytes_a"], c["bytes_b"]) for c in doc["changes"]}
    if changes != {"leak_a": ("changed", 16, 32), "leak_b": ("fixed", 32, 0),
                   "leak_c": ("new", 0, 48)} or doc["unchanged"] != 0:
        fail("diff 1 3: %s" % doc)
    text = e.hl_cmd(["diff", "--db", e.db, "1", "2"]).stdout
    if "0 new, 0 fixed, 0 changed, 2 unchanged" not in text:
        fail("diff 1 2: " + text)
    e.hl_cmd(["diff", "--db", e.db, "1", "9"], expect=125)

    # Only leaks new relative to the baseline fail the gate.
    e.hl_cmd(["gate", "--db", e.db], expect=1)
    e.hl_cmd(["gate", "--db", e.db, "--baseline", "1"], expect=1)      # leak_c is new
    e.hl_cmd(["gate", "--db", e.db, "--run", "2", "--baseline", "1"], expect=0)
    base = os.path.join(e.tmp, "leaks.baseline")
    e.hl_cmd(["baseline", "export", "--db", e.db, "--run", "3", "-o", base])
    with open(base) as f:
        words = [l.split()[0] for l in f if not l.startswith("#")]
    if sorted(words) != sorted([fp["leak_a"], fp["leak_c"]]):
        fail("baseline file: %s" % words)
    g = e.hl_cmd(["gate", "--db", e.db, "--baseline", base], expect=0)
    if "in the baseline 80 bytes in 3 blocks" not in g.stdout:
        fail("gate --baseline FILE: " + g.stdout)
    e.run(["a", "b", "c"], expect=0)   # leak_b is back: new relative to run 3
    g = e.hl_cmd(["gate", "--db", e.db, "--baseline", base, "--error-exitcode", "3"], expect=3)
    if "32 bytes in 1 block leaked" not in g.stdout:
        fail("gate --baseline with leak_b back: " + g.stdout)
    with open(base, "a") as f:
        f.write("not-a-fingerprint\n")
    g = e.hl_cmd(["gate", "--db", e.db, "--baseline", base], expect=125)
    if "leaks.baseline:5: expected a leak site fingerprint" not in g.stderr:
        fail("a bad baseline file: " + g.stderr)

    # A leak suppressed in a later run is fixed there: diff counts only the
    # leaks the gate would see (not suppressed, not still reachable).
    supp = os.path.join(e.tmp, "b.supp")
    with open(supp, "w") as f:
        f.write("{\n   leak_b_known\n   Memcheck:Leak\n   ...\n   fun:leak_b\n}\n")
    e.run(["a", "b"], expect=0, opts=["--suppressions", supp])
    last = e.sql("SELECT max(id) FROM runs")[0][0]
    doc = json.loads(e.hl_cmd(["diff", "--db", e.db, "--format", "json", "1", str(last)]).stdout)
    changes = {c["function"]: c["change"] for c in doc["changes"]}
    if changes != {"leak_b": "fixed"} or (doc["new"], doc["fixed"], doc["unchanged"]) != (0, 1, 1):
        fail("diff against a run that suppresses leak_b: %s" % doc)
    # History counts it as none there too, but marks the run suppressed, not
    # fixed: the web UI says "suppressed since run N", the text trend "s".
    doc = json.loads(e.hl_cmd(["history", "--db", e.db, "--format", "json"]).stdout)
    site = {s["function"]: s for s in doc["sites"]}["leak_b"]
    newest = site["bytes_by_run"][-1]
    if newest != {"run": last, "bytes": 0, "suppressed": True} or site["last_run"] == last \
            or any(r["suppressed"] for r in site["bytes_by_run"][:-1]):
        fail("history of a site suppressed in the newest run: %s" % site)
    text = e.hl_cmd(["history", "--db", e.db]).stdout
    if not re.search(r"%s .* s  leak_b" % fp["leak_b"], text):
        fail("history text of a suppressed site:\n" + text)


def leaks_by_function(doc):
    """{innermost leak_* function: leak} of the last report's processes."""
    out = {}
    for p in doc["processes"]:
        for leak in p["leaks"]:
            names = [f["function"] or "" for f in leak["stack"]]
            out[next((n for n in names if n.startswith("leak_")), names[0])] = leak
    return out


VG_A = """# suppresses leak_a, written as valgrind would
{
   supp-a
   Memcheck:Leak
   match-leak-kinds: definite,indirect
   fun:malloc
   fun:leak_a
   fun:main
}
{
   never-used
   Memcheck:Leak
   fun:no_such_function
}
"""


def scenario_suppress(e):
    vg = os.path.join(e.tmp, "a.supp")
    lsan = os.path.join(e.tmp, "lsan.supp")
    with open(vg, "w") as f:
        f.write(VG_A)
    with open(lsan, "w") as f:
        f.write("# LeakSanitizer format\nleak:leak_strdup\n")
    # Suppressed records are shown (with their suppression) when asked for.
    p = e.run(["a", "b", "s"], expect=0, opts=["--suppressions", vg, "--suppressions=" + lsan,
                                               "--show-leak-kinds=all,suppressed"])
    leaks = leaks_by_function(e.report())
    want = {"leak_a": "supp-a", "leak_strdup": "leak_strdup", "leak_b": None}
    for fn, name in want.items():
        leak = leaks[fn]
        if leak["suppression"] != name or leak["suppressed"] != (name is not None):
            fail("%s: suppressed %s by %s, expected %s" % (fn, leak["suppressed"],
                                                          leak["suppression"], name))
        if leak["kind"] != "definitely":  # what the leak scan says of each
            fail("%s: the suppression changed the class to %s" % (fn, leak["kind"]))
    rows = e.sql("SELECT leak_class, suppressed, suppression FROM leaks WHERE suppressed = 1"
                 " ORDER BY suppression")
    if rows != [("definitely", 1, "leak_strdup"), ("definitely", 1, "supp-a")]:
        fail("stored suppressions: %s" % rows)
    for text in ("suppressed by: supp-a", "suppressed by: leak_strdup",
                 "used_suppression:      1 supp-a %s:2 suppressed: 16 bytes in 1 blocks" % vg,
                 "used_suppression:      1 leak_strdup %s:2" % lsan,
                 "unused_suppression: never-used %s:10" % vg,
                 "suppressed: 28 bytes in 2 blocks"):
        if text not in p.stderr:
            fail("%r not in the report:\n%s" % (text, p.stderr[-3000:]))
    # By default they are counted only, as valgrind does.
    p = e.run(["a", "b", "s"], expect=0, opts=["--suppressions", vg, "--suppressions=" + lsan])
    if "suppressed by:" in p.stderr or "suppressed: 28 bytes in 2 blocks" not in p.stderr:
        fail("suppressed records shown, or not counted, by default:\n" + p.stderr[-3000:])

    # Generated entries, pasted into a file, suppress exactly their leak.
    p = e.run(["a", "b", "c"], expect=0, opts=["--gen-suppressions=all"])
    entries = re.findall(r"^\{\n.*?^\}\n", p.stderr, re.M | re.S)
    by_fn = {re.search(r"fun:(leak_\w+)", x).group(1): x for x in entries}
    if sorted(by_fn) != ["leak_a", "leak_b", "leak_c"]:
        fail("generated entries: %s" % entries)
    gen = os.path.join(e.tmp, "gen.supp")
    with open(gen, "w") as f:
        f.write(by_fn["leak_b"])
    e.run(["a", "b", "c", "many"], expect=0, opts=["--suppressions", gen])
    leaks = leaks_by_function(e.report())
    suppressed = sorted(fn for fn, l in leaks.items() if l["suppressed"])
    if suppressed != ["leak_b"] or not leaks["leak_b"]["suppression"].startswith("leak_b-"):
        fail("the generated entry suppressed %s" % suppressed)

    # A malformed file: FILE:LINE, exit 125, the program never runs.
    bad = os.path.join(e.tmp, "bad.supp")
    with open(bad, "w") as f:
        f.write("leak:fine\n{\n   x\n   Memcheck:Leak\n   fun:a\n   nonsense\n}\n")
    marker = os.path.join(e.tmp, "ran")
    for supp_opts in (["--suppressions", bad], ["--suppressions", vg, "--suppressions", bad],
                      ["--suppressions", os.path.join(e.tmp, "missing.supp")]):
        p = subprocess.run([e.hl, "run", "--db", e.db] + supp_opts + ["--", "touch", marker],
                           capture_output=True, text=True)
        if p.returncode != 125 or os.path.exists(marker):
            fail("a bad suppressions file: exit %d, program ran: %s" % (
                p.returncode, os.path.exists(marker)))
        if not re.search(r"(bad\.supp:6: expected fun:NAME|missing\.supp: No such file)", p.stderr):
            fail("the error does not name the file and line: %s" % p.stderr)

    # The built-in set: glibc's own dlerror state is suppressed, and shown.
    # freeres=0: glibc's freeres at exit would free it itself.
    runtime_env = dict(os.environ, HEAPLEDGER_OPTIONS="freeres=0")
    p = e.run([], prog=e.runtime, expect=0, env=runtime_env)
    leaks = [l for proc in e.report()["processes"] for l in proc["leaks"]]
    names = {l["suppression"] for l in leaks}
    supp = {l["suppression"] for l in leaks if l["suppressed"]}
    if not supp or not all(n.startswith("glibc-") for n in supp):
        fail("built-in suppressions: %s" % names)
    if "glibc-dlerror" not in supp or "used_suppression:" not in p.stderr:
        fail("dlerror's state is not suppressed as such: %s\n%s" % (names, p.stderr[-2000:]))
    e.run([], prog=e.runtime, expect=0, opts=["--default-suppressions=no"], env=runtime_env)
    leaks = [l for proc in e.report()["processes"] for l in proc["leaks"]]
    if not leaks or any(l["suppressed"] for l in leaks):
        fail("--default-suppressions=no still suppressed: %s" % leaks)


def history_sites(e):
    doc = json.loads(e.hl_cmd(["history", "--db", e.db, "--format", "json"]).stdout)
    return doc["runs"], {s["function"]: (s["first_run"], s["last_run"], s["runs"],
                                         [r["bytes"] for r in s["bytes_by_run"]])
                         for s in doc["sites"]}


ORPHANS = (
    "SELECT count(*) FROM processes WHERE run_id NOT IN (SELECT id FROM runs)",
    # symbols are shared by all runs: none is left that no frame names
    "SELECT count(*) FROM symbols WHERE id NOT IN"
    " (SELECT symbol_id FROM frames WHERE symbol_id IS NOT NULL)",
    "SELECT count(*) FROM run_labels WHERE run_id NOT IN (SELECT id FROM runs)",
    "SELECT count(*) FROM frames WHERE run_id NOT IN (SELECT id FROM runs)",
    "SELECT count(*) FROM stacks WHERE run_id NOT IN (SELECT id FROM runs)",
    "SELECT count(*) FROM stack_aggregate_rows WHERE stack_id NOT IN (SELECT id FROM stacks)"
    " OR process_id NOT IN (SELECT id FROM processes)",
    "SELECT count(*) FROM leak_records WHERE process_id NOT IN (SELECT id FROM processes)",
    "SELECT count(*) FROM leaks WHERE process_id NOT IN (SELECT id FROM processes)",
    "SELECT count(*) FROM summaries WHERE process_id NOT IN (SELECT id FROM processes)",
    "SELECT count(*) FROM module_rows WHERE process_id NOT IN (SELECT id FROM processes)",
    "SELECT count(*) FROM timeline WHERE process_id NOT IN (SELECT id FROM processes)",
    "SELECT count(*) FROM leak_sites WHERE first_run_id NOT IN (SELECT id FROM runs)"
    " OR last_run_id NOT IN (SELECT id FROM runs)",
)


def scenario_prune(e):
    """db prune --keep N: the newest N runs stay, with history and diff as
    if the others had never been stored; nothing of the others is left."""
    e.run(["a"], expect=0)
    e.run(["a", "b"], expect=0, opts=["--label", "k=old"])
    e.run(["b", "c"], expect=0)
    e.run(["c"], expect=0)
    runs, got = history_sites(e)
    if runs != 4 or got["leak_a"][:2] != (1, 2) or got["leak_b"][:2] != (2, 3):
        fail("history before the prune: %s" % got)
    out = e.hl_cmd(["db", "prune", "--db", e.db, "--keep", "2"]).stdout
    if "removed 2 runs" not in out or "kept 2" not in out:
        fail("db prune said: %r" % out)
    runs, got = history_sites(e)
    want = {"leak_b": (3, 3, 1, [32, 0]), "leak_c": (3, 4, 2, [48, 48])}
    if runs != 2 or got != want:
        fail("history after the prune: %d runs, %s" % (runs, got))
    sites_rows = sorted(r[1:] for r in e.sql(
        "SELECT fingerprint, first_run_id, last_run_id FROM leak_sites"))
    if sites_rows != [(3, 3), (3, 4)]:
        fail("leak_sites after the prune: %s" % sites_rows)
    for q in ORPHANS:
        if e.sql(q)[0][0]:
            fail("left behind by the prune: %s" % q)
    if e.sql("PRAGMA foreign_key_check"):
        fail("foreign keys broken: %s" % e.sql("PRAGMA foreign_key_check"))
    doc = json.loads(e.hl_cmd(["diff", "--db", e.db, "--format", "json", "3", "4"]).stdout)
    changes = {(c["change"], c["function"]) for c in doc["changes"]}
    if changes != {("fixed", "leak_b")} or doc["unchanged"] != 1:
        fail("diff 3 4 after the prune: %s" % doc)
    e.hl_cmd(["report", "--db", e.db, "--run", "1"], expect=125)
    e.hl_cmd(["diff", "--db", e.db, "1", "4"], expect=125)
    if "removed 0 runs" not in e.hl_cmd(["db", "prune", "--db", e.db, "--keep", "2"]).stdout:
        fail("a second prune removed something")
    # A run stored after the prune: a site of a pruned run is new again.
    e.run(["a"], expect=0)
    runs, got = history_sites(e)
    if runs != 3 or got.get("leak_a", (0,))[0] != 5:
        fail("history of a run after the prune: %s" % got)
    out = e.hl_cmd(["db", "prune", "--db", e.db, "--keep", "0", "--vacuum"]).stdout
    if "removed 3 runs" not in out:
        fail("db prune --keep 0: %r" % out)
    runs, got = history_sites(e)
    if runs or got or e.sql("SELECT count(*) FROM leak_sites")[0][0] or \
            e.sql("SELECT count(*) FROM frames")[0][0]:
        fail("an empty history still has rows")
    e.hl_cmd(["db", "prune", "--db", e.db], expect=125)
    e.hl_cmd(["db", "--db", e.db], expect=125)


def scenario_import(e):
    """import FILE...: the runs of other machines' databases join the
    history with everything below them; importing again adds nothing."""
    other_a = os.path.join(e.tmp, "machine-a.db")
    other_b = os.path.join(e.tmp, "machine-b.db")
    e.run(["b"], expect=0)
    e.run(["a", "b"], expect=0, opts=["--db", other_a, "--label", "machine=a"])
    e.run(["a"], expect=0, opts=["--db", other_a, "--label", "machine=a"])
    e.run(["c"], expect=0, opts=["--db", other_b])
    # (the second --db wins: e.run puts its own first)
    out = e.hl_cmd(["import", "--db", e.db, other_a, other_b]).stdout
    if "%s: 2 runs (2 processes) imported, 0 already present" % other_a not in out or \
            "%s: 1 run (1 process) imported" % other_b not in out:
        fail("import said: %r" % out)
    out = e.hl_cmd(["import", "--db", e.db, other_b, other_a]).stdout
    if out.count(": 0 runs (0 processes) imported") != 2 or "2 already present" not in out:
        fail("a second import: %r" % out)
    runs, got = history_sites(e)
    want = {"leak_b": (1, 2, 2, [32, 32, 0, 0]), "leak_a": (2, 3, 2, [0, 16, 16, 0]),
            "leak_c": (4, 4, 1, [0, 0, 0, 48])}
    if runs != 4 or got != want:
        fail("history after the imports: %d runs, %s" % (runs, got))
    doc = json.loads(e.hl_cmd(["history", "--db", e.db, "--format", "json",
                               "--label", "machine=a"]).stdout)
    if doc["runs"] != 2:
        fail("the imported runs lost their labels: %s" % doc)
    # An imported run reads as it did where it was stored.
    for run_here, path, run_there in ((2, other_a, 1), (3, other_a, 2), (4, other_b, 1)):
        here = e.report(run_here)
        there = json.loads(e.hl_cmd(["report", "--db", path, "--format", "json",
                                     "--run", str(run_there)]).stdout)
        here["run"]["id"] = there["run"]["id"]
        if here != there:
            fail("run %d differs from run %d of %s" % (run_here, run_there, path))
    for q in ORPHANS:
        if e.sql(q)[0][0]:
            fail("import left rows without their parent: %s" % q)
    if e.sql("PRAGMA foreign_key_check"):
        fail("foreign keys broken: %s" % e.sql("PRAGMA foreign_key_check"))
    doc = json.loads(e.hl_cmd(["diff", "--db", e.db, "--format", "json", "2", "4"]).stdout)
    if {(c["change"], c["function"]) for c in doc["changes"]} != {
            ("fixed", "leak_a"), ("fixed", "leak_b"), ("new", "leak_c")}:
        fail("diff of imported runs: %s" % doc)
    # The JSON report of a run imported from its database: the same run (UUID).
    report_json = os.path.join(e.tmp, "r.json")
    with open(report_json, "w") as f:
        f.write(e.hl_cmd(["report", "--db", other_b, "--format", "json"]).stdout)
    p = e.hl_cmd(["import", "--db", e.db, report_json])
    if "0 runs (0 processes) imported, 1 already present" not in p.stdout:
        fail("import of the JSON report of an imported run: %s" % p.stdout)
    # Not a database: a clear error, nothing imported.
    junk = os.path.join(e.tmp, "junk.db")
    with open(junk, "w") as f:
        f.write("not a database\n" * 100)
    for bad in (junk, os.path.join(e.tmp, "missing.db")):
        p = e.hl_cmd(["import", "--db", e.db, bad], expect=125)
        if bad not in p.stderr:
            fail("import of %s: the error does not name it: %s" % (bad, p.stderr))
    if history_sites(e)[0] != 4:
        fail("a failed import changed the history")


def main():
    scenario, heapledger, prog, shifted, runtime = sys.argv[1:6]
    with tempfile.TemporaryDirectory(prefix="hl-history-") as tmp:
        env = Env(tmp, heapledger, prog, shifted)
        env.runtime = runtime
        globals()["scenario_" + scenario](env)
    print("PASS")


if __name__ == "__main__":
    main()
