#!/usr/bin/env python3
"""tests/ui/check_ui_http.py: `heapledger ui` over HTTP, against a database
of real runs: the JSON API answers from the database; every answer carries
the Content-Security-Policy; nothing outside the embedded assets is served
(path traversal tried every way); malformed requests get 400 and the server
keeps serving; other hosts and methods are refused; the database is opened
read-only (its bytes do not change, an older schema is refused and left as
it is); --listen on a non-loopback address warns.

Usage: check_ui_http.py HEAPLEDGER UI_LEAKER SOURCE
"""
import hashlib
import http.client
import json
import os
import shutil
import socket
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.parse

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
from ui_fixture import Server, count, fail, make_db, marker_line  # noqa: E402


def with_token(server, path):
    return path + ("&" if "?" in path else "?") + "token=" + server.token


def get(server, path, host=None, method="GET"):
    path = with_token(server, path)
    c = http.client.HTTPConnection("127.0.0.1", server.port, timeout=20)
    c.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    c.putheader("Host", host or "127.0.0.1:%d" % server.port)
    c.endheaders()
    r = c.getresponse()
    body = r.read()
    c.close()
    if "default-src 'none'" not in (r.getheader("Content-Security-Policy") or ""):
        fail("%s %s: no Content-Security-Policy" % (method, path))
    if r.getheader("X-Content-Type-Options") != "nosniff":
        fail("%s: no nosniff" % path)
    return r.status, body


def get_json(server, path):
    status, body = get(server, path)
    if status != 200:
        fail("%s: status %d: %s" % (path, status, body[:300]))
    return json.loads(body)


def raw(server, data):
    """Sends data and ends the request side; returns what came back."""
    s = socket.create_connection(("127.0.0.1", server.port), timeout=20)
    out = b""
    try:
        s.sendall(data)
        s.shutdown(socket.SHUT_WR)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except (ConnectionResetError, BrokenPipeError, OSError):
        pass  # the server may close first, which is an answer too
    s.close()
    return out


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check_api(sv, db, source, heapledger):
    runs = get_json(sv, "/api/runs")
    if runs["total"] != 3 or [r["id"] for r in runs["rows"]] != [3, 2, 1]:
        fail("runs: %s" % runs)
    r2 = [r for r in runs["rows"] if r["id"] == 2][0]
    if r2["program"] != "ui_leaker" or sum(r2["leaked"].values()) != 300 + 700 + 300 + 700 + 48:
        fail("run 2 row: %s" % r2)
    if get_json(sv, "/api/runs?filter=daemon")["total"] != 1:
        fail("filter by mode")
    if get_json(sv, "/api/runs?filter=%25")["total"] != 0:
        fail("a '%' filter is a literal '%', not a wildcard")
    run = get_json(sv, "/api/runs/2")
    procs = run["processes"]
    if len(procs) != 2 or procs[1]["origin"] != "fork" or procs[1]["parent_id"] != procs[0]["id"]:
        fail("process tree: %s" % procs)
    # The parent's leak, and the fork child's inherited copy of it.
    leaks = get_json(sv, "/api/runs/2/leaks?filter=leak_beta")
    if leaks["total"] != 2 or [r["bytes"] for r in leaks["rows"]] != [700, 700] or \
            sorted(r["inherited_blocks"] for r in leaks["rows"]) != [0, 1]:
        fail("leaks filtered by function: %s" % leaks)
    line = marker_line(source, "LEAK-BETA")
    row = leaks["rows"][0]
    if row["function"] != "leak_beta" or row["line"] != line:
        fail("leak site: %s (want leak_beta line %d)" % (row, line))
    stack = get_json(sv, "/api/stacks/%d" % row["stack_id"])
    if not any(f["function"] == "leak_beta" and f["line"] == line for f in stack["frames"]):
        fail("stack: %s" % stack)
    page = get_json(sv, "/api/runs/2/leaks?limit=1&offset=1")
    if len(page["rows"]) != 1 or page["total"] < 2:
        fail("paging: %s" % page)
    tl = get_json(sv, "/api/processes/%d/timeline" % procs[0]["id"])
    want = count(db, "SELECT count(*) FROM timeline WHERE process_id = ?", procs[0]["id"])
    if len(tl["time_ns"]) != want or want < 2 or tl["time_ns"] != sorted(tl["time_ns"]):
        fail("timeline: %d points, database %d" % (len(tl["time_ns"]), want))
    flame = get_json(sv, "/api/processes/%d/flame?kind=leaks" % procs[0]["id"])
    if flame["value"] < 1000:
        fail("leak flame graph: %s" % flame)
    every = get_json(sv, "/api/processes/%d/flame?kind=all" % procs[0]["id"])
    if every["value"] < 800 * 1024:
        fail("allocation flame graph total %d" % every["value"])
    diff = get_json(sv, "/api/diff?a=1&b=2")
    new = [s["function"] for s in diff["changes"] if s["change"] == "new"]
    if new != ["leak_beta"] or diff["fixed"] or diff["new"] != 1:
        fail("diff: %s" % diff)
    # One diff: the CLI's JSON is the API's answer, field for field.
    cli = json.loads(subprocess.run([heapledger, "diff", "--db", db, "--format", "json", "1", "2"],
                                    check=True, capture_output=True, text=True).stdout)
    if cli != diff:
        fail("heapledger diff and /api/diff differ:\n%s\n%s" % (cli, diff))
    found = get_json(sv, "/api/search?q=leak_alpha")
    if not found["rows"] or found["rows"][0]["function"] != "leak_alpha" or found["rows"][0]["runs"] != 3:
        fail("search: %s" % found)
    # By file and by module as well as by function.
    by_file = get_json(sv, "/api/search?q=" + os.path.basename(source))
    if "leak_beta" not in {r["function"] for r in by_file["rows"]} or \
            any(os.path.basename(source) not in (r["file"] or "") for r in by_file["rows"]):
        fail("search by file: %s" % by_file)
    by_module = get_json(sv, "/api/search?q=libc.so")
    if not by_module["rows"] or any("libc.so" not in (r["module"] or "") for r in by_module["rows"]):
        fail("search by module: %s" % by_module)
    hist = get_json(sv, "/api/history?program=ui_leaker")
    sites = {s["function"]: s for s in hist["sites"]}
    if [r["id"] for r in hist["runs"]] != [1, 2] or sites["leak_beta"]["first_run"] != 2 or \
            sites["leak_alpha"]["first_run"] != 1 or \
            [r["bytes"] for r in sites["leak_alpha"]["bytes_by_run"]] != [600, 600]:
        fail("history: %s" % hist)
    if get(sv, "/api/history")[0] != 400:
        fail("history without a program")
    if get_json(sv, "/api/runs/3")["mode"] != "daemon":
        fail("daemon run")


