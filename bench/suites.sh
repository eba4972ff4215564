#!/usr/bin/env bash
# bench/suites.sh: whole test suites under the daemon; prints the "Whole test
# suites under the daemon" section (bench/README.md holds the last one;
# bench/run.sh --suites appends it to its report).
#
# The ctest suites of cJSON, jansson and json-c, from Debian's sources,
# built once with cmake into $HEAPLEDGER_BENCH_CACHE, run whole at -j1 and
# -j2: natively, under `heapledger run --no-db -- ctest`, and under a
# `heapledger daemon --no-db` with the suite's processes connected through
# the exports of `heapledger env` (the README's recipe). Interleaved (native,
# run, daemon, native, ...) for N rounds; medians of the wall time and of the
# CPU time (user + system of the whole process tree: bash's `time` counts
# every waited-for descendant, the reporter and the daemon included), and the
# median of each round's ratio to the native run of the same round.
#
# Every run must pass its whole suite: a test that fails under a tool is a
# bug to report, not a figure, so its row says FAILED and the script exits 1
# (the outputs are kept). Benchmarks never gate CI and assert nothing about
# timing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=$ROOT/build
lib=""
reporter=""
rounds=5
jobs="1 2"
suites="cjson jansson json-c"
keep=0
CACHE=${HEAPLEDGER_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/heapledger-bench}
# Where the sources come from: Debian 12's, the distribution heapledger is
# tested on (deb-src entries in a private APT directory, so the machine's
# own APT configuration is neither needed nor changed).
DEBIAN_MIRROR=${HEAPLEDGER_BENCH_DEBIAN_MIRROR:-http://deb.debian.org}
DEBIAN_KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
# Debian's build flags that matter here: optimised, with the debug
# information heapledger's stacks are read from.
SUITE_CFLAGS="-g -O2"

usage() {
	cat <<'USAGE'
usage: bench/suites.sh [options]    (prints the markdown section)
  -n N             rounds (default 5)
  --jobs "J ..."   ctest -j values, one table row each (default "1 2")
  --suites "S ..." which of cjson jansson json-c (default all three)
  --build DIR      meson build directory (default: build)
  --lib PATH       libheapledger.so (default: DIR/libhook/libheapledger.so)
  --reporter PATH  heapledger command (default: DIR/reporter/heapledger)
  --keep           keep the work directory (every run's output)
environment:
  HEAPLEDGER_BENCH_CACHE   where the built suites are kept
                           (default: ~/.cache/heapledger-bench)
  HEAPLEDGER_BENCH_DEBIAN_MIRROR  (default: http://deb.debian.org)
USAGE
}

while [ $# -gt 0 ]; do
	case $1 in
	-n) rounds=$2; shift ;;
	--jobs) jobs=$2; shift ;;
	--suites) suites=$2; shift ;;
	--build) build=$2; shift ;;
	--lib) lib=$2; shift ;;
	--reporter) reporter=$2; shift ;;
	--keep) keep=1 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "suites.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
	esac
	shift
done
for n in "$rounds" $jobs; do
	case $n in '' | *[!0-9]* | 0) echo "suites.sh: '$n' is not a positive integer" >&2; exit 2 ;; esac
done
for s in $suites; do
	case $s in cjson | jansson | json-c) ;; *) echo "suites.sh: unknown suite '$s'" >&2; exit 2 ;; esac
done
for tool in cmake ctest apt-get dpkg-source; do
	command -v $tool >/dev/null || { echo "suites.sh: $tool is needed (cmake, apt, dpkg-dev)" >&2; exit 2; }
done

build=$(realpath -m "$build")
: "${lib:=$build/libhook/libheapledger.so}"
: "${reporter:=$build/reporter/heapledger}"
lib=$(realpath -m "$lib")
reporter=$(realpath -m "$reporter")
if [ ! -f "$lib" ] || [ ! -x "$reporter" ]; then
	echo "suites.sh: $lib or $reporter is missing: build first (or pass --build DIR)" >&2
	exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/hl-suites.XXXXXX")
