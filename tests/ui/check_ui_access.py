#!/usr/bin/env python3
"""tests/ui/check_ui_access.py: who can use `heapledger ui`, and what cannot
stop it: a request without the start's token (or with another) gets 403, the
address printed at start lets the page in and sets the cookie its own
requests carry; 300 connections sending their headers a byte at a time do
not keep a real request from being answered; a connection left idle (before
its request, or halfway through its headers) is closed by the server; a port in use is named with
the way to pick another; a database that does not exist yet is served as
"no runs yet", is not created, and is read once a run has written it.

Usage: check_ui_access.py HEAPLEDGER UI_LEAKER
"""
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import threading

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ui_fixture import Server, fail  # noqa: E402

SLOW_CONNECTIONS = 300


def request(sv, path, headers=None, timeout=20):
    c = http.client.HTTPConnection("127.0.0.1", sv.port, timeout=timeout)
    c.request("GET", path, headers=dict({"Host": "127.0.0.1:%d" % sv.port}, **(headers or {})))
    r = c.getresponse()
    body = r.read()
    c.close()
    return r, body


def check_token(sv):
    for path in ["/", "/app.js", "/api/runs", "/api/runs/1", "/api/runs/1/events",
                 "/?token=", "/?token=" + "0" * len(sv.token), "/api/runs?token=" + sv.token[:-1],
                 "/api/runs?token=" + sv.token + "0"]:
        r, body = request(sv, path)
        if r.status != 403 or b"token" not in body:
            fail("%s without the token: %d %r" % (path, r.status, body[:200]))
    r, _ = request(sv, "/api/runs", {"Cookie": "heapledger-ui-%d=%s" % (sv.port, "f" * len(sv.token))})
    if r.status != 403:
        fail("a wrong cookie: %d" % r.status)
    # Another server's cookie (its name holds its port) does not open this one.
    r, _ = request(sv, "/api/runs", {"Cookie": "heapledger-ui-%d=%s" % (sv.port + 1, sv.token)})
    if r.status != 403:
        fail("another port's cookie: %d" % r.status)
    # The printed address opens the page and sets the cookie.
    r, body = request(sv, sv.url[len("http://127.0.0.1:%d" % sv.port):])
    cookie = r.getheader("Set-Cookie") or ""
    if r.status != 200 or b"app.js" not in body:
        fail("the printed address: %d" % r.status)
    want = "heapledger-ui-%d=%s" % (sv.port, sv.token)
    if not cookie.startswith(want + ";") or "HttpOnly" not in cookie or "SameSite=Strict" not in cookie:
        fail("the printed address set the cookie %r" % cookie)
    for path in ["/api/runs", "/app.js", "/"]:
        r, body = request(sv, path, {"Cookie": want})
        if r.status != 200:
            fail("%s with the cookie: %d %r" % (path, r.status, body[:200]))
    r, body = request(sv, "/api/runs?token=" + sv.token)
    if r.status != 200 or json.loads(body)["total"] != 1:
        fail("/api/runs with the token: %d %r" % (r.status, body[:200]))


def trickle(slow, stop):
    """One more header byte on every slow connection each second, so none
    is ever idle long enough for an idle timeout, until stop is set."""
    while not stop.wait(1.0):
        for s in slow:
            try:
                s.sendall(b"a")
            except OSError:
                pass  # closed by the server: it may


