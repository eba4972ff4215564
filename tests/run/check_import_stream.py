#!/usr/bin/env python3
"""tests/run/check_import_stream.py: `heapledger import` of a JSON report holds
one process at a time, not the document, and says when memory ran out.

A report of RECORDS loss records, PER_PROCESS to a process (gen_report.py,
~26 MB), is imported; heapledger's peak RSS is read from wait4() of its
process (the kernel's figure, no timing involved) and must stay under
LIMIT_MIB. Reading the whole document took ~8 times its size (~220 MB
here); one process at a time takes ~20 MB. Every record must be stored.

Then a report with one process too large to parse under an address-space
limit (RLIMIT_AS) is refused as out of memory, naming the file and the byte
where that process starts, with status 125 and nothing stored (skipped
under a sanitizer, whose runtime needs the address space).

usage: check_import_stream.py HEAPLEDGER GEN_REPORT [--sanitized]
"""
import os
import resource
import subprocess
import sys
import tempfile

RECORDS, PER_PROCESS = 20000, 100
LIMIT_MIB = 80
AS_LIMIT_MIB = 250


def fail(msg):
    sys.exit("check_import_stream: " + msg)


def counts(db):
    r = subprocess.run(["sqlite3", db, "SELECT (SELECT count(*) FROM runs),"
                        " (SELECT count(*) FROM processes), (SELECT count(*) FROM leak_records)"],
                       capture_output=True, text=True, check=True)
    return r.stdout.strip()


def import_report(hl, db, report, tmp, preexec=None):
    """Runs the import; returns (status, stderr, peak RSS in KiB)."""
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":quarantine_size_mb=0"
    err = os.path.join(tmp, "err")
    with open(err, "w") as errf:
        proc = subprocess.Popen([hl, "import", "--db", db, report], stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=errf, env=env,
                                preexec_fn=preexec)
        _, status, usage = os.wait4(proc.pid, 0)
    with open(err, encoding="utf-8", errors="replace") as f:
        return os.waitstatus_to_exitcode(status), f.read(), usage.ru_maxrss


def main():
    hl, gen = sys.argv[1:3]
    sanitized = "--sanitized" in sys.argv[3:]
    tmp = tempfile.mkdtemp()
    report, db = os.path.join(tmp, "big.json"), os.path.join(tmp, "big.db")
    subprocess.run([sys.executable, gen, str(RECORDS), str(PER_PROCESS), report], check=True)
    size_mib = os.path.getsize(report) / 1048576
    code, stderr, maxrss = import_report(hl, db, report, tmp)
    limit = LIMIT_MIB * (2 if sanitized else 1)
    if code != 0:
        fail("import: status %d\n%s" % (code, stderr))
    if counts(db) != "1|%d|%d" % (RECORDS // PER_PROCESS, RECORDS):
        fail("stored %s, expected 1 run, %d processes, %d records"
             % (counts(db), RECORDS // PER_PROCESS, RECORDS))
    if maxrss > limit * 1024:
        fail("importing a %.0f MiB report took %d KiB of RSS, more than %d MiB"
             % (size_mib, maxrss, limit))
    print("ok: a %.0f MiB report (%d records) imported in %d KiB of RSS (limit %d MiB)"
          % (size_mib, RECORDS, maxrss, limit))
    if sanitized:
        print("PASS (the out-of-memory case is not run under a sanitizer)")
        return
    # One process of 8M array elements: ~16 MB of text, ~330 MB parsed.
    huge = os.path.join(tmp, "huge.json")
    head = ('{"format": "heapledger-report", "version": 1, "run": {"mode": "run", "argv": [],'
            ' "started_ns": 0, "ended_ns": 0, "exit_code": 0, "uuid": "u-huge",'
            ' "git_commit": null, "git_branch": null, "labels": {}}, "processes": [')
    with open(huge, "w") as f:
        f.write(head + '{"pid": 1, "pad": [' + "0," * 8000000 + "0]}]}")
    limit_bytes = AS_LIMIT_MIB << 20
    fresh = os.path.join(tmp, "fresh.db")
    code, stderr, _ = import_report(
        hl, fresh, huge, tmp,
        lambda: resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes)))
    want = "%s: out of memory at byte %d, in processes[0]" % (huge, len(head))
    if code != 125 or want not in stderr or "nothing of it was imported" not in stderr:
        fail("a process too large for memory: status %d, expected 125 and %r:\n%s"
             % (code, want, stderr))
    if os.path.exists(fresh) and counts(fresh) != "0|0|0":
        fail("out of memory left rows: " + counts(fresh))
    print("ok: a process too large for the memory left is refused as out of memory, by byte")
    print("PASS")


main()
