#!/bin/sh
# check_report_verdict.sh REPORT_AWK: bench/report.awk's checks=full verdict
# holds a Debian program with a version built from source against that
# version's ASan overhead, the others against the fixed 0.70 bar, and says
# which comparison it used.
set -eu
awk_file=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

# run WORKLOAD VARIANT WALL: one run per round, 3 rounds, glibc's wall is 1.
run() {
	for r in 1 2 3; do
		printf '%s\t%s\t%s\t25\t%s\t100\t0\tchecksum 1\t\n' "$r" "$1" "$2" "$3"
	done
}
missing() {
	printf '0\t%s\t%s\t25\t0\t0\t%s\t\t\n' "$1" "$2" "$3"
}
report() {
	awk -F'\t' -v plan="glibc:25 asan:25 hl-full:25" -v workloads="$1" \
		-v synthetic=" churn " -v full=100 -v rebuilt_of="python:python-src sqlite:sqlite-src" \
		-f "$awk_file" "$dir/raw.tsv"
}
expect() {
	if ! grep -qF -- "$1" "$dir/out"; then
		echo "FAIL: no line with: $1" >&2
		sed -n '/checks=full against ASan/,/Reference/p' "$dir/out" >&2
		exit 1
	fi
}

{
	for w in python python-src sqlite sqlite-src cc1; do run "$w" glibc 1.0; done
	run python hl-full 1.8
	run python-src hl-full 1.5
	run python-src asan 4.0
	run sqlite hl-full 2.5
	run sqlite-src hl-full 2.0
	run sqlite-src asan 2.2
	run cc1 hl-full 1.9
	for w in python sqlite cc1; do missing "$w" asan n/a; done
} >"$dir/raw.tsv"
report "python python-src sqlite sqlite-src cc1" >"$dir/out"
expect "| python | 0.80 | - | - | meets: below python-src's asan (3.00) |"
expect "| python-src | 0.50 | - | 3.00 | meets: below its asan |"
expect "| sqlite | 1.50 | - | - | misses: hl-full not below sqlite-src's asan (1.20) |"
expect "| sqlite-src | 1.00 | - | 1.20 | meets: below its asan |"
expect "| cc1 | 0.90 | - | - | misses: hl-full not below the fixed 0.70 bar |"

# Without a rebuilt version (its source missing), the Debian row falls back
# to the bar.
{
	for w in python python-src; do run "$w" glibc 1.0; done
	run python hl-full 1.6
	missing python asan n/a
	missing python-src asan missing
	missing python-src hl-full missing
} >"$dir/raw.tsv"
report "python python-src" >"$dir/out"
expect "| python | 0.60 | - | - | meets: below the fixed 0.70 bar |"
echo "ok"
