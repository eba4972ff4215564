#!/usr/bin/env python3
"""tests/scan/check_dtv_valgrind.py HEAPLEDGER LIBHEAPLEDGER PROG...: thread
DTVs are reported as valgrind reports them. Each PROG (tests/scan/
dtv_threads.c, with and without a TLS module of its own) runs in each mode
(a detached thread still running at exit, threads started and joined, a fork
child that starts and joins threads) under `valgrind --leak-check=full
--show-leak-kinds=all --trace-children=yes`, under `heapledger run` and under
the standalone hook; every process's LEAK SUMMARY (definitely, indirectly,
possibly lost, still reachable and suppressed, bytes and blocks) must be
valgrind's. valgrind is the oracle, run here."""
import os
import re
import subprocess
import sys
import tempfile

MODES = ("detached", "joined", "forkjoin")
CLASSES = ("definitely lost", "indirectly lost", "possibly lost", "still reachable",
           "suppressed")
LINE = re.compile(r"^==(\d+)==\s+(%s): ([\d,]+) bytes in ([\d,]+) blocks$" % "|".join(CLASSES),
                  re.M)
FREED = re.compile(r"^==(\d+)==.*(All heap blocks were freed|in use at exit: 0 bytes)", re.M)


def summaries(text):
    """Each process's five classes as ((bytes, blocks), ...), sorted: the
    processes of a run in no particular order."""
    procs = {}
    for pid, _ in FREED.findall(text):
        procs.setdefault(pid, {})
    for pid, cls, nbytes, blocks in LINE.findall(text):
        procs.setdefault(pid, {})[cls] = (int(nbytes.replace(",", "")),
                                          int(blocks.replace(",", "")))
    return sorted(tuple(p.get(c, (0, 0)) for c in CLASSES) for p in procs.values())


def run(argv, env=None):
    p = subprocess.run(argv, capture_output=True, text=True, timeout=120, env=env,
                       stdin=subprocess.DEVNULL)
    if p.returncode != 0:
        sys.exit("FAIL: %s exited %d:\n%s" % (argv, p.returncode, p.stderr))
    return p.stderr


def main():
    heapledger, lib = sys.argv[1:3]
    failed = []
    with tempfile.TemporaryDirectory() as work:
        for prog in sys.argv[3:]:
            for mode in MODES:
                log = os.path.join(work, "vg.%p")
                run(["valgrind", "--leak-check=full", "--show-leak-kinds=all",
                     "--trace-children=yes", "--log-file=" + log, prog, mode])
                vg_text = "".join(open(os.path.join(work, f)).read()
                                  for f in os.listdir(work) if f.startswith("vg."))
                for f in os.listdir(work):
                    os.unlink(os.path.join(work, f))
                expect = summaries(vg_text)
                nprocs = 2 if mode == "forkjoin" else 1
                if len(expect) != nprocs:
                    sys.exit("FAIL: valgrind reported %d processes for %s %s:\n%s" % (
                        len(expect), prog, mode, vg_text))
                got = {
                    "heapledger run": summaries(run([heapledger, "run", "--no-db", "--",
                                                     prog, mode])),
                    "standalone hook": summaries(run(
                        [prog, mode], env=dict(
                            {k: v for k, v in os.environ.items()
                             if not k.startswith("HEAPLEDGER")}, LD_PRELOAD=lib))),
                }
                name = "%s %s" % (os.path.basename(prog), mode)
                print("%-24s valgrind %s" % (name, expect))
                for how, sums in got.items():
                    if sums != expect:
                        print("%-24s %s %s" % (name, how, sums))
                        failed.append("%s (%s)" % (name, how))
    if failed:
        sys.exit("FAIL: leak summaries differ from valgrind's: " + ", ".join(failed))
    print("ok")


main()
