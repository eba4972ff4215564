#!/usr/bin/env python3
"""tests/run/check_run.py: runs `heapledger run` on a program and checks its
report three ways: the text on stderr, the --json file, and `heapledger
report --format json` read back from the database (which must equal the
--json file).

Usage: check_run.py --heapledger BIN --source FILE [--expect-exit N]
         [--leak SPEC]... [--no-leaks SEL] [--ended SEL:HOW[:N]]
         [--processes N] [--records SEL:N] [--repeated SPEC:MIN]
         [--allow-warnings] -- prog args...
SEL picks a process: start, fork, exec (first with that origin), or an
index; for --leak and --ended, every-fork picks every forked process. A leak SPEC is "SEL:function:MARKER:bytes:blocks"; MARKER is a
comment (e.g. LEAK-DIRECT) on the source line the leak's stack must name.
--records: the process has exactly N leak records. --repeated
"SEL:function:MARKER:bytes:blocks:MIN": that record's stack names the
function at the marker's line at least MIN times (deep recursion).
Unless --allow-warnings, any warning in the report (dropped events, stream
inconsistencies) and any non-zero consistency counter in the JSON fails.
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


def pick_all(procs, sel):
    if sel == "every-fork":
        found = [p for p in procs if p["origin"] == "fork"]
        if not found:
            fail("no forked process")
        return found
    return [pick(procs, sel)]


def frame_matches(fr, func, file, line):
    return (fr.get("function") == func and fr.get("file") is not None
            and os.path.basename(fr["file"]) == file and fr.get("line") == line)


def check_json_leak(proc, func, file, line, nbytes, blocks):
    # The leaking function is the innermost frame that is not inside the
    # allocator; allow a few frames of libc wrappers (strdup...).
    if find_json_leak(proc, func, file, line, nbytes, blocks) is not None:
        return
    fail("JSON: no leak of %d bytes in %d blocks at %s (%s:%d) in pid %d; leaks: %s"
         % (nbytes, blocks, func, file, line, proc["pid"],
            json.dumps(proc["leaks"], indent=1)[:3000]))


# Every process of the report, in report order (set by main): an exec'd
# image has the pid of the image it replaced, so the text of one process is
# told apart by which of that pid's headers starts it.
PROCS = []


def text_records(stderr, proc):
    """Leak records of one process: (bytes, blocks, [frame lines])."""
    records, cur = [], None
    pid = proc["pid"]
    same_pid = [p for p in PROCS if p["pid"] == pid]
    image = next((i for i, p in enumerate(same_pid) if p is proc), 0)
    prefix = "==%d== " % pid
    header = prefix + "heapledger: process %d (" % pid
    head = re.compile(r"([\d,]+) (?:\([\d,]+ direct, [\d,]+ indirect\) )?bytes in ([\d,]+) "
                      r"blocks are .*(?:lost|reachable) in loss record")
    seen = -1
    for line in stderr.splitlines():
        if line.startswith(header):
            seen += 1
        if not line.startswith(prefix) or seen != image:
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


def check_text_leak(stderr, proc, func, file, line, nbytes, blocks):
    pid = proc["pid"]
    want = "%s (%s:%d)" % (func, file, line)
    for b, n, frames in text_records(stderr, proc):
        if b == nbytes and n == blocks and any(want in f for f in frames[:6]):
            return
    fail("text: no record '%d bytes in %d blocks' with frame '%s' for pid %d"
         % (nbytes, blocks, want, pid))


def find_json_leak(proc, func, file, line, nbytes, blocks):
    for leak in proc["leaks"]:
        if leak["bytes"] == nbytes and leak["blocks"] == blocks and any(
                frame_matches(fr, func, file, line) for fr in leak["stack"][:6]):
            return leak
    return None


def check_repeated(stderr, proc, spec, sources):
    """The record's stack names func at the marker's line at least MIN times,
    in JSON and in text: the innermost frames of a deep stack were kept."""
    sel, rest = spec.split(":", 1)
    func, marker, nbytes, blocks, least = rest.rsplit(":", 4)
    file, line = marker_line(sources, marker)
    nbytes, blocks, least = int(nbytes), int(blocks), int(least)
    leak = find_json_leak(proc, func, file, line, nbytes, blocks)
    if leak is None:
        fail("JSON: no %d-byte record in %s for --repeated" % (nbytes, func))
    count = sum(frame_matches(fr, func, file, line) for fr in leak["stack"])
    if count < least:
        fail("JSON: %s (%s:%d) appears %d times in the stack, expected >= %d"
             % (func, file, line, count, least))
    want = "%s (%s:%d)" % (func, file, line)
    for b, n, frames in text_records(stderr, proc):
        if b == nbytes and n == blocks and sum(want in f for f in frames) >= least:
            return
    fail("text: no %d-byte record naming '%s' %d times" % (nbytes, want, least))


def check_records(stderr, proc, count):
    if len(proc["leaks"]) != count:
        fail("JSON: pid %d has %d leak records, expected %d"
             % (proc["pid"], len(proc["leaks"]), count))
    got = len(text_records(stderr, proc))
    if got != count:
        fail("text: pid %d has %d loss records, expected %d" % (proc["pid"], got, count))


CONSISTENCY = ("dropped_events", "unmatched_frees", "unfreed_superseded", "live_mismatch")


def check_no_hook_frames(procs):
    """The hook's own frames (its interposed dlopen, exec, thread start)
    never appear in a program's stack."""
    for proc in procs:
        for leak in proc["leaks"]:
            for fr in leak["stack"]:
                if os.path.basename(fr.get("module") or "").startswith("libheapledger.so"):
                    fail("pid %d: a stack shows the hook's own frame %s" % (proc["pid"], fr))


