#!/bin/sh
# tests/libhook/check_tricky_stacks.sh LIB PROG: run tricky_stacks standalone
# with the stack memo checked against libunwind on every hit (stack_cache=2).
# No mismatch may be reported, and the leak list must give alpha's 16-byte and
# beta's 24-byte blocks each to its own caller, 1000 apiece, tricky_big_x's
# 88-byte and tricky_big_y's 96-byte blocks likewise (a 64 KiB frame between
# them and the allocation), and each tricky_viaN its own 100 blocks.
set -u
lib=$1 prog=$2
log=$(mktemp) && err=$(mktemp) || exit 1
trap 'rm -f "$log" "$err"' EXIT
env -u HEAPLEDGER_SOCKET HEAPLEDGER_LOG="$log" HEAPLEDGER_OPTIONS=stack_cache=2:scan=0 \
	LD_PRELOAD="$lib" "$prog" 2>"$err" || { echo "program failed"; cat "$err" "$log"; exit 1; }
fail=0
if grep -q '^heapledger: ' "$err"; then
	echo "the hook reported:"; grep '^heapledger: ' "$err" | head; fail=1
fi
# A record is its "N bytes in M blocks" line and the frames after it.
record_of() {
	awk -v want="$1" '/bytes in .* blocks/ { on = index($0, want) > 0 } on' "$log"
}
for spec in '16,000 bytes in 1,000 blocks:tricky_alpha:tricky_beta' \
	'24,000 bytes in 1,000 blocks:tricky_beta:tricky_alpha' \
	'88,000 bytes in 1,000 blocks:tricky_big_x:tricky_big_y' \
	'96,000 bytes in 1,000 blocks:tricky_big_y:tricky_big_x'; do
	head=${spec%%:*} rest=${spec#*:}
	caller=${rest%%:*} other=${rest#*:}
	rec=$(record_of "$head")
	if [ -z "$rec" ]; then
		echo "missing record: $head"; fail=1; continue
	fi
	echo "$rec" | grep -q ": $caller+" || { echo "$head: $caller not in its stack"; fail=1; }
	if echo "$rec" | grep -q ": $other+"; then
		echo "$head: $other in its stack"; fail=1
	fi
done
# The eight callers of one wrapper: each its own 100 blocks.
for n in 0 1 2 3 4 5 6 7; do
	bytes=$(( (8 * (n + 1) + 100) * 100 ))
	rec=$(record_of "$(printf '%d,%03d' $((bytes / 1000)) $((bytes % 1000))) bytes in 100 blocks")
	if [ -z "$rec" ]; then
		echo "missing record: $bytes bytes in 100 blocks"; fail=1; continue
	fi
	echo "$rec" | grep -q ": tricky_via$n+" || { echo "$bytes bytes: tricky_via$n not in its stack"; fail=1; }
	if echo "$rec" | grep ": tricky_via" | grep -vq ": tricky_via$n+"; then
		echo "$bytes bytes: another caller in its stack"; fail=1
	fi
done
[ $fail = 0 ] || cat "$log"
exit $fail
