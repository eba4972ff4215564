#!/usr/bin/env python3
"""reporter/store/embed_sql.py: turns schema.sql into a C header holding it as one
string, so the binary carries its schema and needs no data files."""
import sys

src, dst, name = sys.argv[1], sys.argv[2], sys.argv[3]
with open(src, encoding="utf-8") as f:
    text = f.read()
lines = ["/* Generated from %s by embed_sql.py; do not edit. */" % src.split("/")[-1],
         "static const char %s[] =" % name]
for line in text.splitlines(keepends=True):
    esc = line.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    lines.append('\t"%s"' % esc)
lines.append("\t;")
with open(dst, "w", encoding="utf-8") as f:
    f.write("\n".join(lines) + "\n")
