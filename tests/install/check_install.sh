#!/bin/sh
# tests/install/check_install.sh MESON BUILD_DIR PREFIX BINDIR LIBDIR INCLUDEDIR MANDIR SOURCE LIBEXECDIR
# `meson install --destdir` into a temporary tree, then use it as a user
# would: the files are there, a program built against the installed header
# with `pkg-config --cflags --libs heapledger` calls heapledger_print_summary
# with the installed library preloaded, and the installed command finds the
# installed library and the installed UI server (relative to itself: the
# tree is not at its prefix).
set -eu
meson=$1 build=$2 prefix=$3 bindir=$4 libdir=$5 includedir=$6 mandir=$7 source=$8 libexecdir=$9

fail() { echo "check_install: $*" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
dest=$tmp/dest
# Relative directories are under the prefix; absolute ones stay as they are.
under() { case $1 in /*) echo "$dest$1" ;; *) echo "$dest$prefix/$1" ;; esac; }

"$meson" install -C "$build" --destdir "$dest" --no-rebuild --quiet >"$tmp/install.log" 2>&1 ||
	{ cat "$tmp/install.log" >&2; fail "meson install failed"; }

bin=$(under "$bindir") lib=$(under "$libdir") inc=$(under "$includedir") man=$(under "$mandir")
libexec=$(under "$libexecdir")
for f in "$bin/heapledger" "$libexec/heapledger/heapledger-ui" "$lib/libheapledger.so.0" "$lib/libheapledger.so" \
	"$inc/heapledger.h" "$inc/heapledger/wire.h" "$lib/pkgconfig/heapledger.pc"; do
	[ -e "$f" ] || fail "not installed: ${f#"$dest"}"
done
if [ -n "${HAVE_MAN:-}" ]; then
	for f in "$man/man1/heapledger.1" "$man/man7/libheapledger.7"; do
		[ -s "$f" ] || fail "man page not installed: ${f#"$dest"}"
	done
fi
soname=$(readelf -d "$lib/libheapledger.so.0" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[ "$soname" = libheapledger.so.0 ] || fail "soname is '$soname', expected libheapledger.so.0"
if readelf -d "$bin/heapledger" | grep -q 'R.*PATH'; then
	fail "the installed command keeps an rpath"
fi

# A program built against the installed header and .pc file.
flags=$(PKG_CONFIG_SYSROOT_DIR=$dest PKG_CONFIG_LIBDIR=$lib/pkgconfig \
	pkg-config --cflags --libs heapledger) || fail "pkg-config does not know heapledger"
cc -o "$tmp/summary_at_will" "$source/summary_at_will.c" $flags ||
	fail "cannot build against the installed header: cc ... $flags"
LD_PRELOAD=$lib/libheapledger.so.0 HEAPLEDGER_OPTIONS=summary=0:leaks=0 \
	"$tmp/summary_at_will" >"$tmp/out" 2>"$tmp/err" || fail "summary_at_will failed: $(cat "$tmp/err")"
grep -q 'HEAP SUMMARY' "$tmp/out" || fail "no HEAP SUMMARY from heapledger_print_summary: $(cat "$tmp/out")"
grep -q 'in use now: [0-9,]* bytes' "$tmp/out" ||
	fail "summary says nothing of the blocks in use: $(cat "$tmp/out")"

# The installed command, moved away from its prefix, finds its library.
env -u HEAPLEDGER_LIB "$bin/heapledger" --version | grep -q '^heapledger [0-9]' ||
	fail "installed heapledger --version"
env -u HEAPLEDGER_LIB "$bin/heapledger" env --wait-ms 0 --socket "$tmp/s" >"$tmp/env"
grep -q "LD_PRELOAD='$(realpath "$lib")/libheapledger.so.0'" "$tmp/env" ||
	fail "heapledger env does not name the installed library: $(cat "$tmp/env")"
env -u HEAPLEDGER_LIB HOME="$tmp" "$bin/heapledger" run --no-db -- "$tmp/summary_at_will" \
	>/dev/null 2>"$tmp/run.err" || fail "installed heapledger run failed: $(cat "$tmp/run.err")"
grep -q '1,000 bytes in 1 blocks are .*lost' "$tmp/run.err" ||
	fail "installed heapledger run did not report the leak: $(cat "$tmp/run.err")"
# Only the UI's server loads the HTTP library (and its TLS stack), and
# libstdc++ is loaded when a C++ name is demangled: neither is on every
# `heapledger run`'s start.
needed=$(readelf -d "$bin/heapledger" | sed -n 's/.*NEEDED.*\[\(.*\)\]/\1/p')
case $needed in *microhttpd*|*stdc++*) fail "heapledger links $(echo $needed)";; esac
readelf -d "$libexec/heapledger/heapledger-ui" | grep -q 'NEEDED.*microhttpd' ||
	fail "heapledger-ui does not link libmicrohttpd"
# `heapledger ui` from the moved tree finds its server and serves.
sh "$source/../ui/serve_once.sh" "$bin/heapledger" "$tmp" || fail "installed heapledger ui did not serve"
echo "ok: installed tree works from $dest$prefix"
