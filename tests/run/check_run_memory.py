#!/usr/bin/env python3
"""`heapledger run`'s memory follows what is live, not how many processes ended.

Runs a bash loop of SMALL and then LARGE commands (mostly /bin/true, every
LEAK_EVERY-th one a program that leaks one block) under `heapledger run`, and
reads heapledger's peak RSS from wait4() of its process (the kernel's
figure, no timing involved). The reporter that kept every ended process until
the run ended grew about 93 KiB per command (bash's fork child reports the
shell's heap); the larger loop may use at most GROWTH_MIB more than the
smaller one.

Ended processes are then reported, stored and freed while the loop runs, so
the test also checks that nothing changed for the user: every process is in
the --json report once, in the order it started, each fork child names the
image that replaced it, each leak is there, the gate counts them, and the
database gives back exactly the --json report.

usage: check_run_memory.py HEAPLEDGER LEAKER
(HEAPLEDGER_LIB in the environment names the hook, as for check_run.py)
"""
import json
import os
import subprocess
import sys
import tempfile

SMALL, LARGE = 100, 500
LEAK_EVERY = 25
# Kept ended processes cost ~93 KiB a command: 36 MiB for the 400 more.
# On one shared 2-core machine the 400 more grew 13-16 MiB run to run with
# nothing kept (allocator and page-cache noise), failing a 16 MiB bound.
GROWTH_MIB = 24
GATE_EXIT = 9


def fail(msg):
    sys.exit("check_run_memory: " + msg)


def loop(n, leaker):
    return ('for i in $(seq %d); do if [ $((i %% %d)) = 0 ]; then %s >/dev/null; '
            'else /bin/true; fi; done' % (n, LEAK_EVERY, leaker))


def run(heapledger, leaker, n, tmp):
    """Runs the loop; returns (peak RSS in KiB, the --json report, stderr)."""
    db, js, err = (os.path.join(tmp, "%d.%s" % (n, ext)) for ext in ("db", "json", "err"))
    env = dict(os.environ)
    # Freed memory must come back for reuse under ASan too (the reporter's
    # sanitizer build): its quarantine would hold every freed process.
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=0"
    # A symbol cache of its own: the user's (~/.cache/heapledger) maps
    # files of up to tens of MiB whose pages count in the RSS as more
    # processes touch them (bounded by the files, not by processes kept).
    env["XDG_CACHE_HOME"] = os.path.join(tmp, "cache")
    with open(err, "w") as errf:
        proc = subprocess.Popen([heapledger, "run", "--db", db, "--json", js,
                                 "--error-exitcode", str(GATE_EXIT), "--",
                                 "bash", "-c", loop(n, leaker)],
                                stdin=subprocess.DEVNULL, stderr=errf, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
    with open(err, encoding="utf-8", errors="replace") as f:
        stderr = f.read()
    code = os.waitstatus_to_exitcode(status)
    if code != GATE_EXIT:
        fail("%d commands: exit %d, expected %d (the gate fails on the leaks):\n%s"
             % (n, code, GATE_EXIT, stderr[-3000:]))
    with open(js, encoding="utf-8") as f:
        doc = json.load(f)
    stored = subprocess.run([heapledger, "report", "--db", db, "--format", "json"],
                            capture_output=True, text=True, check=False)
    if stored.returncode != 0 or json.loads(stored.stdout) != doc:
        fail("%d commands: the stored report differs from the --json report (%s)"
             % (n, stored.stderr.strip()))
    return usage.ru_maxrss, doc, stderr


def check_report(doc, stderr, n, leaker):
    procs = doc["processes"]
    leakers = n // LEAK_EVERY
    # bash, the fork and exec of $(seq), then a fork and an exec per command
    if len(procs) != 2 * n + 3:
        fail("%d commands: %d processes reported, expected %d" % (n, len(procs), 2 * n + 3))
    starts = [p["started_ns"] for p in procs]
    if starts != sorted(starts):
        fail("%d commands: processes not in the order they started" % n)
    forks = [p for p in procs[3:] if p["origin"] == "fork"]
    if len(forks) != n:
        fail("%d commands: %d fork children, expected %d" % (n, len(forks), n))
    images = {os.path.realpath("/bin/true"): 0, leaker: 0}
    for p in forks:
        ex = p["exit"]
        if ex["how"] != "exec" or not ex.get("tracked") or ex.get("image") not in images:
            fail("fork child %d ended as %s, expected replaced by a tracked image"
                 % (p["pid"], ex))
        images[ex["image"]] += 1
    if images[leaker] != leakers:
        fail("%d fork children replaced by the leaker, expected %d" % (images[leaker], leakers))
    lost = [p for p in procs if any(l["kind"] == "definitely" for l in p["leaks"])]
    if len(lost) != leakers or any(p["exe"] != leaker for p in lost):
        fail("%d processes with a definite leak, expected the %d leakers"
             % (len(lost), leakers))
    for p in lost:
        got = [(l["bytes"], l["blocks"]) for l in p["leaks"] if l["kind"] == "definitely"]
        if got != [(64, 1)]:
            fail("leaker %d: definite leaks %s, expected one block of 64 bytes" % (p["pid"], got))
    if "gate FAILED: {:,} bytes in {:,} blocks leaked".format(64 * leakers, leakers) \
            not in stderr:
        fail("the gate does not count the %d leakers' blocks" % leakers)


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    heapledger, leaker = sys.argv[1], os.path.realpath(sys.argv[2])
    with tempfile.TemporaryDirectory(prefix="hl-runmem-") as tmp:
        peaks = {}
        for n in (SMALL, LARGE):
            peaks[n], doc, stderr = run(heapledger, leaker, n, tmp)
            check_report(doc, stderr, n, leaker)
    growth = (peaks[LARGE] - peaks[SMALL]) / 1024
    print("heapledger peak RSS: %d commands %.1f MiB, %d commands %.1f MiB (+%.1f MiB)"
          % (SMALL, peaks[SMALL] / 1024, LARGE, peaks[LARGE] / 1024, growth))
    if growth > GROWTH_MIB:
        fail("%d more commands took %.1f MiB more (at most %d): ended processes are kept"
             % (LARGE - SMALL, growth, GROWTH_MIB))
    print("PASS")


if __name__ == "__main__":
    main()
