#!/bin/sh
# tests/package/check_deb.sh SOURCE LEAKER: builds the Debian packages from
# the repository's own debian/ (dpkg-buildpackage -b -us -uc) in a copy of
# the source tree, checks them with lintian (no error or warning allowed), unpacks the
# command and the library with dpkg -x and runs `heapledger run` from there
# on LEAKER, a leaking program: the unpacked command must find the unpacked
# library and report the leak, and `heapledger ui` must find its server
# and serve. Exit 77 (skipped) without dpkg-buildpackage
# or the build dependencies.
set -eu
source=$1 leaker=$2

fail() { echo "check_deb: $*" >&2; exit 1; }
skip() { echo "check_deb: skipped: $*" >&2; exit 77; }
command -v dpkg-buildpackage >/dev/null || skip "no dpkg-buildpackage (Debian package dpkg-dev)"
command -v dh >/dev/null || skip "no dh (Debian package debhelper)"
(cd "$source" && dpkg-checkbuilddeps) 2>/dev/null || skip "build dependencies missing: $(cd "$source" && dpkg-checkbuilddeps 2>&1)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# A copy without build directories or git: dpkg-buildpackage writes the
# packages next to the tree, and builds inside it.
mkdir "$tmp/src"
tar -C "$source" --exclude='./build*' --exclude=./.git --exclude='./obj-*' -cf - . |
	tar -C "$tmp/src" -xf -
(cd "$tmp/src" && DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -b -us -uc) \
	>"$tmp/build.log" 2>&1 || { tail -40 "$tmp/build.log" >&2; fail "dpkg-buildpackage failed"; }

for p in heapledger libheapledger0 libheapledger-dev; do
	ls "$tmp/${p}_"*.deb >/dev/null 2>&1 || fail "no $p package built"
done
if command -v lintian >/dev/null; then
	lintian --fail-on error,warning "$tmp"/*.changes >"$tmp/lintian.log" 2>&1 ||
		{ cat "$tmp/lintian.log" >&2; fail "lintian reports errors or warnings"; }
else
	echo "check_deb: lintian not installed; packages not checked with it" >&2
fi

root=$tmp/root
for p in heapledger libheapledger0 libheapledger-dev; do
	dpkg -x "$tmp/${p}_"*.deb "$root"
done
[ -f "$root/usr/include/heapledger.h" ] || fail "libheapledger-dev has no heapledger.h"
ls "$root"/usr/lib/*/pkgconfig/heapledger.pc >/dev/null || fail "libheapledger-dev has no heapledger.pc"
ls "$root"/usr/share/man/man1/heapledger.1.gz "$root"/usr/share/man/man1/heapledger-valgrind.1.gz \
	"$root"/usr/share/man/man7/libheapledger.7.gz \
	>/dev/null || fail "man pages missing"
env -u HEAPLEDGER_LIB HOME="$tmp" "$root/usr/bin/heapledger" run --no-db -- "$leaker" \
	>/dev/null 2>"$tmp/run.err" || fail "unpacked heapledger run failed: $(cat "$tmp/run.err")"
grep -q 'bytes in 1 blocks are .*lost' "$tmp/run.err" ||
	fail "unpacked heapledger run reported no leak: $(cat "$tmp/run.err")"
sh "$source/tests/ui/serve_once.sh" "$root/usr/bin/heapledger" "$tmp" ||
	fail "unpacked heapledger ui did not serve"
echo "ok: packages built, lintian-clean, heapledger run and ui work unpacked"
