#!/usr/bin/env bash
# bench/run.sh: run every workload under every allocator and tool, interleaved
# (A B C ... A B C ...) for N rounds, and write bench/RESULTS.md: the median
# over rounds of each run's time and peak RSS divided by glibc's in the same
# round, at the same size. Every run's checksum must equal glibc's; a mismatch
# is reported loudly and makes the script exit 1 (a wrong allocator is not
# fast). Benchmarks never gate CI and assert nothing about timing.
#
# Run from anywhere after `meson setup build && ninja -C build`; see
# bench/README.md for the options.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SRC=$ROOT/bench
LIBDIR=/usr/lib/x86_64-linux-gnu
EFENCE=/usr/lib/libefence.so.0 # Debian's electric-fence

ALL_WORKLOADS=(churn bigframe ring2 ring8 realloc mixed python python-src sqlite sqlite-src cc1 scan forkshell)
SYNTHETIC=" churn bigframe ring2 ring8 realloc mixed "
# Built here from source, so LSan and ASan can run them too.
REBUILT=" churn bigframe ring2 ring8 realloc mixed python-src sqlite-src "
# Debian's programs that have a rebuilt version: the same program, version and
# allocation-shaping options, so the checks=full verdict holds the Debian row
# against its rebuilt version's ASan figure.
REBUILT_OF="python:python-src sqlite:sqlite-src"
# Where the programs built from source are kept between runs (see cached).
CACHE=${HEAPLEDGER_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/heapledger-bench}
# The SQLite amalgamation for sqlite-src: better-sqlite3 ships it (npm pack);
# $HEAPLEDGER_BENCH_SQLITE, a directory holding sqlite3.c and sqlite3.h, is
# used instead when set.
SQLITE_NPM=better-sqlite3@13.2.0
# Debian's sqlite3 build options that shape its allocations (PRAGMA
# compile_options): without lookaside every small object is a malloc.
SQLITE_FLAGS=(-DSQLITE_OMIT_LOOKASIDE -DSQLITE_SECURE_DELETE -DSQLITE_THREADSAFE=1
	-DSQLITE_DEFAULT_PAGE_SIZE=4096 -DSQLITE_TEMP_STORE=1 -DSQLITE_OMIT_LOAD_EXTENSION)
# CPython for python-src: $HEAPLEDGER_BENCH_PYTHON, a source tree or a
# tarball of one (Debian's python3.11 source: bench/README.md). No default
# source: without it python-src is missing. The flags of the static
# interpreter Debian ships as /usr/bin/python3.11 (its debian/rules: CPython's
# default OPT, -O3; dpkg's CFLAGS with -fstack-protector) less its profile-guided
# and link-time optimisation. pymalloc stays on, as in Debian, and in the
# sanitized builds too (configure's --with-address-sanitizer would turn it
# off): see bench/README.md.
PYTHON_CONFIGURE=(--without-ensurepip --with-computed-gotos)
PYTHON_OPT="-g -fwrapv -O3 -Wall" # configure puts -DNDEBUG before it
PYTHON_CFLAGS="-g -fstack-protector -Wformat -Werror=format-security"
PYTHON_CPPFLAGS="-Wdate-time -D_FORTIFY_SOURCE=2"
PYTHON_LDFLAGS="-Wl,-z,relro"
ALL_VARIANTS=(glibc jemalloc mimalloc tcmalloc heapledger heapledger-nostack hl-run heaptrack lsan asan hl-full hl-run-full hl-guard hl-sample efence valgrind)

