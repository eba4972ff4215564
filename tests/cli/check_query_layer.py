#!/usr/bin/env python3
"""tests/cli/check_query_layer.py: the one query layer stays below its
outputs. reporter/store/ reads the database and returns model structs: no
file there includes a header of reporter/formats/, reporter/cli/ or ui/,
and the query layer (store_query.h, query_*, store_load.c) does not use
jansson, whose JSON is the outputs' business. reporter/formats/ renders
model structs: it includes nothing of reporter/cli/ or ui/.

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
    if bad:
        print("FAIL:\n" + "\n".join(bad))
        sys.exit(1)
    print("ok: the store and the formats include nothing above them")


main()
