#!/usr/bin/env python3
"""tests/run/check_disk_faults.py: `heapledger run` on a database it cannot
write. In every case the program's exit status is kept, the message names
the system's reason (errno), no empty run row is left, "run not stored" is
said when it was not, and `heapledger report` reads the database afterwards.
  rlimit    RLIMIT_FSIZE at several sizes (the write fails part way):
            "File too large", not killed by SIGXFSZ, not "Input/output
            error"; a program's own SIGXFSZ is still its own
  full      a small tmpfs filled up to several sizes: "No space left on device"
  readonly  an existing database on a read-only bind mount: "Read-only file
            system"; the file is unchanged
The last two need a mount: done as root or in `unshare -rm`, in a private
mount namespace; where neither works the test says so and exits 77 (skip)
after the rlimit case.

Usage: check_disk_faults.py HEAPLEDGER FAKE_CLIENT
"""
import os
import resource
import shutil
import sqlite3
import subprocess
import sys
import tempfile

SKIP = 77
FAKE_EXIT = 3  # fake_client leak exits 3


def fail(msg):
    print("FAIL: " + msg)
    sys.exit(1)


def hl_run(hl, client, db, fsize=None):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize, fsize))
    p = subprocess.run([hl, "run", "--db", db, "--", client, "leak"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       preexec_fn=limit if fsize is not None else None, timeout=120)
    return p.returncode, p.stderr


def failed_storing(err):
    """The run failed after its row was started: storing a process, or
    committing the run (the run row and its processes are one transaction)."""
    return ("not stored:" in err and "process" in err) or "committing the run failed" in err


def base_db(hl, client, path):
    rc, err = hl_run(hl, client, path)
    if rc != FAKE_EXIT or "run " not in err or " stored in " not in err:
        fail("the first run was not stored: exit %d: %s" % (rc, err[-1500:]))


def runs(db):
    """(run ids, ids of runs without a process), read with a normal connection."""
    con = sqlite3.connect(db)
    ids = [r[0] for r in con.execute("SELECT id FROM runs ORDER BY id")]
    empty = [r[0] for r in con.execute(
        "SELECT id FROM runs WHERE id NOT IN (SELECT run_id FROM processes)")]
    con.close()
    return ids, empty


def db_lines(err):
    return [l for l in err.splitlines() if "database" in l or "stored" in l]


def check_run(name, rc, err, errno_text, bad_text):
    """Returns True when the run was stored; fails on a wrong outcome."""
    if rc != FAKE_EXIT:
        fail("%s: heapledger exited %d, not the program's %d: %s"
             % (name, rc, FAKE_EXIT, err[-1500:]))
    if "HEAP SUMMARY" not in err:
        fail("%s: no report printed" % name)
    if bad_text in err:
        fail("%s: the wrong errno (%r): %s" % (name, bad_text, db_lines(err)))
    stored = " stored in " in err and "run not stored" not in err
    if not stored:
        if errno_text not in err:
            fail("%s: the failure does not say %r: %s" % (name, errno_text, db_lines(err)))
        if "run not stored in" not in err:
            fail("%s: not said that the run was not stored: %s" % (name, db_lines(err)))
    return stored


def check_db(name, db, stored, before):
    ids, empty = runs(db)
    if empty:
        fail("%s: empty run rows left: %s" % (name, empty))
    if len(ids) != before + (1 if stored else 0):
        fail("%s: %d runs in the database, expected %d" % (name, len(ids), before + stored))


def check_report(hl, name, db):
    rep = subprocess.run([hl, "report", "--db", db], capture_output=True, text=True, timeout=120)
    if rep.returncode != 0 or "HEAP SUMMARY" not in rep.stdout + rep.stderr:
        fail("%s: report cannot read the database: exit %d: %s"
             % (name, rep.returncode, rep.stderr[-1500:]))


def case_rlimit(hl, client, tmp):
    base = os.path.join(tmp, "base.db")
    base_db(hl, client, base)
    # From failing at open to enough room: the sizes in between fail part
    # way through storing the run (`run` stores the run row and its
    # processes in one transaction, so they fail at its commit, and nothing
    # of the run is left).
    failed_at = {}
    for kib in (8, 16, 24, 32, 48, 64, 96, 128, 1024):
        name = "rlimit %d KiB" % kib
        db = os.path.join(tmp, "fsize%d.db" % kib)
        shutil.copy(base, db)
        rc, err = hl_run(hl, client, db, fsize=kib * 1024)
        stored = check_run(name, rc, err, "File too large", "Input/output error")
        check_db(name, db, stored, 1)
        check_report(hl, name, db)
        if not stored:
            failed_at[kib] = failed_storing(err)
    if not failed_at or not any(failed_at.values()):
        fail("rlimit: no size failed while storing the process: %s" % failed_at)
    if 1024 in failed_at:
        fail("rlimit: not stored even with 1 MiB")
    # The program keeps its own SIGXFSZ: heapledger ignores it, its child must not.
    big = os.path.join(tmp, "big")
    p = subprocess.run([hl, "run", "--no-db", "--", "sh", "-c",
                        "head -c 200000 /dev/zero > '%s'" % big],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE,
                                                             (65536, 65536)), timeout=120)
    if p.returncode != 128 + 25:  # the shell reports head killed by SIGXFSZ
        fail("rlimit: the program's own SIGXFSZ was not kept: exit %d" % p.returncode)
    print("rlimit: status kept, 'File too large' at %s KiB (process stage: %s)"
          % (sorted(failed_at), sorted(k for k, v in failed_at.items() if v)))


