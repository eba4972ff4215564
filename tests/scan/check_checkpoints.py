#!/usr/bin/env python3
"""tests/scan/check_checkpoints.py HEAPLEDGER SCAN_CHECKPOINTS: on-demand
checks carry loss records. The program loses A (2 x 48 bytes, in leak_a),
checks, loses B (200 bytes, in leak_b), checks again, frees A and exits.
Check 1 lists A under leak_a; check 2 lists B as new ("(+200)") and A as
unchanged (not shown in the text, like valgrind's leak_check increased;
new_bytes 0 in the JSON); the exit report holds B only; a suppression of B
suppresses it in check 2 too. The same in the
text report, the --json file, the database (`heapledger report --db`, text
and JSON), a database the JSON report is imported into, and under
`heapledger daemon`."""
import json
import os
import re
import sqlite3
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "run"))
import daemon_util  # noqa: E402


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def lines_of(text):
    """Report lines without the ==pid== prefix."""
    return [re.sub(r"^==\d+== ?", "", l) for l in text.splitlines() if l.startswith("==")]


def check_section(lines, seq):
    """The lines of LEAK CHECK seq, up to the next check or the exit's
    records, and the index of the line after them."""
    start = next((i for i, l in enumerate(lines) if l.startswith("LEAK CHECK %d " % seq)), None)
    if start is None:
        fail("no LEAK CHECK %d in:\n%s" % (seq, "\n".join(lines)))
    end = start + 1
    while end < len(lines) and not lines[end].startswith("LEAK CHECK ") and \
            not lines[end].startswith("ERROR SUMMARY") and "in loss record" not in lines[end] \
            or (end < len(lines) and "(+" in lines[end]):
        end += 1
    return lines[start:end], end


def record_with(lines, head):
    """The record line starting with head and the function of its first frame."""
    for i, l in enumerate(lines):
        if l.startswith(head) and " in loss record " in l:
            m = re.match(r"\s+at 0x[0-9a-f]+: (\S+)", lines[i + 1]) if i + 1 < len(lines) else None
            return m.group(1) if m else None
    return None


def check_text(text, where):
    lines = lines_of(text)
    one, _ = check_section(lines, 1)
    two, after = check_section(lines, 2)
    if record_with(one, "96 (+96) bytes in 2 (+2) blocks are definitely lost") != "leak_a":
        fail("%s: check 1 does not list A under leak_a:\n%s" % (where, "\n".join(one)))
    if "   definitely lost: 96 (+96) bytes in 2 (+2) blocks" not in one:
        fail("%s: check 1's totals:\n%s" % (where, "\n".join(one)))
    if record_with(two, "200 (+200) bytes in 1 (+1) blocks are definitely lost") != "leak_b":
        fail("%s: check 2 does not list B as new under leak_b:\n%s" % (where, "\n".join(two)))
    if "   definitely lost: 296 (+200) bytes in 3 (+1) blocks" not in two:
        fail("%s: check 2's totals:\n%s" % (where, "\n".join(two)))
    if any("leak_a" in l for l in two):
        fail("%s: check 2 shows A, which did not grow:\n%s" % (where, "\n".join(two)))
    if not any(re.match(r"\(\d+ loss records? that did not grow since the last check", l)
               for l in two):
        fail("%s: check 2 does not say unchanged records are not shown:\n%s"
             % (where, "\n".join(two)))
    tail = lines[after:]
    if record_with(tail, "200 bytes in 1 blocks are definitely lost") != "leak_b" or \
            any("leak_a" in l for l in tail):
        fail("%s: the exit report should hold B only:\n%s" % (where, "\n".join(tail)))


def definite(records, function):
    found = [r for r in records if r["kind"] == "definitely" and r["stack"]
             and r["stack"][0]["function"] == function]
    return found[0] if len(found) == 1 else None


def check_json(proc, where):
    checks = proc["checks"]
    if [c["seq"] for c in checks] != [1, 2]:
        fail("%s: checks %s" % (where, [c["seq"] for c in checks]))
    a = definite(checks[0]["records"], "leak_a")
    if not a or (a["bytes"], a["blocks"], a["new_bytes"], a["new_blocks"]) != (96, 2, 96, 2):
        fail("%s: check 1's record of A: %s" % (where, a))
    if definite(checks[0]["records"], "leak_b"):
        fail("%s: check 1 lists B, lost after it" % where)
    a = definite(checks[1]["records"], "leak_a")
    if not a or (a["bytes"], a["blocks"], a["new_bytes"], a["new_blocks"]) != (96, 2, 0, 0):
        fail("%s: check 2's record of A (unchanged): %s" % (where, a))
    b = definite(checks[1]["records"], "leak_b")
    if not b or (b["bytes"], b["blocks"], b["new_bytes"], b["new_blocks"]) != (200, 1, 200, 1):
        fail("%s: check 2's record of B (new): %s" % (where, b))
    for c in checks:
        if c["records_total"] != len(c["records"]) or not c["all_threads_stopped"] \
                or c["unstopped_tids"] != []:
            fail("%s: check %d: %s" % (where, c["seq"], {k: v for k, v in c.items()
                                                         if k != "records"}))
        ranks = [r["loss_record"] for r in c["records"]]
        if ranks != list(range(1, len(ranks) + 1)):
            fail("%s: check %d's loss record numbers %s" % (where, c["seq"], ranks))
    if definite(proc["leaks"], "leak_a") or not definite(proc["leaks"], "leak_b"):
        fail("%s: exit records %s" % (where, proc["leaks"]))