def check_refusals(sv):
    status, body = get(sv, "/")
    if status != 200 or b"app.js" not in body:
        fail("index: %d" % status)
    if get(sv, "/vendor/uPlot.iife.min.js")[0] != 200:
        fail("vendored asset")
    for path in ["/../../../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/vendor/../../meson.build",
                 "//etc/passwd", "/etc/passwd", "/..%2f..%2fetc%2fpasswd", "/api/../../etc/passwd",
                 "/assets.c", "/ui.h", "/app.js/../../server.c", "/vendor/"]:
        status, body = get(sv, path)
        if status not in (400, 404) or b"root:" in body or b"project(" in body:
            fail("%s: status %d, %r" % (path, status, body[:100]))
    for path in ["/api/runs/abc", "/api/runs/1x", "/api/runs?limit=-1", "/api/runs?limit=99999",
                 "/api/runs?offset=1e3", "/api/diff?a=1", "/api/diff?a=1&b=two", "/api/search",
                 "/api/processes/x/timeline", "/api/processes/1/flame?kind=bogus",
                 "/api/stacks/99999999999999999999999"]:
        status, body = get(sv, path)
        if status != 400 or "error" not in json.loads(body):
            fail("%s: want 400, got %d %r" % (path, status, body[:200]))
    for path in ["/api/runs/999", "/api/nothing"]:
        if get(sv, path)[0] != 404:
            fail("%s: want 404" % path)
    if get(sv, "/", host="evil.example:%d" % sv.port)[0] != 403:
        fail("a foreign Host header must be refused (DNS rebinding)")
    if get(sv, "/api/runs", method="POST")[0] != 405:
        fail("POST must be refused")
    # A request line or header the server cannot parse is a 400, or (for
    # lines that are not HTTP at all) the connection is closed unanswered;
    # either way the next request is served.
    for junk in [b"GET /\r\n\r\n", b"GET / HTTP/1.1\r\nHost\r\n\r\n", b"GET / HTTP/1.1\r\n\r\n",
                 b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Length: x\r\n\r\n" % sv.port]:
        answer = raw(sv, junk)
        if not answer.startswith(b"HTTP/1.1 400"):
            fail("%r: answered %r" % (junk, answer[:60]))
    for junk in [b"GARBAGE\r\n\r\n", b"\x00\x01\x02 / HTTP/1.1\r\n\r\n", b"\xff" * 70000]:
        answer = raw(sv, junk)
        if answer and not answer.startswith(b"HTTP/1.1 4"):
            fail("%r: answered %r" % (junk[:20], answer[:60]))
    if get_json(sv, "/api/runs")["total"] != 3:
        fail("the server stopped serving after malformed requests")


def check_old_schema(heapledger, db, tmp):
    old = os.path.join(tmp, "old.db")
    con = sqlite3.connect(db)
    con.execute("VACUUM INTO ?", (old,))
    con.close()
    con = sqlite3.connect(old)
    con.execute("PRAGMA user_version = 2")
    con.commit()
    con.close()
    before = digest(old)
    r = subprocess.run([heapledger, "ui", "--db", old, "--port", "0"],
                       capture_output=True, text=True, timeout=20)
    if r.returncode != 125 or "older" not in r.stderr or "not upgraded" not in r.stderr:
        fail("an older database: exit %d, %r" % (r.returncode, r.stderr))
    if digest(old) != before:
        fail("the older database was changed")


def check_speedscope(heapledger, db):
    """report --format speedscope: speedscope's file format, two profiles a
    process, leak_beta's 700 bytes in run 2's leak profile."""
    r = subprocess.run([heapledger, "report", "--db", db, "--run", "2", "--format", "speedscope"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        fail("speedscope: %d %s" % (r.returncode, r.stderr))
    doc = json.loads(r.stdout)
    if doc["$schema"] != "https://www.speedscope.app/file-format-schema.json" or len(doc["profiles"]) != 4:
        fail("speedscope document: %s" % r.stdout[:500])
    frames = doc["shared"]["frames"]
    leaked = doc["profiles"][1]
    if leaked["type"] != "sampled" or leaked["unit"] != "bytes" or \
            len(leaked["samples"]) != len(leaked["weights"]) or leaked["endValue"] != sum(leaked["weights"]):
        fail("leak profile: %s" % leaked)
    beta = [w for s, w in zip(leaked["samples"], leaked["weights"]) if frames[s[-1]]["name"] == "leak_beta"]
    if beta != [700] or frames[leaked["samples"][0][0]]["name"] != "_start":
        fail("leak_beta in the leak profile (outermost frame first): %s" % beta)
    allocated = doc["profiles"][0]
    if allocated["endValue"] < 800 * 1024:
        fail("allocation profile total %d" % allocated["endValue"])


def check_events(sv):
    """An ended run's event stream says so once and ends; no run, 404."""
    c = http.client.HTTPConnection("127.0.0.1", sv.port, timeout=20)
    c.request("GET", with_token(sv, "/api/runs/3/events"), headers={"Host": "127.0.0.1:%d" % sv.port})
    r = c.getresponse()
    body = r.read().decode()
    c.close()
    if r.status != 200 or r.getheader("Content-Type") != "text/event-stream":
        fail("events of run 3: %d %s" % (r.status, r.getheader("Content-Type")))
    if body != 'event: progress\ndata: {"processes":2,"ended":true}\n\n':
        fail("events of run 3: %r" % body)
    status, body = get(sv, "/api/runs/99/events")
    if status != 404 or b"no run 99" not in body:
        fail("events of no run: %d %s" % (status, body))
    status, _ = get(sv, "/api/runs/3/events/x")
    if status == 200:
        fail("events/x answered 200")


def check_open(heapledger, db, tmp):
    """--open runs xdg-open with the served address (a stand-in on PATH
    records what it was given); without xdg-open it says so and serves."""
    bin_dir, log = os.path.join(tmp, "bin"), os.path.join(tmp, "opened")
    os.makedirs(bin_dir)
    with open(os.path.join(bin_dir, "xdg-open"), "w", encoding="utf-8") as f:
        f.write('#!/bin/sh\nprintf "%%s\\n" "$@" > "%s.part" && mv "%s.part" "%s"\n' % (log, log, log))
    os.chmod(os.path.join(bin_dir, "xdg-open"), 0o755)
    env = dict(os.environ, PATH=bin_dir + os.pathsep + os.environ.get("PATH", ""))
    sv = Server(heapledger, db, "--open", env=env)
    try:
        # The server prints its address, then runs xdg-open: wait for it.
        for _ in range(1200):
            if os.path.exists(log):
                break
            if sv.proc.poll() is not None:
                break
            time.sleep(0.05)
        if not os.path.exists(log):
            fail("--open: xdg-open was not run")
        with open(log, encoding="utf-8") as f:
            args = f.read().splitlines()
        if args != [sv.url]:
            fail("--open ran xdg-open with %r, want [%r]" % (args, sv.url))
        status, body = get(sv, "/")
        if status != 200 or b"app.js" not in body:
            fail("--open: the address it opened does not serve the page: %d" % status)
    finally:
        sv.stop()
    empty = os.path.join(tmp, "empty")
    os.makedirs(empty)
    sv = Server(heapledger, db, "--open", env=dict(os.environ, PATH=empty))
    try:
        status, _ = get(sv, "/")
        if status != 200:
            fail("--open without xdg-open: the server does not serve (%d)" % status)
    finally:
        err = sv.stop()
    if "cannot run xdg-open; open %s yourself" % sv.url not in err:
        fail("--open without xdg-open did not say so: %r" % err)


def expected_filter(db, run, term, cls=None):
    """The records of run whose stack has a frame whose function, file or
    module contains term (ASCII case folded, as SQL's LIKE), largest first:
    every stack walked frame by frame here, apart from the server's way."""
    con = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    term = term.lower()
    hit = set()
    for i, fn, fl, mod in con.execute("SELECT id, function, file, module FROM symbols"):
        if any(term in (x or "").lower() for x in (fn, fl, mod)):
            hit.add(i)
    frames = {i: (parent, sym) for i, parent, sym in con.execute(
        "SELECT f.id, f.parent_id, f.symbol_id FROM frames f WHERE f.run_id = ?", (run,))}
    out = []
    for lid, leaf, lcls in con.execute(
            "SELECT l.id, k.leaf_frame_id, l.leak_class FROM leaks l JOIN processes p"
            " ON p.id = l.process_id JOIN stacks k ON k.id = l.stack_id WHERE p.run_id = ?"
            " ORDER BY l.bytes DESC, l.id", (run,)):
        if cls and lcls != cls:
            continue
        f = leaf
        while f is not None:
            parent, sym = frames[f]
            if sym in hit:
                out.append(lid)
                break
            f = parent
    con.close()
    return out


def check_big_filter(heapledger, db, tmp):
    """The stack text filter over a run of 100,000 records (gen_big_run.py)
    gives what walking every stack gives: totals, pages, class and paging."""
    big = os.path.join(tmp, "big.db")
    shutil.copy(db, big)
    r = subprocess.run([sys.executable, os.path.join(HERE, "gen_big_run.py"), big, "100000", "1000"],
                       capture_output=True, text=True, check=True, timeout=120)
    run = int(r.stdout)
    sv = Server(heapledger, big)
    try:
        for term, cls, offset in (("fn_4242", None, 0), ("MID_7", None, 0), ("mid_7", "possibly", 100),
                                  ("file_299.c", None, 0), ("src/main", None, 99900),
                                  ("bigprog", "definitely", 24950), ("no such name", None, 0)):
            want = expected_filter(big, run, term, cls)
            got = get_json(sv, "/api/runs/%d/leaks?%s" % (run, urllib.parse.urlencode(
                dict(filter=term, offset=offset, limit=100, **({"class": cls} if cls else {})))))
            if got["total"] != len(want):
                fail("filter %r class %s: total %d, want %d" % (term, cls, got["total"], len(want)))
            ids = [row["id"] for row in got["rows"]]
            if ids != want[offset:offset + 100]:
                fail("filter %r class %s offset %d: rows %s, want %s" % (
                    term, cls, offset, ids[:5], want[offset:offset + 5]))
    finally:
        sv.stop()


def main():
    heapledger, prog, source = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as tmp:
        db = make_db(heapledger, prog, tmp)
        before = digest(db)
        sv = Server(heapledger, db)
        try:
            check_api(sv, db, source, heapledger)
            check_refusals(sv)
            check_events(sv)
        finally:
            err = sv.stop()
        if digest(db) != before:
            fail("serving changed the database file")
        check_old_schema(heapledger, db, tmp)
        check_speedscope(heapledger, db)
        check_open(heapledger, db, tmp)
        check_big_filter(heapledger, db, tmp)
        sv = Server(heapledger, db, "--listen", "0.0.0.0")
        err = sv.stop()
        if "warning" not in err or "not loopback" not in err:
            fail("--listen 0.0.0.0 did not warn: %r" % err)
        print("ui http: API, refusals, read-only database: ok")


main()
