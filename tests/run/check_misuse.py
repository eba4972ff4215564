#!/usr/bin/env python3
"""tests/run/check_misuse.py: each heap misuse error end to end, from the hook
to the text report in valgrind's words, the --json document, the database
(`errors` table, and `heapledger report` reading it back), and the
standalone hook's output in $HEAPLEDGER_LOG; after each error the program's
stress run must pass (on_error=continue keeps the allocator usable). Then
on_error=abort: the report is complete and the process dies of SIGABRT.
The checks=full kinds (overflow, use after free, a double free after the
size was handed out again) run with `--checks full --quarantine 1` (and the
same HEAPLEDGER_OPTIONS standalone) and must show the free stack too; so
must a double free in the default mode under `heapledger run` (the caller
of the first free).

Usage: check_misuse.py HEAPLEDGER LIBHEAPLEDGER MISUSE_PROGRAM
"""
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile

INVALID = "Invalid free() / delete / delete[] / realloc()"
MISMATCH = "Mismatched free() / delete / delete []"
OVERRUN = "Heap block overrun: the guard bytes after a block were overwritten"
FREED_WRITE = "Write to freed memory: a block in the quarantine was changed after its free"

# Modes run with the checks that cost memory, and how they are asked for.
FULL = {"overflow", "use_after_free", "double_reused"}
FULL_FLAGS = ["--checks", "full", "--quarantine", "1"]
FULL_OPTIONS = "checks=full:quarantine=1"

# mode: kind, call, heading, address text, allocating function, detail
# (size_mismatch: the size delete was given; overflow: bytes past the end)
CASES = {
    "interior": ("interior_free", "free", INVALID,
                 "is 48 bytes inside a block of size 200 alloc'd", "make_block", None),
    "misaligned": ("interior_free", "free", INVALID,
                   "is 3 bytes inside a block of size 200 alloc'd", "make_block", None),
    "double": ("double_free", "free", INVALID,
               "is 0 bytes inside a block of size 200 free'd", "make_block", None),
    "foreign": ("invalid_free", "free", INVALID,
                "is not stack'd, malloc'd or (recently) free'd", None, None),
    "realloc_freed": ("double_free", "realloc", INVALID,
                      "is 0 bytes inside a block of size 200 free'd", "make_block", None),
    "usable_size": ("interior_free", "malloc_usable_size", "Invalid malloc_usable_size()",
                    "is 32 bytes inside a block of size 200 alloc'd", "make_block", None),
    "array_delete": ("mismatch", "delete", MISMATCH,
                     "is 0 bytes inside a block of size 200 alloc'd", "make_array", None),
    "malloc_delete": ("mismatch", "delete[]", MISMATCH,
                      "is 0 bytes inside a block of size 200 alloc'd", "make_block", None),
    "aligned_delete": ("mismatch", "delete", MISMATCH,
                       "is 0 bytes inside a block of size 200 alloc'd", "make_aligned", None),
    "malloc_sized_delete": ("mismatch", "delete", MISMATCH,
                            "is 0 bytes inside a block of size 200 alloc'd", "make_block", None),
    "size_mismatch": ("size_mismatch", "delete", "Mismatched new/delete size value: 100",
                      "is 0 bytes inside a block of size 200 alloc'd", "make_object", 100),
    "overflow": ("overflow", "free", OVERRUN + " (found at free)",
                 "is 0 bytes after a block of size 200 alloc'd", "make_block", 1),
    "use_after_free": ("use_after_free", "free", FREED_WRITE + " (found at free)",
                       "is 8 bytes inside a block of size 200 free'd", "make_block", None),
    "double_reused": ("double_free", "free", INVALID,
                      "is 0 bytes inside a block of size 200 free'd", "make_block", None),
}
DETAIL_KEY = {"size_mismatch": "delete_size", "overflow": "overrun_bytes"}


def offset_of(address_text):
    """The error address minus the block's start, from the address text."""
    n = int(re.search(r"is (\d+) bytes", address_text).group(1))
    return n + 200 if "after a block" in address_text else n


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def lines_of(text):
    return [re.sub(r"^==\d+== ?", "", l) for l in text.splitlines() if l.startswith("==")]


