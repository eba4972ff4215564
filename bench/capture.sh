#!/usr/bin/env bash
# bench/capture.sh [BUILD]: the cost of one stack capture, in ns per
# malloc+free pair, under glibc and the hook's three capture modes, at three
# stack depths and for one call site (memo hits) or 300 rotating ones (memo
# misses). Prints a markdown table; the median of 5 runs per cell.
set -euo pipefail
build=${1:-build}
bin=$build/bench/capture
lib=$build/libhook/libheapledger.so
[ -x "$bin" ] && [ -f "$lib" ] || { echo "build $build first (ninja -C $build)" >&2; exit 1; }

# cell DEPTH SITES ENV...: median ns per pair of 5 runs.
cell() {
	local depth=$1 sites=$2
	shift 2
	for _ in 1 2 3 4 5; do
		env HEAPLEDGER_LOG=/dev/null "$@" "$bin" "$depth" "$sites" | awk '/^ns_per_pair/ { print $2 }'
	done | sort -n | sed -n 3p
}

echo "| depth | sites | glibc | stacks=0 | stack_cache=0 (unw_backtrace) | default (memo) |"
echo "|---:|---:|---:|---:|---:|---:|"
for depth in 4 20 60; do
	for sites in 1 300; do
		[ "$sites" = 300 ] && [ "$depth" != 20 ] && continue
		echo "| $depth | $sites | $(cell "$depth" "$sites") | $(cell "$depth" "$sites" LD_PRELOAD="$lib" HEAPLEDGER_OPTIONS=stacks=0) | $(cell "$depth" "$sites" LD_PRELOAD="$lib" HEAPLEDGER_OPTIONS=stack_cache=0) | $(cell "$depth" "$sites" LD_PRELOAD="$lib") |"
	done
done