usage() {
	cat <<'EOF'
usage: bench/run.sh [options]
  -n N                  rounds (default 5; --quick: 1)
  --quick               1 round at reduced sizes: a smoke check; writes to
                        $TMPDIR/heapledger-bench-quick.md unless --out is given
  --only W[,W...]       workloads: churn bigframe ring2 ring8 realloc mixed python
                        python-src sqlite sqlite-src cc1, or the groups ring,
                        synthetic, real;
                        scan: the leak scan section (bench/scan.sh: exit
                        scan of 1 M and 10 M blocks, on-demand check);
                        forkshell: the reporter on a long shell script
                        (bench/forkshell.sh)
  --allocators V[,V...] columns: glibc jemalloc mimalloc tcmalloc heapledger
                        heapledger-nostack (stacks=0) hl-run heaptrack lsan
                        asan hl-full hl-run-full (checks=full, preloaded and
                        under heapledger run) hl-guard (checks=guard)
                        hl-sample (guard_sample=1000) efence (Electric
                        Fence, preloaded) valgrind (glibc always runs: it
                        is the baseline)
  --build DIR           meson build directory holding bench/ (default: build)
  --lib PATH            libheapledger.so (default: DIR/libhook/libheapledger.so)
  --reporter PATH       heapledger command for hl-run (default: next to --lib,
                        ../reporter/heapledger)
  --scale P             size of the allocator runs, percent (default 100)
  --tool-scale P        size for the checking tools: hl-run, heaptrack, lsan,
                        asan, hl-full, hl-run-full, hl-sample (default 25)
  --guard-scale P       size for the page-per-block tools: hl-guard, efence
                        (default 1: each pays system calls per block)
  --cell-limit S        a run over S seconds is stopped and its cell says so;
                        its later rounds are skipped (default 600)
  --valgrind-scale P    size for valgrind (default 2)
  --out FILE            where to write the report (default bench/RESULTS.md)
  --suites              also run bench/suites.sh (the cJSON, jansson and json-c
                        ctest suites natively, under heapledger run and under
                        the daemon; needs cmake and deb.debian.org) and append
                        its section
  --keep                keep the work directory (outputs of every run)
environment:
  HEAPLEDGER_BENCH_PYTHON  CPython source tree or tarball for python-src
                        (without it python-src is missing)
  HEAPLEDGER_BENCH_SQLITE  directory with sqlite3.c and sqlite3.h for
                        sqlite-src (default: npm pack better-sqlite3)
  HEAPLEDGER_BENCH_CACHE   where programs built from source are kept
                        (default: ~/.cache/heapledger-bench)
EOF
}

invocation="bench/run.sh${*:+ $*}"
rounds=""
quick=0
only=""
selected=""
build=build
lib=""
reporter=""
scale_full=""
scale_tool=""
scale_vg=""
scale_guard=""
cell_limit=""
out=""
keep=0
run_suites=0

while [ $# -gt 0 ]; do
	case $1 in
	-n) rounds=$2; shift ;;
	--quick) quick=1 ;;
	--only) only=$2; shift ;;
	--allocators) selected=$2; shift ;;
	--build) build=$2; shift ;;
	--lib) lib=$2; shift ;;
	--reporter) reporter=$2; shift ;;
	--scale) scale_full=$2; shift ;;
	--tool-scale) scale_tool=$2; shift ;;
	--valgrind-scale) scale_vg=$2; shift ;;
	--guard-scale) scale_guard=$2; shift ;;
	--cell-limit) cell_limit=$2; shift ;;
	--out) out=$2; shift ;;
	--keep) keep=1 ;;
	--suites) run_suites=1 ;;
	-h | --help) usage; exit 0 ;;
	*) echo "run.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
	esac
	shift
done

if [ $quick = 1 ]; then
	: "${rounds:=1}" "${scale_full:=10}" "${scale_tool:=5}" "${scale_vg:=1}" "${scale_guard:=1}"
	: "${out:=${TMPDIR:-/tmp}/heapledger-bench-quick.md}"
fi
: "${rounds:=5}" "${scale_full:=100}" "${scale_tool:=25}" "${scale_vg:=2}" "${scale_guard:=1}"
: "${cell_limit:=600}"
: "${out:=$SRC/RESULTS.md}"
build=$(realpath -m "$build")
: "${lib:=$build/libhook/libheapledger.so}"
lib=$(realpath -m "$lib")
: "${reporter:=$(dirname "$(dirname "$lib")")/reporter/heapledger}"
reporter=$(realpath -m "$reporter")
out=$(realpath -m "$out")

for n in "$rounds" "$scale_full" "$scale_tool" "$scale_vg"; do
	case $n in '' | *[!0-9]* | 0) echo "run.sh: '$n' is not a positive integer" >&2; exit 2 ;; esac
done

# --- what to run ------------------------------------------------------------

expand_workloads() {
	local w
	for w in ${1//,/ }; do
		case $w in
		ring) echo ring2 ring8 ;;
		synthetic) echo churn bigframe ring2 ring8 realloc mixed ;;
		real) echo python python-src sqlite sqlite-src cc1 ;;
		churn | bigframe | ring2 | ring8 | realloc | mixed | python | python-src | sqlite | sqlite-src | cc1 | scan | forkshell) echo "$w" ;;
		*) echo "run.sh: unknown workload '$w'" >&2; exit 2 ;;
		esac
	done
}

