#!/usr/bin/env python3
"""tests/scan/check_exit_paths.py HEAPLEDGER [--hook LIB] [--checks MODE] [--ignored] -- ARGV...:
every process ARGV makes is classified as valgrind classifies it, wherever
it ends (_exit, a fork child's _exit, a fatal signal). valgrind runs here as
the oracle (--trace-children=yes --leak-check=full --show-leak-kinds=all);
heapledger under `heapledger run --json`. The per-process class totals
(definitely, indirectly, possibly lost, still reachable: bytes and blocks)
are compared as a multiset, since the two runs' pids differ. An image
replaced by exec is left out of both (valgrind does not scan it). The exit
status of ARGV must be the same with and without either tool, its stdout the
same with and without heapledger, and every process must have been scanned,
with the hook's live set and the reporter's in agreement.

A process a signal ended must also say what valgrind says of it: the signal,
its fault words ("Access not within mapped region") and the first frame in
the program itself, at the address valgrind shows (the faulting
instruction, a caller's call instruction). With --hook, ARGV runs under the hook alone (LD_PRELOAD,
no reporter) and bare, with core dumps allowed, in a scratch directory: the
signal that ends it and whether it dumped core must be the same. With
--checks, heapledger and the hook run with that checks= mode (guard: its
fault handler sees SIGSEGV first, and must pass the crash on)."""
import json
import os
import re
import resource
import signal
import subprocess
import sys
import tempfile

CLASSES = ("definitely lost", "indirectly lost", "possibly lost", "still reachable")
KINDS = {"definitely": 0, "indirectly": 1, "possibly": 2, "reachable": 3}
LINE = re.compile(r"^==(\d+)== (.*)$")
TERMINATING = re.compile(r"Process terminating with default action of signal (\d+)")
FRAME = re.compile(r"(?:at|by) 0x([0-9A-Fa-f]+): (\S+) \((\S+?):\d+\)")


def program_file(argv):
    return os.path.basename(argv[0]) + ".c"


# Signals the program raises at an instruction of its own (a fault, abort,
# a trap): both tools must name that instruction. Another process's SIGTERM
# lands wherever the program happens to be (returning from write() or in
# pause()), so for those only the function is compared.
# Not SIGFPE: valgrind keeps the guest's instruction pointer exact only at
# memory accesses (--vex-iropt-register-updates=unwindregs-at-mem-access), so
# for a divide by zero it names the load before the idiv, where the kernel
# (and heapledger) name the idiv itself.
SYNCHRONOUS = {4, 5, 6, 7, 11, 31}  # SIGILL SIGTRAP SIGABRT SIGBUS SIGSEGV SIGSYS


def valgrind_crashes(log, source):
    """(signal, fault words, first frame in the program) per crash. The
    frame is its function and its address's offset in its page (the two
    tools load the program at different page-aligned bases), the offset only
    for SYNCHRONOUS signals: valgrind shows the faulting instruction for
    frame 0 and the call instruction for a caller, and so must heapledger."""
    found, crash = [], None
    for line in log.splitlines():
        m = LINE.match(line)
        if not m:
            continue
        text = m.group(2).strip()
        t = TERMINATING.search(text)
        if t:
            crash = [int(t.group(1)), None, None]
            found.append(crash)
            continue
        if crash is None:
            continue
        if " at address " in text and crash[1] is None and crash[2] is None:
            crash[1] = text.split(" at address ")[0]
            continue
        f = FRAME.search(text)
        if f and crash[2] is None and os.path.basename(f.group(3)) == source:
            crash[2] = f.group(2)
            if crash[0] in SYNCHRONOUS:
                crash[2] += " at page offset 0x%03x" % (int(f.group(1), 16) & 0xfff)
        if not text:
            crash = None
    return sorted(tuple(c) for c in found)


def valgrind_images(argv, work):
    """One class tuple per image that valgrind ended (exec'd ones left out)."""
    log = os.path.join(work, "vg.log")
    with open(log, "w") as f:
        rc = subprocess.run(["valgrind", "--trace-children=yes", "--leak-check=full",
                             "--show-leak-kinds=all", "--log-fd=%d" % f.fileno()] + argv,
                            pass_fds=(f.fileno(),), stdin=subprocess.DEVNULL,
                            stdout=subprocess.DEVNULL).returncode
    images = {}  # pid -> list of images, each a dict of class totals
    for line in open(log, errors="replace"):
        m = LINE.match(line.rstrip("\n"))
        if not m:
            continue
        pid, text = int(m.group(1)), m.group(2)
        if text.startswith("Command:") or pid not in images:
            images.setdefault(pid, []).append({"ended": False, "classes": [0] * 8})
        img = images[pid][-1]
        if "HEAP SUMMARY" in text:
            img["ended"] = True
        for i, name in enumerate(CLASSES):
            c = re.search(name + r": ([\d,]+) bytes in ([\d,]+) blocks", text)
            if c:
                img["classes"][2 * i] = int(c.group(1).replace(",", ""))
                img["classes"][2 * i + 1] = int(c.group(2).replace(",", ""))
    found = [tuple(img["classes"]) for imgs in images.values() for img in imgs
             if img["ended"]]
    return rc, sorted(found), open(log, errors="replace").read()


