#!/usr/bin/env python3
"""tests/run/check_db_safety.py: the database survives concurrent runs and
hostile or awkward files:
  parallel   10 `heapledger run` at once on a database that does not exist
             yet: all 10 runs stored, no error printed
  foreign    a foreign SQLite file is refused untouched (no WAL, no tables)
  symlink    --db naming a symbolic link is refused; the target is untouched
  private    a new database is created 0600
  readonly   `report` reads a database in a directory it cannot write
             (run as nobody when we are root)

Usage: check_db_safety.py HEAPLEDGER FAKE_CLIENT [CASE...]
"""
import os
import sqlite3
import subprocess
import sys
import tempfile


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def run(hl, client, db, **kw):
    return subprocess.Popen([hl, "run", "--db", db, "--", client, "leak"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, **kw)


def case_parallel(hl, client, tmp):
    db = os.path.join(tmp, "new.db")
    procs = [run(hl, client, db) for _ in range(10)]
    errs = []
    for p in procs:
        _, err = p.communicate(timeout=120)
        if p.returncode != 3:
            fail("a run exited %d: %s" % (p.returncode, err[-2000:]))
        errs.append(err)
    bad = [l for e in errs for l in e.splitlines() if "database" in l and "failed" in l]
    if bad:
        fail("database errors: %s" % bad[:3])
    con = sqlite3.connect(db)
    runs = con.execute("SELECT count(*) FROM runs").fetchone()[0]
    procs = con.execute("SELECT count(*) FROM processes").fetchone()[0]
    con.close()
    if runs != 10 or procs != 10:
        fail("10 parallel runs stored %d runs and %d processes" % (runs, procs))
    print("parallel: 10 of 10 runs stored")


def case_foreign(hl, client, tmp):
    db = os.path.join(tmp, "foreign.db")
    con = sqlite3.connect(db)
    con.execute("CREATE TABLE notes(id INTEGER PRIMARY KEY, text TEXT)")
    con.execute("INSERT INTO notes(text) VALUES ('mine')")
    con.commit()
    con.close()
    before = open(db, "rb").read()
    p = run(hl, client, db)
    _, err = p.communicate(timeout=60)
    if p.returncode != 3 or "HEAP SUMMARY" not in err:
        fail("run with a foreign database: exit %d, report printed: %s"
             % (p.returncode, "HEAP SUMMARY" in err))
    if "not a heapledger database" not in err:
        fail("no clear refusal: " + err[-1500:])
    if open(db, "rb").read() != before or os.path.exists(db + "-wal"):
        fail("the foreign database was changed")
    rep = subprocess.run([hl, "report", "--db", db], capture_output=True, text=True)
    if rep.returncode == 0 or "not a heapledger database" not in rep.stderr:
        fail("report on a foreign database: %s" % rep.stderr)
    if open(db, "rb").read() != before:
        fail("report changed the foreign database")
    print("foreign: refused, file unchanged")


def case_symlink(hl, client, tmp):
    target = os.path.join(tmp, "victim")
    with open(target, "w") as f:
        f.write("precious\n")
    link = os.path.join(tmp, "link.db")
    os.symlink(target, link)
    p = run(hl, client, link)
    _, err = p.communicate(timeout=60)
    if p.returncode != 3 or "symbolic link" not in err:
        fail("symlinked --db not refused clearly: " + err[-1500:])
    if open(target).read() != "precious\n" or os.path.exists(target + "-wal"):
        fail("the symlink's target was written")
    dangling = os.path.join(tmp, "dangling.db")
    os.symlink(os.path.join(tmp, "created-through-link"), dangling)
    p = run(hl, client, dangling)
    p.communicate(timeout=60)
    if os.path.exists(os.path.join(tmp, "created-through-link")):
        fail("a dangling symlink's target was created")
    print("symlink: refused, target untouched")


def case_private(hl, client, tmp):
    db = os.path.join(tmp, "private.db")
    old = os.umask(0o022)
    try:
        p = run(hl, client, db)
        p.communicate(timeout=60)
    finally:
        os.umask(old)
    mode = os.stat(db).st_mode & 0o777
    if mode != 0o600:
        fail("new database mode %o, expected 600" % mode)
    print("private: new database 0600")


def demote():
    os.setgid(65534)
    os.setuid(65534)


def case_readonly(hl, client, tmp):
    d = os.path.join(tmp, "ro")
    os.mkdir(d)
    db = os.path.join(d, "r.db")
    p = run(hl, client, db)
    p.communicate(timeout=60)
    for name in os.listdir(d):
        os.chmod(os.path.join(d, name), 0o644)
    os.chmod(d, 0o555)
    os.chmod(tmp, 0o755)
    kw = {}
    if os.geteuid() == 0:
        kw["preexec_fn"] = demote  # root writes anywhere: read as nobody
    try:
        rep = subprocess.run([hl, "report", "--db", db], capture_output=True, text=True,
                             timeout=60, **kw)
    except PermissionError:
        # The build tree lies in a directory nobody may enter (a private
        # temporary clone): the case cannot be tried here.
        print("readonly: skipped, nobody cannot run %s" % hl)
        return
    if rep.returncode != 0 or "HEAP SUMMARY" not in rep.stdout:
        fail("report of a read-only database: %d %s" % (rep.returncode, rep.stderr))
    print("readonly: report read it")


CASES = {"parallel": case_parallel, "foreign": case_foreign, "symlink": case_symlink,
         "private": case_private, "readonly": case_readonly}


def main():
    hl, client = sys.argv[1], sys.argv[2]
    names = sys.argv[3:] or list(CASES)
    for name in names:
        with tempfile.TemporaryDirectory() as tmp:
            CASES[name](hl, client, tmp)
            os.chmod(tmp, 0o700)
            for root, dirs, _ in os.walk(tmp):
                for x in dirs:
                    os.chmod(os.path.join(root, x), 0o700)
    print("PASS")


if __name__ == "__main__":
    main()
