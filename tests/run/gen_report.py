#!/usr/bin/env python3
"""tests/run/gen_report.py: writes a large JSON report (format heapledger-report,
version 1, laid out as `run --json` writes it) for import tests and benchmarks.

RECORDS loss records, PER_PROCESS to a process (the last may have fewer),
each with its own five-frame stack (distinct addresses and fingerprint), so
that a record is about 1.2 KB as `run --json` writes one. The document is
written as it is made, so the generator holds one process at a time.

usage: gen_report.py RECORDS PER_PROCESS OUT [UUID]
"""
import json
import sys


def frame(function, module, address, line, offset):
    return {"function": function, "file": "../src/%s.c" % module.rsplit("/", 1)[-1],
            "line": line, "module": module, "address": "0x%x" % address,
            "offset": offset, "inlined": False}


def leak(i):
    base = 0x555500000000 + i * 0x100
    return {"kind": "definitely", "bytes": 24 + i % 1000, "blocks": 1, "indirect_bytes": 0,
            "inherited_blocks": 0, "suppressed": False, "suppression": None,
            "fingerprint": "%016x" % (0x9e3779b97f4a7c15 * (i + 1) % (1 << 64)),
            "stack": [frame("site_%d" % i, "/opt/app/bin/app", base + 0x11, 10 + i % 500, 0x1011),
                      frame("caller_%d" % (i % 97), "/opt/app/bin/app", base + 0x22, 40, 0x1022),
                      frame("main", "/opt/app/bin/app", base + 0x33, 90, 0x1033),
                      frame("__libc_start_call_main", "/lib/x86_64-linux-gnu/libc.so.6",
                            0x7f0000027000 + 0x24a, 58, 0x2724a),
                      frame("_start", "/opt/app/bin/app", 0x555500000ab1, None, 0xab1)],
            "stack_truncated": False}


def process(serial, first, count):
    n = sum(24 + i % 1000 for i in range(first, first + count))
    return {"pid": 1000 + serial, "ppid": 999 + serial if serial else 1, "exe": "/opt/app/bin/app",
            "argv": ["/opt/app/bin/app", "--case", str(serial)], "exe_bytes": None,
            "argv_bytes": None, "test": None, "origin": "fork" if serial else "start",
            "started_ns": 1700000000000000000 + serial, "ended_ns": 1700000001000000000 + serial,
            "exit": {"how": "exit", "status": 0, "fatal": None, "exit_record": True},
            "stream_incomplete": None,
            "summary": {"in_use_bytes": n, "in_use_blocks": count, "allocs": count, "frees": 0,
                        "bytes_allocated": n, "peak_bytes": n, "inherited_bytes": 0,
                        "inherited_blocks": 0, "dropped_events": 0, "dropped_stacks": 0,
                        "unmatched_frees": 0, "unfreed_superseded": 0, "live_mismatch": 0,
                        "scanned": True},
            "scan": {"scanned": True, "not_scanned": None, "all_threads_stopped": True,
                     "unstopped_tids": []},
            "checks": [], "leaks": [leak(i) for i in range(first, first + count)],
            "errors": [], "timeline": []}


def main():
    records, per_process, out = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    uuid = sys.argv[4] if len(sys.argv) > 4 else "5e1f0000-0000-4000-8000-%012d" % records
    run = {"id": None, "mode": "run", "argv": ["/opt/app/bin/app"], "argv_bytes": None,
           "started_ns": 1700000000000000000, "ended_ns": 1700000002000000000, "exit_code": 0,
           "uuid": uuid, "git_commit": None, "git_branch": None, "labels": {},
           "unreported": None, "cwd": "/opt/app", "hostname": "ci"}
    with open(out, "w") as f:
        f.write('{\n "format": "heapledger-report",\n "version": 1,\n "run": %s,\n'
                ' "processes": [' % json.dumps(run, indent=1))
        for serial, first in enumerate(range(0, records, per_process)):
            f.write(",\n" if serial else "\n")
            f.write(json.dumps(process(serial, first, min(per_process, records - first)),
                               indent=1))
        f.write("\n ]\n}\n")


main()
