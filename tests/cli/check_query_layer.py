#!/usr/bin/env python3
"""tests/cli/check_query_layer.py: the one query layer stays below its
outputs. reporter/store/ reads the database and returns model structs: no
file there includes a header of reporter/formats/, reporter/cli/ or ui/,
and the store does not use jansson (but for JSON_IN_STORE), whose JSON is
the formats' business. reporter/formats/ renders
model structs: it includes nothing of reporter/cli/ or ui/.

And there is one read path: no file of reporter/ or ui/ outside
reporter/store/query_*.[ch] has SQL that reads a run's tables (a SELECT
whose FROM or JOIN names one), so the report, the gate and the web UI
cannot read a run two ways. The store's write side is the exception, each
file for the reason given in WRITE_SIDE: what it selects is what it
writes, never what an output shows. No SQL spells a leak class's word
either: they come from include/heapledger/classes.h's table.

usage: check_query_layer.py SOURCE_ROOT
"""
import glob
import os
import re
import sys

ROOT = sys.argv[1]


def headers(folder):
    return {os.path.basename(h) for h in glob.glob(os.path.join(ROOT, folder, "*.h"))}


def includes(path):
    with open(path, encoding="utf-8") as f:
        return re.findall(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', f.read(), re.M)


# The store's files that still use jansson, and why.
JSON_IN_STORE = {
    "store.c": "a process's and a run's argv are stored as a JSON array of strings",
}
# The tables (and views) a run is stored in (schema.sql).
RUN_TABLES = {
    "runs", "run_labels", "processes", "summaries", "modules", "module_rows", "symbols",
    "stacks", "stack_frames", "stack_aggregates", "stack_aggregate_rows", "leaks",
    "leak_records", "leaked_blocks", "errors", "timeline", "frames", "leak_sites", "checks",
    "check_records", "unstopped_threads",
}
WRITE_SIDE = {
    "reporter/store/store.c": "the writer: ids of rows it wrote (symbols, frames, stacks)",
    "reporter/store/store_open.c": "opening: the schema's version and tables",
    "reporter/store/store_prune.c": "pruning: the runs and rows it deletes",
    "reporter/store/store_import.c": "importing: the rows it copies from another database",
}


def sql_text(path):
    """The file's C string literals, comments removed, joined by spaces."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return " ".join(re.findall(r'"((?:[^"\\\n]|\\.)*)"', text))


def run_reads(path):
    """The run tables a SELECT of the file reads."""
    text = sql_text(path)
    if not re.search(r"\bSELECT\b", text, re.I):
        return set()
    named = re.findall(r"\b(?:FROM|JOIN)\s+(?:main\.|src\.)?(\w+)", text, re.I)
    return {t for t in named if t.lower() in RUN_TABLES}


def one_read_path():
    bad = []
    files = glob.glob(os.path.join(ROOT, "reporter/**/*.[ch]"), recursive=True)
    files += glob.glob(os.path.join(ROOT, "ui/**/*.[ch]"), recursive=True)
    for path in sorted(files):
        rel = os.path.relpath(path, ROOT)
        if re.match(r"reporter/store/query_\w+\.[ch]$", rel) or rel in WRITE_SIDE:
            continue
        tables = run_reads(path)
        if tables:
            bad.append("%s reads %s with SQL of its own (the query layer, "
                       "reporter/store/query_*.c, is the one read path)"
                       % (rel, ", ".join(sorted(tables))))
    return bad


def class_words():
    """The leak class words of include/heapledger/classes.h's table."""
    with open(os.path.join(ROOT, "include/heapledger/classes.h"), encoding="utf-8") as f:
        return re.findall(r'X\(HL_CLASS_\w+,\s*"(\w+)"', f.read())


def spelled_classes():
    """SQL of reporter/ or ui/ that spells a class word ('reachable'): the
    words come from classes.h (query_int.h: HL_SQL_CLASS)."""
    bad = []
    words = class_words()
    files = glob.glob(os.path.join(ROOT, "reporter/**/*.[ch]"), recursive=True)
    files += glob.glob(os.path.join(ROOT, "ui/**/*.[ch]"), recursive=True)
    for path in sorted(files):
        text = sql_text(path)
        spelled = sorted({w for w in words if re.search(r"'%s'" % w, text)})
        if spelled:
            bad.append("%s spells the class words %s in SQL" %
                       (os.path.relpath(path, ROOT), ", ".join(spelled)))
    return bad


def main():
    above_store = headers("reporter/formats") | headers("reporter/cli") | headers("ui")
    above_formats = headers("reporter/cli") | headers("ui")
    bad = []
    for path in sorted(glob.glob(os.path.join(ROOT, "reporter/store/*.[ch]"))):
        name = os.path.basename(path)
        for inc in includes(path):
            if os.path.basename(inc) in above_store:
                bad.append("%s includes %s, a header of a higher stage" % (name, inc))
            if inc == "jansson.h" and name not in JSON_IN_STORE:
                bad.append("%s (the store) includes jansson.h" % name)
    for path in sorted(glob.glob(os.path.join(ROOT, "reporter/formats/*.[ch]"))):
        for inc in includes(path):
            if os.path.basename(inc) in above_formats:
                bad.append("formats/%s includes %s" % (os.path.basename(path), inc))
    bad += one_read_path()
    bad += spelled_classes()
    if bad:
        print("FAIL:\n" + "\n".join(bad))
        sys.exit(1)
    print("ok: the store and the formats include nothing above them, and only the query"
          " layer reads a run")


main()
