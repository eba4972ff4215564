#!/usr/bin/env bash
# scripts/setup.sh [--package] [--bench] [--ci] [--no-build] [--print-packages]: make a fresh
# Debian 12 machine able to build heapledger, run its demo and its tests,
# then configure and build it.
#
#   (no option)  what building, the demo and `scripts/test.sh` need
#   --package    also the Debian package tools (debhelper, lintian), for
#                dpkg-buildpackage and the package test (tests/package)
#   --bench      also the tools and allocators bench/run.sh compares against
#   --ci         also what scripts/ci_builds.sh needs: clang (its second
#                compiler and the TSan build) and the --package tools
#   --no-build   install packages only; do not configure or build
#   --print-packages
#                print the Debian packages the other options ask for, one
#                a line, and exit: install nothing, build nothing
#
# Idempotent: packages are only fetched when one of them is missing, and an
# existing build directory is reconfigured rather than recreated.
#
# Environment:
#   BUILD_DIR  build directory, relative to the source tree (default: build)
#   JOBS       ninja -j value (default: ninja's own choice)
#   WERROR     true or false: warnings are errors or not (default: true under
#              CI; otherwise meson's default, false, or what the build
#              directory already has), so a newer compiler's new warnings
#              do not stop a user's build
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
build_dir=${BUILD_DIR:-build}

# The one list of Debian packages the project needs, by what needs them.
# Why each is here:
packages=(
	build-essential g++ meson ninja-build pkg-config # toolchain
	scdoc                                            # man pages (doc/)
	libcmocka-dev                                    # unit tests
	libunwind-dev                                    # hook: stack capture
	libdw-dev libelf-dev                             # reporter: symbols, DWARF, inlines
	libjansson-dev                                   # reporter: JSON output
	libsqlite3-dev sqlite3                           # reporter: run history
	libmicrohttpd-dev                                # ui: local web server
	chromium nodejs                                  # ui: pages tested in a real browser (npm: install_npm below)
	python3 git perl                                 # integration tests run these under the hook
	valgrind                                         # the oracle of the tests that compare with memcheck
	libxml2-utils                                    # xmllint: the oracle of the XML reports' tests
	cmake                                            # the `ctest -T memcheck` recipe's test (tests/recipes/ctest)
	python3-yaml                                     # the CI recipes' test reads their YAML (tests/recipes)
	python3-jsonschema                               # the SARIF tests check the SARIF 2.1.0 schema (tests/run/sarif_validator.py)
)
package_packages=(
	debhelper lintian                                # dpkg-buildpackage; the package test (tests/package)
)
bench_packages=(
	heaptrack                                        # bench: a tool we compare against
	libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 # bench: allocators we compare against
	electric-fence                                   # bench: guard pages per block, beside checks=guard
)
ci_packages=(
	clang                                            # CI's second compiler and TSan build (scripts/ci_builds.sh)
)

build=yes
print_only=no
for arg in "$@"; do
	case $arg in
	--package) packages+=("${package_packages[@]}") ;;
	--bench) packages+=("${bench_packages[@]}") ;;
	--ci) packages+=("${ci_packages[@]}" "${package_packages[@]}") ;;
	--no-build) build=no ;;
	--print-packages) print_only=yes ;;
	-h | --help)
		sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"
		exit 0 ;;
	*)
		printf 'setup: unknown option %s (see scripts/setup.sh --help)\n' "$arg" >&2
		exit 2 ;;
	esac
done

log() { printf 'setup: %s\n' "$*" >&2; }

# dpkg -s also succeeds for removed-but-configured packages, so ask for the
# exact state instead.
is_installed() {
	[ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]
}

as_root() {
	if [ "$(id -u)" -eq 0 ]; then
		"$@"
	elif command -v sudo >/dev/null 2>&1; then
		sudo "$@"
	else
		log "need root (or sudo) to run: $*"
		exit 1
	fi
}

install_packages() {
	local missing=() p
	for p in "${packages[@]}"; do
		is_installed "$p" || missing+=("$p")
	done
	if [ ${#missing[@]} -eq 0 ]; then
		log "all ${#packages[@]} Debian packages already installed"
		return 0
	fi
	log "installing: ${missing[*]}"
	as_root env DEBIAN_FRONTEND=noninteractive apt-get update
	as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends "${missing[@]}"
}

# npm installs playwright-core for the browser test (tests/ui). Debian's
# nodejs comes without it (Debian's npm package has it); a nodejs from
# elsewhere (NodeSource) brings its own, which Debian's npm would conflict
# with: so npm is installed only when there is none.
install_npm() {
	command -v npm >/dev/null 2>&1 && return 0
	log "installing: npm"
	as_root env DEBIAN_FRONTEND=noninteractive \
		apt-get install -y --no-install-recommends npm
}

configure_and_build() {
	# coredata.dat is what `meson setup --reconfigure` needs; without it
	# the directory is set up from scratch.
	local werror=${WERROR:-${CI:+true}} options=()
	[ -n "$werror" ] && options+=("-Dwerror=$werror")
	if [ -f "$build_dir/meson-private/coredata.dat" ]; then
		meson setup --reconfigure "$build_dir" "${options[@]}"
	else
		meson setup "$build_dir" "${options[@]}"
	fi
	ninja -C "$build_dir" ${JOBS:+-j "$JOBS"}
}

# --package and --ci both bring the packaging tools: name each package once.
mapfile -t packages < <(printf '%s\n' "${packages[@]}" | awk '!seen[$0]++')
if [ "$print_only" = yes ]; then
	printf '%s\n' "${packages[@]}"
	exit 0
fi
install_packages
install_npm
[ "$build" = yes ] || exit 0
configure_and_build
log "built in $build_dir"
