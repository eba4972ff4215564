#!/usr/bin/env python3
"""tests/scan/check_run_indirect.py HEAPLEDGER PROG [ARGS...]: every
definitely lost record of `heapledger run` (its report text and its JSON)
must carry the direct and indirect bytes and the blocks of valgrind's
"N (D direct, I indirect) bytes in B blocks are definitely lost" records,
computed here with valgrind as the oracle. The hook computes the indirect
bytes in its leak scan and sends them in the LIVE records; the reporter
adds them up per record."""
import json
import re
import subprocess
import sys
import tempfile

RECORD = re.compile(r"== ([\d,]+) (?:\(([\d,]+) direct, ([\d,]+) indirect\) )?bytes in ([\d,]+) "
                    r"blocks are definitely lost in loss record")


def number(text):
    return int(text.replace(",", "")) if text else 0


def records(text):
    """(direct, indirect, blocks) of each definitely lost record, sorted."""
    found = []
    for m in RECORD.finditer(text):
        total, direct, indirect, blocks = (number(g) for g in m.groups())
        if not m.group(2):
            direct = total
        found.append((direct, indirect, blocks))
    return sorted(found)


def main():
    heapledger, argv = sys.argv[1], sys.argv[2:]
    with tempfile.NamedTemporaryFile("r") as log:
        subprocess.run(["valgrind", "--leak-check=full", "--log-file=" + log.name] + argv,
                       check=True, stdout=subprocess.DEVNULL)
        want = records(log.read())
    with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
        run = subprocess.run([heapledger, "run", "--no-db", "--json", out.name, "--"] + argv,
                             check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                             text=True)
        doc = json.load(open(out.name))
    text = records(run.stderr)
    procs = doc["processes"] if "processes" in doc else [doc]
    from_json = sorted((leak["bytes"], leak["indirect_bytes"], leak["blocks"])
                       for leak in procs[0]["leaks"] if leak["kind"] == "definitely")
    print(f"valgrind:        {want}\nheapledger text: {text}\nheapledger JSON: {from_json}")
    if not any(indirect for _, indirect, _ in want):
        sys.exit("valgrind saw no indirect bytes: the test proves nothing")
    if text != want or from_json != want:
        sys.exit("the definitely lost records differ from valgrind's")


main()