def check_no_warnings(stderr, procs):
    """The stream of a real program must reconcile exactly: no dropped
    events, no free without its allocation, no disagreement with the hook's
    live set at exit."""
    for line in stderr.splitlines():
        if CUT_WARNING in line:
            continue  # expected where the stream was cut (check_stream_cut)
        if "warning" in line or "heapledger: connection" in line:
            fail("report has a warning: " + line)
    for proc in procs:
        bad = {k: proc["summary"][k] for k in CONSISTENCY if proc["summary"][k]}
        if bad:
            fail("pid %d: inconsistent stream %s" % (proc["pid"], bad))


CUT_WARNING = "warning: the event stream ended without its exit record"


def check_stream_cut(stderr, procs):
    """A process whose stream ended without its EXIT record (killed, or the
    connection lost; not an image replaced by exec) is flagged in the JSON
    (read back from the database too) and warned about in the text, with
    what may be missing; no other process is."""
    for proc in procs:
        # A signal the hook saw (its handler ran the exit scan) leaves EXIT.
        cut = proc["exit"]["how"] == "unknown" or (proc["exit"]["how"] == "signal"
                                                   and not proc["scan"]["scanned"])
        if proc["exit"]["exit_record"] == cut:
            fail("pid %d ended by %s: exit_record %s" % (proc["pid"], proc["exit"]["how"],
                                                          proc["exit"]["exit_record"]))
        if cut != (proc["stream_incomplete"] is not None):
            fail("pid %d: stream_incomplete %r" % (proc["pid"], proc["stream_incomplete"]))
        head = "==%d== %s" % (proc["pid"], CUT_WARNING)
        warned = [l for l in stderr.splitlines() if l.startswith(head)]
        if cut:
            rec = proc["exit"]["recovered_events"]  # None: no shared buffers
            said = ("events the hook had not sent yet are missing" if rec is None else
                    "%d unsent events were read from its shared event buffers" % rec)
            if not any(said in l for l in warned):
                fail("text: no warning that pid %d's stream ended without its exit record"
                     " saying '%s'" % (proc["pid"], said))
        if not cut and warned and not any(p["pid"] == proc["pid"] and p is not proc and
                                          p["stream_incomplete"] for p in procs):
            fail("text: pid %d warned of a cut stream: %s" % (proc["pid"], warned))


# How the text report names each ending (report_text.c describe_end).
ENDED_TEXT = {
    "exit": "exited with status {n}",
    "_exit": "exited with status {n} (_exit",
    "abort": "aborted",
    "signal": "killed by signal {n} ",
    "exec": "replaced by exec",
}


def check_ended(stderr, procs, spec):
    parts = spec.split(":")
    for proc in pick_all(procs, parts[0]):
        check_ended_one(stderr, proc, parts)
        if parts[1] == "exec":
            check_replaced(stderr, procs, proc)


