#!/usr/bin/env python3
"""tests/cli/check_readme.py HEAPLEDGER DEMO README: the README's commands work
as written.

Every fenced block of README.md that follows a `<!-- run -->` line is a block
a user is meant to copy. Each is run, in order, by bash in one sandbox that
stands for the user's project: `./your-program` is the demo program (it leaks
3 x 48 bytes from open_session() and 256 bytes from cache_insert()), a
Makefile's `check` target runs it, `heapledger` is on PATH, and HOME and
XDG_RUNTIME_DIR are the sandbox's, so the default history is fresh. A block
must exit 0 with its background jobs, and what it prints must show the demo's
leak where the block reports one."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

HL, DEMO, README = (os.path.abspath(a) for a in sys.argv[1:4])
failures = []


def check(what, ok, detail=''):
    print(('ok: ' if ok else 'FAIL: ') + what + ('' if ok else '\n' + str(detail)))
    if not ok:
        failures.append(what)


def marked_blocks(text):
    return re.findall(r'^<!-- run -->\n```\w*\n(.*?)^```', text, re.M | re.S)


def sandbox(tmp):
    shutil.copy(DEMO, os.path.join(tmp, 'your-program'))
    with open(os.path.join(tmp, 'Makefile'), 'w') as f:
        f.write('check:\n\t./your-program\n')
    run = os.path.join(tmp, 'run')
    os.mkdir(run, 0o700)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(('HEAPLEDGER_', 'XDG_', 'LD_PRELOAD'))}
    env.update(PATH=os.path.dirname(HL) + ':/usr/bin:/bin', HOME=os.path.join(tmp, 'home'),
               XDG_RUNTIME_DIR=run, HEAPLEDGER_GIT='0')
    if 'HEAPLEDGER_LIB' in os.environ:
        env['HEAPLEDGER_LIB'] = os.environ['HEAPLEDGER_LIB']
    return env


def main():
    blocks = marked_blocks(open(README, encoding='utf-8').read())
    check('README.md marks blocks to run', len(blocks) >= 3, blocks)
    with tempfile.TemporaryDirectory() as tmp:
        env = sandbox(tmp)
        for i, block in enumerate(blocks, 1):
            first = block.splitlines()[0]
            # `wait`: a block's background jobs (a daemon) finish before the next
            p = subprocess.run(['bash', '-e', '-c', block + '\nwait\n'], cwd=tmp, env=env,
                               capture_output=True, text=True, timeout=180)
            out = p.stdout + p.stderr
            check('block %d (%s) exits 0' % (i, first), p.returncode == 0, out[-3000:])
            check('block %d (%s) says nothing is wrong with heapledger' % (i, first),
                  'cannot reach the reporter' not in out and "--help' for more" not in out,
                  out[-3000:])
            if 'heapledger run' in block or 'heapledger daemon' in block:
                check('block %d (%s) reports the demo\'s leak' % (i, first),
                      re.search(r'144 bytes in 3 blocks are definitely lost.*\n.*open_session',
                                out), out[-3000:])
            if 'heapledger daemon' in block:
                check('block %d (%s) ends with the suite summary' % (i, first),
                      'suite summary' in out, out[-3000:])
            if 'heapledger history' in block:
                check('block %d (%s) lists the leak sites' % (i, first),
                      'open_session' in out and 'cache_insert' in out, out[-3000:])
    if failures:
        sys.exit('%d failed: %s' % (len(failures), ', '.join(failures)))


if __name__ == '__main__':
    main()
