#!/usr/bin/env python3
"""tests/cli/check_query_layer.py: the one query layer stays below its
outputs. reporter/store/ reads the database and returns model structs: no
file there includes a header of reporter/formats/, reporter/cli/ or ui/,
and the query layer (store_query.h, query_*, store_load.c) does not use
jansson, whose JSON is the outputs' business. reporter/formats/ renders
model structs: it includes nothing of reporter/cli/ or ui/.

And there is one read path: no file of reporter/ or ui/ outside
reporter/store/query_*.[ch] has SQL that reads a run's tables (a SELECT
whose FROM or JOIN names one), so the report, the gate and the web UI
cannot read a run two ways. The store's write side is the exception, each
file for the reason given in WRITE_SIDE: what it selects is what it
writes, never what an output shows.

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


def main():
    above_store = headers("reporter/formats") | headers("reporter/cli") | headers("ui")
    above_formats = headers("reporter/cli") | headers("ui")
    bad = []
    for path in sorted(glob.glob(os.path.join(ROOT, "reporter/store/*.[ch]"))):
        name = os.path.basename(path)
        query = name.startswith("query_") or name in ("store_query.h", "store_load.c")
        for inc in includes(path):
            if os.path.basename(inc) in above_store:
                bad.append("%s includes %s, a header of a higher stage" % (name, inc))
            if query and inc == "jansson.h":
                bad.append("%s (the query layer) includes jansson.h" % name)
    for path in sorted(glob.glob(os.path.join(ROOT, "reporter/formats/*.[ch]"))):
        for inc in includes(path):
            if os.path.basename(inc) in above_formats:
                bad.append("formats/%s includes %s" % (os.path.basename(path), inc))
    bad += one_read_path()
    if bad:
        print("FAIL:\n" + "\n".join(bad))
        sys.exit(1)
    print("ok: the store and the formats include nothing above them, and only the query"
          " layer reads a run")


main()
