#!/usr/bin/env python3
"""tests/cli/check_cli.py HEAPLEDGER LIBHEAPLEDGER LEAKER: the command line of
every command: --help and --version (exit 0, stdout), unknown options,
missing and out-of-range values (exit 125, a message naming the option and
what it accepts), `--opt=value` forms, the exit statuses of `run` (the
program's own, 126, 127, 125 for heapledger's failures), `report --run` of a
missing run, and the hook's message for a bad HEAPLEDGER_OPTIONS entry.
LEAKER is a program that leaks (its leak must show in the report)."""
import os
import subprocess
import sys
import tempfile

HL, LIB, LEAKER = (os.path.abspath(a) for a in sys.argv[1:4])
COMMANDS = ['run', 'daemon', 'env', 'report', 'ui']
failures = []


def hl(*args, env=None, unset=()):
    """Runs heapledger in TMP, with HOME in TMP: nothing reaches the user's."""
    e = dict(os.environ, HEAPLEDGER_LIB=LIB, HOME=os.path.join(TMP, 'home'))
    for name in ('HEAPLEDGER_OPTIONS', 'HEAPLEDGER_DB', 'XDG_DATA_HOME') + tuple(unset):
        e.pop(name, None)
    e.update(env or {})
    return subprocess.run([HL] + list(args), capture_output=True, text=True,
                          env=e, timeout=60, cwd=TMP)


def default_database():
    """Where runs go without --db, and report reads them from."""
    home_db = os.path.join(TMP, 'home', '.local', 'share', 'heapledger', 'history.db')
    before = set(os.listdir(TMP))
    p = hl('run', '--', LEAKER)
    check('run without --db stores in $HOME/.local/share/heapledger/history.db',
          p.returncode == 0 and os.path.exists(home_db)
          and 'stored in ' + home_db in p.stderr, p)
    check('run without --db leaves nothing in the current directory',
          set(os.listdir(TMP)) - before <= {'home'}, p)
    check('the default directory is private',
          os.stat(os.path.dirname(home_db)).st_mode & 0o777 == 0o700, p)
    p = hl('report')
    check('report without --db reads the default database', p.returncode == 0
          and 'run 1 ' in p.stdout, p)
    xdg = os.path.join(TMP, 'xdg')
    p = hl('run', '--', LEAKER, env={'XDG_DATA_HOME': xdg})
    check('XDG_DATA_HOME moves the default', p.returncode == 0
          and os.path.exists(os.path.join(xdg, 'heapledger', 'history.db')), p)
    env_db = os.path.join(TMP, 'env.db')
    p = hl('run', '--', LEAKER, env={'HEAPLEDGER_DB': env_db, 'XDG_DATA_HOME': xdg})
    check('HEAPLEDGER_DB wins over XDG_DATA_HOME', p.returncode == 0
          and 'stored in ' + env_db in p.stderr, p)
    p = hl('report', '--format', 'json', env={'HEAPLEDGER_DB': env_db})
    check('report reads HEAPLEDGER_DB', p.returncode == 0 and '"heapledger-report"' in p.stdout, p)
    flag_db = os.path.join(TMP, 'flag.db')
    p = hl('run', '--db', flag_db, '--', LEAKER, env={'HEAPLEDGER_DB': env_db})
    check('--db wins over HEAPLEDGER_DB', p.returncode == 0
          and 'stored in ' + flag_db in p.stderr, p)
    p = hl('run', '--', LEAKER, unset=('HOME',))
    check('no HOME: the run is still reported, not stored, and says why',
          p.returncode == 0 and 'bytes in' in p.stderr and 'pass --db FILE' in p.stderr
          and 'stored in' not in p.stderr, p)
    p = hl('report', unset=('HOME',))
    check('no HOME: report exits 125', p.returncode == 125 and 'HEAPLEDGER_DB' in p.stderr, p)


