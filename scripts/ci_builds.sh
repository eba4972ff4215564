#!/usr/bin/env bash
# scripts/ci_builds.sh: the other builds CI checks, after scripts/test.sh has
# run every suite in the main build (gcc, debugoptimized): warnings are
# errors in each, and each runs the unit suite (the integration suites
# already ran against the main build, and these keep CI's time low).
#
#   build-release  gcc, --buildtype=release (-O3: more warnings)
#   build-debug    gcc, -Dhl_debug=2: every hl_assert of the hook and
#                  hl_invariant of the reporter, and the validators that walk
#                  a whole arena or block table; the unit and integration
#                  suites (the invariants must hold under real programs)
#   build-clang    clang, debugoptimized, and the reporter's block table on
#                  its portable probe (-Dtable_simd=portable), as on arm64
#   build-asan     gcc with ASan+UBSan (halt on the first report; warnings
#                  are the other builds' job): the
#                  reporter's tests, suite 'reporter' (its units, the decoder
#                  corpus, the fake-client end-to-end runs; not the hook, a
#                  malloc of its own that cannot share a process with ASan)
#   build-tsan     clang with ThreadSanitizer: the threaded unit tests of
#                  the hook (test_stats, test_remote, test_stack, test_alloc),
#                  the allocator's functions under other names (meson.build
#                  says why); any report fails the build. test_emit stays
#                  out: its children's leak scan reads every writable
#                  mapping, TSan's shadow included (24 GB resident), and its
#                  exit walks read headers their owners may be changing, a
#                  race types.h accepts for walks at exit
#
# Then the Debian package test of the main build (tests/package: build,
# lintian, unpack, run), which a plain `meson test` leaves out.
#
# It first installs what these need beyond the tests' packages (clang,
# debhelper, lintian: `scripts/setup.sh --ci --no-build`, a no-op when they
# are there), and the benchmarks' tools (`--bench`), so a package name that
# no longer installs on a fresh machine fails CI rather than a user's bench. scripts/test.sh runs this when CI is set (or EXTRA_BUILDS=1);
# run it by hand any time. Environment: JOBS (ninja -j), EXTRA_BUILDS_DIR (parent of
# the build directories, default: the source tree), BUILD_DIR (the main
# build, default: build).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
parent=${EXTRA_BUILDS_DIR:-.}
main_build=${BUILD_DIR:-build}

log() { printf 'ci_builds: %s\n' "$*" >&2; }

# build NAME CC CXX MESON-OPTIONS...
build() {
	local dir=$parent/$1 cc=$2 cxx=$3
	shift 3
	log "$dir: CC=$cc $*"
	if [ -f "$dir/meson-private/coredata.dat" ]; then
		meson setup --reconfigure "$dir" -Dwerror=true "$@" >/dev/null
	else
		CC=$cc CXX=$cxx meson setup "$dir" -Dwerror=true "$@" >/dev/null
	fi
	ninja -C "$dir" ${JOBS:+-j "$JOBS"} >/dev/null
	meson test -C "$dir" --suite unit --print-errorlogs
}

# checked NAME: the unit and integration suites with every assertion on.
checked() {
	local dir=$parent/$1
	log "$dir: -Dhl_debug=2, suites unit and integration"
	if [ ! -f "$dir/meson-private/coredata.dat" ]; then
		meson setup "$dir" -Dwerror=true -Dhl_debug=2 >/dev/null
	fi
	ninja -C "$dir" ${JOBS:+-j "$JOBS"} >/dev/null
	meson test -C "$dir" --suite unit --suite integration --print-errorlogs
}

# sanitized NAME: the reporter's suite under ASan+UBSan. fake_client gets
# libhlnothing preloaded ahead of the ASan runtime, harmless for an empty
# library, hence verify_asan_link_order=0.
sanitized() {
	local dir=$parent/$1
	log "$dir: ASan+UBSan, suite reporter"
	if [ ! -f "$dir/meson-private/coredata.dat" ]; then
		meson setup "$dir" -Db_sanitize=address,undefined \
			-Db_lundef=false >/dev/null
	fi
	ninja -C "$dir" ${JOBS:+-j "$JOBS"} >/dev/null
	ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C "$dir" --suite reporter --print-errorlogs
}

# tsan NAME: the threaded hook units under ThreadSanitizer (clang's, linked
# into each test). Only those targets: nothing else links in this build.
tsan() {
	local dir=$parent/$1
	local tests=(test_stats test_remote test_stack test_alloc)
	log "$dir: ThreadSanitizer, ${tests[*]}"
	if [ ! -f "$dir/meson-private/coredata.dat" ]; then
		CC=clang CXX=clang++ meson setup "$dir" -Db_sanitize=thread \
			-Db_lundef=false >/dev/null
	fi
	ninja -C "$dir" ${JOBS:+-j "$JOBS"} "${tests[@]/#/tests/libhook/}" >/dev/null
	# Through meson test, so each runs with the options its test() gives it
	# (remote_frees needs reuse_delay=0), defined once in tests/libhook;
	# these are for the one that sets none (alloc: its leak report at exit
	# under TSan outlasts the test's timeout).
	HEAPLEDGER_OPTIONS=summary=0:leaks=0 \
	TSAN_OPTIONS=halt_on_error=1:exitcode=66:second_deadlock_stack=1 \
		meson test -C "$dir" --no-rebuild --print-errorlogs alloc remote_frees stats stack ||
		return 1
}

scripts/setup.sh --ci --bench --no-build

status=0
log "$main_build: the Debian package test"
meson test -C "$main_build" --setup package --suite package --print-errorlogs || status=1
sanitized build-asan || status=1
build build-release gcc g++ --buildtype=release || status=1
checked build-debug || status=1
if command -v clang >/dev/null; then
	build build-clang clang clang++ -Dtable_simd=portable || status=1
	tsan build-tsan || status=1
else
	log "clang is not installed (scripts/setup.sh installs it)"
	status=1
fi
exit "$status"
