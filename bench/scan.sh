#!/usr/bin/env bash
# bench/scan.sh: the leak scan's benchmark; prints the "Leak scan" section of
# bench/RESULTS.md (bench/run.sh calls it and appends it; it can run alone).
#
# scanheap (this directory) builds a heap of 1 M and of 10 M live blocks
# (about 1 GiB at 10 M) in lists and single blocks, some lost, and returns
# from main; exittime measures what the tool does after that instant: its
# exit leak scan and report (for `heapledger run` also the reporter's
# decoding and storing of every live block), and the process teardown,
# which glibc's column shows alone. Then scanheap runs its on-demand check
# (heapledger_check_leaks, LSan's __lsan_do_recoverable_leak_check) in a
# process of 64 threads that allocate and free while it runs.
# Benchmarks never gate CI and assert nothing about timing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SRC=$ROOT/bench
build=$ROOT/build
lib=""
reporter=""
rounds=3
quick=0
tools="glibc heapledger hl-run lsan valgrind"

usage() {
	cat <<'USAGE'
usage: bench/scan.sh [options]    (prints the markdown section)
  -n N            rounds (default 3; the median is shown)
  --quick         1 round at 100 k and 1 M blocks instead of 1 M and 10 M
  --build DIR     meson build directory holding bench/ (default: build)
  --lib PATH      libheapledger.so (default: DIR/libhook/libheapledger.so)
  --reporter PATH heapledger command (default: DIR/reporter/heapledger)
  --tools T,...   glibc heapledger hl-run lsan valgrind (default: all)
USAGE
}

while [ $# -gt 0 ]; do
	case $1 in
	-n) rounds=$2; shift ;;
	--quick) quick=1 ;;
	--build) build=$2; shift ;;
	--lib) lib=$2; shift ;;
	--reporter) reporter=$2; shift ;;
	--tools) tools=${2//,/ }; shift ;;
	-h | --help) usage; exit 0 ;;
	*) echo "scan.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
	esac
	shift
done
case $rounds in '' | *[!0-9]* | 0) echo "scan.sh: '$rounds' is not a positive integer" >&2; exit 2 ;; esac

build=$(realpath -m "$build")
: "${lib:=$build/libhook/libheapledger.so}"
: "${reporter:=$build/reporter/heapledger}"
for f in scanheap exittime; do
	if [ ! -x "$build/bench/$f" ]; then
		echo "scan.sh: $build/bench/$f is missing: build first (or pass --build DIR)" >&2
		exit 2
	fi
done
if [ $quick = 1 ]; then
	sizes=(100000 1000000)
	rounds=1
else
	sizes=(1000000 10000000)
fi
threads=64
checks=3
check_size=${sizes[0]}

work=$(mktemp -d "${TMPDIR:-/tmp}/heapledger-scan.XXXXXX")
trap 'rm -rf "$work"' EXIT

available() {
	case $1 in
	glibc) return 0 ;;
	heapledger) [ -f "$lib" ] ;;
	hl-run) [ -f "$lib" ] && [ -x "$reporter" ] ;;
	lsan) [ -x "$work/scanheap-lsan" ] ;;
	valgrind) command -v valgrind >/dev/null ;;
	esac
}

# LSan needs the workload rebuilt, as bench/run.sh does for the others.
if [[ " $tools " == *" lsan "* ]]; then
	gcc -std=gnu11 -O2 -g -pthread -fsanitize=leak "$SRC/scanheap.c" -o "$work/scanheap-lsan" \
		2>"$work/lsan-build.log" || { echo "scan.sh: cannot build with -fsanitize=leak; lsan skipped" >&2; cat "$work/lsan-build.log" >&2; }
fi

# The command of tool $1 running scanheap with arguments $2..., one word a line.
command_of() {
	local tool=$1
	shift
	case $tool in
	glibc) printf '%s\n' "$build/bench/scanheap" "$@" ;;
	heapledger) printf '%s\n' env "LD_PRELOAD=$lib" "$build/bench/scanheap" "$@" ;;
	hl-run) printf '%s\n' env "HEAPLEDGER_LIB=$lib" "$reporter" run --db "$work/hl.db" -- "$build/bench/scanheap" "$@" ;;
	lsan) printf '%s\n' "$work/scanheap-lsan" "$@" ;;
	valgrind) printf '%s\n' valgrind --leak-check=full "$build/bench/scanheap" "$@" ;;
	esac
}

median() {
	sort -g | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.3f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# Exit scan: rounds interleaved over tools (A B C ... A B C ...).
raw=$work/raw
: >"$raw"
for ((r = 1; r <= rounds; r++)); do
	for n in "${sizes[@]}"; do
		for t in $tools; do
			available "$t" || continue
			mapfile -t cmd < <(command_of "$t" "$n")
			rm -f "$work/hl.db"
			"$build/bench/exittime" "$work/time" "${cmd[@]}" >"$work/out" 2>"$work/err" || true
			read -r wall after rss status <"$work/time" || { wall=0 after=-1 rss=0 status=exittime; }
			# LSan exits 23 when it found leaks, heapledger and valgrind 0.
			case $status in 0 | 23) ;; *) after=FAILED ;; esac
			printf '%s %s %s %s %s %s\n' "$t" "$n" "$wall" "$after" "$rss" "$status" >>"$raw"
			printf '[scan %d/%d] %-10s %9s blocks  %7ss after exit %7ss wall %8s KiB  exit %s\n' \
				"$r" "$rounds" "$t" "$n" "$after" "$wall" "$rss" "$status" >&2
		done
	done
