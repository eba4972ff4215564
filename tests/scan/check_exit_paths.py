#!/usr/bin/env python3
"""tests/scan/check_exit_paths.py HEAPLEDGER -- ARGV...:
every process ARGV makes is classified as valgrind classifies it, wherever
it ends (_exit, a fork child's _exit, a fatal signal). valgrind runs here as
the oracle (--trace-children=yes --leak-check=full --show-leak-kinds=all);
heapledger under `heapledger run --json`. The per-process class totals
(definitely, indirectly, possibly lost, still reachable: bytes and blocks)
are compared as a multiset, since the two runs' pids differ. An image
replaced by exec is left out of both (valgrind does not scan it). The exit
status of ARGV must be the same with and without either tool, its stdout the
same with and without heapledger, and every process must have been scanned."""
import json
import os
import re
import subprocess
import sys
import tempfile

CLASSES = ("definitely lost", "indirectly lost", "possibly lost", "still reachable")
KINDS = {"definitely": 0, "indirectly": 1, "possibly": 2, "reachable": 3}
LINE = re.compile(r"^==(\d+)== (.*)$")


def valgrind_images(argv, work):
    """One class tuple per image that valgrind ended (exec'd ones left out)."""
    log = os.path.join(work, "vg.log")
    with open(log, "w") as f:
        rc = subprocess.run(["valgrind", "--trace-children=yes", "--leak-check=full",
                             "--show-leak-kinds=all", "--log-fd=%d" % f.fileno()] + argv,
                            pass_fds=(f.fileno(),), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL).returncode
    images = {}  # pid -> list of images, each a dict of class totals
    for line in open(log, errors="replace"):
        m = LINE.match(line.rstrip("\n"))
        if not m:
            continue
        pid, text = int(m.group(1)), m.group(2)
        if text.startswith("Command:") or pid not in images:
            images.setdefault(pid, []).append({"ended": False, "classes": [0] * 8})
        img = images[pid][-1]
        if "HEAP SUMMARY" in text:
            img["ended"] = True
        for i, name in enumerate(CLASSES):
            c = re.search(name + r": ([\d,]+) bytes in ([\d,]+) blocks", text)
            if c:
                img["classes"][2 * i] = int(c.group(1).replace(",", ""))
                img["classes"][2 * i + 1] = int(c.group(2).replace(",", ""))
    found = [tuple(img["classes"]) for imgs in images.values() for img in imgs
             if img["ended"]]
    return rc, sorted(found), open(log, errors="replace").read()


def heapledger_images(heapledger, argv, work):
    out = os.path.join(work, "hl.json")
    run = subprocess.run([heapledger, "run", "--no-db", "--json", out, "--"] + argv,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    doc = json.load(open(out))
    found, unscanned = [], []
    for p in doc["processes"]:
        if p["exit"]["how"] == "exec":
            continue
        if not p["scan"]["scanned"] and p["summary"]["in_use_blocks"]:
            unscanned.append((p["pid"], p["exit"], p["scan"]))
        classes = [0] * 8
        for leak in p["leaks"]:
            i = KINDS.get(leak["kind"])
            if i is not None:
                classes[2 * i] += leak["bytes"]
                classes[2 * i + 1] += leak["blocks"]
        found.append(tuple(classes))
    return run, sorted(found), unscanned


def main():
    # Each tool adds four variables to the environment (valgrind:
    # GLIBCPP_FORCE_NEW, GLIBCXX_FORCE_NEW, LD_LIBRARY_PATH, LD_PRELOAD;
    # heapledger: HEAPLEDGER_PID, _RUN, _SOCKET, LD_PRELOAD) as long as
    # LD_LIBRARY_PATH was not set: a shell keeps one block per variable.
    os.environ.pop("LD_LIBRARY_PATH", None)
    heapledger = sys.argv[1]
    argv = sys.argv[sys.argv.index("--") + 1:]
    plain = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
    with tempfile.TemporaryDirectory() as work:
        vg_rc, vg, vg_log = valgrind_images(argv, work)
        run, hl, unscanned = heapledger_images(heapledger, argv, work)
    hl_rc = run.returncode
    print("valgrind:   %s (status %d)" % (vg, vg_rc))
    print("heapledger: %s (status %d)" % (hl, hl_rc))
    failed = []
    if unscanned:
        failed.append("not scanned: %s" % unscanned)
    if vg != hl:
        failed.append("classes differ")
    if plain.returncode != vg_rc or plain.returncode != hl_rc:
        failed.append("exit status: plain %d, valgrind %d, heapledger %d"
                      % (plain.returncode, vg_rc, hl_rc))
    # What the program wrote, and only that (valgrind's freeres writes the
    # stdio buffers _exit drops; heapledger must not).
    if run.stdout != plain.stdout:
        failed.append("stdout differs: plain %r, heapledger %r" % (plain.stdout, run.stdout))
    if not any(any(c) for c in vg):
        failed.append("valgrind found no block in use: the test proves nothing")
    if failed:
        sys.exit("; ".join(failed) + "\nvalgrind's log:\n" + vg_log[-3000:])


main()
