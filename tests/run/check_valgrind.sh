#!/bin/sh
# tests/run/check_valgrind.sh HEAPLEDGER HOOK_LIB NOTHING_LIB SPAWN FAKE: the
# reporter itself under valgrind memcheck. Three runs: `heapledger run` of a
# real program that forks, execs and posix_spawns (four processes, the real
# hook), of fake_client's hostile peer (malformed records, dropped
# connection), and `heapledger report --format json` of what they stored.
# Any memcheck error or definitely-lost block fails the test. The programs
# under test are not run under valgrind (no --trace-children).
set -u
heapledger=$1 hook=$2 nothing=$3 spawn=$4 fake=$5
command -v valgrind >/dev/null || { echo "valgrind is not installed (scripts/setup.sh installs it)"; exit 1; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
fail=0
vg() {
	name=$1
	shift
	valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite \
		--log-file="$dir/$name.vg" "$@" >"$dir/$name.out" 2>"$dir/$name.err"
	status=$?
	if [ "$status" = 99 ] || [ -s "$dir/$name.vg" ]; then
		echo "FAIL: memcheck found errors in the reporter ($name):"
		head -n 60 "$dir/$name.vg"
		fail=1
	fi
	return 0
}
HEAPLEDGER_LIB=$hook vg run_spawn "$heapledger" run --db "$dir/hl.db" -- "$spawn"
grep -q "spawned_leak" "$dir/run_spawn.err" || { echo "FAIL: run_spawn printed no leak report"; cat "$dir/run_spawn.err"; fail=1; }
HEAPLEDGER_LIB=$nothing vg run_hostile "$heapledger" run --db "$dir/hl.db" -- "$fake" hostile
grep -q "fake_leaker" "$dir/run_hostile.err" || { echo "FAIL: run_hostile printed no leak report"; cat "$dir/run_hostile.err"; fail=1; }
vg report "$heapledger" report --db "$dir/hl.db" --format json
grep -q '"format": *"heapledger-report"' "$dir/report.out" || { echo "FAIL: report printed no JSON"; head "$dir/report.out" "$dir/report.err"; fail=1; }
[ $fail = 0 ] && echo "ok: the reporter is memcheck-clean on run (4 processes), a hostile peer and report"
exit $fail