if [ -n "$only" ]; then
	read -r -a workloads <<<"$(expand_workloads "$only" | tr '\n' ' ')"
else
	workloads=("${ALL_WORKLOADS[@]}")
fi
# The leak scan is a section of its own (bench/scan.sh), not a workload row.
run_scan=0
run_forkshell=0
kept=()
for w in "${workloads[@]}"; do
	case $w in
	scan) run_scan=1 ;;
	forkshell) run_forkshell=1 ;;
	*) kept+=("$w") ;;
	esac
done
workloads=("${kept[@]}")

variants=(glibc)
if [ -n "$selected" ]; then
	for v in ${selected//,/ }; do
		case " ${ALL_VARIANTS[*]} " in
		*" $v "*) [ "$v" = glibc ] || variants+=("$v") ;;
		*) echo "run.sh: unknown allocator '$v'" >&2; exit 2 ;;
		esac
	done
else
	variants=("${ALL_VARIANTS[@]}")
fi

# The exact mimalloc path comes from its package; fall back to the usual one.
mimalloc=$(dpkg -L libmimalloc2.0 2>/dev/null | grep -m1 '/libmimalloc\.so\.2$' || true)
: "${mimalloc:=$LIBDIR/libmimalloc.so.2}"

preload_of() {
	case $1 in
	jemalloc) echo "$LIBDIR/libjemalloc.so.2" ;;
	mimalloc) echo "$mimalloc" ;;
	tcmalloc) echo "$LIBDIR/libtcmalloc_minimal.so.4" ;;
	heapledger | heapledger-nostack) echo "$lib" ;;
	esac
}

scale_of() {
	case $1 in
	hl-run | heaptrack | lsan | asan | hl-full | hl-run-full | hl-sample) echo "$scale_tool" ;;
	hl-guard | efence) echo "$scale_guard" ;;
	valgrind) echo "$scale_vg" ;;
	*) echo "$scale_full" ;;
	esac
}

# --- the work directory -------------------------------------------------------

timeit=$build/bench/timeit
for f in timeit churn bigframe ring realloc mixed scanheap exittime; do
	if [ ! -x "$build/bench/$f" ]; then
		echo "run.sh: $build/bench/$f is missing: run 'meson setup build && ninja -C build' first (or pass --build DIR)" >&2
		exit 2
	fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/heapledger-bench.XXXXXX")
cleanup() {
	if [ $keep = 1 ]; then
		echo "run.sh: outputs kept in $work" >&2
	else
		rm -rf "$work"
	fi
}
trap cleanup EXIT
mkdir -p "$work/runs" "$work/cwd" "$work/input" "$work/ht"
raw=$work/raw.tsv
cpu_raw=$work/cpu.tsv # cpu_row
: >"$raw"
: >"$cpu_raw"

# The checking tools run at a smaller size than the allocators: at full size
# heaptrack alone would take ~10 s a run and ASan ~85 s on mixed (quarantine
# and shadow upkeep of its 1..8 MiB blocks), which would not fit 5 rounds in
# 15 minutes on 2 cores.
#
# LSan and ASan need the workloads rebuilt, so they get their own binaries,
# built like meson's debugoptimized build plus the sanitizer.
declare -A available
declare -A timed_out # "workload variant scale" of runs stopped at --cell-limit

# Finds or fetches the SQLite amalgamation; prints its directory, or nothing.
sqlite_source() {
	local dir=$work/sqlite-src
	if [ -n "${HEAPLEDGER_BENCH_SQLITE:-}" ]; then
		[ -f "$HEAPLEDGER_BENCH_SQLITE/sqlite3.c" ] && echo "$HEAPLEDGER_BENCH_SQLITE"
		return 0
	fi
	mkdir -p "$dir"
	if command -v npm >/dev/null &&
		(cd "$dir" && npm pack --silent "$SQLITE_NPM" >/dev/null 2>&1) &&
		tar -xzf "$dir"/better-sqlite3-*.tgz -C "$dir" --strip-components=3 \
			package/deps/sqlite3/sqlite3.c package/deps/sqlite3/sqlite3.h 2>/dev/null; then
		echo "$dir"
	else
		echo "run.sh: no SQLite amalgamation (npm pack $SQLITE_NPM failed); sqlite-src skipped" >&2
	fi
}

