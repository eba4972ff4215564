#!/usr/bin/env python3
"""doc/help_to_scdoc.py HEAPLEDGER SRC OUT: fills heapledger(1)'s scdoc source
from the command's own --help, so the man page lists every command and option
the code defines (reporter/cli/args.h tables) and cannot drift from them.

  @SYNOPSIS@   one line per command: its usage line
  @COMMANDS@   per command: usage, what it does, and its options
"""
import re
import subprocess
import sys


def escape(text):
    return re.sub(r'([\\*_])', r'\\\1', text)


def helptext(hl, *args):
    """--help of a command; of its subcommand when it names one instead
    (heapledger baseline export)."""
    p = subprocess.run([hl, *args, '--help'], capture_output=True, text=True)
    if p.returncode == 0:
        return p.stdout
    m = re.search(r"Try 'heapledger (.+) --help'", p.stderr)
    if m and m.group(1).split() != list(args):
        return helptext(hl, *m.group(1).split())
    sys.exit('help_to_scdoc: %s %s --help failed: %s' % (hl, ' '.join(args), p.stderr))


def blocks(text):
    """usage line, summary paragraph, option lines, extra paragraphs."""
    paragraphs = [p for p in text.split('\n\n') if p.strip()]
    usage = paragraphs[0].strip()[len('usage: '):]
    summary = ' '.join(paragraphs[1].split())
    options = []
    for line in paragraphs[2].splitlines()[1:]:   # after "Options:"
        # An option starts at column 2 ("-q, --quiet") or 6 ("--db FILE");
        # its help follows two spaces on, or on the lines below when the
        # name is long; wrapped help goes on at the help column.
        m = re.match(r' {2,6}(?:-(\w), )?--(\S+)(?: (\S+))?(?: {2,}(.*))?$', line)
        if m:
            options.append(list(m.groups()[:3]) + [m.group(4) or ''])
        elif options:
            options[-1][3] = (options[-1][3] + ' ' + line.strip()).strip()
    extra = [' '.join(p.split()) for p in paragraphs[3:] if not p.startswith('The manual')]
    return usage, summary, options, extra


def commands(hl):
    text = helptext(hl)
    listing = text[text.index('Commands'):].split('\n\n')[0].splitlines()[1:]
    return [line.split()[0] for line in listing]


def usage_line(usage):
    words = usage.split(' ', 2)   # heapledger CMD rest
    return '*%s %s* %s' % (words[0], words[1], escape(words[2]) if len(words) > 2 else '')


def command_section(hl, cmd):
    usage, summary, options, extra = blocks(helptext(hl, cmd))
    out = [usage_line(usage), '\t' + escape(summary), '']
    for short, name, value, text in options:
        term = ('*-%s*, ' % short if short else '') + '*--%s*' % escape(name)
        if value:
            term += ' _%s_' % escape(value)
        out += ['\t' + term, '\t\t' + escape(text), '']
    for paragraph in extra:
        out += ['\t' + escape(paragraph), '']
    return out


def main():
    hl, src, dst = sys.argv[1:4]
    cmds = commands(hl)
    synopsis, sections = [], []
    for cmd in cmds:
        synopsis += [usage_line(blocks(helptext(hl, cmd))[0]), '']
        sections += command_section(hl, cmd)
    with open(src, encoding='utf-8') as f:
        text = f.read()
    text = text.replace('@SYNOPSIS@\n', '\n'.join(synopsis) + '\n')
    text = text.replace('@COMMANDS@\n', '\n'.join(sections) + '\n')
    with open(dst, 'w', encoding='utf-8') as f:
        f.write(text)


if __name__ == '__main__':
    main()
