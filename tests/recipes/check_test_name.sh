#!/bin/sh
# tests/recipes/check_test_name.sh: a test's name stored with its run. No
# runner exports a test's name by itself (meson sets MESON_TEST_ITERATION,
# CTest and make nothing), so the recipe has the runner set
# HEAPLEDGER_TEST_NAME (meson's test(env:), CTest's ENVIRONMENT property) and
# `heapledger run` stores it as the label test=NAME: `heapledger history
# --label test=leaky` finds the leaking test's site, `--label test=clean`
# none, and `--label test=...` on the command line wins over the variable.
# usage: check_test_name.sh HEAPLEDGER LEAK_CHOICE
set -eu
hl=$1 prog=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

mkdir "$tmp/proj"
cat > "$tmp/proj/meson.build" <<EOF2
project('suite', 'c')
prog = find_program('$prog')
test('leaky', prog, args : ['a'], env : {'HEAPLEDGER_TEST_NAME' : 'leaky'})
test('clean', prog, env : {'HEAPLEDGER_TEST_NAME' : 'clean'})
EOF2
meson setup "$tmp/proj/b" "$tmp/proj" > "$tmp/setup.log" 2>&1 || { cat "$tmp/setup.log"; fail "meson setup"; }
meson test -C "$tmp/proj/b" --wrapper "$hl run -q --db $tmp/h.db --" > "$tmp/mt.log" 2>&1 ||
	{ cat "$tmp/mt.log"; fail "meson test"; }
"$hl" history --db "$tmp/h.db" --label test=leaky > "$tmp/leaky.txt"
grep -q "leak_a" "$tmp/leaky.txt" || { cat "$tmp/leaky.txt"; fail "the leaky test's run has no test=leaky label"; }
"$hl" history --db "$tmp/h.db" --label test=clean > "$tmp/clean.txt"
grep -q "0 leak sites in 1 run" "$tmp/clean.txt" || { cat "$tmp/clean.txt"; fail "the clean test's run"; }
HEAPLEDGER_TEST_NAME=from_env "$hl" run -q --db "$tmp/h.db" --label test=given -- "$prog" b 2>/dev/null
"$hl" history --db "$tmp/h.db" --label test=given | grep -q leak_b || fail "--label test= did not win"

# a daemon around a suite: the name per process
"$hl" daemon -q --socket "$tmp/d.sock" --db "$tmp/d.db" 2> "$tmp/daemon.log" &
daemon=$!
i=0
while [ ! -S "$tmp/d.sock" ] && [ $i -lt 400 ]; do sleep 0.05; i=$((i + 1)); done
(
	eval "$("$hl" env --socket "$tmp/d.sock")"
	HEAPLEDGER_TEST_NAME=suite_leaky "$prog" a
	HEAPLEDGER_TEST_NAME=suite_clean "$prog"
) || fail "the suite failed"
kill -TERM $daemon
wait $daemon || true
grep -q "pid [0-9]* (test suite_leaky: $prog a): 16 bytes in 1 block leaked" "$tmp/daemon.log" ||
	{ cat "$tmp/daemon.log"; fail "the suite summary does not name the leaking test"; }
"$hl" report --db "$tmp/d.db" > "$tmp/d.txt"
grep -q "($prog a), test suite_leaky: exited" "$tmp/d.txt" || { cat "$tmp/d.txt"; fail "text: no test name"; }
"$hl" report --db "$tmp/d.db" --format json | python3 -c '
import json, sys
tests = sorted(p["test"] for p in json.load(sys.stdin)["processes"])
sys.exit(0 if tests == ["suite_clean", "suite_leaky"] else "stored test names: %s" % tests)' ||
	fail "the stored run does not keep each process's test"
echo PASS
