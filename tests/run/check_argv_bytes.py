#!/usr/bin/env python3
"""argv words and paths that are not UTF-8 are kept exactly.

Runs LEAKER, copied to a directory whose name is not UTF-8, with words that
are not UTF-8 (Latin-1, lone bytes, a control character beside markup) under
`heapledger run --json --xml-file`, then checks:
- the --json report keeps every word: argv has them all (bytes that are not
  UTF-8 shown as U+FFFD) and argv_bytes / exe_bytes give the exact bytes, for
  the process and the run;
- the database gives back that same report, and so does a new database the
  JSON report is imported into (`heapledger import`); `heapledger gate`
  names the process by its exact command, and the web UI's summary lists it
  among the failing processes (bytes that are not UTF-8 shown as U+FFFD);
- the XML report is well formed: xmllint, the oracle, accepts it, and each
  byte that is not UTF-8 is written as \\xNN.

usage: check_argv_bytes.py HEAPLEDGER LEAKER
(HEAPLEDGER_LIB in the environment names the hook, as for check_run.py)
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import urllib.parse
import urllib.request

WORDS = [b"caf\xe9", b"ok", b"\x01<&>", b"\xff\xfe", "ünï".encode()]


def fail(msg):
    sys.exit("check_argv_bytes: " + msg)


def exact(strings, raw):
    """The byte strings a report's argv (or exe) and its *_bytes stand for."""
    if raw is None:
        return [s.encode() for s in strings]
    return [bytes(r) if r is not None else s.encode() for s, r in zip(strings, raw)]


def check_report(doc, argv, exe, what):
    proc = doc["processes"][0]
    got = exact(proc["argv"], proc.get("argv_bytes"))
    if got != argv:
        fail("%s: process argv %r, expected %r" % (what, got, argv))
    got_exe = bytes(proc["exe_bytes"]) if proc.get("exe_bytes") else proc["exe"].encode()
    if got_exe != exe:
        fail("%s: exe %r, expected %r" % (what, got_exe, exe))
    run = doc["run"]
    got = exact(run["argv"], run.get("argv_bytes"))
    if got != argv:
        fail("%s: run argv %r, expected %r" % (what, got, argv))
    if any("\ufffd" not in s for s, w in zip(proc["argv"], argv) if not is_utf8(w)):
        fail("%s: a word that is not UTF-8 is not shown with U+FFFD: %r" % (what, proc["argv"]))


def is_utf8(b):
    try:
        b.decode()
        return True
    except UnicodeDecodeError:
        return False


def report_json(heapledger, db):
    out = subprocess.run([heapledger, "report", "--db", db, "--format", "json"],
                         capture_output=True, check=False)
    if out.returncode != 0:
        fail("report --db %s: %s" % (db, out.stderr.decode(errors="replace")))
    return json.loads(out.stdout)


def check_gate(heapledger, db, argv):
    out = subprocess.run([heapledger, "gate", "--db", db], capture_output=True, check=False)
    command = b" ".join(argv)
    if command not in out.stdout + out.stderr:
        fail("gate does not name the command %r:\n%s"
             % (command, (out.stdout + out.stderr).decode(errors="replace")))


def check_ui_summary(heapledger, db, argv):
    ui = subprocess.Popen([heapledger, "ui", "--db", db, "--port", "0"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = ui.stdout.readline()
        m = re.search(r" at (http://\S+)", line)
        if not m:
            fail("ui printed %r" % line)
        url = urllib.parse.urlsplit(m.group(1))
        token = urllib.parse.parse_qs(url.query)["token"][0]
        with urllib.request.urlopen("http://127.0.0.1:%d/api/runs/1/summary?token=%s"
                                    % (url.port, token), timeout=30) as r:
            verdict = json.load(r)["verdict"]
    finally:
        ui.terminate()
        ui.wait(timeout=30)
    shown = b" ".join(argv).decode(errors="replace")
    if [p["command"] for p in verdict["failing"]] != [shown]:
        fail("ui summary: failing %r, expected the command %r" % (verdict["failing"], shown))


def check_xml(xml, argv):
    lint = subprocess.run(["xmllint", "--noout", xml], capture_output=True, check=False)
    if lint.returncode != 0:
        fail("xmllint rejects the --xml-file report:\n" + lint.stderr.decode(errors="replace"))
    with open(xml, "rb") as f:
        text = f.read()
    for word, shown in ((argv[1], b"caf\\xe9"), (argv[3], b"\\x01&lt;&amp;&gt;"),
                        (argv[4], b"\\xff\\xfe"), (argv[5], argv[5])):
        if b"<arg>" + shown + b"</arg>" not in text:
            fail("XML: %r is not written as <arg>%r</arg>" % (word, shown))


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    heapledger, leaker = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory(prefix="hl-bytes-") as tmp:
        tmpb = os.fsencode(tmp)
        bindir = os.path.join(tmpb, b"bin\xe9")
        os.mkdir(bindir)
        exe = os.path.join(bindir, b"leak_direct")
        shutil.copy(leaker, exe)
        argv = [exe] + WORDS
        db, js, xml = (os.path.join(tmp, n) for n in ("h.db", "r.json", "r.xml"))
        run = subprocess.run([os.fsencode(heapledger), b"run", b"--db", db.encode(),
                              b"--json", js.encode(), b"--xml-file", xml.encode(), b"--"] + argv,
                             stdin=subprocess.DEVNULL, capture_output=True, check=False)
        if run.returncode != 0:
            fail("run exited %d:\n%s" % (run.returncode, run.stderr.decode(errors="replace")))
        with open(js, encoding="utf-8") as f:
            doc = json.load(f)
        check_report(doc, argv, exe, "--json")
        if report_json(heapledger, db) != doc:
            fail("the stored report differs from the --json report")
        imported = os.path.join(tmp, "imported.db")
        imp = subprocess.run([heapledger, "import", "--db", imported, js],
                             capture_output=True, check=False)
        if imp.returncode != 0:
            fail("import: " + imp.stderr.decode(errors="replace"))
        check_report(report_json(heapledger, imported), argv, exe, "imported")
        check_gate(heapledger, db, argv)
        check_ui_summary(heapledger, db, argv)
        check_xml(xml, argv)
    print("PASS")


if __name__ == "__main__":
    main()