def run(*argv):
    p = subprocess.run(list(argv), stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=60)
    return p


def main():
    hl, prog = sys.argv[1:3]
    with tempfile.TemporaryDirectory() as tmp:
        db, js = os.path.join(tmp, "c.db"), os.path.join(tmp, "c.json")
        p = run(hl, "run", "--db", db, "--json", js, "--", prog)
        if p.returncode != 0 or p.stdout != "done\n":
            fail("run: exit %d, stdout %r\n%s" % (p.returncode, p.stdout, p.stderr))
        check_text(p.stderr, "run")
        with open(js, encoding="utf-8") as f:
            doc = json.load(f)
        check_json(doc["processes"][0], "run --json")
        # The database reads back the same.
        p = run(hl, "report", "--db", db, "--format", "json")
        if json.loads(p.stdout) != doc:
            fail("the stored run's JSON differs from the --json report")
        p = run(hl, "report", "--db", db)
        check_text(p.stdout, "report --db")
        # --check-records=any: the records that did not grow too.
        p = run(hl, "report", "--db", db, "--check-records=any")
        two, _ = check_section(lines_of(p.stdout), 2)
        if record_with(two, "96 (+0) bytes in 2 (+0) blocks are definitely lost") != "leak_a":
            fail("--check-records=any does not show A unchanged:\n%s" % "\n".join(two))
        p = run(hl, "report", "--db", db, "--check-records=all")
        if p.returncode != 125 or "check-records" not in p.stderr:
            fail("a bad --check-records is not a usage error (%d)" % p.returncode)
        con = sqlite3.connect(db)
        rows = con.execute(
            "SELECT c.seq, c.bytes, c.blocks, c.new_bytes, c.new_blocks FROM check_records c"
            " JOIN stacks k ON k.id = c.stack_id WHERE c.leak_class = 'definitely'"
            " ORDER BY c.seq, c.bytes").fetchall()
        con.close()
        if rows != [(1, 96, 2, 96, 2), (2, 96, 2, 0, 0), (2, 200, 1, 200, 1)]:
            fail("check_records rows: %s" % rows)

        # A suppression applies to the checks' records as to the exit's: B is
        # suppressed in check 2 (not shown, counted as suppressed) and at exit.
        supp, sdb, sjs = (os.path.join(tmp, n) for n in ("b.supp", "s.db", "s.json"))
        with open(supp, "w", encoding="utf-8") as f:
            f.write("{\n   b_site\n   Memcheck:Leak\n   match-leak-kinds: definite\n"
                    "   fun:malloc\n   fun:leak_b\n}\n")
        p = run(hl, "run", "--db", sdb, "--json", sjs, "--suppressions", supp, "--", prog)
        two, _ = check_section(lines_of(p.stderr), 2)
        if any("leak_b" in l for l in two) or \
                "        suppressed: 200 (+200) bytes in 1 (+1) blocks" not in two or \
                "   definitely lost: 96 (+0) bytes in 2 (+0) blocks" not in two:
            fail("suppressed B in check 2:\n%s" % "\n".join(two))
        with open(sjs, encoding="utf-8") as f:
            sproc = json.load(f)["processes"][0]
        b = [r for r in sproc["checks"][1]["records"] if r["stack"][0]["function"] == "leak_b"]
        exit_b = [r for r in sproc["leaks"] if r["stack"][0]["function"] == "leak_b"]
        if len(b) != 1 or not b[0]["suppressed"] or b[0]["suppression"] != "b_site" or \
                not b[0]["fingerprint"] or b[0]["fingerprint"] != exit_b[0]["fingerprint"]:
            fail("check 2's suppressed record of B: %s" % b)
        p = run(hl, "report", "--db", sdb, "--format", "json")
        if json.loads(p.stdout)["processes"] != [sproc]:
            fail("the stored run's suppressed check records differ from the --json report")

        # A JSON report imported into another database reads back the same.
        idb = os.path.join(tmp, "i.db")
        p = run(hl, "import", "--db", idb, js)
        if p.returncode != 0:
            fail("import: %s%s" % (p.stdout, p.stderr))
        p = run(hl, "report", "--db", idb, "--format", "json")
        if json.loads(p.stdout)["processes"] != doc["processes"]:
            fail("the imported run's checks differ from the --json report")

        # A process connecting to a daemon: reported and stored alike.
        sock, ddb = os.path.join(tmp, "hl.sock"), os.path.join(tmp, "d.db")
        daemon = daemon_util.start(hl, sock, ddb)
        env_out = run(hl, "env", "--socket", sock).stdout
        p = run("sh", "-c", env_out + 'exec "$@"', "sh", prog)
        err = daemon_util.stop(daemon)
        if p.returncode != 0 or p.stdout != "done\n":
            fail("under the daemon: exit %d, stdout %r\n%s" % (p.returncode, p.stdout, p.stderr))
        check_text(err, "daemon")
        p = run(hl, "report", "--db", ddb, "--format", "json")
        check_json(json.loads(p.stdout)["processes"][0], "daemon's database")
    print("ok")


main()