def fill(mnt, free_kib):
    """Leaves about free_kib KiB free on the file system at mnt."""
    pad = os.path.join(mnt, "pad")
    st = os.statvfs(mnt)
    have = st.f_bavail * st.f_frsize
    want = max(0, have - free_kib * 1024)
    with open(pad, "wb") as f:
        f.write(b"\0" * want)
    return pad


def case_full(hl, client, tmp):
    base = os.path.join(tmp, "base-full.db")
    base_db(hl, client, base)
    size = os.path.getsize(base)
    mnt = os.path.join(tmp, "small")
    os.mkdir(mnt)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%dk" % (size // 1024 + 512),
                    "tmpfs", mnt], check=True)
    process_stage = 0
    failed = []
    try:
        for kib in (4, 16, 32, 48, 64, 80):
            name = "full, %d KiB free" % kib
            db = os.path.join(mnt, "f.db")
            for f in os.listdir(mnt):
                os.unlink(os.path.join(mnt, f))
            shutil.copy(base, db)
            pad = fill(mnt, kib)
            rc, err = hl_run(hl, client, db)
            stored = check_run(name, rc, err, "No space left on device", "Input/output error")
            check_report(hl, name, db)  # still full
            os.unlink(pad)
            check_db(name, db, stored, 1)
            if not stored:
                failed.append(kib)
                process_stage += failed_storing(err)
    finally:
        subprocess.run(["umount", mnt])
    if not failed:
        fail("full: every run was stored; the file system was not full")
    print("full: status kept, 'No space left on device' at %s KiB free, %d at the process stage"
          % (failed, process_stage))


def case_readonly(hl, client, tmp):
    src = os.path.join(tmp, "rw")
    mnt = os.path.join(tmp, "ro")
    os.mkdir(src)
    os.mkdir(mnt)
    base_db(hl, client, os.path.join(src, "r.db"))
    subprocess.run(["mount", "--bind", src, mnt], check=True)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", mnt], check=True)
        before = open(os.path.join(src, "r.db"), "rb").read()
        db = os.path.join(mnt, "r.db")
        rc, err = hl_run(hl, client, db)
        if check_run("readonly", rc, err, "Read-only file system",
                     "attempt to write a readonly database"):
            fail("readonly: stored on a read-only file system")
        if "Permission denied" in err:
            fail("readonly: says Permission denied: %s" % db_lines(err))
        check_report(hl, "readonly", db)
        if open(os.path.join(src, "r.db"), "rb").read() != before:
            fail("readonly: the database changed")
    finally:
        subprocess.run(["umount", mnt])
    check_db("readonly", os.path.join(src, "r.db"), False, 1)
    print("readonly: status kept, 'Read-only file system', database unchanged and read")


def inside(hl, client, case):
    """In a private mount namespace: can we mount at all?"""
    with tempfile.TemporaryDirectory(prefix="hl-disk-") as tmp:
        probe = os.path.join(tmp, "probe")
        os.mkdir(probe)
        p = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", probe],
                           capture_output=True, text=True)
        if p.returncode != 0:
            print("SKIP: cannot mount a tmpfs here: " + p.stderr.strip())
            sys.exit(SKIP)
        subprocess.run(["umount", probe])
        {"full": case_full, "readonly": case_readonly}[case](hl, client, tmp)


def in_namespace(hl, client, case):
    """Runs case in a private mount namespace (as root), else in `unshare -rm`;
    returns False where neither can be made."""
    me = [sys.executable, os.path.abspath(__file__), hl, client, "--inside", case]
    tries = [["unshare", "-m", "--propagation", "private"]] if os.geteuid() == 0 else []
    tries.append(["unshare", "-rm", "--propagation", "private"])
    why = "unshare not found"
    for pre in tries if shutil.which("unshare") else []:
        probe = subprocess.run(pre + ["true"], capture_output=True, text=True)
        if probe.returncode != 0:
            why = probe.stderr.strip()
            continue
        p = subprocess.run(pre + me, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=300)
        sys.stdout.write(p.stdout)
        if p.returncode == SKIP:
            return False
        if p.returncode != 0:
            sys.exit(p.returncode)
        return True
    print("SKIP: %s: no private mount namespace (%s)" % (case, why))
    return False


def main():
    hl, client = sys.argv[1], sys.argv[2]
    if len(sys.argv) == 5 and sys.argv[3] == "--inside":
        inside(hl, client, sys.argv[4])
        return
    with tempfile.TemporaryDirectory(prefix="hl-disk-") as tmp:
        case_rlimit(hl, client, tmp)
    skipped = [c for c in ("full", "readonly") if not in_namespace(hl, client, c)]
    if skipped:
        print("SKIP: %s need a mount (root or unshare -rm); the rlimit case passed"
              % " and ".join(skipped))
        sys.exit(SKIP)


if __name__ == "__main__":
    main()
