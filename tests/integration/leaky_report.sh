#!/usr/bin/env bash
# tests/integration/leaky_report.sh REPORTER LEAKY: `heapledger run` on the
# demo program (scripts/demo/leaky.c) must report exactly its two leak sites,
# each with the right size and the function that allocated it:
#   144 bytes in 3 blocks, allocated in open_session (leaky.c)
#   256 bytes in 1 blocks, allocated in cache_insert (leaky.c)
# and nothing else (leaky gives stdout a static buffer, so libc leaves no
# block behind). The program's stdout and exit status must pass through.
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 REPORTER LEAKY" >&2; exit 2; }
reporter=$1
leaky=$2

fail() {
	echo "FAIL [leaky report]: $*" >&2
	[ -f "${tmp:-}/report.txt" ] && { echo "---- report ----" >&2; cat "$tmp/report.txt" >&2; }
	exit 1
}

[ -x "$reporter" ] || fail "reporter '$reporter' does not exist (build reporter/ first)"
[ -x "$leaky" ] || fail "demo program '$leaky' does not exist (build scripts/leaky first)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/heapledger-report.XXXXXX")
trap 'rm -rf "$tmp"' EXIT

env -i PATH=/usr/bin:/bin "$leaky" >"$tmp/plain.out"
status=0
env -i PATH=/usr/bin:/bin TMPDIR="$tmp" "$reporter" run --no-db -- "$leaky" \
	>"$tmp/run.out" 2>"$tmp/report.txt" || status=$?
[ "$status" -eq 0 ] || fail "heapledger run exited with $status; leaky exits 0"
cmp -s "$tmp/plain.out" "$tmp/run.out" || fail "leaky's stdout changed under heapledger run"

# One line per loss record: "<bytes> bytes in <blocks> blocks|<frames...>",
# the frames being the lines up to the record's closing "==pid==" line.
awk '
	/lost in loss record/ {
		if (rec != "") print rec
		sub(/^==[0-9]+== /, "")
		rec = $1 " bytes in " $4 " blocks|"
		inrec = 1
		next
	}
	inrec && /^==[0-9]+== *$/ { print rec; rec = ""; inrec = 0; next }
	inrec { rec = rec $0 " " }
	END { if (rec != "") print rec }
' "$tmp/report.txt" >"$tmp/records"

records=$(wc -l <"$tmp/records")
[ "$records" -eq 2 ] || fail "expected 2 loss records, found $records"
grep -q '^144 bytes in 3 blocks|.*open_session.*leaky\.c:' "$tmp/records" ||
	fail "no loss record of 144 bytes in 3 blocks from open_session (leaky.c)"
grep -q '^256 bytes in 1 blocks|.*cache_insert.*leaky\.c:' "$tmp/records" ||
	fail "no loss record of 256 bytes in 1 blocks from cache_insert (leaky.c)"
echo "ok [leaky report]: 2 loss records, open_session 144 bytes / 3 blocks, cache_insert 256 bytes / 1 block"