done

# On-demand check in a 64-thread process: one round (each run already
# reports the median of its checks; LSan's take tens of seconds each).
check_raw=$work/check
: >"$check_raw"
for ((r = 1; r <= 1; r++)); do
	for t in heapledger hl-run lsan; do
		[[ " $tools " == *" $t "* ]] && available "$t" || continue
		mapfile -t cmd < <(command_of "$t" "$check_size" check "$threads" "$checks")
		rm -f "$work/hl.db"
		"$build/bench/exittime" "$work/time" "${cmd[@]}" >"$work/out" 2>"$work/err" || true
		line=$(grep -m1 '^check_ms ' "$work/out" || echo "check_ms FAILED")
		printf '%s %s\n' "$t" "$(echo "$line" | awk '{ print $3, $7 }')" >>"$check_raw"
		printf '[check] %-10s %s\n' "$t" "$line" >&2
	done
done

label() {
	case $1 in
	1000000) echo "1 M" ;; 10000000) echo "10 M" ;; 100000) echo "100 k" ;; *) echo "$1" ;;
	esac
}

cell() { # tool size field(2=wall 3=after 4=rss)
	local v
	v=$(awk -v t="$1" -v n="$2" -v f="$3" '$1 == t && $2 == n { print $(f + 1) }' "$raw")
	if [ -z "$v" ]; then
		echo "-"
	elif grep -q FAILED <<<"$v"; then
		echo "FAILED"
	else
		median <<<"$v"
	fi
}

echo "## Leak scan"
echo
echo "Generated by \`bench/scan.sh\` (run by bench/run.sh): $rounds round(s), median shown. \`scanheap N\` builds N live"
echo "blocks of 8..200 B (80% in lists of 100, every tenth list lost; 15% single blocks kept; 5% single blocks lost;"
echo "about 1 GiB at 10 M) and returns from main. *After exit* is the time from that instant until the command ended:"
echo "the tool's exit leak scan and report, and the process teardown (the glibc row: no scan). For hl-run it also"
echo "covers the reporter decoding and storing every live block's record. heapledger is the preload alone (its"
echo "standalone report), lsan a \`-fsanitize=leak\` build, valgrind \`--leak-check=full\`; every tool at every size."
echo
printf '| Tool |'
for n in "${sizes[@]}"; do printf ' %s: after exit | wall | peak RSS |' "$(label "$n")"; done
echo
printf '|---|'
for n in "${sizes[@]}"; do printf -- '---:|---:|---:|'; done
echo
for t in $tools; do
	printf '| %s |' "$t"
	if ! available "$t"; then
		for n in "${sizes[@]}"; do printf ' missing | | |'; done
		echo
		continue
	fi
	for n in "${sizes[@]}"; do
		after=$(cell "$t" "$n" 3)
		wall=$(cell "$t" "$n" 2)
		rss=$(cell "$t" "$n" 4)
		[ "$rss" = - ] || [ "$rss" = FAILED ] || rss=$(awk -v k="$rss" 'BEGIN { printf "%.0f MiB", k / 1024 }')
		[ "$after" = - ] || [ "$after" = FAILED ] || after="$after s"
		[ "$wall" = - ] || [ "$wall" = FAILED ] || wall="$wall s"
		printf ' %s | %s | %s |' "$after" "$wall" "$rss"
	done
	echo
done
echo
echo "On-demand check: \`scanheap $(label "$check_size" | tr -d ' ') check $threads $checks\`: the same heap at $(label "$check_size") blocks, then"
echo "$threads threads that allocate and free without pause while the main thread runs the tool's check $checks times"
echo "(heapledger_check_leaks(); LSan's __lsan_do_recoverable_leak_check()), one run per tool: the median and the"
echo "worst of its checks, in ms."
echo
echo "| Tool | check, median | check, worst |"
echo "|---|---:|---:|"
for t in heapledger hl-run lsan; do
	[[ " $tools " == *" $t "* ]] || continue
	if ! available "$t"; then
		echo "| $t | missing | |"
		continue
	fi
	med=$(awk -v t="$t" '$1 == t { print $2 }' "$check_raw")
	worst=$(awk -v t="$t" '$1 == t { print $3 }' "$check_raw")
	if [ -z "$med" ] || grep -q FAILED <<<"$med"; then
		echo "| $t | FAILED | |"
	else
		echo "| $t | $(median <<<"$med") ms | $(sort -g <<<"$worst" | tail -1) ms |"
	fi
done
