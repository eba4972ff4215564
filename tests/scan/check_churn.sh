#!/bin/sh
# tests/scan/check_churn.sh LIB PROG: scan_check_churn's 11 on-demand checks
# (10 by heapledger_check_leaks, 1 by check_signal) ran while its threads
# allocated; every thread stopped for each; the block leaked before the
# first check is definitely lost in each (and nothing else is: a block
# caught in the middle of malloc is not a leak), and in the exit report.
set -u
lib=$1 prog=$2
log=$(mktemp) || exit 1
trap 'rm -f "$log"' EXIT
env -u HEAPLEDGER_SOCKET HEAPLEDGER_LOG="$log" HEAPLEDGER_OPTIONS=check_signal=SIGUSR2 \
	LD_PRELOAD="$lib" "$prog" || { echo "program failed: $?"; cat "$log"; exit 1; }
fail=0
n=$(grep -c "leak check [0-9]*" "$log")
[ "$n" = 11 ] || { echo "expected 11 leak checks, found $n"; fail=1; }
grep -q "did not stop" "$log" && { echo "a thread did not stop"; fail=1; }
sed -n '/leak check 1:/,/leak check 2/p' "$log" | grep -q "4,242 bytes in 1 blocks are definitely lost" ||
	{ echo "check 1 lacks the leak"; fail=1; }
# Blocks caught in the middle of malloc or free are never taken for leaks.
grep "definitely lost: " "$log" | grep -v "definitely lost: 4,242 .*bytes in 1 .*blocks" &&
	{ echo "a check saw more than the one leak"; fail=1; }
tail -8 "$log" | grep -q "definitely lost: 4,242 bytes in 1 blocks" ||
	{ echo "the exit report lacks the leak"; fail=1; }
[ $fail = 0 ] || cat "$log"
exit $fail