# The CPython source tree for python-src, from $HEAPLEDGER_BENCH_PYTHON: a
# source tree, or a tarball of one, unpacked once into the cache. Prints its
# directory, or nothing.
python_source() {
	local p=${HEAPLEDGER_BENCH_PYTHON:-}
	if [ -z "$p" ]; then
		echo "run.sh: HEAPLEDGER_BENCH_PYTHON is not set (a CPython source tree or tarball, see bench/README.md); python-src skipped" >&2
	elif [ -f "$p/configure" ] && [ -f "$p/Include/Python.h" ]; then
		realpath "$p"
	elif [ -f "$p" ]; then
		cached python-source "$(sha256sum <"$p")" unpack "$(realpath "$p")"
	else
		echo "run.sh: HEAPLEDGER_BENCH_PYTHON=$p is neither a CPython source tree nor a tarball; python-src skipped" >&2
	fi
}

# Programs built from source (sqlite-src, python-src) are built once into
# $CACHE and reused by later runs: CPython takes minutes to build.
# cached NAME IDENTITY BUILDER SOURCE ARG...: prints the directory in which
# `BUILDER DIR SOURCE ARG...` built NAME, building it first if no earlier run
# did. The directory's name holds a hash of IDENTITY (what the source holds),
# the ARGs, the compiler and BUILDER's own text, so a change to any of them
# builds anew; SOURCE is only where the source is now. A build goes into a
# temporary directory renamed once it succeeds, so a failed or interrupted one
# is never reused; a failure prints nothing and keeps its log in NAME-*.failed.
cached() {
	local name=$1 identity=$2 builder=$3 source=$4 key dir
	shift 4
	key=$({
		printf '%s\n' "$identity" "$@"
		gcc --version | head -n1
		declare -f "$builder"
	} | sha256sum | cut -c1-16)
	dir=$CACHE/$name-$key
	if [ ! -d "$dir" ]; then
		echo "run.sh: building $name into $dir (once: later runs reuse it)" >&2
		rm -rf "$dir.tmp" "$dir.failed"
		mkdir -p "$dir.tmp"
		if ! "$builder" "$dir.tmp" "$source" "$@" >"$dir.tmp/build.log" 2>&1; then
			mv "$dir.tmp" "$dir.failed"
			echo "run.sh: building $name failed: see $dir.failed/build.log" >&2
			return 0
		fi
		mv "$dir.tmp" "$dir"
	fi
	echo "$dir"
}

# cached's builders: DIR SOURCE ARG...
unpack() {
	tar -xf "$2" -C "$1" --strip-components=1
}
# sqlrun and the amalgamation into DIR/sqlrun, with flags ARG...
build_sqlrun() {
	local out=$1 src=$2
	shift 2
	gcc -O2 -g -pthread "$@" -I"$src" "$SRC/real/sqlrun.c" "$src/sqlite3.c" -o "$out/sqlrun" -lm
}
# CPython's interpreter into DIR/python (an out-of-tree build: the source tree
# is shared by the plain and sanitized builds), with sanitizer flag SAN (or
# nothing) added to the same C and link flags. Only the interpreter: the
# workload needs no extension module. The build runs programs it built (with
# SAN), whose leaks at exit must not fail it. One start-up writes the standard
# library's bytecode into the source tree's __pycache__ (shared by all
# builds), so no timed run compiles it.
build_python() (
	local out=$1 src=$2 san=$3 opt=$4 cflags=$5 cppflags=$6 ldflags=$7
	shift 7
	cd "$out" || exit 1
	export ASAN_OPTIONS=detect_leaks=0 LSAN_OPTIONS=detect_leaks=0 OPT=$opt
	"$src/configure" "$@" CFLAGS="$cflags${san:+ $san}" CPPFLAGS="$cppflags" LDFLAGS="$ldflags${san:+ $san}" &&
		make -j"$(nproc)" python && ./python -c pass
)

sqlite_src="" sqlite_id="" python_src="" python_id=""
if [[ " ${workloads[*]} " == *" sqlite-src "* ]]; then
	sqlite_src=$(sqlite_source)
	[ -z "$sqlite_src" ] || sqlite_id=$(cat "$sqlite_src/sqlite3.c" "$sqlite_src/sqlite3.h" "$SRC/real/sqlrun.c" | sha256sum)
fi
if [[ " ${workloads[*]} " == *" python-src "* ]]; then
	python_src=$(python_source)
	# The source's path is part of it: the interpreter finds its library there.
	[ -z "$python_src" ] || python_id="$python_src $(cd "$python_src" &&
		find . -type f -not -name build.log -not -path '*/__pycache__/*' -printf '%p %s %T@\n' | sort | sha256sum)"
fi