def check_replaced(stderr, procs, proc):
    """An image replaced by exec names its successor and has no leaks."""
    later = procs[procs.index(proc) + 1:]
    succ = next((p for p in later if p["pid"] == proc["pid"] and p["origin"] == "exec"), None)
    if succ is None:
        fail("pid %d: no exec'd successor reported" % proc["pid"])
    if proc["exit"].get("image") != succ["exe"]:
        fail("pid %d: exit.image %r, expected %r" % (proc["pid"], proc["exit"].get("image"),
                                                     succ["exe"]))
    if proc["leaks"]:
        fail("pid %d was replaced by exec but has leak records" % proc["pid"])
    want = "replaced by exec of %s" % succ["exe"]
    head = "==%d== heapledger: process %d (" % (proc["pid"], proc["pid"])
    if not any(l.startswith(head) and l.endswith(want) for l in stderr.splitlines()):
        fail("text: pid %d's header does not say '%s'" % (proc["pid"], want))


def check_ended_one(stderr, proc, parts):
    if proc is None or proc["exit"]["how"] != parts[1]:
        fail("process %s did not end by %s: %s" % (parts[0], parts[1], proc and proc["exit"]))
    if len(parts) > 2:
        key = "signal" if parts[1] == "signal" else "status"
        if proc["exit"].get(key) != int(parts[2]):
            fail("process %s: %s %s, expected %s" % (parts[0], key,
                                                     proc["exit"].get(key), parts[2]))
    head = "==%d== heapledger: process %d (" % (proc["pid"], proc["pid"])
    want = ENDED_TEXT[parts[1]].format(n=parts[2] if len(parts) > 2 else "")
    if not any(l.startswith(head) and ": " + want in l for l in stderr.splitlines()):
        fail("text: pid %d's header does not say '%s'" % (proc["pid"], want))


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
    ap.add_argument("--records", action="append", default=[])
    ap.add_argument("--repeated", action="append", default=[])
    ap.add_argument("--totals", action="append", default=[],
                    help="SEL:ALLOCS:FREES:BYTES, the process's total heap usage")
    ap.add_argument("--allow-warnings", action="store_true")
    ap.add_argument("--run-option", action="append", default=[],
                    help="an option for heapledger run (--run-option=--x=y)")
    ap.add_argument("cmd", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd and a.cmd[0] == "--" else a.cmd

    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "h.db")
        js = os.path.join(tmp, "r.json")
        run = subprocess.run([a.heapledger, "run", "--db", db, "--json", js] + a.run_option +
                             ["--"] + cmd,
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
        PROCS.extend(procs)
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
        file, line = marker_line(a.source, marker)
        for proc in pick_all(procs, sel):
            if proc is None:
                fail("no process %s" % sel)
            check_json_leak(proc, func, file, line, int(nbytes), int(blocks))
            check_text_leak(run.stderr, proc, func, file, line, int(nbytes),
                            int(blocks))
    for sel in a.no_leaks:
        proc = pick(procs, sel)
        if proc is None:
            fail("no process %s" % sel)
        if proc["leaks"] or proc["summary"]["in_use_blocks"]:
            fail("pid %d has leaks: %s" % (proc["pid"], proc["leaks"]))
        if "==%d== All heap blocks were freed" % proc["pid"] not in run.stderr:
            fail("text does not say all blocks were freed for pid %d" % proc["pid"])
    for spec in a.ended:
        check_ended(run.stderr, procs, spec)
    for spec in a.records:
        sel, count = spec.rsplit(":", 1)
        proc = pick(procs, sel)
        if proc is None:
            fail("no process %s" % sel)
        check_records(run.stderr, proc, int(count))
    for spec in a.repeated:
        proc = pick(procs, spec.split(":", 1)[0])
        if proc is None:
            fail("no process in %s" % spec)
        check_repeated(run.stderr, proc, spec, a.source)
    for spec in a.totals:
        sel, allocs, frees, nbytes = spec.split(":")
        proc = pick(procs, sel)
        got = proc and [proc["summary"][k] for k in ("allocs", "frees", "bytes_allocated")]
        if got != [int(allocs), int(frees), int(nbytes)]:
            fail("process %s: allocs, frees, bytes %s, expected %s" %
                 (sel, got, [allocs, frees, nbytes]))
    check_no_hook_frames(procs)
    check_stream_cut(run.stderr, procs)
    if not a.allow_warnings:
        check_no_warnings(run.stderr, procs)
    print("PASS")


if __name__ == "__main__":
    main()
