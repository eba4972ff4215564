#!/bin/sh
# tests/recipes/check_ctest.sh: doc/manual.md's `ctest -T memcheck` recipe. A
# CMake project of two tests, one of which leaks (tests/recipes/ctest), with
# MEMORYCHECK_TYPE=Valgrind and MEMORYCHECK_COMMAND the heapledger-valgrind
# name of heapledger: CTest runs each test through it with its default
# valgrind options (-q --tool=memcheck --leak-check=yes --show-reachable=yes
# --num-callers=50 --log-file=...), reads the logs, and must count one
# memory leak, in the leaking test only; with --error-exitcode=1 in
# MEMORYCHECK_COMMAND_OPTIONS the leaking test fails and the clean one passes.
# usage: check_ctest.sh HEAPLEDGER LEAK_CHOICE RECIPE_DIR
set -eu
hl=$1 prog=$2 recipe=$3
command -v cmake >/dev/null || { echo "cmake is not installed (scripts/setup.sh installs it)"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ln -s "$hl" "$tmp/heapledger-valgrind"
export HEAPLEDGER_DB="$tmp/history.db"

cmake -S "$recipe" -B "$tmp/b" -DLEAK_CHOICE="$prog" -DMEMORYCHECK_TYPE=Valgrind \
	-DMEMORYCHECK_COMMAND="$tmp/heapledger-valgrind" > "$tmp/cmake.log" 2>&1 ||
	{ cat "$tmp/cmake.log"; fail "cmake"; }
(cd "$tmp/b" && ctest -T memcheck) > "$tmp/ctest.log" 2>&1 || { cat "$tmp/ctest.log"; fail "ctest -T memcheck"; }
cat "$tmp/ctest.log"
grep -Eq "MemCheck: #1: leaky \.+ +Defects: 1" "$tmp/ctest.log" || fail "the leaking test has no defect"
grep -Eq "#2: clean .*Defects" "$tmp/ctest.log" && fail "the clean test has defects"
grep -q "^Memory Leak - 1$" "$tmp/ctest.log" || fail "CTest did not count one memory leak"
grep -q "leak_a" "$tmp"/b/Testing/Temporary/MemoryChecker.1.log || fail "the log has no stack"

# Failing the tests themselves: valgrind's --error-exitcode.
cmake "$tmp/b" -DMEMORYCHECK_COMMAND_OPTIONS="-q --leak-check=full --error-exitcode=1" \
	> "$tmp/cmake2.log" 2>&1 || { cat "$tmp/cmake2.log"; fail "cmake (options)"; }
if (cd "$tmp/b" && ctest -T memcheck) > "$tmp/ctest2.log" 2>&1; then
	cat "$tmp/ctest2.log"; fail "ctest -T memcheck passed with --error-exitcode=1 and a leak"
fi
grep -Eq "leaky \.+\*+Failed" "$tmp/ctest2.log" || { cat "$tmp/ctest2.log"; fail "leaky did not fail"; }
grep -Eq "clean \.+ +Passed" "$tmp/ctest2.log" || { cat "$tmp/ctest2.log"; fail "clean did not pass"; }
echo PASS