def run(cmd, env=None, timeout=120):
    r = subprocess.run(cmd, stdin=subprocess.DEVNULL, capture_output=True, text=True,
                       timeout=timeout, env=env)
    return r


def fn(frames, i=0):
    return frames[i]["function"] if len(frames) > i and frames[i]["function"] else ""


def check_text(mode, text, case, reporter=False):
    """reporter: the text comes from `heapledger run` or a stored run, where
    the default mode keeps the caller of free for a double free too."""
    kind, call, heading, address, allocator, _ = case
    lines = lines_of(text)
    if heading not in lines:
        fail(f"{mode}: no '{heading}' line in the report:\n{text}")
    at = lines.index(heading)
    if not lines[at + 1].startswith("   at ") or "offend" not in lines[at + 1]:
        fail(f"{mode}: the error's stack does not start in offend: {lines[at + 1]!r}")
    addr = [l for l in lines[at:] if l.startswith(" Address 0x")]
    if not addr or not addr[0].endswith(address):
        fail(f"{mode}: expected '{address}', got {addr[:1]}")
    if allocator:
        after = lines[lines.index(addr[0]) + 1:]
        if kind == "overflow":
            reach = f" The damage reaches {case[5]} bytes past the end of the block"
            if after[0] != reach:
                fail(f"{mode}: expected {reach!r} after the address, got {after[0]!r}")
            after = after[1:]
        if "free'd" in address and (mode in FULL or reporter):
            if not after[0].startswith("   at ") or "release_block" not in after[0]:
                fail(f"{mode}: free stack does not start in release_block: {after[0]!r}")
            while after[0].startswith(("   at ", "   by ", "   ... (stack truncated")):
                after = after[1:]
        if "free'd" in address:
            if after[0] != " Block was alloc'd at":
                fail(f"{mode}: no 'Block was alloc'd at' after {addr[0]!r}")
            after = after[1:]
        if not after[0].startswith("   at ") or allocator not in after[0]:
            fail(f"{mode}: alloc stack does not start in {allocator}: {after[0]!r}")
    if "ERROR SUMMARY: 1 errors from 1 contexts" not in lines:
        fail(f"{mode}: no 'ERROR SUMMARY: 1 errors from 1 contexts'")


def check_json(mode, doc, case, where):
    kind, call, _, address, allocator, detail = case
    errors = doc["processes"][0]["errors"]
    if len(errors) != 1:
        fail(f"{mode} ({where}): {len(errors)} errors, expected 1")
    e = errors[0]
    if e["kind"] != kind or e["call"] != call:
        fail(f"{mode} ({where}): kind/call {e['kind']}/{e['call']}, expected {kind}/{call}")
    if not fn(e["stack"]).startswith("offend"):
        fail(f"{mode} ({where}): stack starts in {fn(e['stack'])!r}")
    if allocator:
        if e["block_size"] != 200 or not fn(e["alloc_stack"]).startswith(allocator):
            fail(f"{mode} ({where}): block {e['block_size']} from {fn(e['alloc_stack'])!r}")
        offset = offset_of(address)
        if int(e["address"], 16) - int(e["block_address"], 16) != offset:
            fail(f"{mode} ({where}): address {e['address']} block {e['block_address']}")
    elif e["block_address"] is not None:
        fail(f"{mode} ({where}): a block for a foreign pointer")
    if detail is not None and e.get(DETAIL_KEY[kind]) != detail:
        fail(f"{mode} ({where}): {DETAIL_KEY[kind]} {e.get(DETAIL_KEY[kind])}, expected {detail}")
    if address.endswith("free'd") and "inside a block" in address and \
            not fn(e["free_stack"]).startswith("release_block"):
        fail(f"{mode} ({where}): free stack starts in {fn(e['free_stack'])!r}")


def check_db(mode, db, case):
    kind, call, _, _, allocator, delete_size = case
    con = sqlite3.connect(db)
    rows = con.execute("SELECT kind, call, block_size, detail FROM errors").fetchall()
    con.close()
    want = (kind, call, 200 if allocator else None, delete_size or 0)
    if rows != [want]:
        fail(f"{mode}: errors table {rows}, expected [{want}]")


