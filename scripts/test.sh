#!/usr/bin/env bash
# scripts/test.sh: run every test suite (unit, integration, slow, ...)
# with meson. Sets the tree up first when there is no build directory yet.
# The exit status is meson's: 0 only when every test passed.
#
# Environment:
#   BUILD_DIR  build directory, relative to the source tree (default: build)
#   JOBS       ninja -j value used by setup.sh (default: ninja's own choice)
# Extra arguments go to `meson test` (e.g. --suite unit, or a test name).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${BUILD_DIR:-build}

if [ ! -f "$build_dir/build.ninja" ]; then
	scripts/setup.sh
fi
# meson test rebuilds what changed before running anything.
exec meson test -C "$build_dir" --print-errorlogs "$@"