def check_slow_clients(sv):
    """SLOW_CONNECTIONS connections each send part of a request's headers,
    then a byte a second; meanwhile a real request must be answered (bounded
    by a generous timeout: a starved server answers it only once the slow
    ones stop, or refuses it)."""
    slow, stop = [], threading.Event()
    feeder = threading.Thread(target=trickle, args=(slow, stop))
    try:
        for i in range(SLOW_CONNECTIONS):
            s = socket.create_connection(("127.0.0.1", sv.port), timeout=20)
            s.sendall(b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nX-Slow-%d: " % (sv.port, i))
            slow.append(s)
        feeder.start()
        for path in ["/api/runs?token=" + sv.token, "/?token=" + sv.token]:
            try:
                r, body = request(sv, path, timeout=90)
            except OSError as e:
                fail("%s among %d slow connections: %s" % (path, SLOW_CONNECTIONS, e))
            if r.status != 200:
                fail("%s among %d slow connections: %d" % (path, SLOW_CONNECTIONS, r.status))
    finally:
        stop.set()
        if feeder.is_alive():
            feeder.join()
        for s in slow:
            s.close()


# The server closes a connection idle for 15 s (ui/server.c); what waits for
# that closing gives up only after this, so a server that never closes one
# fails and a slow machine does not.
IDLE_BOUND_S = 120


def open_idle(sv):
    """Two connections that then go idle: one that sends nothing, one
    halfway through its headers. (An answered request is not kept alive:
    the server answers "Connection: close".)"""
    quiet = socket.create_connection(("127.0.0.1", sv.port), timeout=IDLE_BOUND_S)
    half = socket.create_connection(("127.0.0.1", sv.port), timeout=IDLE_BOUND_S)
    half.sendall(b"GET /api/runs HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % sv.port)
    return {"nothing sent": quiet, "half a request": half}


def check_idle_closed(idle):
    """Each idle connection is closed by the server: reading from it ends
    (end of stream or a reset) rather than waiting out IDLE_BOUND_S."""
    for what, s in idle.items():
        try:
            while s.recv(65536):
                pass  # an answer (408) before the close is fine
        except ConnectionResetError:
            pass
        except socket.timeout:
            fail("a connection idle with %s was not closed in %d s" % (what, IDLE_BOUND_S))
        finally:
            s.close()


def check_port_in_use(heapledger, db):
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))
    holder.listen(1)
    port = holder.getsockname()[1]
    try:
        r = subprocess.run([heapledger, "ui", "--db", db, "--port", str(port)],
                           capture_output=True, text=True, timeout=20)
    finally:
        holder.close()
    if r.returncode == 0 or "127.0.0.1:%d" % port not in r.stderr or "--port" not in r.stderr \
            or "in use" not in r.stderr:
        fail("a port in use: exit %d, %r" % (r.returncode, r.stderr))


def check_missing_db(heapledger, prog, tmp):
    db = os.path.join(tmp, "later.db")
    sv = Server(heapledger, db)
    try:
        r, body = request(sv, "/api/runs?token=" + sv.token)
        answer = json.loads(body)
        if r.status != 200 or answer != {"total": 0, "rows": [], "no_database": True}:
            fail("runs of a database not made yet: %d %r" % (r.status, body))
        r, body = request(sv, "/api/runs/1?token=" + sv.token)
        if r.status != 404:
            fail("a run of a database not made yet: %d %r" % (r.status, body))
        if os.path.exists(db):
            fail("the server created the database")
        # The first run writes it; the server then shows it.
        subprocess.run([heapledger, "run", "--db", db, "--", prog, "a"], check=True,
                       capture_output=True, timeout=60)
        r, body = request(sv, "/api/runs?token=" + sv.token)
        if r.status != 200 or json.loads(body)["total"] != 1:
            fail("the database's first run: %d %r" % (r.status, body[:300]))
    finally:
        sv.stop()


def main():
    heapledger, prog = sys.argv[1:3]
    with tempfile.TemporaryDirectory() as tmp:
        db = os.path.join(tmp, "one.db")
        subprocess.run([heapledger, "run", "--db", db, "--", prog, "a"], check=True,
                       capture_output=True, timeout=60)
        sv = Server(heapledger, db)
        try:
            idle = open_idle(sv)
            check_token(sv)
            check_slow_clients(sv)
            check_idle_closed(idle)
        finally:
            sv.stop()
        check_port_in_use(heapledger, db)
        check_missing_db(heapledger, prog, tmp)
    print("ui access: token, slow clients, idle connections, port in use, missing database: ok")


main()
