#!/usr/bin/env python3
"""tests/run/check_history.py: leak sites across runs, run metadata, and the
commands built on them, on real runs of tests/run/progs/leak_choice.c.

usage: check_history.py SCENARIO HEAPLEDGER LEAK_CHOICE LEAK_CHOICE_SHIFTED
(HEAPLEDGER_LIB in the environment names the hook)

Scenarios:
  fingerprint  the same sites give the same fingerprints in two runs, in a
               rebuild at other addresses and lines run from another
               directory, and leak_sites records first and last run;
               distinct sites differ; the strdup wrapper frame is skipped
  metadata     --label, the git commit and branch from CI variables and from
               the working directory's repository, a run UUID
"""
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


def main():
    scenario, heapledger, prog, shifted = sys.argv[1:5]
    with tempfile.TemporaryDirectory(prefix="hl-history-") as tmp:
        globals()["scenario_" + scenario](Env(tmp, heapledger, prog, shifted))
    print("PASS")


if __name__ == "__main__":
    main()
