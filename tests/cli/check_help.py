#!/usr/bin/env python3
"""tests/cli/check_help.py HEAPLEDGER MAN_PAGE MANUAL: help without surprises.

Every command and subcommand that `heapledger --help` lists answers --help on
stdout with exit 0 (`baseline --help` and `db --help` included), in lines of
at most 80 columns. The built man page renders with `man -l` without
warnings or stray scdoc markup (a literal `_N_` or `*word*`) and has a section
for every command. The user manual (doc/manual.md) names every option each
command's --help lists, and every option its synopsis block names exists, so
the manual's reference cannot drift from the option tables."""
import os
import re
import subprocess
import sys

HL, MAN, MANUAL = sys.argv[1:4]
WIDTH = 80
failures = []


def check(what, ok, detail=''):
    print(('ok: ' if ok else 'FAIL: ') + what + ('' if ok else '\n' + str(detail)))
    if not ok:
        failures.append(what)


def help_of(*words):
    p = subprocess.run([HL, *words, '--help'], capture_output=True, text=True, timeout=60)
    name = ' '.join(words) or 'heapledger'
    check('%s --help exits 0' % name, p.returncode == 0, p.stderr)
    long_lines = [l for l in p.stdout.splitlines() if len(l) > WIDTH]
    check('%s --help fits in %d columns' % (name, WIDTH), not long_lines and p.stdout,
          '\n'.join(long_lines))
    return p.stdout


def options_of(text):
    """The long options a --help lists (two to six spaces in, then --name)."""
    return set(re.findall(r'^ {2,6}(?:-\w, )?--([\w-]+)', text, re.M)) - {'help'}


def commands():
    text = help_of()
    listing = text[text.index('Commands'):].split('\n\n')[0].splitlines()[1:]
    return [line.split()[0] for line in listing]


def main():
    cmds = commands()
    helps = {}
    for cmd in cmds:
        helps[cmd] = help_of(cmd)
        sub = re.match(r'usage: heapledger %s (\w+) ' % cmd, helps[cmd])
        if sub:                      # baseline export, db prune
            helps[cmd] = help_of(cmd, sub.group(1))
            check('%s --help is its subcommand\'s' % cmd, helps[cmd] == help_of(cmd))

    env = dict(os.environ, MANWIDTH=str(WIDTH), MAN_KEEP_FORMATTING='0')
    p = subprocess.run(['man', '-l', '-Tutf8', MAN], capture_output=True, text=True, env=env,
                       timeout=60)
    page = subprocess.run(['col', '-b'], input=p.stdout, capture_output=True, text=True).stdout
    check('man -l renders the page without warnings', p.returncode == 0 and not p.stderr.strip(),
          p.stderr)
    stray = re.findall(r'(?<![A-Za-z0-9])_[A-Za-z][A-Za-z0-9]*_(?![A-Za-z0-9])|\*[A-Za-z-]+\*',
                       page)
    check('the man page has no stray markup', not stray, stray)
    for cmd in cmds:
        check('the man page documents %s' % cmd, re.search(r'^\s+heapledger %s\b' % cmd, page,
                                                             re.M), cmd)

    manual = open(MANUAL, encoding='utf-8').read()
    synopsis = manual[manual.index('## Commands'):]
    synopsis = synopsis[synopsis.index('```') + 3:]
    synopsis = synopsis[:synopsis.index('```')]
    for cmd in cmds:
        opts = options_of(helps[cmd])
        missing = sorted(o for o in opts if '--' + o not in manual)
        check('doc/manual.md names every option of %s' % cmd, not missing, missing)
        lines = [l for l in re.split(r'\n(?=heapledger )', synopsis)
                 if l.startswith('heapledger %s ' % cmd)]
        check('doc/manual.md\'s synopsis has %s' % cmd, lines, cmd)
        named = set(re.findall(r'--([\w-]+)', ' '.join(lines))) - {'help', 'version'}
        unknown = sorted(named - opts)
        check('doc/manual.md\'s synopsis of %s names only its options' % cmd, not unknown,
              unknown)
    if failures:
        sys.exit('%d failed: %s' % (len(failures), ', '.join(failures)))


if __name__ == '__main__':
    main()
