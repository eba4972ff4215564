#!/usr/bin/env bash
# scripts/demo.sh: run the leaky demo program (scripts/demo/leaky.c) under
# heapledger and show what it finds. Run scripts/setup.sh first.
#
# With the reporter built (build/reporter/heapledger), the program runs under
# `heapledger run`, which prints the heap summary and the leak report and adds
# the run to the demo's history, BUILD_DIR/demo.db (in the build directory, so
# nothing lands in the user's own history or the source tree), and the demo
# says how to open that history in the web UI. Without the reporter, the hook
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

status=0
if [ -x "$reporter" ]; then
	db=$build_dir/demo.db
	echo "demo: $reporter run --db $db -- $leaky" >&2
	"$reporter" run --db "$db" -- "$leaky" || status=$?
	echo "demo: the run is kept in $db; to look at it in a browser:" >&2
	echo "demo:   $reporter ui --db $db" >&2
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
