#!/usr/bin/env python3
"""scripts/options_table.py: keeps a document's HEAPLEDGER_OPTIONS table equal
to the one the code defines (libhook/options.h, printed by options_doc).

  options_table.py check  DOC OPTIONS_DOC   exit 1 with a diff if DOC differs
  options_table.py update DOC OPTIONS_DOC   rewrite DOC's table in place
  options_table.py splice SRC OPTIONS_DOC OUT   (scdoc) replace the line
                                            @HEAPLEDGER_OPTIONS_TABLE@ of SRC
  options_table.py man    PAGE OPTIONS_DOC  exit 1 unless the built man page
                                            (roff) has every key, in order

OPTIONS_DOC is the built program (build/libhook/options_doc). In a markdown
DOC the table sits between the two marker comments below.
"""
import difflib
import subprocess
import sys

BEGIN = '<!-- HEAPLEDGER_OPTIONS keys: generated from libhook/options.h by scripts/options_table.py update -->'
END = '<!-- end of HEAPLEDGER_OPTIONS keys -->'
SPLICE = '@HEAPLEDGER_OPTIONS_TABLE@'


def generated(program, fmt):
    return subprocess.run([program, fmt], check=True, capture_output=True,
                          text=True).stdout


def split(text, doc):
    try:
        head, rest = text.split(BEGIN + '\n', 1)
        table, tail = rest.split(END, 1)
    except ValueError:
        sys.exit(f'options_table: {doc} has no {BEGIN!r} ... {END!r} markers')
    return head, table, tail


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ('check', 'update', 'splice', 'man'):
        sys.exit(__doc__)
    mode, doc, program = sys.argv[1:4]
    with open(doc, encoding='utf-8') as f:
        text = f.read()
    if mode == 'man':
        keys = [line.split('`')[1] for line in generated(program, 'markdown').splitlines()
                if line.startswith('| `')]
        at = 0
        for key in keys:
            at = text.find(key, at)
            if at < 0:
                print(f'options_table: {doc} lacks the key {key}')
                return 1
        return 0
    if mode == 'splice':
        if SPLICE not in text:
            sys.exit(f'options_table: {doc} has no {SPLICE} line')
        with open(sys.argv[4], 'w', encoding='utf-8') as f:
            f.write(text.replace(SPLICE + '\n', generated(program, 'scdoc')))
        return 0
    head, table, tail = split(text, doc)
    want = generated(program, 'markdown')
    if table == want:
        return 0
    if mode == 'update':
        with open(doc, 'w', encoding='utf-8') as f:
            f.write(head + BEGIN + '\n' + want + END + tail)
        return 0
    sys.stdout.writelines(difflib.unified_diff(
        table.splitlines(True), want.splitlines(True), doc, 'libhook/options.h'))
    print(f'options_table: {doc} differs from libhook/options.h; run '
          f'scripts/options_table.py update {doc} {program}')
    return 1


if __name__ == '__main__':
    sys.exit(main())