def check_mode(hl, prog, mode, case, tmp):
    db = os.path.join(tmp, mode + ".db")
    jpath = os.path.join(tmp, mode + ".json")
    flags = FULL_FLAGS if mode in FULL else []
    r = run([hl, "run", *flags, "--db", db, "--json", jpath, "--", prog, mode])
    if r.returncode != 0 or "stress ok" not in r.stdout:
        fail(f"{mode}: exit {r.returncode}, stdout {r.stdout!r}\n{r.stderr}")
    check_text(mode, r.stderr + r.stdout, case, reporter=True)
    with open(jpath) as f:
        check_json(mode, json.load(f), case, "run --json")
    check_db(mode, db, case)
    rep = run([hl, "report", "--db", db, "--format", "json"])
    check_json(mode, json.loads(rep.stdout), case, "report from the database")
    rep = run([hl, "report", "--db", db])
    check_text(mode, rep.stdout, case, reporter=True)


def check_standalone(lib, prog, mode, case, tmp):
    log = os.path.join(tmp, mode + ".log")
    env = dict(os.environ, LD_PRELOAD=lib, HEAPLEDGER_LOG=log)
    env.pop("HEAPLEDGER_SOCKET", None)
    if mode in FULL:
        env["HEAPLEDGER_OPTIONS"] = FULL_OPTIONS
    r = run([prog, mode], env=env)
    if r.returncode != 0 or "stress ok" not in r.stdout:
        fail(f"standalone {mode}: exit {r.returncode}")
    if "==" in r.stderr:
        fail(f"standalone {mode}: report on stderr although HEAPLEDGER_LOG is set")
    with open(log) as f:
        text = f.read()
    check_text(mode, text, case)


def check_abort(hl, lib, prog, tmp):
    db = os.path.join(tmp, "abort.db")
    r = run([hl, "run", "--on-error", "abort", "--db", db, "--", prog, "double"])
    if r.returncode != 128 + signal.SIGABRT:
        fail(f"run --on-error abort: exit {r.returncode}, expected {128 + signal.SIGABRT}")
    if "stress" in r.stdout:
        fail("on_error=abort: the program went on after the error")
    check_text("abort", r.stderr + r.stdout, CASES["double"], reporter=True)
    if "abort" not in (r.stderr + r.stdout):
        fail("on_error=abort: the report does not say the process aborted")
    log = os.path.join(tmp, "abort.log")
    env = dict(os.environ, LD_PRELOAD=lib, HEAPLEDGER_LOG=log,
               HEAPLEDGER_OPTIONS="on_error=abort")
    env.pop("HEAPLEDGER_SOCKET", None)
    r = run([prog, "double"], env=env)
    if r.returncode != -signal.SIGABRT:
        fail(f"on_error=abort standalone: exit {r.returncode}, expected SIGABRT")
    with open(log) as f:
        text = f.read()
    check_text("abort standalone", text, CASES["double"])
    if "HEAP SUMMARY:" not in text:
        fail("on_error=abort standalone: no summary before dying")

def check_abort_full(hl, prog, tmp):
    """checks=full under on_error=abort: an overflow found by free aborts the
    program after the report, which is complete (the error and the leak
    summary), and it dies of SIGABRT."""
    db = os.path.join(tmp, "abort_full.db")
    r = run([hl, "run", *FULL_FLAGS, "--on-error", "abort", "--db", db, "--", prog, "overflow"])
    if r.returncode != 128 + signal.SIGABRT:
        fail(f"run --checks full --on-error abort: exit {r.returncode}")
    if "stress" in r.stdout:
        fail("checks=full, on_error=abort: the program went on after the overflow")
    check_text("abort overflow", r.stderr + r.stdout, CASES["overflow"])
    if "HEAP SUMMARY:" not in r.stderr + r.stdout:
        fail("checks=full, on_error=abort: no summary before dying")


def main():
    hl, lib, prog = sys.argv[1:4]
    only = sys.argv[4:]
    with tempfile.TemporaryDirectory() as tmp:
        for mode, case in CASES.items():
            if only and mode not in only:
                continue
            check_mode(hl, prog, mode, case, tmp)
            check_standalone(lib, prog, mode, case, tmp)
            print(f"ok {mode}")
        if not only or "abort" in only:
            check_abort(hl, lib, prog, tmp)
            check_abort_full(hl, prog, tmp)
            print("ok abort")


if __name__ == "__main__":
    main()