# "WORKLOAD KIND" -> the directory of a program built from source, for KIND
# plain, lsan or asan; no entry when it is missing.
declare -A rebuilt
# rebuild KIND FLAG: the programs built from source, for KIND (FLAG: the
# sanitizer's, or nothing for plain).
rebuild() {
	local kind=$1 flag=$2 dir
	if [ -n "$sqlite_src" ]; then
		dir=$(cached "sqlrun-$kind" "$sqlite_id" build_sqlrun "$sqlite_src" ${flag:+"$flag"} "${SQLITE_FLAGS[@]}")
		[ -z "$dir" ] || rebuilt["sqlite-src $kind"]=$dir
	fi
	if [ -n "$python_src" ]; then
		dir=$(cached "python-$kind" "$python_id" build_python "$python_src" "$flag" "$PYTHON_OPT" \
			"$PYTHON_CFLAGS" "$PYTHON_CPPFLAGS" "$PYTHON_LDFLAGS" "${PYTHON_CONFIGURE[@]}")
		[ -z "$dir" ] || rebuilt["python-src $kind"]=$dir
	fi
}
rebuild plain ""

build_sanitized() {
	local kind=$1 flag=$2 w
	mkdir -p "$work/$kind"
	for w in churn bigframe ring realloc mixed; do
		if ! gcc -std=gnu11 -O2 -g -pthread "$flag" "$SRC/$w.c" -o "$work/$kind/$w" 2>"$work/$kind/build.log"; then
			echo "run.sh: cannot build with $flag (see below); $kind skipped" >&2
			cat "$work/$kind/build.log" >&2
			return 1
		fi
	done
	rebuild "$kind" "$flag"
}

for v in "${variants[@]}"; do
	case $v in
	glibc) available[$v]=yes ;;
	jemalloc | mimalloc | tcmalloc | heapledger | heapledger-nostack) [ -f "$(preload_of "$v")" ] && available[$v]=yes ;;
	hl-full | hl-guard | hl-sample) [ -f "$lib" ] && available[$v]=yes ;;
	efence) [ -f "$EFENCE" ] && available[$v]=yes ;;
	hl-run | hl-run-full) [ -f "$lib" ] && [ -x "$reporter" ] && available[$v]=yes ;;
	heaptrack | valgrind) command -v "$v" >/dev/null && available[$v]=yes ;;
	lsan) build_sanitized lsan -fsanitize=leak && available[$v]=yes ;;
	asan) build_sanitized asan -fsanitize=address && available[$v]=yes ;;
	esac
	: "${available[$v]:=}"
done

# Each (variant, size) pair runs once per round; glibc runs at every size a
# selected variant uses, right before it, as that variant's baseline.
plan=()
add_plan() {
	local p
	for p in "${plan[@]}"; do [ "$p" = "$1" ] && return 0; done
	plan+=("$1")
}
for v in "${variants[@]}"; do
	[ "$v" = glibc ] || add_plan "glibc:$(scale_of "$v")"
	add_plan "$v:$(scale_of "$v")"
done

python=/usr/bin/python3
[ -x "$python" ] || python=$(command -v python3 || echo python3)
export PYTHONHASHSEED=0
unset LD_PRELOAD
cc1=$(gcc -print-prog-name=cc1)

# Inputs of the real programs, one per size, written before any timing.
make_inputs() {
	local s=$1
	[ -f "$work/input/items.$s.sql" ] && return 0
	awk -v rows=$((200000 * s / 100 + 1)) -f "$SRC/real/gen_sql.awk" >"$work/input/items.$s.sql"
	awk -v functions=$((120 * s / 100 + 1)) -f "$SRC/real/gen_c.awk" >"$work/input/big.$s.c"
}
for p in "${plan[@]}"; do make_inputs "${p#*:}"; done

# --- one run --------------------------------------------------------------------

# Prints the command of workload $1 at size $2, one word a line, using the
# workload binaries in $3 and writing cc1's assembly to $4.
workload_cmd() {
	local w=$1 s=$2 bin=$3 obj=$4
	case $w in
	churn | bigframe | realloc | mixed) printf '%s\n' "$bin/$w" "$s" ;;
	ring2) printf '%s\n' "$bin/ring" 2 "$s" ;;
	ring8) printf '%s\n' "$bin/ring" 8 "$s" ;;
	python) printf '%s\n' "$python" "$SRC/real/dicts.py" "$s" ;;
	python-src) printf '%s\n' "$bin/python" "$SRC/real/dicts.py" "$s" ;;
	sqlite) printf '%s\n' sqlite3 :memory: ".read $work/input/items.$s.sql" ;;
	sqlite-src) printf '%s\n' "$bin/sqlrun" "$work/input/items.$s.sql" ;;
	# cc1 itself, not the gcc driver: heaptrack does not follow children,
	# so under `gcc -c` it would trace only the driver's few hundred
	# allocations while hl-run and valgrind trace cc1 and as too.
	cc1) printf '%s\n' "$cc1" -quiet -O2 "$work/input/big.$s.c" -o "$obj" ;;
	esac
}

