#!/bin/sh
# tests/libhook/check_secure.sh PROG: a setuid copy of PROG (linked with the
# hook, as /etc/ld.so.preload would load it) ignores HEAPLEDGER_LOG and
# HEAPLEDGER_OPTIONS: the log the caller names is not created, summary=0 is
# not obeyed. Needs root (to make a copy owned by nobody); skipped otherwise.
set -u
prog=$1
[ "$(id -u)" = 0 ] || { echo "skip: not root"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
chmod 755 "$dir"
mkdir "$dir/open" && chmod 777 "$dir/open"
cp "$prog" "$dir/prog" && chown nobody "$dir/prog" && chmod 4755 "$dir/prog" || exit 1
[ "$("$dir/prog" euid)" = "$(id -u nobody)" ] || { echo "skip: setuid not honoured here"; exit 77; }
fail=0
HEAPLEDGER_OPTIONS=summary=0:leaks=0 HEAPLEDGER_LOG="$dir/open/log" HEAPLEDGER_SOCKET="$dir/open/sock" \
	"$dir/prog" churn 2>"$dir/stderr" || { echo "program failed: $?"; fail=1; }
[ -e "$dir/open/log" ] && { echo "HEAPLEDGER_LOG was followed under secure execution"; fail=1; }
grep -q "in use at exit: 100 bytes in 1 blocks" "$dir/stderr" ||
	{ echo "HEAPLEDGER_OPTIONS was obeyed under secure execution:"; cat "$dir/stderr"; fail=1; }
grep -q "reporter" "$dir/stderr" && { echo "HEAPLEDGER_SOCKET was followed:"; cat "$dir/stderr"; fail=1; }
exit $fail
