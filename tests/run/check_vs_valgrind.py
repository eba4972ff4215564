#!/usr/bin/env python3
"""tests/run/check_vs_valgrind.py: the loss records of `heapledger run` are
valgrind's: the same records in the same order (largest last), each with
the same bytes, blocks and function names (glibc's public names, the stack
ending at main), valgrind memcheck run in the test as the oracle.

Usage: check_vs_valgrind.py HEAPLEDGER -- PROG [ARGS...]
"""
import re
import subprocess
import sys

HEAD = re.compile(r"==\d+== ([\d,]+) (?:\(.*\) )?bytes in ([\d,]+) blocks are .* in loss record")
FRAME = re.compile(r"==\d+==    (?:at|by) 0x[0-9A-Fa-f]+: (.*?)(?: \(.*\))?$")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def records(text, skip_module):
    """[(bytes, blocks, [functions])] in report order; frames inside
    skip_module (valgrind's own malloc) left out."""
    out, cur = [], None
    for line in text.splitlines():
        m = HEAD.match(line)
        if m:
            cur = (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", "")), [])
            out.append(cur)
            continue
        m = FRAME.match(line)
        if cur and m:
            if skip_module not in line:
                cur[2].append(m.group(1))
        else:
            cur = None
    return out


def main():
    hl, cmd = sys.argv[1], sys.argv[3:]
    vg = subprocess.run(["valgrind", "--leak-check=full", "--show-leak-kinds=all",
                         "--num-callers=50"] + cmd, capture_output=True, text=True,
                        timeout=300)
    ours = subprocess.run([hl, "run", "--no-db", "--show-leak-kinds=all", "--"] + cmd,
                          capture_output=True, text=True, timeout=120)
    want = records(vg.stderr, "vgpreload")
    got = records(ours.stderr, "libheapledger")
    if not want:
        fail("valgrind reported no loss records:\n" + vg.stderr[-2000:])
    if got != want:
        fail("heapledger's records differ from valgrind's:\n  valgrind:   %s\n  heapledger: %s"
             % (want, got))
    print("PASS: %d records as valgrind's" % len(got))


if __name__ == "__main__":
    main()
