#!/usr/bin/env python3
"""tests/scan/check_run_classes.py HEAPLEDGER PROG [ARGS...]: the leak
classes `heapledger run --json` stores for PROG (sent by the hook in its
scanned LIVE set) must equal valgrind's LEAK SUMMARY, run here as the
oracle (--leak-check=full --show-leak-kinds=all)."""
import json
import re
import subprocess
import sys
import tempfile

CLASSES = {"definitely": "definitely lost", "indirectly": "indirectly lost",
           "possibly": "possibly lost", "reachable": "still reachable"}


def valgrind_classes(argv):
    with tempfile.NamedTemporaryFile("r") as log:
        subprocess.run(["valgrind", "--leak-check=full", "--show-leak-kinds=all",
                        "--log-file=" + log.name] + argv, check=True,
                       stdout=subprocess.DEVNULL)
        text = log.read()
    found = {}
    for name in CLASSES.values():
        m = re.findall(name + r": ([\d,]+) bytes in ([\d,]+) blocks", text)
        found[name] = tuple(int(v.replace(",", "")) for v in m[-1]) if m else (0, 0)
    return found


def run_classes(heapledger, argv):
    with tempfile.NamedTemporaryFile("r", suffix=".json") as out:
        subprocess.run([heapledger, "run", "--no-db", "--json", out.name, "--"] + argv,
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        doc = json.load(open(out.name))
    procs = doc["processes"] if "processes" in doc else [doc]
    found = {name: (0, 0) for name in CLASSES.values()}
    for leak in procs[0]["leaks"]:
        name = CLASSES.get(leak["kind"])
        if name:
            b, n = found[name]
            found[name] = (b + leak["bytes"], n + leak["blocks"])
    return found


def main():
    heapledger, argv = sys.argv[1], sys.argv[2:]
    want = valgrind_classes(argv)
    got = run_classes(heapledger, argv)
    for name in CLASSES.values():
        status = "ok" if want[name] == got[name] else "DIFFERS"
        print(f"{name}: valgrind {want[name]}, heapledger run {got[name]} {status}")
    if want != got:
        sys.exit(1)
    if want["definitely lost"] == (0, 0):
        sys.exit("the program lost nothing: the test proves nothing")


main()
