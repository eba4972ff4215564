#!/usr/bin/env bash
# scripts/demo.sh: run the leaky demo program (scripts/demo/leaky.c) under
# heapledger and show what it finds. Run scripts/setup.sh first.
#
# With the reporter built (build/reporter/heapledger), the program runs under
# `heapledger run`, which prints the heap summary and the leak report and keeps
# the run in a SQLite database in a temporary directory. Without it, the hook
# is preloaded directly and prints only its HEAP SUMMARY.
#
# Environment:
#   BUILD_DIR  build directory, relative to the source tree (default: build)
#   JOBS       ninja -j value (default: ninja's own choice)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${BUILD_DIR:-build}
hook=$build_dir/libhook/libheapledger.so
leaky=$build_dir/scripts/leaky
reporter=$build_dir/reporter/heapledger

if [ ! -f "$build_dir/build.ninja" ]; then
	echo "demo: no build in $build_dir/; run scripts/setup.sh first" >&2
	exit 1
fi
# Cheap when nothing changed, and keeps the demo honest after an edit.
ninja -C "$build_dir" ${JOBS:+-j "$JOBS"} >/dev/null

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

status=0
if [ -x "$reporter" ]; then
	echo "demo: $reporter run --db $tmp/demo.db -- $leaky" >&2
	"$reporter" run --db "$tmp/demo.db" -- "$leaky" || status=$?
	echo "demo: the demo database is removed on exit;" \
		"pass --db FILE to heapledger run to keep one" >&2
else
	echo "demo: $reporter not built; preloading the hook directly" >&2
	echo "demo: LD_PRELOAD=$hook $leaky" >&2
	# An absolute path, so programs that change directory still find it.
	LD_PRELOAD=$(realpath "$hook") "$leaky" || status=$?
fi
if [ "$status" -ne 0 ]; then
	echo "demo: exited with status $status" >&2
fi
exit "$status"
