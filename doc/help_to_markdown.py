#!/usr/bin/env python3
"""doc/help_to_markdown.py check|update MANUAL HEAPLEDGER: keeps the option
reference of the user manual (doc/manual.md) equal to the command's own
--help, so the manual, the man page (help_to_scdoc.py) and --help all come
from the option tables in reporter/cli/ and cannot drift.

  check   exit 1 with a diff when MANUAL's reference is not the generated one
  update  rewrite MANUAL's reference in place (run it after changing an option)

The reference sits between the two marker comments below: per command its
usage line, what it does, a table of its options and the help's notes.
"""
import difflib
import sys

from help_to_scdoc import blocks, commands, helptext

BEGIN = ('<!-- option reference: generated from each command\'s --help by '
         'doc/help_to_markdown.py update -->')
END = '<!-- end of option reference -->'


def cell(text):
    return text.replace('|', '\\|')


def reference(hl):
    out = []
    for cmd in commands(hl):
        usage, summary, options, extra = blocks(helptext(hl, cmd))
        out += ['### heapledger %s' % cmd, '', '`%s`' % usage, '', summary, '',
                '| option | meaning |', '|---|---|']
        for short, name, value, text in options:
            term = ('`-%s`, ' % short if short else '') + '`--%s%s`' % (
                name, ' ' + value if value else '')
            out.append('| %s | %s |' % (cell(term), cell(text)))
        for paragraph in extra:
            out += ['', paragraph]
        out.append('')
    return '\n'.join(out)


def main():
    if len(sys.argv) != 4 or sys.argv[1] not in ('check', 'update'):
        sys.exit(__doc__)
    mode, manual, hl = sys.argv[1:4]
    with open(manual, encoding='utf-8') as f:
        text = f.read()
    try:
        head, rest = text.split(BEGIN + '\n', 1)
        current, tail = rest.split(END, 1)
    except ValueError:
        sys.exit('help_to_markdown: %s has no %r ... %r markers' % (manual, BEGIN, END))
    wanted = reference(hl)
    if mode == 'update':
        with open(manual, 'w', encoding='utf-8') as f:
            f.write(head + BEGIN + '\n' + wanted + END + tail)
        return 0
    if current == wanted:
        return 0
    sys.stdout.writelines(difflib.unified_diff(
        current.splitlines(True), wanted.splitlines(True), manual + ' (now)',
        'generated from --help (doc/help_to_markdown.py update %s %s)' % (manual, hl)))
    return 1


if __name__ == '__main__':
    sys.exit(main())