cleanup() {
	if [ $keep = 1 ]; then echo "suites.sh: outputs kept in $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

# Nothing of an outer heapledger (or of a shell that ran `heapledger env`)
# may reach the native runs.
unset LD_PRELOAD HEAPLEDGER_SOCKET HEAPLEDGER_PID HEAPLEDGER_OPTIONS HEAPLEDGER_TRACE HEAPLEDGER_EXCLUDE
export HEAPLEDGER_LIB=$lib
# json-c's test scripts run each test under valgrind when valgrind is
# installed (tests/test-defs.sh); that would time valgrind, and valgrind
# with the hook preloaded. Its documented switch turns that off everywhere.
export USE_VALGRIND=0

# --- the sources and builds -------------------------------------------------

# The Debian source package of each suite, and the cmake options that build
# its tests.
package_of() {
	case $1 in cjson) echo cjson ;; jansson) echo jansson ;; json-c) echo json-c ;; esac
}
cmake_options_of() {
	case $1 in
	cjson) echo "-DENABLE_CJSON_TEST=ON -DENABLE_VALGRIND=OFF" ;;
	jansson) echo "-DJANSSON_BUILD_TESTS=ON" ;;
	json-c) echo "" ;;
	esac
}

# A private APT directory with Debian 12's deb-src entries, updated once.
apt_dir=""
apt_options=()
apt_ready() {
	[ -z "$apt_dir" ] || return 0
	apt_dir=$work/apt
	mkdir -p "$apt_dir/parts" "$apt_dir/lists/partial" "$apt_dir/cache"
	{
		echo "deb-src [signed-by=$DEBIAN_KEYRING] $DEBIAN_MIRROR/debian bookworm main"
		echo "deb-src [signed-by=$DEBIAN_KEYRING] $DEBIAN_MIRROR/debian bookworm-updates main"
		echo "deb-src [signed-by=$DEBIAN_KEYRING] $DEBIAN_MIRROR/debian-security bookworm-security main"
	} >"$apt_dir/parts/bookworm-src.list"
	apt_options=(-o Dir::Etc::SourceList=/dev/null -o "Dir::Etc::SourceParts=$apt_dir/parts"
		-o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir/cache" -o APT::Sandbox::User=)
	apt-get "${apt_options[@]}" update >"$apt_dir/update.log" 2>&1 ||
		{ echo "suites.sh: apt-get update failed: see below" >&2; cat "$apt_dir/update.log" >&2; return 1; }
}

# build_suite DIR SUITE: Debian's source of SUITE (its patches applied) in
# DIR/src, built with cmake in DIR/build. CMake writes absolute paths into
# its build tree, so the build happens in place and DIR/complete marks it
# done; a directory without it is built again.
build_suite() {
	local dir=$1 suite=$2 package options
	package=$(package_of "$suite")
	options=$(cmake_options_of "$suite")
	mkdir -p "$dir/download"
	# shellcheck disable=SC2086 # the options are words
	(cd "$dir/download" && apt-get "${apt_options[@]}" source --download-only "$package") &&
		dpkg-source --no-check -x "$dir"/download/"${package}"_*.dsc "$dir/src" &&
		sed -n 's/^Version: //p' "$dir"/download/"${package}"_*.dsc >"$dir/version" &&
		cmake -S "$dir/src" -B "$dir/build" -DCMAKE_BUILD_TYPE=None -DCMAKE_C_FLAGS="$SUITE_CFLAGS" $options &&
		cmake --build "$dir/build" -j"$(nproc)" &&
		[ "$(cd "$dir/build" && ctest -N | sed -n 's/^Total Tests: //p')" -gt 0 ]
}

# The build of SUITE, made once: its directory's name holds a hash of the
# cmake options, the flags, the compiler and build_suite's own text, so a
# change to any of them builds anew (a new Debian version does not: remove
# the directory to fetch it).
suite_dir() {
	local suite=$1 key dir
	key=$({
		printf '%s\n' "$suite" "$(cmake_options_of "$suite")" "$SUITE_CFLAGS"
		gcc --version | head -n1
		cmake --version | head -n1
		declare -f build_suite
	} | sha256sum | cut -c1-16)
	dir=$CACHE/suite-$suite-$key
	if [ ! -f "$dir/complete" ]; then
		echo "suites.sh: building $suite into $dir (once: later runs reuse it)" >&2
		apt_ready || return 1
		rm -rf "$dir"
		mkdir -p "$dir"
		if ! build_suite "$dir" "$suite" >"$dir/build.log" 2>&1; then
			echo "suites.sh: building $suite failed: see $dir/build.log" >&2
			return 1
		fi
		touch "$dir/complete"
	fi
	echo "$dir"
}

declare -A dir_of
for s in $suites; do
	dir_of[$s]=$(suite_dir "$s") || exit 1
done

# --- one run ------------------------------------------------------------------

# The daemon recipe of README.md: the daemon in the background, the exports
# of `heapledger env` (which waits until it listens) in a subshell around the
# suite, then SIGTERM, after which the daemon writes everything and exits.
under_daemon() {
	local socket=$1 log=$2 daemon status=0 daemon_status=0
	shift 2
	"$reporter" daemon --no-db --socket "$socket" 2>"$log" &
	daemon=$!
	(
		eval "$("$reporter" env --socket "$socket")"
		"$@"
	) || status=$?
	kill -TERM $daemon
	wait $daemon || daemon_status=$?
	# The suite's status first; else the daemon's (it failed to stop cleanly).
	[ $status != 0 ] || status=$daemon_status
	return $status
}

# run_one ROUND SUITE JOBS MODE: runs the suite's whole ctest in MODE and
# appends "suite jobs mode round wall cpu status tests processes" to
# $work/raw.
run_one() {
	local r=$1 suite=$2 j=$3 mode=$4 tag status=0 wall user sys tests procs
	local -a ctest=(ctest -j"$j")
	tag=$work/runs/$suite.$j.$mode.$r
	cd "${dir_of[$suite]}/build"
	{
		TIMEFORMAT='%3R %3U %3S'
		time case $mode in
		native) "${ctest[@]}" >"$tag.out" 2>"$tag.err" ;;
		run) "$reporter" run --no-db -- "${ctest[@]}" >"$tag.out" 2>"$tag.err" ;;
		daemon) under_daemon "$work/hl.sock" "$tag.daemon" "${ctest[@]}" >"$tag.out" 2>"$tag.err" ;;
		esac
	} 2>"$tag.time" || status=$?
	read -r wall user sys <"$tag.time"
	# ctest's own verdict: "100% tests passed, 0 tests failed out of N".
	tests=$(sed -n 's/^100% tests passed, 0 tests failed out of \([0-9]*\)$/\1/p' "$tag.out")
	if [ -z "$tests" ] && [ "$status" = 0 ]; then status=ctest; fi
	procs=-
	case $mode in
	daemon) procs=$(sed -n 's/^heapledger: suite summary: \([0-9]*\) process.*/\1/p' "$tag.daemon") ;;
	run) procs=$(grep -c '^==[0-9]*== heapledger: process ' "$tag.err" || true) ;;
	esac
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$suite" "$j" "$mode" "$r" "$wall" \
		"$(awk -v u="$user" -v s="$sys" 'BEGIN { printf "%.3f", u + s }')" "$status" "${tests:--}" "${procs:--}" >>"$work/raw"
	printf '[%d/%d] %-8s -j%s %-7s %7ss wall %7ss cpu  %s tests  %s  status %s\n' "$r" "$rounds" "$suite" "$j" "$mode" \
		"$wall" "$(tail -n1 "$work/raw" | cut -f6)" "${tests:--}" "${procs:--} processes" "$status" >&2
}

