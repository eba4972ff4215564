#!/usr/bin/env bash
# tests/integration/same_output.sh LIB NAME: run integration case NAME twice,
# once plain and once with LIB (libheapledger.so) preloaded, and fail unless
# both runs print the same stdout and exit with the same status. The hooked run
# must also leave its HEAP SUMMARY in $HEAPLEDGER_LOG, which proves the hook
# was loaded and reached its exit path, and print no "heapledger: " warning.
#
# Cases live in cases/ beside this script: python3, sqlite3, git, perl, bash,
# gcc. Each run gets a fresh empty directory as cwd and HOME and a minimal
# environment (env -i), with Debian's /usr/bin first in PATH so user shims
# (pyenv, ...) do not stand between the hook and the program under test.
# Only the program under test is preloaded, never this driver.
set -euo pipefail

usage() {
	echo "usage: $0 LIB NAME   (NAME: python3 sqlite3 git perl bash gcc)" >&2
	exit 2
}

[ $# -eq 2 ] || usage
lib=$1
name=$2
cases=$(cd "$(dirname "${BASH_SOURCE[0]}")/cases" && pwd)
# Seconds per run; a hang in the hook shows up as a clear failure here
# before meson's own timeout kills the whole test.
run_timeout=${SAME_OUTPUT_TIMEOUT:-60}

fail() {
	echo "FAIL [$name]: $*" >&2
	exit 1
}

# Loud on purpose: a missing library is a broken build, not a reason to skip.
[ -f "$lib" ] || fail "hook library '$lib' does not exist (build libhook first)"
lib=$(realpath "$lib")

tmp=$(mktemp -d "${TMPDIR:-/tmp}/heapledger-it-$name.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

# run_case DIR ENV...: run case $name in DIR with exactly the environment
# ENV (NAME=VALUE words); prints the case's stdout, returns its status.
run_case() {
	local dir=$1
	shift
	local envcmd=(env -i PATH=/usr/bin:/bin HOME="$dir" LC_ALL=C TZ=UTC "$@")
	cd "$dir"
	case $name in
	python3) "${envcmd[@]}" python3 "$cases/python3.py" ;;
	sqlite3) "${envcmd[@]}" sqlite3 "$dir/test.db" <"$cases/sqlite3.sql" ;;
	git) "${envcmd[@]}" bash "$cases/git.sh" ;;
	perl) "${envcmd[@]}" perl "$cases/perl.pl" ;;
	bash) "${envcmd[@]}" bash "$cases/bash.sh" ;;
	gcc)
		"${envcmd[@]}" gcc -O2 -Wall -o "$dir/prog" "$cases/gcc.c" &&
			"${envcmd[@]}" "$dir/prog"
		;;
	*) usage ;;
	esac
}

# run MODE ENV...: one run in $tmp/MODE; leaves MODE.out, MODE.err,
# MODE.status in $tmp.
run() {
	local mode=$1
	shift
	mkdir "$tmp/$mode"
	local status=0
	# `timeout` needs a command, so the case runs in a child bash.
	export -f run_case usage
	export name cases
	timeout "$run_timeout" bash -c 'run_case "$@"' run_case "$tmp/$mode" "$@" \
		>"$tmp/$mode.out" 2>"$tmp/$mode.err" || status=$?
	echo "$status" >"$tmp/$mode.status"
	if [ "$status" -eq 124 ]; then
		show_err "$mode"
		fail "$mode run did not finish in ${run_timeout}s"
	fi
}

show_err() {
	echo "---- stderr of the $1 run (last 20 lines) ----" >&2
	tail -n 20 "$tmp/$1.err" >&2
}

log=$tmp/heapledger.log
run plain
# stack_cache=2: every hit of the hook's stack memo is checked against a
# full libunwind walk; a disagreement is a "heapledger: " line, caught below.
run hooked LD_PRELOAD="$lib" HEAPLEDGER_LOG="$log" HEAPLEDGER_OPTIONS=stack_cache=2

plain_status=$(cat "$tmp/plain.status")
hooked_status=$(cat "$tmp/hooked.status")

# A case that fails on its own is broken whatever the hook does.
if [ "$plain_status" -ne 0 ]; then
	show_err plain
	fail "the plain run (no hook) exited with status $plain_status"
fi
if [ ! -s "$tmp/plain.out" ]; then
	fail "the plain run printed nothing; the case checks nothing"
fi
if [ "$hooked_status" -ne "$plain_status" ]; then
	show_err hooked
	fail "exit status differs: plain $plain_status, hooked $hooked_status"
fi
if ! cmp -s "$tmp/plain.out" "$tmp/hooked.out"; then
	echo "---- diff plain hooked (first 40 lines) ----" >&2
	diff "$tmp/plain.out" "$tmp/hooked.out" | head -n 40 >&2 || true
	show_err hooked
	fail "stdout differs between the plain and the hooked run"
fi
# The hook writes misuse reports and its own trouble ("invalid pointer",
# "double free", "cannot reach the reporter") to stderr as "heapledger: ...".
# These programs are well-behaved, so any such line is a hook bug.
if grep -q '^heapledger: ' "$tmp/hooked.err"; then
	echo "---- heapledger lines on stderr of the hooked run ----" >&2
	grep '^heapledger: ' "$tmp/hooked.err" | head -n 20 >&2
	fail "the hook reported errors or warnings for a well-behaved program"
fi
for want in "HEAP SUMMARY" "total heap usage"; do
	if ! grep -q "$want" "$log" 2>/dev/null; then
		show_err hooked
		fail "HEAPLEDGER_LOG has no '$want' line: was $lib loaded?"
	fi
done

echo "ok [$name]: $(wc -l <"$tmp/plain.out") lines of stdout and status $plain_status" \
	"identical with $(basename "$lib"); $(grep -c 'HEAP SUMMARY' "$log") heap summaries logged"
