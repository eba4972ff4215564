#!/usr/bin/env bash
# scripts/test.sh: run every test suite (unit, integration, slow, ...)
# with meson. Sets the tree up first when there is no build directory yet.
# Then, in CI (CI set) or with HL_SANITIZE=1, builds a second tree with
# AddressSanitizer + UndefinedBehaviorSanitizer and runs the reporter's
# tests in it (suite 'reporter': its units, the decoder corpus, and the
# end-to-end runs through fake_client; not the hook, which is a malloc of
# its own and cannot share a process with ASan's).
# The exit status is 0 only when every test of both passes passed.
#
# Environment:
#   BUILD_DIR      build directory, relative to the source tree (default: build)
#   ASAN_BUILD_DIR the sanitizer tree (default: build-asan)
#   HL_SANITIZE    1: run the sanitizer pass, 0: skip it (default: 1 in CI)
#   JOBS           ninja -j value used by setup.sh (default: ninja's own choice)
# Extra arguments go to the first `meson test` (e.g. --suite unit, or a test name).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${BUILD_DIR:-build}
asan_dir=${ASAN_BUILD_DIR:-build-asan}
sanitize=${HL_SANITIZE:-$([ -n "${CI:-}" ] && echo 1 || echo 0)}

if [ ! -f "$build_dir/build.ninja" ]; then
	scripts/setup.sh
fi
# meson test rebuilds what changed before running anything.
status=0
meson test -C "$build_dir" --print-errorlogs "$@" || status=$?

if [ "$sanitize" = 1 ]; then
	if [ ! -f "$asan_dir/build.ninja" ]; then
		meson setup "$asan_dir" -Db_sanitize=address,undefined -Db_lundef=false
	fi
	ninja -C "$asan_dir" ${JOBS:+-j "$JOBS"}
	# libhlnothing is preloaded into ASan-built fake_client: not first in
	# the library list, which is fine for this empty library.
	ASAN_OPTIONS=verify_asan_link_order=0:detect_leaks=1:abort_on_error=1 \
	UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
		meson test -C "$asan_dir" --no-rebuild --print-errorlogs --suite reporter ||
		status=$?
fi
exit $status
