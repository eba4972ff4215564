#!/bin/sh
# tests/libhook/check_leak_two.sh LIB PROG: plain LD_PRELOAD, no reporter;
# the standalone leak list must name both leaking functions with their bytes.
set -u
lib=$1 prog=$2
log=$(mktemp) || exit 1
trap 'rm -f "$log"' EXIT
env -u HEAPLEDGER_SOCKET HEAPLEDGER_LOG="$log" LD_PRELOAD="$lib" "$prog" || {
	echo "program failed"; cat "$log"; exit 1; }
fail=0
expect() {
	grep -q -- "$1" "$log" || { echo "missing: $1"; fail=1; }
}
# 5 x 1000 from one call site in a loop: one record.
expect '5,000 bytes in 5 blocks'
expect 'at 0x[0-9a-f]*: leak_from_alpha+'
# strdup: the stack reaches the caller of strdup.
expect '48 bytes in 1 blocks'
expect 'by 0x[0-9a-f]*: leak_from_beta+'
# The hook's own frames are not shown.
if grep -q 'hl_track\|hl_allocate\|hl_stack' "$log"; then
	echo "hook frames in the stacks"; fail=1
fi
[ $fail = 0 ] || cat "$log"
exit $fail
