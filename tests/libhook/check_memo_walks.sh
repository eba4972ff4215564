#!/bin/sh
# tests/libhook/check_memo_walks.sh LIB COUNTER PROG [MAX]: PROG makes
# allocations from stacks the hook's stack memo should answer, standalone
# with the preload COUNTER (unwind_count) before the hook: they may need at
# most MAX libunwind walks (default 500; PROG's comment says what a memo
# that cannot answer them needs).
set -u
lib=$1 counter=$2 prog=$3 max=${4:-500}
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
env -u HEAPLEDGER_SOCKET HEAPLEDGER_OPTIONS=summary=0:leaks=0:stack_cache=1 \
	UNWIND_COUNT_FILE="$out" LD_PRELOAD="$counter $lib" "$prog" || { echo "program failed"; exit 1; }
walks=$(cat "$out")
case $walks in
'' | *[!0-9]*) echo "no count of libunwind walks: '$walks'"; exit 1 ;;
esac
echo "libunwind walks: $walks for $(basename "$prog")'s allocations (at most $max)"
[ "$walks" -ge 1 ] || { echo "the counter saw no walk: it does not sit before the hook"; exit 1; }
[ "$walks" -le "$max" ] || { echo "the stack memo did not answer the allocations"; exit 1; }
