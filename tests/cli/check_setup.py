#!/usr/bin/env python3
"""tests/cli/check_setup.py SETUP: scripts/setup.sh installs what each user
asks for, and only that. A newcomer's first command (no option) gets what
building, the demo and the tests need, never the benchmark or packaging
tools; --package, --bench and --ci each add their own packages; --help
documents every option and exits 0; an unknown option exits 2 naming it.
Every package named is one apt knows (a typo would break a fresh machine's
first command), checked when this machine has apt's package lists."""
import os
import shutil
import subprocess
import sys

SETUP = sys.argv[1]
failures = []

BUILD = {'meson', 'ninja-build', 'libunwind-dev', 'libdw-dev', 'libsqlite3-dev', 'libjansson-dev',
         'libmicrohttpd-dev', 'libcmocka-dev', 'scdoc', 'valgrind'}
PACKAGE = {'debhelper', 'lintian'}
BENCH = {'heaptrack', 'libmimalloc2.0', 'libjemalloc2', 'libtcmalloc-minimal4', 'electric-fence'}
CI = {'clang'}


def check(what, ok, detail=''):
    print(('ok: ' if ok else 'FAIL: ') + what + ('' if ok else '\n' + str(detail)))
    if not ok:
        failures.append(what)


def run(*args):
    return subprocess.run([SETUP, *args], capture_output=True, text=True, timeout=60)


def packages(*args):
    p = run(*args, '--print-packages')
    check('setup.sh %s --print-packages exits 0' % ' '.join(args), p.returncode == 0, p.stderr)
    names = p.stdout.split()
    check('setup.sh %s names each package once' % ' '.join(args),
          len(names) == len(set(names)),
          sorted(n for n in names if names.count(n) > 1))
    return set(names)


def main():
    p = run('--help')
    check('--help exits 0', p.returncode == 0, p.stderr)
    for option in ('--package', '--bench', '--ci', '--no-build', '--print-packages'):
        check('--help documents %s' % option, option in p.stdout, p.stdout)
    p = run('--bogus')
    check('an unknown option exits 2 and names it',
          p.returncode == 2 and '--bogus' in p.stderr, (p.returncode, p.stderr))

    base = packages()
    check('the first command has what building and the tests need', BUILD <= base,
          sorted(BUILD - base))
    extra = (PACKAGE | BENCH | CI) & base
    check('the first command installs no benchmark, packaging or CI-only tool', not extra,
          sorted(extra))
    for option, wanted in (('--package', PACKAGE), ('--bench', BENCH), ('--ci', CI | PACKAGE)):
        got = packages(option)
        check('%s adds %s' % (option, ' '.join(sorted(wanted))), got == base | wanted,
              sorted(got ^ (base | wanted)))
    everything = packages('--package', '--bench', '--ci')

    apt_lists = '/var/lib/apt/lists'
    if shutil.which('apt-cache') and os.path.isdir(apt_lists) and any(
            n.endswith('_Packages') for n in os.listdir(apt_lists)):
        unknown = [n for n in sorted(everything)
                   if subprocess.run(['apt-cache', 'show', '--no-all-versions', n],
                                     capture_output=True).returncode != 0]
        check('apt knows every package setup.sh names', not unknown, unknown)
    else:
        print('note: no apt package lists here; package names not checked against apt')

    if failures:
        sys.exit('%d failed: %s' % (len(failures), ', '.join(failures)))


if __name__ == '__main__':
    main()
