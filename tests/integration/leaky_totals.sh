#!/usr/bin/env bash
# tests/integration/leaky_totals.sh LIB LEAKY: the hook's HEAP SUMMARY for the
# demo program (scripts/demo/leaky.c) must agree with valgrind's, number for
# number, and with the figures worked out by hand from the source:
#   in use at exit: 400 bytes in 4 blocks   (3 x 48 from open_session,
#                                            1 x 256 from cache_insert)
#   total heap usage: 2,010 allocs, 2,006 frees   (valgrind counts the same)
#   peak heap usage: 26,016 bytes   (the leaks, 400, plus churn()'s last
#                                    big round, 1024 + 6 * 4096, plus its
#                                    16-byte strdup: 400 + 25,600 + 16)
# stdout must be the same plain, under valgrind and under the hook.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 LIB LEAKY" >&2; exit 2; }
lib=$1
leaky=$2

fail() {
	echo "FAIL [leaky totals]: $*" >&2
	exit 1
}

[ -f "$lib" ] || fail "hook library '$lib' does not exist (build libhook first)"
[ -x "$leaky" ] || fail "demo program '$leaky' does not exist (build scripts/leaky first)"
command -v valgrind >/dev/null || fail "valgrind is not installed (scripts/setup.sh installs it)"
lib=$(realpath "$lib")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/heapledger-leaky.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# summary_line FILE WORDS: the first line containing WORDS, without the
# "==pid== " prefix both tools put in front of it.
summary_line() {
	grep -m1 -F "$2" "$1" | sed -e 's/^==[0-9]*== *//' || true
}

env -i PATH=/usr/bin:/bin "$leaky" >"$tmp/plain.out"
env -i PATH=/usr/bin:/bin valgrind --log-file="$tmp/valgrind.log" "$leaky" \
	>"$tmp/valgrind.out" || fail "leaky failed under valgrind"
env -i PATH=/usr/bin:/bin LD_PRELOAD="$lib" HEAPLEDGER_LOG="$tmp/hook.log" "$leaky" \
	>"$tmp/hook.out" || fail "leaky failed under the hook"
[ -s "$tmp/hook.log" ] || fail "no HEAPLEDGER_LOG written: was $lib loaded?"

cmp -s "$tmp/plain.out" "$tmp/valgrind.out" || fail "stdout differs under valgrind"
if ! cmp -s "$tmp/plain.out" "$tmp/hook.out"; then
	diff "$tmp/plain.out" "$tmp/hook.out" >&2 || true
	fail "stdout differs under the hook"
fi

status=0
check() { # what expected actual
	if [ "$2" != "$3" ]; then
		echo "FAIL [leaky totals]: $1: expected '$2', got '$3'" >&2
		status=1
	fi
}
for words in "in use at exit:" "total heap usage:"; do
	vg=$(summary_line "$tmp/valgrind.log" "$words")
	hook=$(summary_line "$tmp/hook.log" "$words")
	check "hook vs valgrind, '$words'" "$vg" "$hook"
done
check "valgrind, in use at exit" "in use at exit: 400 bytes in 4 blocks" \
	"$(summary_line "$tmp/valgrind.log" "in use at exit:")"
check "hook, total heap usage" "total heap usage: 2,010 allocs, 2,006 frees, 13,324,397 bytes allocated" \
	"$(summary_line "$tmp/hook.log" "total heap usage:")"
check "hook, peak" "peak heap usage: 26,016 bytes" \
	"$(summary_line "$tmp/hook.log" "peak heap usage:")"
if [ "$status" -ne 0 ]; then
	echo "---- hook log ----" >&2
	cat "$tmp/hook.log" >&2
	exit 1
fi
echo "ok [leaky totals]: hook and valgrind agree: $(summary_line "$tmp/hook.log" "in use at exit:")"