def check(what, ok, proc=None):
    if not ok:
        detail = ''
        if proc is not None:
            detail = ' (exit %d, stdout %r, stderr %r)' % (
                proc.returncode, proc.stdout[-600:], proc.stderr[-600:])
        failures.append(what + detail)


def usage_error(args, *words, env=None):
    """args must exit 125 with a one-line reason containing every word."""
    p = hl(*args, env=env)
    check('%s: exit 125' % ' '.join(args), p.returncode == 125, p)
    check('%s: nothing on stdout' % ' '.join(args), p.stdout == '', p)
    for w in words:
        check('%s: message names %r' % (' '.join(args), w), w in p.stderr, p)
    check('%s: points to --help' % ' '.join(args), '--help' in p.stderr, p)
    return p


def main():
    # --help and --version: exit 0, on stdout, nothing on stderr.
    for args in [['--help'], ['-h']] + [[c, '--help'] for c in COMMANDS] + [['run', '-h']]:
        p = hl(*args)
        check('%s: exit 0' % ' '.join(args), p.returncode == 0, p)
        check('%s: usage on stdout' % ' '.join(args), p.stdout.startswith('usage: heapledger'), p)
        check('%s: nothing on stderr' % ' '.join(args), p.stderr == '', p)
        check('%s: points to the man page, not the source' % ' '.join(args),
              'man heapledger' in p.stdout and 'README' not in p.stdout, p)
    p = hl('--help')
    for c in COMMANDS:
        check('--help lists %s' % c, '\n  %s ' % c in p.stdout, p)
    for args in (['--version'], ['-V']):
        p = hl(*args)
        check('--version', p.returncode == 0 and p.stdout.startswith('heapledger ')
              and p.stdout.split()[1][0].isdigit(), p)
    # Every option of a command is listed by its --help.
    p = hl('run', '--help')
    for opt in ('--db FILE', '--no-db', '--json FILE', '--depth N', '--wait-ms N', '-q, --quiet'):
        check('run --help lists %s' % opt, opt in p.stdout, p)

    # Usage errors: the same message for the same mistake in every command.
    usage_error([], 'missing COMMAND')
    usage_error(['frobnicate'], "unknown command 'frobnicate'")
    usage_error(['--bogus'], "unknown option '--bogus'")
    for c in COMMANDS:
        usage_error([c, '--bogus'], 'heapledger %s:' % c, "unknown option '--bogus'")
        usage_error([c, '--bogus=1'], "unknown option '--bogus'")
        usage_error([c, '-Z'], "unknown option '-Z'")
    usage_error(['run', '--depth', '9999', 'true'], '--depth', '9999', 'from 0 to 256')
    usage_error(['run', '--depth=-1', 'true'], '--depth', 'from 0 to 256')
    usage_error(['run', '--depth=12x', 'true'], '--depth', 'from 0 to 256')
    usage_error(['run', '--wait-ms', '3600001', 'true'], '--wait-ms', 'from 0 to 3600000')
    usage_error(['run', '--depth'], 'option --depth needs a value (N)')
    usage_error(['run', '--db'], 'option --db needs a value (FILE)')
    usage_error(['run', '--db=', 'true'], 'option --db needs a value (FILE)')
    usage_error(['report', '--db'], 'option --db needs a value (FILE)')
    usage_error(['daemon', '--db'], 'option --db needs a value (FILE)')
    usage_error(['run', '--no-db=1', 'true'], 'option --no-db takes no value')
    usage_error(['run'], 'missing operand', 'PROG')
    usage_error(['run', '--no-db'], 'missing operand')
    usage_error(['report', '--format', 'xml'], "--format 'xml'", 'text|json')
    usage_error(['report', '--run', '0'], '--run', 'from 1 to')
    usage_error(['report', '--run', 'latest'], '--run', 'from 1 to')
    usage_error(['report', 'extra'], "unexpected argument 'extra'")
    usage_error(['daemon', '--socket'], 'option --socket needs a value (PATH)')
    usage_error(['env', '--socket'], 'option --socket needs a value (PATH)')

    # run: the program's own status passes through; heapledger's failures
    # are 125, a program that cannot be executed 126, not found 127.
    p = hl('run', '--no-db', '--', 'sh', '-c', 'exit 3')
    check('run passes the exit status through', p.returncode == 3, p)
    p = hl('run', '--no-db', 'sh', '-c', 'exit 125')
    check('run passes 125 of the program through', p.returncode == 125, p)
    p = hl('run', '--no-db', '--', os.path.join(TMP, 'no-such-program'))
    check('run: a missing program exits 127', p.returncode == 127, p)
    check('run: a missing program gets one line, no report',
          p.stderr.count('\n') == 1 and 'cannot run' in p.stderr, p)
    not_exec = os.path.join(TMP, 'not-executable')
    with open(not_exec, 'w') as f:
        f.write('#!/bin/sh\n')
    os.chmod(not_exec, 0o644)
    p = hl('run', '--no-db', '--', not_exec)
    check('run: a program that cannot be executed exits 126', p.returncode == 126, p)
    check('run: a program that cannot be executed gets one line, no report',
          p.stderr.count('\n') == 1 and 'Permission denied' in p.stderr, p)
    p = hl('run', '--no-db', 'true', env={'HEAPLEDGER_LIB': os.path.join(TMP, 'nope.so')})
    check('run: no hook library exits 125', p.returncode == 125
          and 'libheapledger.so' in p.stderr, p)
    # Options after the program's name belong to the program.
    p = hl('run', '--no-db', 'sh', '-c', 'exit 4', '--bogus')
    check('run: options after PROG go to PROG', p.returncode == 4, p)

    # --db FILE and --db=FILE; report --run of a missing run.
    db = os.path.join(TMP, 'cli.db')
    p = hl('run', '--db=' + db, '--depth=8', '--wait-ms=5000', '--', LEAKER)
    check('run --db=FILE stores the run', p.returncode == 0 and os.path.exists(db)
          and 'stored in ' + db in p.stderr, p)
    p = hl('run', '--db', db, '-q', '--', LEAKER)
    check('run --db FILE -q: no "stored" message', p.returncode == 0
          and 'stored in' not in p.stderr, p)
    p = hl('report', '--db=' + db, '--run=1', '--format=json')
    check('report --db=FILE --run=1 --format=json', p.returncode == 0
          and '"heapledger-report"' in p.stdout, p)
    p = hl('report', '--db', db, '--run', '2')
    check('report --db FILE --run 2', p.returncode == 0 and 'run 2' in p.stdout
          and 'bytes in' in p.stdout, p)
    p = hl('report', '--db', db, '--run', '99')
    check('report of a missing run exits 125 naming it', p.returncode == 125
          and 'no run 99' in p.stderr and p.stdout == '', p)
    p = hl('report', '--db', os.path.join(TMP, 'absent.db'))
    check('report of a missing database exits 125', p.returncode == 125, p)
    check('report does not create the database it reads',
          not os.path.exists(os.path.join(TMP, 'absent.db')), p)

    default_database()

    # The hook names the valid values of a bad HEAPLEDGER_OPTIONS entry.
    e = dict(os.environ, LD_PRELOAD=LIB, HEAPLEDGER_OPTIONS='depth=999:nosuchkey=1:summary=0:leaks=0')
    p = subprocess.run(['true'], env=e, capture_output=True, text=True, timeout=60)
    check('bad depth names its range', "entry 'depth=999' (valid: depth=0..256)" in p.stderr, p)
    check('unknown key lists the keys', "entry 'nosuchkey=1' (keys: depth=0..256 " in p.stderr, p)
    check('a bad entry does not stop the program', p.returncode == 0, p)

    for f in failures:
        print('FAIL:', f)
    print('%d failures' % len(failures))
    return 1 if failures else 0


with tempfile.TemporaryDirectory() as TMP:
    status = main()
sys.exit(status)
