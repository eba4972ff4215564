#!/bin/sh
# tests/run/check_vfork_clone.sh LIB PROG: standalone, a vfork child's _exit(9)
# prints nothing and leaves the parent's summary whole (its leak made after
# the child included); a clone() child prints its own summary.
set -u
lib=$1 prog=$2
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0
env -u HEAPLEDGER_SOCKET -u HEAPLEDGER_LOG LD_PRELOAD="$lib" HEAPLEDGER_OPTIONS=leaks=0 \
	"$prog" vfork 2>"$dir/vfork" || { echo "vfork: exit $?"; fail=1; }
n=$(grep -c "HEAP SUMMARY" "$dir/vfork")
[ "$n" = 1 ] || { echo "vfork: $n summaries, want the parent's alone:"; cat "$dir/vfork"; fail=1; }
grep -q "in use at exit: 48 bytes in 1 blocks" "$dir/vfork" ||
	{ echo "vfork: the parent's summary misses its leak:"; cat "$dir/vfork"; fail=1; }
env -u HEAPLEDGER_SOCKET -u HEAPLEDGER_LOG LD_PRELOAD="$lib" HEAPLEDGER_OPTIONS=leaks=0 \
	"$prog" clone 2>"$dir/clone" || { echo "clone: exit $?"; fail=1; }
grep -q "in use at exit: 24 bytes in 1 blocks" "$dir/clone" ||
	{ echo "clone: no summary from the child:"; cat "$dir/clone"; fail=1; }
grep -q "in use at exit: 48 bytes in 1 blocks" "$dir/clone" ||
	{ echo "clone: the parent's summary misses its leak:"; cat "$dir/clone"; fail=1; }
exit $fail
