#!/bin/sh
# tests/scan/check_classes.sh LIB PROG [ARGS...]: the leak classes of the
# hook's standalone LEAK SUMMARY must equal valgrind's, byte for byte and
# block for block (valgrind --leak-check=full --show-leak-kinds=all with its
# defaults, run here as the oracle). EXPECT="definitely lost: 1 bytes in 1
# blocks|..." (optional) also names lines that must be in both. A program
# that checks on demand (VALGRIND_DO_LEAK_CHECK, heapledger_check_leaks)
# has one LEAK SUMMARY per check: all must be equal, in order.
set -u
lib=$1
shift
command -v valgrind >/dev/null || { echo "valgrind is not installed"; exit 1; }
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
valgrind --leak-check=full --show-leak-kinds=all --log-file="$tmp/vg.log" "$@" \
	>/dev/null || { echo "program failed under valgrind"; cat "$tmp/vg.log"; exit 1; }
env -u HEAPLEDGER_SOCKET HEAPLEDGER_LOG="$tmp/hl.log" HEAPLEDGER_OPTIONS="${HL_OPTIONS:-}" \
	LD_PRELOAD="$lib" "$@" >/dev/null || { echo "program failed under the hook"; cat "$tmp/hl.log"; exit 1; }
# The four classes of every LEAK SUMMARY (on-demand checks, then the exit's),
# without the "==pid==" prefix.
classes() {
	awk '/LEAK SUMMARY:/ { n = NR; print "LEAK SUMMARY" }
	     n && NR > n && NR <= n + 4 { sub(/^==[0-9]+== +/, ""); print }' "$1"
}
classes "$tmp/vg.log" >"$tmp/vg.classes"
classes "$tmp/hl.log" >"$tmp/hl.classes"
fail=0
if ! cmp -s "$tmp/vg.classes" "$tmp/hl.classes"; then
	echo "classes differ from valgrind's (- valgrind, + heapledger):"
	diff "$tmp/vg.classes" "$tmp/hl.classes"
	fail=1
fi
old_ifs=$IFS
IFS='|'
for line in ${EXPECT:-}; do
	grep -qF -- "$line" "$tmp/vg.classes" || { echo "valgrind lacks: $line"; fail=1; }
done
IFS=$old_ifs
if [ $fail = 1 ]; then
	echo "---- valgrind ----"; cat "$tmp/vg.log"
	echo "---- heapledger ----"; cat "$tmp/hl.log"
	exit 1
fi
cat "$tmp/hl.classes"
