#!/bin/sh
# tests/ui/serve_once.sh HEAPLEDGER TMPDIR: `heapledger ui` on a free port
# over a database not made yet must print the address it serves and answer
# a request with the token, then stop on SIGTERM. For trees where the UI's
# server is found relative to the command (installed, unpacked).
set -u
hl=$1 tmp=$2
out=$tmp/ui.out
env -u HEAPLEDGER_LIB HOME="$tmp" "$hl" ui --db "$tmp/ui.db" --port 0 >"$out" 2>"$tmp/ui.err" &
pid=$!
url=
i=0
while [ $i -lt 100 ]; do
	url=$(sed -n 's/^heapledger ui: serving .* at \(http:[^ ]*\)$/\1/p' "$out")
	[ -n "$url" ] && break
	kill -0 $pid 2>/dev/null || break
	sleep 0.1
	i=$((i + 1))
done
ok=1
if [ -z "$url" ]; then
	echo "serve_once: no address printed: $(cat "$out" "$tmp/ui.err")" >&2
	ok=0
elif command -v python3 >/dev/null; then
	python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=10).read()' "$url" ||
		{ echo "serve_once: $url did not answer" >&2; ok=0; }
fi
kill -TERM $pid 2>/dev/null
wait $pid
rc=$?
[ $rc -eq 0 ] || { echo "serve_once: heapledger ui exited $rc after SIGTERM: $(cat "$tmp/ui.err")" >&2; ok=0; }
[ $ok -eq 1 ]