# Prints the words that go before the workload's command for variant $1.
variant_prefix() {
	case $1 in
	glibc | lsan | asan) echo env ;;
	jemalloc | mimalloc | tcmalloc | heapledger) printf '%s\n' env "LD_PRELOAD=$(preload_of "$1")" ;;
	# The allocator without stack capture: what the allocator itself costs.
	heapledger-nostack) printf '%s\n' env "LD_PRELOAD=$lib" HEAPLEDGER_OPTIONS=stacks=0 ;;
	# HEAPLEDGER_TIMING=1: the reporter logs its CPU and the program's (cpu_row).
	hl-run) printf '%s\n' env HEAPLEDGER_TIMING=1 "HEAPLEDGER_LIB=$lib" "$reporter" run --db "$work/hl.db" -- ;;
	# The heap misuse checks that cost memory (guard bytes, quarantine), next
	# to ASan, which needs a rebuild, and valgrind.
	hl-full) printf '%s\n' env "LD_PRELOAD=$lib" HEAPLEDGER_OPTIONS=checks=full ;;
	hl-run-full) printf '%s\n' env HEAPLEDGER_TIMING=1 "HEAPLEDGER_LIB=$lib" "$reporter" run --checks full --db "$work/hl.db" -- ;;
	# Faults at the instruction: every block against a guard page (as
	# Electric Fence at malloc's alignment, as guard_align's default), or one
	# allocation in 1000 (as GWP-ASan, for production).
	hl-guard) printf '%s\n' env "LD_PRELOAD=$lib" HEAPLEDGER_OPTIONS=checks=guard ;;
	hl-sample) printf '%s\n' env "LD_PRELOAD=$lib" HEAPLEDGER_OPTIONS=guard_sample=1000 ;;
	efence) printf '%s\n' env "LD_PRELOAD=$EFENCE" EF_ALIGNMENT=16 ;;
	heaptrack) printf '%s\n' heaptrack -o "$work/ht/trace" ;;
	valgrind) printf '%s\n' valgrind --leak-check=full --trace-children=yes ;;
	esac
}

# Why a variant has no number for a workload, or nothing if it runs.
skip_reason() {
	local v=$1 w=$2
	case $v in
	lsan | asan) [[ $REBUILT == *" $w "* ]] || { echo "n/a"; return; } ;;
	esac
	case $w in
	sqlite-src | python-src) [ -n "$(workload_bin "$w" "$v")" ] || { echo "missing"; return; } ;;
	esac
	[ -n "${available[$v]}" ] || echo "missing"
}

# Where workload $1's binaries for variant $2 are (nothing: not built).
workload_bin() {
	local kind=plain
	case $2 in lsan | asan) kind=$2 ;; esac
	case $1 in
	sqlite-src | python-src) echo "${rebuilt["$1 $kind"]:-}" ;;
	*) [ $kind = plain ] && echo "$build/bench" || echo "$work/$kind" ;;
	esac
}

# Appends workload $1, variant $2 and the reporter's and the program's CPU
# seconds, from the reporter's HEAPLEDGER_TIMING line in $3, to $cpu_raw.
cpu_row() {
	sed -n 's/.*timing: CPU of heapledger \([0-9.]*\) s, of the program \([0-9.]*\) s.*/\1 \2/p' "$3" |
		while read -r rep prog; do printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$rep" "$prog"; done >>"$cpu_raw"
}

