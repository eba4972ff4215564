#!/usr/bin/env python3
"""tests/run/check_run.py: runs `heapledger run` on a program and checks its
report three ways: the text on stderr, the --json file, and `heapledger
report --format json` read back from the database (which must equal the
--json file).

Usage: check_run.py --heapledger BIN --source FILE [--expect-exit N]
         [--leak SPEC]... [--no-leaks SEL] [--ended SEL:HOW[:N]]
         [--processes N] -- prog args...
SEL picks a process: start, fork, exec (first with that origin), or an
index. A leak SPEC is "SEL:function:MARKER:bytes:blocks"; MARKER is a
comment (e.g. LEAK-DIRECT) on the source line the leak's stack must name.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import tempfile



def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def marker_line(sources, marker):
    for src in sources:
        with open(src, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if marker in line:
                    return os.path.basename(src), n
    fail("marker %s not found in %s" % (marker, sources))


def pick(procs, sel):
    if sel.isdigit():
        return procs[int(sel)] if int(sel) < len(procs) else None
    for p in procs:
        if p["origin"] == sel:
            return p
    return None


def frame_matches(fr, func, file, line):
    return (fr.get("function") == func and fr.get("file") is not None
            and os.path.basename(fr["file"]) == file and fr.get("line") == line)


def check_json_leak(proc, func, file, line, nbytes, blocks):
    for leak in proc["leaks"]:
        if leak["bytes"] != nbytes or leak["blocks"] != blocks:
            continue
        # The leaking function is the innermost frame that is not inside
        # the allocator; allow a few frames of libc wrappers (strdup...).
        if any(frame_matches(fr, func, file, line) for fr in leak["stack"][:6]):
            return
    fail("JSON: no leak of %d bytes in %d blocks at %s (%s:%d) in pid %d; leaks: %s"
         % (nbytes, blocks, func, file, line, proc["pid"],
            json.dumps(proc["leaks"], indent=1)[:3000]))


def text_records(stderr, pid):
    """Leak records of one pid: (bytes, blocks, [frame lines])."""
    records, cur = [], None
    prefix = "==%d== " % pid
    head = re.compile(r"([\d,]+) bytes in ([\d,]+) blocks are .*lost in loss record")
    for line in stderr.splitlines():
        if not line.startswith(prefix):
            continue
        body = line[len(prefix):]
        m = head.match(body)
        if m:
            cur = (int(m.group(1).replace(",", "")), int(m.group(2).replace(",", "")), [])
            records.append(cur)
        elif cur and re.match(r"\s+(at|by) 0x", body):
            cur[2].append(body)
        else:
            cur = None
    return records


def check_text_leak(stderr, pid, func, file, line, nbytes, blocks):
    want = "%s (%s:%d)" % (func, file, line)
    for b, n, frames in text_records(stderr, pid):
        if b == nbytes and n == blocks and any(want in f for f in frames[:6]):
            return
    fail("text: no record '%d bytes in %d blocks' with frame '%s' for pid %d"
         % (nbytes, blocks, want, pid))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--heapledger", required=True)
    ap.add_argument("--source", action="append", default=[])
    ap.add_argument("--expect-exit", type=int, default=0)
    ap.add_argument("--leak", action="append", default=[])
    ap.add_argument("--no-leaks", action="append", default=[])
    ap.add_argument("--ended", action="append", default=[])
    ap.add_argument("--processes", type=int)
    ap.add_argument("--stdout", help="expected stdout of the program")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd

    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "h.db")
        js = os.path.join(tmp, "r.json")
        run = subprocess.run([a.heapledger, "run", "--db", db, "--json", js, "--"] + cmd,
                             stdin=subprocess.DEVNULL, capture_output=True, text=True,
                             timeout=120)
        sys.stdout.write(run.stderr[-6000:])
        if run.returncode != a.expect_exit:
            fail("exit status %d, expected %d" % (run.returncode, a.expect_exit))
        if a.stdout is not None and run.stdout != a.stdout:
            fail("program stdout changed: %r" % run.stdout)
        with open(js, encoding="utf-8") as f:
            doc = json.load(f)
        if doc["format"] != "heapledger-report" or doc["version"] != 1:
            fail("bad JSON header")
        procs = doc["processes"]
        if a.processes is not None and len(procs) != a.processes:
            fail("%d processes reported, expected %d" % (len(procs), a.processes))
        stored = subprocess.run([a.heapledger, "report", "--db", db, "--format", "json"],
                                capture_output=True, text=True, timeout=60)
        if stored.returncode != 0:
            fail("heapledger report failed: " + stored.stderr)
        if json.loads(stored.stdout) != doc:
            fail("the stored report differs from the --json report")
        text = subprocess.run([a.heapledger, "report", "--db", db],
                              capture_output=True, text=True, timeout=60)
        if "HEAP SUMMARY" not in text.stdout:
            fail("heapledger report (text) printed no summary")

    for spec in a.leak:
        sel, rest = spec.split(":", 1)
        func, marker, nbytes, blocks = rest.rsplit(":", 3)
        proc = pick(procs, sel)
        if proc is None:
            fail("no process %s" % sel)
        file, line = marker_line(a.source, marker)
        check_json_leak(proc, func, file, line, int(nbytes), int(blocks))
        check_text_leak(run.stderr, proc["pid"], func, file, line, int(nbytes), int(blocks))
    for sel in a.no_leaks:
        proc = pick(procs, sel)
        if proc is None:
            fail("no process %s" % sel)
        if proc["leaks"] or proc["summary"]["in_use_blocks"]:
            fail("pid %d has leaks: %s" % (proc["pid"], proc["leaks"]))
        if "==%d== All heap blocks were freed" % proc["pid"] not in run.stderr:
            fail("text does not say all blocks were freed for pid %d" % proc["pid"])
    for spec in a.ended:
        parts = spec.split(":")
        proc = pick(procs, parts[0])
        if proc is None or proc["exit"]["how"] != parts[1]:
            fail("process %s did not end by %s: %s" % (parts[0], parts[1],
                                                       proc and proc["exit"]))
        if len(parts) > 2:
            key = "signal" if parts[1] == "signal" else "status"
            if proc["exit"].get(key) != int(parts[2]):
                fail("process %s: %s %s, expected %s" % (parts[0], key,
                                                         proc["exit"].get(key), parts[2]))
    print("PASS")


if __name__ == "__main__":
    main()