def heapledger_images(heapledger, argv, work, source, checks):
    out = os.path.join(work, "hl.json")
    mode = ["--checks", checks] if checks else []
    run = subprocess.run([heapledger, "run", "--no-db", "--json", out] + mode + ["--"] + argv,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    doc = json.load(open(out))
    found, unscanned, crashes = [], [], []
    for p in doc["processes"]:
        if p["exit"]["how"] == "exec":
            continue
        if not p["scan"]["scanned"] and p["summary"]["in_use_blocks"]:
            unscanned.append((p["pid"], p["exit"], p["scan"]))
        # the hook's live set and the reporter's agree (nothing freed unsent)
        stream = {k: p["summary"][k] for k in ("unmatched_frees", "unfreed_superseded",
                                               "live_mismatch", "dropped_events")
                  if p["summary"].get(k)}
        if stream:
            unscanned.append((p["pid"], "event stream inconsistent", stream))
        classes = [0] * 8
        for leak in p["leaks"]:
            i = KINDS.get(leak["kind"])
            if i is not None:
                classes[2 * i] += leak["bytes"]
                classes[2 * i + 1] += leak["blocks"]
        found.append(tuple(classes))
    # The crash as the text report words it, valgrind's way.
    crashes = valgrind_crashes(run.stderr.decode(errors="replace"), source)
    return run, sorted(found), unscanned, crashes


def ended(argv, work, env):
    """(signal, core dumped) of ARGV run with core dumps allowed in work."""
    def allow_core():
        resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY,) * 2)
    proc = subprocess.Popen(argv, cwd=work, env=env, preexec_fn=allow_core,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    _, status = os.waitpid(proc.pid, 0)
    proc.returncode = 0  # reaped here
    if not os.WIFSIGNALED(status):
        return (0, False)
    return (os.WTERMSIG(status), os.WCOREDUMP(status))


def main():
    # Each tool adds four variables to the environment (valgrind:
    # GLIBCPP_FORCE_NEW, GLIBCXX_FORCE_NEW, LD_LIBRARY_PATH, LD_PRELOAD;
    # heapledger: HEAPLEDGER_PID, _RUN, _SOCKET, LD_PRELOAD) as long as
    # LD_LIBRARY_PATH was not set: a shell keeps one block per variable.
    os.environ.pop("LD_LIBRARY_PATH", None)
    heapledger = sys.argv[1]
    ours = sys.argv[:sys.argv.index("--")]
    hook = ours[ours.index("--hook") + 1] if "--hook" in ours else None
    if "--ignored" in ours:
        # Started as under nohup or in a shell's background job: SIGHUP and
        # SIGINT ignored. The program must start so under each tool too.
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    checks = ours[ours.index("--checks") + 1] if "--checks" in ours else None
    hook_env = dict(os.environ, LD_PRELOAD=hook or "")
    if checks:
        hook_env["HEAPLEDGER_OPTIONS"] = "checks=" + checks
    argv = sys.argv[sys.argv.index("--") + 1:]
    source = program_file(argv)
    plain = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
    if plain.returncode == 77:
        print("skipped: the program says this machine cannot run it")
        sys.exit(77)
    with tempfile.TemporaryDirectory() as work:
        vg_rc, vg, vg_log = valgrind_images(argv, work)
        run, hl, unscanned, hl_crashes = heapledger_images(heapledger, argv, work, source, checks)
        vg_crashes = valgrind_crashes(vg_log, source)
        if hook:
            bare = ended(argv, work, dict(os.environ))
            hooked = ended(argv, work, hook_env)
    hl_rc = run.returncode
    print("valgrind:   %s (status %d)" % (vg, vg_rc))
    print("heapledger: %s (status %d)" % (hl, hl_rc))
    failed = []
    if unscanned:
        failed.append("not scanned: %s" % unscanned)
    if vg != hl:
        failed.append("classes differ")
    # Every thread of these programs stops for the scan, and the kernel's
    # own workers (io_uring) are not the program's threads.
    if b"did not stop for the leak scan" in run.stderr:
        failed.append("a thread did not stop for the scan")
    print("crashes: valgrind %s, heapledger %s" % (vg_crashes, hl_crashes))
    if vg_crashes != hl_crashes:
        failed.append("crash reports differ")
    if hook:
        print("ended (signal, core dumped): bare %s, under the hook %s" % (bare, hooked))
        if bare != hooked or not bare[0]:
            failed.append("the signal or the core dump changed")
    # `heapledger run` exits 128 + N for a program a signal N ended, as a shell does.
    hl_as_plain = -(hl_rc - 128) if plain.returncode < 0 and hl_rc > 128 else hl_rc
    if plain.returncode != vg_rc or plain.returncode != hl_as_plain:
        failed.append("exit status: plain %d, valgrind %d, heapledger %d"
                      % (plain.returncode, vg_rc, hl_rc))
    # What the program wrote, and only that (valgrind's freeres writes the
    # stdio buffers _exit drops; heapledger must not).
    if run.stdout != plain.stdout:
        failed.append("stdout differs: plain %r, heapledger %r" % (plain.stdout, run.stdout))
    if not any(any(c) for c in vg):
        failed.append("valgrind found no block in use: the test proves nothing")
    if failed:
        sys.exit("; ".join(failed) + "\nvalgrind's log:\n" + vg_log[-3000:])


main()
