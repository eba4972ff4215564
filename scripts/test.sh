#!/usr/bin/env bash
# scripts/test.sh: run every test suite (unit, integration, slow, ...)
# with meson. Sets the tree up first when there is no build directory yet.
# Under CI (or with EXTRA_BUILDS=1) it then checks the other builds, gcc
# release and clang, warnings fatal (scripts/ci_builds.sh). The exit status
# is 0 only when every test passed.
#
# Environment:
#   BUILD_DIR     build directory, relative to the source tree (default: build)
#   JOBS          ninja -j value used by setup.sh (default: ninja's own choice)
#   EXTRA_BUILDS  1: also run scripts/ci_builds.sh; 0: never (default: when CI is set)
# Extra arguments go to `meson test` (e.g. --suite unit, or a test name).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${BUILD_DIR:-build}

if [ ! -f "$build_dir/build.ninja" ]; then
	scripts/setup.sh
fi
# meson test rebuilds what changed before running anything.
status=0
meson test -C "$build_dir" --print-errorlogs "$@" || status=$?
if [ "${EXTRA_BUILDS:-${CI:+1}}" = 1 ]; then
	scripts/ci_builds.sh || status=1
fi
exit "$status"
