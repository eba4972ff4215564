#!/usr/bin/env python3
"""tests/run/check_fork_snapshot.py HEAPLEDGER PROG: a fork child's snapshot
of the heap it inherited goes out just before its first record other than
EXEC (wire.h, HL_HOOK_FORK_SNAPSHOT). For each of fork_snapshot.c's modes,
`heapledger run` must report both processes exactly as when the snapshot
went out at fork: no stream warnings, the child's blocks in use and
inherited as counted here; a child that execs at once sent none; one killed
before its first call is reported with the blocks it held as dropped events.
"""
import json
import os
import subprocess
import sys
import tempfile

BLOCKS = 300  # fork_snapshot.c

# mode: (ending, in use at the end, of them inherited, own allocations and reallocs)
EXPECT = {
    "exec": ("exec", None, 0, 0),
    "execfail": ("_exit", BLOCKS - 1, BLOCKS - 1, 0),
    "free": ("_exit", BLOCKS - 1, BLOCKS - 1, 0),
    "malloc": ("_exit", BLOCKS + 1, BLOCKS, 1),
    "realloc": ("_exit", BLOCKS, BLOCKS - 2, 2),
    "exit": ("_exit", BLOCKS, BLOCKS, 0),
    "vfork": ("_exit", BLOCKS - 1, BLOCKS - 1, 0),
    "spawn": ("_exit", BLOCKS - 1, BLOCKS - 1, 0),
    # Not the run's own child: how it ended may be unknown to the reporter.
    "kill": (("signal", "unknown"), None, None, 0),
}
CONSISTENCY = ("unmatched_frees", "unfreed_superseded", "live_mismatch")


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def check(heapledger, prog, mode, tmp):
    js = os.path.join(tmp, mode + ".json")
    run = subprocess.run([heapledger, "run", "--db", os.path.join(tmp, "h.db"), "--json", js,
                          "--", prog, mode], stdin=subprocess.DEVNULL,
                         capture_output=True, text=True, timeout=120)
    if run.returncode != 0:
        fail("%s: exit status %d\n%s" % (mode, run.returncode, run.stderr[-3000:]))
    with open(js, encoding="utf-8") as f:
        procs = json.load(f)["processes"]
    parent = next(p for p in procs if p["origin"] == "start" and p["exe"].endswith(prog))
    child = next((p for p in procs if p["origin"] == "fork"), None)
    if child is None:
        fail("%s: no fork child reported" % mode)
    how, in_use, inherited, allocs = EXPECT[mode]
    s = child["summary"]
    if child["exit"]["how"] not in (how if isinstance(how, tuple) else (how,)):
        fail("%s: the child ended by %s, expected %s" % (mode, child["exit"]["how"], how))
    if in_use is not None and s["in_use_blocks"] != in_use:
        fail("%s: the child has %d blocks in use, expected %d" % (mode, s["in_use_blocks"], in_use))
    if inherited is not None and s["inherited_blocks"] != inherited:
        fail("%s: the child holds %d inherited blocks, expected %d"
             % (mode, s["inherited_blocks"], inherited))
    if s["allocs"] != allocs:
        fail("%s: the child made %d allocations, expected %d" % (mode, s["allocs"], allocs))
    for p in (parent, child):
        bad = {k: p["summary"][k] for k in CONSISTENCY if p["summary"][k]}
        if bad:
            fail("%s: pid %d: inconsistent stream %s" % (mode, p["pid"], bad))
    if parent["summary"]["in_use_blocks"] or parent["summary"]["dropped_events"]:
        fail("%s: the parent's summary %s" % (mode, parent["summary"]))
    warned = [l for l in run.stderr.splitlines() if "warning" in l]
    if mode == "kill":
        # Every block it held is missing from its report, and it says so.
        if s["dropped_events"] < BLOCKS:
            fail("kill: %d dropped events, expected at least %d" % (s["dropped_events"], BLOCKS))
        said = "==%d== warning: the hook dropped %d events" % (child["pid"], s["dropped_events"])
        if not any(l.startswith(said) for l in warned):
            fail("kill: no '%s' in the report:\n%s" % (said, "\n".join(warned)))
        warned = [l for l in warned if not l.startswith("==%d==" % child["pid"])]
    elif s["dropped_events"]:
        fail("%s: the child dropped %d events" % (mode, s["dropped_events"]))
    if warned:
        fail("%s: the report warns: %s" % (mode, warned))
    print("ok: %s: the child ended by %s, %s blocks in use, %s inherited%s"
          % (mode, child["exit"]["how"], in_use, s["inherited_blocks"],
             ", %d dropped" % s["dropped_events"] if mode == "kill" else ""))


def main():
    heapledger, prog = sys.argv[1], sys.argv[2]
    with tempfile.TemporaryDirectory() as tmp:
        for mode in EXPECT:
            check(heapledger, prog, mode, tmp)
    print("PASS")


if __name__ == "__main__":
    main()
