#!/usr/bin/env python3
"""tests/scan/check_fatal_stored.py HEAPLEDGER SOURCE -- ARGV...: the signal
that ended a process (valgrind's "Process terminating with default action
of signal N", the fault and the stack) is kept wherever the run goes, and
said the same way in each:

  - `heapledger run` prints it live (text), writes it to --json and to
    --xml-file as valgrind's <fatal_signal>;
  - `heapledger report` on the stored run prints the same text block, the
    same JSON `exit.fatal`, and the same <fatal_signal> in valgrind's XML;
  - the JSON report imported into a new database reports the same block;
  - the web UI's run data (`report --format html`, the pages' own answers)
    has the signal, its name, the fault words and the stack.

valgrind runs here as the oracle for the XML: <signo>, <signame>, <sicode>,
<event>, <siaddr> and the first frame in SOURCE must be the ones valgrind
writes for ARGV.
"""
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

LINE = re.compile(r"^==\d+== ?(.*)$")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(cmd, **kw):
    return subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                          timeout=300, **kw)


def fatal_block(text):
    """The lines from "Process terminating" to the blank line after it,
    without the ==pid== prefix."""
    block = None
    for line in text.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        if m.group(1).startswith("Process terminating with default action"):
            block = []
        if block is not None:
            if not m.group(1).strip():
                return block
            block.append(m.group(1))
    return block


def xml_fatal(path, source):
    """(signo, signame, sicode, event, siaddr, first function in source)."""
    root = ET.parse(path).getroot()
    f = root.find("fatal_signal")
    if f is None:
        return None
    first = None
    for fr in f.find("stack").findall("frame"):
        if fr.findtext("file") == source:
            first = fr.findtext("fn")
            break
    return tuple(f.findtext(k) for k in ("signo", "signame", "sicode", "event", "siaddr")) + \
        (first,)


def json_fatal(doc):
    f = doc["processes"][0]["exit"]["fatal"]
    if f is None:
        return None
    return dict(f, stack=[fr.get("function") for fr in f["stack"]])


def html_answers(html):
    m = re.search(r'<script id="hl-data" type="application/json">(.*?)</script>', html, re.S)
    if not m:
        fail("no data in the HTML report")
    return json.loads(m.group(1))["answers"]


def main():
    heapledger, source = sys.argv[1], os.path.basename(sys.argv[2])
    argv = sys.argv[sys.argv.index("--") + 1:]
    with tempfile.TemporaryDirectory() as work:
        db, js, xml = (os.path.join(work, n) for n in ("run.db", "run.json", "run.xml"))
        live = run([heapledger, "run", "--db", db, "--json", js, "--xml-file", xml, "--"] + argv)
        vg_xml = os.path.join(work, "vg.xml")
        run(["valgrind", "--xml=yes", "--xml-file=" + vg_xml, "--leak-check=full"] + argv)
        stored = run([heapledger, "report", "--db", db])
        stored_json = run([heapledger, "report", "--db", db, "--format", "json"])
        stored_xml = os.path.join(work, "stored.xml")
        with open(stored_xml, "w") as f:
            f.write(run([heapledger, "report", "--db", db, "--format", "valgrind-xml"]).stdout)
        imported = os.path.join(work, "imported.db")
        imp = run([heapledger, "import", "--db", imported, js])
        if imp.returncode != 0:
            fail("import of the JSON report: %s" % imp.stderr)
        reimported = run([heapledger, "report", "--db", imported])
        html = run([heapledger, "report", "--db", db, "--format", "html"]).stdout

        block = fatal_block(live.stderr)
        print("live:\n  " + "\n  ".join(block or ["(none)"]))
        if not block or len(block) < 2:
            fail("no crash report in the live text")
        if not any(source in l for l in block[1:]):
            fail("the live crash stack has no frame in " + source)
        for name, text in (("report", stored.stdout), ("report after import", reimported.stdout)):
            if fatal_block(text) != block:
                fail("%s says otherwise:\n%s" % (name, "\n".join(fatal_block(text) or ["(none)"])))

        live_json = json_fatal(json.load(open(js)))
        print("JSON:", live_json)
        if not live_json or json_fatal(json.loads(stored_json.stdout)) != live_json:
            fail("the stored JSON's exit.fatal differs: %s"
                 % json_fatal(json.loads(stored_json.stdout)))
        if live_json["signal"] != int(re.search(r"signal (\d+)", block[0]).group(1)):
            fail("JSON and text disagree on the signal")

        want = xml_fatal(vg_xml, source)
        print("valgrind XML:", want)
        if want is None:
            fail("valgrind wrote no <fatal_signal>")
        for name, path in (("--xml-file", xml), ("report --format valgrind-xml", stored_xml)):
            got = xml_fatal(path, source)
            print("%s: %s" % (name, got))
            if got != want:
                fail("%s's <fatal_signal> differs from valgrind's" % name)

        answers = html_answers(html)
        run_doc = next(v for k, v in answers.items() if re.fullmatch(r"runs/\d+", k))
        proc = run_doc["processes"][0]
        ui = (proc.get("fatal_signal"), proc.get("fatal_name"), proc.get("fatal_fault"))
        print("UI:", ui)
        if ui != (live_json["signal"], live_json["name"], live_json["fault"]):
            fail("the UI's process data differ")
        stack = answers.get("stacks/%s" % proc.get("fatal_stack_id"))
        if not stack or [f.get("function") for f in stack["frames"]] != live_json["stack"]:
            fail("the UI's fatal stack differs: %s" % stack)
    print("ok")


if __name__ == "__main__":
    main()
