#!/usr/bin/env python3
"""tests/run/check_dropped.py HEAPLEDGER PROG [ARG...]: events the hook drops
while connected (a vfork child's, past its parent's full buffer; ARG defaults
to vfork-alloc) reach the report as a count: JSON dropped_events > 0 and the
text warns."""
import json
import os
import subprocess
import sys
import tempfile

heapledger, prog = sys.argv[1:3]
args = sys.argv[3:] or ["vfork-alloc"]
with tempfile.TemporaryDirectory() as tmp:
    out = os.path.join(tmp, "run.json")
    # Every event sent (tally=0): a full buffer is the events transport's
    # limit (counted in the hook, a vfork child's work is counted with its
    # parent's, on whose heap it runs).
    env = dict(os.environ, HEAPLEDGER_OPTIONS="tally=0")
    p = subprocess.run([heapledger, "run", "--no-db", "--json", out, "--", prog] + args,
                       capture_output=True, text=True, timeout=120, env=env)
    if p.returncode != 0:
        print("exit %d\n%s" % (p.returncode, p.stderr[-3000:]))
        sys.exit(1)
    with open(out) as f:
        doc = json.load(f)
    procs = doc["processes"]
    dropped = sum(proc["summary"].get("dropped_events", 0) for proc in procs)
    if len(procs) != 1 or dropped == 0 or "dropped" not in p.stderr:
        print("want one process with dropped events; got %d processes, %d dropped\n%s"
              % (len(procs), dropped, p.stderr[-3000:]))
        sys.exit(1)