# The reporter's CPU as a share of the program's, per workload: medians of
# the rounds' figures (cpu_row).
cpu_table() {
	[ -s "$cpu_raw" ] || return 0
	echo
	echo "## Reporter CPU under hl-run"
	echo
	echo "CPU seconds (user + system) of \`heapledger run\`'s own threads (reading, symbols, report, store) and of"
	echo "the program it ran, from its HEAPLEDGER_TIMING line; medians over rounds, at the hl-run column's size."
	echo "The share is what tracking costs beside the program's own CPU, on a core the program may need."
	echo
	echo "| Workload | variant | reporter CPU | program CPU | reporter / program |"
	echo "|---|---|---:|---:|---:|"
	awk -F'\t' -v order="${workloads[*]}" '
		function median(list,   a, n, i, j, t) {
			n = split(list, a, " ")
			for (i = 2; i <= n; i++)
				for (j = i; j > 1 && a[j - 1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
			return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		}
		{ k = $1 SUBSEP $2; rep[k] = rep[k] " " $3; prog[k] = prog[k] " " $4
		  if ($4 > 0) share[k] = share[k] " " 100 * $3 / $4 }
		END {
			nw = split(order, ws, " ")
			for (i = 1; i <= nw; i++)
				for (j = 1; j <= 2; j++) {
					v = j == 1 ? "hl-run" : "hl-run-full"
					k = ws[i] SUBSEP v
					if (!(k in rep)) continue
					printf "| %s | %s | %.3f s | %.3f s | %s |\n", ws[i], v, median(rep[k]),
						median(prog[k]), k in share ? sprintf("%.0f%%", median(share[k])) : "-"
				}
		}' "$cpu_raw"
}

run_one() {
	local r=$1 w=$2 v=$3 s=$4 tag bin obj sum note="" wall rss status
	local -a cmd
	tag=$work/runs/$r.$w.$v.$s
	bin=$(workload_bin "$w" "$v")
	obj=$work/cwd/$w.$v.s
	mapfile -t cmd < <(variant_prefix "$v"; workload_cmd "$w" "$s" "$bin" "$obj")
	rm -f "$obj" "$work/hl.db"
	(cd "$work/cwd" && "$timeit" "$tag.time" timeout -k 10 "$cell_limit" "${cmd[@]}" >"$tag.out" 2>"$tag.err") || true
	read -r wall rss status <"$tag.time" || { wall=0 rss=0 status=timeit; }
	# timeout(1) exits 124 when it stopped the run: the cell says so, and
	# its later rounds are not run (they would only take as long again).
	if [ "$status" = 124 ]; then
		timed_out["$w $v $s"]=1
		printf '0\t%s\t%s\t%s\t0\t0\t%s\t\t\n' "$w" "$v" "$s" "**over ${cell_limit} s**" >>"$raw"
		printf '[%d/%d] %-8s %-10s %3s%%  over %s s: stopped\n' "$r" "$rounds" "$w" "$v" "$s" "$cell_limit" >&2
		rm -rf "$obj" "$work/hl.db" "$work/ht"/*
		return
	fi
	if [ "$w" = cc1 ]; then
		sum=$([ -f "$obj" ] && echo "checksum $(cksum <"$obj")" || true)
	else
		sum=$(grep -m1 '^checksum ' "$tag.out" || true)
	fi
	# The reporter says so when no process sent it events: then hl-run
	# measured the wrapper, not tracking.
	if [[ $v == hl-run* ]] && grep -q 'no process reported' "$tag.err"; then
		note=noevents
	fi
	[[ $v != hl-run* ]] || cpu_row "$w" "$v" "$tag.err"
	rm -rf "$obj" "$work/hl.db" "$work/ht"/*
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$r" "$w" "$v" "$s" "$wall" "$rss" "$status" "$sum" "$note" >>"$raw"
	printf '[%d/%d] %-8s %-10s %3s%%  %7ss %8s KiB  exit %s\n' "$r" "$rounds" "$w" "$v" "$s" "$wall" "$rss" "$status" >&2
}

# --- the rounds -------------------------------------------------------------------

started=$(date -u '+%Y-%m-%d %H:%M UTC')
load_before=$(cut -d' ' -f1-3 /proc/loadavg)
for w in "${workloads[@]}"; do
	for p in "${plan[@]}"; do
		v=${p%%:*}
		reason=$(skip_reason "$v" "$w")
		[ -z "$reason" ] || printf '0\t%s\t%s\t%s\t0\t0\t%s\t\t\n' "$w" "$v" "${p#*:}" "$reason" >>"$raw"
	done
done
for ((r = 1; r <= rounds; r++)); do
	for w in "${workloads[@]}"; do
		for p in "${plan[@]}"; do
			v=${p%%:*}
			[ -z "$(skip_reason "$v" "$w")" ] || continue
			[ -z "${timed_out["$w $v ${p#*:}"]:-}" ] || continue
			run_one "$r" "$w" "$v" "${p#*:}"
		done
	done
done
if [ $run_scan = 1 ]; then
	scan_args=(--build "$build" --lib "$lib" --reporter "$reporter" -n $((rounds < 3 ? rounds : 3)))
	[ $quick = 0 ] || scan_args+=(--quick)
	"$SRC/scan.sh" "${scan_args[@]}" >"$work/scan.md" ||
		printf '## Leak scan\n\nFAILED: bench/scan.sh exited with an error.\n' >"$work/scan.md"
fi
if [ $run_forkshell = 1 ]; then
	fork_args=(--build "$build" --lib "$lib" --reporter "$reporter")
	[ $quick = 0 ] || fork_args+=(--sizes "100 500")
	"$SRC/forkshell.sh" "${fork_args[@]}" >"$work/forkshell.md" ||
		printf '## Reporter on a fork-heavy shell script\n\nFAILED: bench/forkshell.sh exited with an error.\n' >"$work/forkshell.md"
fi
if [ $run_suites = 1 ]; then
	"$SRC/suites.sh" --build "$build" --lib "$lib" --reporter "$reporter" -n "$rounds" >"$work/suites.md" ||
		printf '## Whole test suites under the daemon\n\nFAILED: bench/suites.sh exited with an error.\n' >"$work/suites.md"
fi
load_after=$(cut -d' ' -f1-3 /proc/loadavg)

# --- the report --------------------------------------------------------------------

versions() {
	local p
	for p in libc6 libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4 heaptrack valgrind gcc-12 python3 sqlite3; do
		dpkg-query -W -f '${Package} ${Version}, ' "$p" 2>/dev/null || true
	done | sed 's/, $//'
}

# Which versions the programs built from source are, and from where.
built_versions() {
	local v=""
	[ -z "$sqlite_src" ] || v="sqlite-src: SQLite $(sed -n 's/^#define SQLITE_VERSION *"\(.*\)"/\1/p' "$sqlite_src/sqlite3.h") (${HEAPLEDGER_BENCH_SQLITE:-npm $SQLITE_NPM})"
	[ -z "$python_src" ] || v="${v:+$v; }python-src: CPython $(sed -n 's/^#define PY_VERSION *"\(.*\)"/\1/p' "$python_src/Include/patchlevel.h") (${HEAPLEDGER_BENCH_PYTHON##*/})"
	echo "$v"
}

