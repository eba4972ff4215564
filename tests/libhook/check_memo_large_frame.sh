#!/bin/sh
# tests/libhook/check_memo_large_frame.sh LIB COUNTER PROG: PROG (large_frame)
# makes 20,000 allocations from one stack under a 64 KiB frame, standalone
# with the preload COUNTER (unwind_count) before the hook. The stack memo
# must answer them: at most a few hundred libunwind walks (a memo that
# cannot reach over the frame walks once an allocation: 20,000).
set -u
lib=$1 counter=$2 prog=$3
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
env -u HEAPLEDGER_SOCKET HEAPLEDGER_OPTIONS=summary=0:leaks=0:stack_cache=1 \
	UNWIND_COUNT_FILE="$out" LD_PRELOAD="$counter $lib" "$prog" || { echo "program failed"; exit 1; }
walks=$(cat "$out")
case $walks in
'' | *[!0-9]*) echo "no count of libunwind walks: '$walks'"; exit 1 ;;
esac
echo "libunwind walks: $walks for 20,000 allocations"
[ "$walks" -ge 1 ] || { echo "the counter saw no walk: it does not sit before the hook"; exit 1; }
[ "$walks" -le 500 ] || { echo "the stack memo did not answer the allocations under the 64 KiB frame"; exit 1; }
