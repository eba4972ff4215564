#!/bin/sh
# tests/libhook/check_stderr_reused.sh LIB PROG: the hook's standalone summary
# goes to the stderr the program started with, never to a file that later
# took fd 2. With stderr open at start the summary goes to the hook's copy of
# that stderr; with HEAPLEDGER_LOG it goes to the log as usual.
set -u
lib=$1 prog=$2
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0
env -u HEAPLEDGER_SOCKET -u HEAPLEDGER_LOG LD_PRELOAD="$lib" "$prog" "$dir/data" \
	2>"$dir/stderr" || { echo "program failed: $?"; fail=1; }
if [ "$(cat "$dir/data")" != "program data" ]; then
	echo "the data file holds more than the program wrote:"; cat "$dir/data"; fail=1
fi
grep -q "in use at exit: 100 bytes in 1 blocks" "$dir/stderr" ||
	{ echo "the summary did not reach the original stderr:"; cat "$dir/stderr"; fail=1; }
# stderr closed before the program even started: same.
env -u HEAPLEDGER_SOCKET -u HEAPLEDGER_LOG LD_PRELOAD="$lib" "$prog" "$dir/data2" 2>&- ||
	{ echo "program failed with stderr closed: $?"; fail=1; }
if [ "$(cat "$dir/data2")" != "program data" ]; then
	echo "stderr closed at start: the data file holds more:"; cat "$dir/data2"; fail=1
fi
env -u HEAPLEDGER_SOCKET HEAPLEDGER_LOG="$dir/log" LD_PRELOAD="$lib" "$prog" "$dir/data3" ||
	{ echo "program failed with a log: $?"; fail=1; }
grep -q "in use at exit: 100 bytes in 1 blocks" "$dir/log" ||
	{ echo "HEAPLEDGER_LOG did not get the summary:"; cat "$dir/log"; fail=1; }
[ "$(cat "$dir/data3")" = "program data" ] || { echo "data3 corrupted"; fail=1; }
exit $fail