# --- the rounds ---------------------------------------------------------------

mkdir -p "$work/runs"
: >"$work/raw"
started=$(date -u '+%Y-%m-%d %H:%M UTC')
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for ((r = 1; r <= rounds; r++)); do
	for s in $suites; do
		for j in $jobs; do
			for mode in native run daemon; do
				run_one "$r" "$s" "$j" "$mode"
			done
		done
	done
done
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# --- the section --------------------------------------------------------------

versions=""
for s in $suites; do
	versions="${versions:+$versions, }$(package_of "$s") $(cat "${dir_of[$s]}/version")"
done
echo "## Whole test suites under the daemon"
echo
echo "Generated by \`bench/suites.sh -n $rounds --jobs \"$jobs\"\` on $started at $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)."
echo "$(nproc) CPUs, load average (1, 5, 15 min) before: $load_before; after: $load_after. Debian 12 sources:"
echo "$versions; built with cmake, \`$SUITE_CFLAGS\`."
echo "Medians of $rounds interleaved rounds; a ratio is the median of each round's run over that round's native run."
echo "CPU: user + system of the whole process tree (the reporter or daemon included). Processes: those the daemon"
echo "reported (each fork child and each image an exec started counts once)."
echo
echo "| suite | ctest | tests | processes | native wall | run wall | run / native | daemon wall | daemon / native | native CPU | run CPU | run / native | daemon CPU | daemon / native |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
awk -F'\t' -v order="$suites" -v jobs="$jobs" '
	function median(list,   a, n, i, j, t) {
		n = split(list, a, " ")
		for (i = 2; i <= n; i++)
			for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
		return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
	}
	{
		k = $1 SUBSEP $2 SUBSEP $3
		if ($7 != "0") { failed[$1 SUBSEP $2] = failed[$1 SUBSEP $2] " " $3 " (round " $4 ", status " $7 ")"; next }
		wall[k] = wall[k] " " $5; cpu[k] = cpu[k] " " $6; tests[$1 SUBSEP $2] = $8
		if ($3 == "daemon") procs[$1 SUBSEP $2] = procs[$1 SUBSEP $2] " " $9
		byround[k SUBSEP $4] = $5 " " $6
	}
	function ratio(s, j, mode, field,   r, list, n, b, m) {
		list = ""
		for (r in round) {
			if (!((s SUBSEP j SUBSEP "native" SUBSEP r) in byround) || !((s SUBSEP j SUBSEP mode SUBSEP r) in byround)) continue
			split(byround[s SUBSEP j SUBSEP "native" SUBSEP r], b, " ")
			split(byround[s SUBSEP j SUBSEP mode SUBSEP r], m, " ")
			if (b[field] > 0) list = list " " m[field] / b[field]
		}
		return list == "" ? "-" : sprintf("%.2fx", median(list))
	}
	function cell(list, unit) { return list == "" ? "-" : sprintf("%.3f %s", median(list), unit) }
	{ round[$4] = 1 }
	END {
		ns = split(order, ss, " "); nj = split(jobs, js, " ")
		for (i = 1; i <= ns; i++)
			for (q = 1; q <= nj; q++) {
				s = ss[i]; j = js[q]; p = s SUBSEP j
				printf "| %s | -j%s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s, j,
					p in tests ? tests[p] : "-", p in procs ? median(procs[p]) : "-",
					cell(wall[p SUBSEP "native"], "s"), cell(wall[p SUBSEP "run"], "s"), ratio(s, j, "run", 1),
					cell(wall[p SUBSEP "daemon"], "s"), ratio(s, j, "daemon", 1),
					cell(cpu[p SUBSEP "native"], "s"), cell(cpu[p SUBSEP "run"], "s"), ratio(s, j, "run", 2),
					cell(cpu[p SUBSEP "daemon"], "s"), ratio(s, j, "daemon", 2)
			}
		for (p in failed) {
			split(p, f, SUBSEP)
			printf "\nFAILED: %s -j%s did not pass its whole suite in:%s\n", f[1], f[2], failed[p]
			bad = 1
		}
		exit bad
	}' "$work/raw" || { keep=1; echo "suites.sh: a suite failed: its outputs are in $work/runs" >&2; exit 1; }
