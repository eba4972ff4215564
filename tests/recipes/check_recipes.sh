#!/bin/sh
# tests/recipes/check_recipes.sh: doc/manual.md's CI recipes, run on a small
# suite of two tests, one of which leaks (tests/run/progs/leak_choice.c):
#  - `meson test --wrapper 'heapledger run --error-exitcode=1 --'`: the
#    leaking test fails, the clean one passes;
#  - `make check` around a heapledger daemon (tests/recipes/Makefile): fails
#    with the leaking test in the suite, passes without it.
# usage: check_recipes.sh HEAPLEDGER LEAK_CHOICE MAKEFILE
set -eu
hl=$1 prog=$2 makefile=$3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# meson test --wrapper
mkdir "$tmp/proj"
cat > "$tmp/proj/meson.build" <<EOF2
project('suite', 'c')
prog = find_program('$prog')
test('leaky', prog, args : ['a'])
test('clean', prog, args : ['exit=0'])
EOF2
meson setup "$tmp/proj/b" "$tmp/proj" > "$tmp/setup.log" 2>&1 || { cat "$tmp/setup.log"; fail "meson setup"; }
if meson test -C "$tmp/proj/b" --wrapper "$hl run --no-db --error-exitcode=1 --" > "$tmp/mt.log" 2>&1; then
	cat "$tmp/mt.log"; fail "meson test passed with a leaking test"
fi
grep -Eq "leaky +FAIL" "$tmp/mt.log" || { cat "$tmp/mt.log"; fail "leaky did not fail"; }
grep -Eq "clean +OK" "$tmp/mt.log" || { cat "$tmp/mt.log"; fail "clean did not pass"; }

# make check around a daemon
printf '#!/bin/sh\nexec %s a\n' "$prog" > "$tmp/test_leaky"
printf '#!/bin/sh\nexec %s\n' "$prog" > "$tmp/test_clean"
chmod +x "$tmp/test_leaky" "$tmp/test_clean"
make -s -f "$makefile" check HEAPLEDGER="$hl" DIR="$tmp" TESTS="$tmp/test_clean" \
	> "$tmp/make1.log" 2>&1 || { cat "$tmp/make1.log"; fail "make check failed on a clean suite"; }
grep -Eq "suite summary: [0-9]+ process(es)?, 0 with leaks" "$tmp/make1.log" || { cat "$tmp/make1.log"; fail "no suite summary"; }
rm -f "$tmp/check.db"
if make -s -f "$makefile" check HEAPLEDGER="$hl" DIR="$tmp" \
	TESTS="$tmp/test_clean $tmp/test_leaky" > "$tmp/make2.log" 2>&1; then
	cat "$tmp/make2.log"; fail "make check passed with a leaking test"
fi
grep -Eq "suite summary: [0-9]+ process(es)?, 1 with leaks" "$tmp/make2.log" || { cat "$tmp/make2.log"; fail "summary"; }
grep -q "leak_choice a): 16 bytes in 1 block leaked" "$tmp/make2.log" || { cat "$tmp/make2.log"; fail "leaking test not named"; }
echo PASS