mkdir -p "$(dirname "$out")"
{
	echo "# heapledger benchmarks"
	echo
	echo "Generated by \`$invocation\`: do not edit by hand; see bench/README.md."
	echo
	echo "- Date: $started"
	echo "- Machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//'), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), Linux $(uname -r)"
	echo "- Load average (1, 5, 15 min) before: $load_before; after: $load_after (other work on the machine adds noise)"
	echo "- Commit: $(git -C "$ROOT" describe --always --dirty 2>/dev/null || echo unknown)"
	echo "- heapledger: \`${lib#"$ROOT"/}\`$( [ -f "$lib" ] || echo ' (missing)')"
	echo "- Packages: $(versions)"
	built=$(built_versions)
	[ -z "$built" ] || echo "- Built from source, plain and per sanitizer: $built"
	echo "- Rounds: $rounds, interleaved; sizes: allocators ${scale_full}%, hl-run, heaptrack, lsan, asan, hl-full, hl-run-full, hl-sample ${scale_tool}%, hl-guard and efence ${scale_guard}%, valgrind ${scale_vg}% of a full run; a run over ${cell_limit} s was stopped"
	echo
	if [ ${#workloads[@]} -gt 0 ]; then
		awk -F'\t' -v plan="${plan[*]}" -v workloads="${workloads[*]}" \
			-v synthetic="$SYNTHETIC" -v full="$scale_full" -v rebuilt_of="$REBUILT_OF" -f "$SRC/report.awk" "$raw"
	fi
	cpu_table
	if [ $run_scan = 1 ]; then
		echo
		cat "$work/scan.md"
	fi
	if [ $run_forkshell = 1 ]; then
		echo
		cat "$work/forkshell.md"
	fi
	if [ $run_suites = 1 ]; then
		echo
		cat "$work/suites.md"
	fi
} >"$out.tmp"
mv "$out.tmp" "$out"
cat "$out"
echo "run.sh: wrote $out" >&2
if grep -q 'MISMATCH\|FAILED' "$out"; then
	echo "run.sh: some runs failed or gave a different checksum than glibc: see $out" >&2
	exit 1
fi
