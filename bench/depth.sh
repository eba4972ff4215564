#!/usr/bin/env bash
# bench/depth.sh [BUILD]: what the depth= cut costs, in instructions
# (valgrind --tool=callgrind, deterministic; wall time on a shared machine
# is not). For each workload, the program's instructions under glibc, under
# the hook with stacks=0, and with depth=64, 128 and 256 (the default,
# HL_WIRE_MAX_FRAMES), the hook standalone (no reporter: the reporter's
# share of a deeper stack is its interning, once per distinct stack).
#   capture 200 1     malloc+free 200 frames below main, one call site
#                     (stack memo hits)
#   capture 200 300   the same at 300 rotating depths 200-499 (memo misses:
#                     a libunwind walk per allocation)
#   deep.py 40        python3 allocating 1 KiB blocks 40 levels of map()
#                     deep (about 216 C frames to _start)
#   churn 1           bench/churn at 1% (100k malloc/free of shallow
#                     stacks): what a deeper cut costs a program whose
#                     stacks never reach it
# Prints a markdown table: Ir, and per allocation above stacks=0.
set -euo pipefail
build=${1:-build}
cap=$build/bench/capture
lib=$(realpath "$build/libhook/libheapledger.so")
here=$(dirname "$0")
[ -x "$cap" ] && [ -f "$lib" ] || { echo "build $build first (ninja -C $build)" >&2; exit 1; }
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

# ir NAME ENV... -- CMD...: the Ir callgrind counts for CMD's process.
ir() {
	local name=${1// /_} vars=()
	shift
	while [ "$1" != -- ]; do
		vars+=("$1")
		shift
	done
	shift
	env "${vars[@]}" valgrind --tool=callgrind --trace-children=no \
		--callgrind-out-file="$out/$name.cg" "$@" >/dev/null 2>"$out/$name.err" ||
		{ cat "$out/$name.err" >&2; exit 1; }
	awk '/^summary:/ { print $2 }' "$out/$name.cg"
}

row() {
	local label=$1 allocs=$2
	shift 2
	local base hook0 cells=""
	base=$(ir "$label-glibc" -- "$@")
	hook0=$(ir "$label-s0" LD_PRELOAD="$lib" HEAPLEDGER_OPTIONS=stacks=0 -- "$@")
	for depth in 64 128 256; do
		local n
		n=$(ir "$label-$depth" LD_PRELOAD="$lib" HEAPLEDGER_OPTIONS=depth=$depth -- "$@")
		cells="$cells | $n ($(( (n - hook0) / allocs )))"
	done
	echo "| $label | $base | $hook0$cells |"
}

echo "| workload | glibc | stacks=0 | depth=64 | depth=128 | depth=256 |"
echo "|---|---:|---:|---:|---:|---:|"
row "capture 200 1" 20000 "$cap" 200 1 20000
row "capture 200 300" 3000 "$cap" 200 300 3000
row "python3 deep.py 40" 4800 /usr/bin/python3 "$here/real/deep.py" 40 300
row "churn 1" 100000 "$build/bench/churn" 1
