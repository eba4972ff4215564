/*
 * tests/reporter/test_symbolize.c: symbolization of a real binary built with
 * -g -O0 (fixture_sym.c): function, file:line, inlined frames; module+offset
 * for a missing file; a changed build-id disables debug info; the cache
 * answers repeated lookups with the same frames; a separate, compressed
 * debug file is inflated once into the cache of copies and read from there
 * afterwards, and a bad entry, no cache or a full disk change no frame.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elfutils/libdwelf.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <setjmp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "debug_cache.h"
#include "state.h"
#include "symbolize.h"
#include "util.h"

/* What a run of a fixture binary printed about itself. */
struct fixture {
	uint64_t direct_address, inlined_address, bias;
	char exe[4096];
};

/* fixture: the binary with its debug info; split: the same code stripped,
 * its debug info compressed in a separate file found by .gnu_debuglink
 * (as Debian ships libc6-dbg and -dbgsym packages). */
static struct fixture fixture, split;
/* FIXTURE_BINARY, or argv[1]: the same binary without .debug_aranges (as
 * clang writes it), whose units are then found from their own ranges. */
static const char *fixture_binary = FIXTURE_BINARY;
static char cache_dir[] = "/tmp/hl-test-debug-cache-XXXXXX";

/* Line of the marker comment in the fixture's source. */
static uint32_t marker_line(const char *marker)
{
	FILE *f = fopen(FIXTURE_SOURCE, "r");
	char line[512];
	uint32_t n = 0;

	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		n++;
		if (strstr(line, marker) && !strstr(line, "MARK-...")) {
			fclose(f);
			return n;
		}
	}
	fclose(f);
	fail_msg("marker %s not found", marker);
	return 0;
}

static int read_fixture(const char *binary, struct fixture *out)
{
	FILE *p = popen(binary, "r");
	unsigned long long a, b, c;
	int n = p ? fscanf(p, "%llx %llx %llx %4095s", &a, &b, &c, out->exe) : 0;

	if (p)
		pclose(p);
	if (n != 4)
		return -1;
	out->direct_address = a;
	out->inlined_address = b;
	out->bias = c;
	return 0;
}

static int run_fixtures(void **state)
{
	/* The tests that do not name a cache must not fill the user's. */
	setenv("HEAPLEDGER_CACHE_DIR", "off", 1);
	if (!mkdtemp(cache_dir))
		return -1;
	return read_fixture(fixture_binary, &fixture) || read_fixture(FIXTURE_SPLIT, &split);
}

static int remove_cache_dir(void **state)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", cache_dir);
	return system(cmd) == 0 ? 0 : -1;
}

static struct hl_module module_of(struct fixture *fx)
{
	struct hl_module m = { 0 };

	m.path = fx->exe;
	m.base = fx->bias;
	m.low = fx->bias;
	m.high = fx->bias + (1ull << 30);
	return m;
}

static struct hl_module fixture_module(void)
{
	return module_of(&fixture);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

/* libc's aliases are named as valgrind names them: the public symbol with
 * the fewest leading underscores, never an internal __GI_ alias. Uses the
 * libc this test runs with (its .symtab when libc6-dbg is installed, its
 * .dynsym otherwise). */
static void test_libc_public_names(void **state)
{
	static const char *const names[] = { "strndup", "_IO_doallocbuf", "malloc", "free" };
	struct hl_symbolizer *s = hl_symbolizer_new();

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		void *fn = dlsym(RTLD_DEFAULT, names[i]);
		Dl_info info;
		struct hl_module m = { 0 };
		const struct hl_frame_info *f;
		size_t n;

		assert_non_null(fn);
		assert_true(dladdr(fn, &info) != 0);
		m.path = (char *)info.dli_fname;
		m.base = (uint64_t)(uintptr_t)info.dli_fbase;
		m.low = m.base;
		m.high = m.base + (1ull << 30);
		/* a return address just past the function's first byte */
		f = hl_symbolize(s, &m, (uint64_t)(uintptr_t)fn + 1, &n);
		assert_non_null(f[n - 1].function);
		assert_string_equal(f[n - 1].function, names[i]);
	}
	hl_symbolizer_free(s);
}

static void test_direct(void **state)
{
	struct hl_symbolizer *s = hl_symbolizer_new();
	struct hl_module m = fixture_module();
	const struct hl_frame_info *f, *again;
	size_t n, n2;

	f = hl_symbolize(s, &m, fixture.direct_address, &n);
	assert_int_equal(n, 1);
	assert_string_equal(f[0].function, "known_function");
	assert_non_null(f[0].file);
	assert_string_equal(base_name(f[0].file), "fixture_sym.c");
	assert_int_equal(f[0].line, marker_line("MARK-DIRECT"));
	assert_string_equal(f[0].module, fixture.exe);
	assert_int_equal(f[0].offset, fixture.direct_address - fixture.bias);
	again = hl_symbolize(s, &m, fixture.direct_address, &n2);
	assert_ptr_equal(again, f);
	assert_int_equal(n2, n);
	hl_symbolizer_free(s);
}

static void test_inlined(void **state)
{
	struct hl_symbolizer *s = hl_symbolizer_new();
	struct hl_module m = fixture_module();
	const struct hl_frame_info *f;
	size_t n;

	f = hl_symbolize(s, &m, fixture.inlined_address, &n);
	assert_int_equal(n, 2);
	assert_string_equal(f[0].function, "inlined_helper");
	assert_true(f[0].inlined);
	assert_int_equal(f[0].line, marker_line("MARK-INLINED"));
	assert_string_equal(f[1].function, "outer_function");
	assert_false(f[1].inlined);
	assert_string_equal(base_name(f[1].file), "fixture_sym.c");
	assert_int_equal(f[1].line, marker_line("MARK-CALLSITE"));
	hl_symbolizer_free(s);
}

static void test_missing_file(void **state)
{
	struct hl_symbolizer *s = hl_symbolizer_new();
	struct hl_module m = { .path = "/nonexistent/libgone.so", .base = 0x7f0000000000,
			       .low = 0x7f0000000000, .high = 0x7f0000100000 };
	const struct hl_frame_info *f;
	size_t n;

	f = hl_symbolize(s, &m, 0x7f0000001234, &n);
	assert_int_equal(n, 1);
	assert_null(f[0].function);
	assert_null(f[0].file);
	assert_string_equal(f[0].module, "/nonexistent/libgone.so");
	assert_int_equal(f[0].offset, 0x1234);
	/* No module at all: the bare address. */
	f = hl_symbolize(s, NULL, 0x1234, &n);
	assert_int_equal(n, 1);
	assert_null(f[0].module);
	assert_int_equal(f[0].address, 0x1234);
	hl_symbolizer_free(s);
}

static void test_build_id_mismatch(void **state)
{
	struct hl_symbolizer *s = hl_symbolizer_new();
	struct hl_module m = fixture_module();
	const struct hl_frame_info *f;
	size_t n;

	m.build_id_len = 20;
	memset(m.build_id, 0xab, 20);
	f = hl_symbolize(s, &m, fixture.direct_address, &n);
	assert_int_equal(n, 1);
	assert_null(f[0].function);
	assert_int_equal(f[0].offset, fixture.direct_address - fixture.bias);
	hl_symbolizer_free(s);
}

static void test_not_elf(void **state)
{
	struct hl_symbolizer *s = hl_symbolizer_new();
	struct hl_module m = { .path = FIXTURE_SOURCE, .low = 0, .high = 1u << 20 };
	const struct hl_frame_info *f;
	size_t n;

	f = hl_symbolize(s, &m, 0x100, &n);
	assert_int_equal(n, 1);
	assert_null(f[0].function);
	hl_symbolizer_free(s);
}

/* ---- the cache of inflated debug files (debug_cache.h) ------------------- */

/* The build-id of an ELF file (20 bytes for GNU ld's sha1). */
static size_t file_build_id(const char *path, uint8_t *id)
{
	int fd = open(path, O_RDONLY);
	Elf *elf;
	const void *bits;
	ssize_t n;

	assert_true(fd >= 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	n = dwelf_elf_gnu_build_id(elf, &bits);
	assert_true(n > 0 && n <= 64);
	memcpy(id, bits, (size_t)n);
	elf_end(elf);
	close(fd);
	return (size_t)n;
}

/* Sections of an ELF file stored compressed, or -1 if it is not one. */
static int compressed_sections(const char *path)
{
	int fd = open(path, O_RDONLY), n = 0;
	Elf *elf;
	Elf_Scn *scn = NULL;

	if (fd < 0)
		return -1;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!elf || elf_kind(elf) != ELF_K_ELF)
		n = -1;
	while (n >= 0 && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr shdr;

		if (gelf_getshdr(scn, &shdr) && (shdr.sh_flags & SHF_COMPRESSED))
			n++;
	}
	elf_end(elf);
	close(fd);
	return n;
}

/* The cache entry of the split fixture's debug file. */
static void entry_of_split(char *out, size_t size)
{
	uint8_t id[64];
	size_t len = file_build_id(FIXTURE_SPLIT, id);
	int at = snprintf(out, size, "%s/debug/", cache_dir);

	for (size_t i = 0; i < len; i++)
		at += snprintf(out + at, size - (size_t)at, "%02x", id[i]);
	snprintf(out + at, size - (size_t)at, ".debug");
}

/* Symbolizes the split fixture's known_function with the cache in dir and
 * checks the frame; returns what the symbolizer did with the cache. */
static struct hl_symbolizer_stats symbolize_split(const char *dir)
{
	struct hl_symbolizer *s;
	struct hl_module m = module_of(&split);
	struct hl_symbolizer_stats st;
	const struct hl_frame_info *f;
	size_t n;

	setenv("HEAPLEDGER_CACHE_DIR", dir, 1);
	s = hl_symbolizer_new();
	setenv("HEAPLEDGER_CACHE_DIR", "off", 1);
	f = hl_symbolize(s, &m, split.direct_address, &n);
	assert_int_equal(n, 1);
	assert_non_null(f[0].function);
	assert_string_equal(f[0].function, "known_function");
	assert_non_null(f[0].file);
	assert_string_equal(base_name(f[0].file), "fixture_sym.c");
	assert_int_equal(f[0].line, marker_line("MARK-DIRECT"));
	st = hl_symbolizer_stats(s);
	hl_symbolizer_free(s);
	return st;
}

/* The first symbolizer inflates the debug file into the cache, later ones
 * read the copy: same frames, and the copy has no compressed section. */
static void test_split_debug_cached(void **state)
{
	char entry[4096];
	struct hl_symbolizer_stats st;

	assert_true(compressed_sections(FIXTURE_SPLIT_DEBUG) > 0);
	entry_of_split(entry, sizeof(entry));
	unlink(entry);
	st = symbolize_split(cache_dir);
	assert_int_equal(st.debug_cache_added, 1);
	assert_int_equal(st.debug_cache_hits, 0);
	assert_int_equal(compressed_sections(entry), 0);
	st = symbolize_split(cache_dir);
	assert_int_equal(st.debug_cache_added, 0);
	assert_int_equal(st.debug_cache_hits, 1);
}

/* A truncated or foreign file under the entry's name is not used: the
 * debug file is inflated again and replaces it. */
static void test_split_debug_bad_entry(void **state)
{
	static const char *const bad[] = { "not an ELF file", NULL };
	char entry[4096];
	struct hl_symbolizer_stats st;

	entry_of_split(entry, sizeof(entry));
	for (int i = 0; i < 2; i++) {
		FILE *f;

		unlink(entry);
		if (bad[i]) {
			f = fopen(entry, "w");
			assert_non_null(f);
			fputs(bad[i], f);
			fclose(f);
		} else {
			/* An ELF file of another build-id: this test. */
			char cmd[8192];

			snprintf(cmd, sizeof(cmd), "cp /proc/%d/exe '%s'", (int)getpid(), entry);
			assert_int_equal(system(cmd), 0);
		}
		st = symbolize_split(cache_dir);
		assert_int_equal(st.debug_cache_hits, 0);
		assert_int_equal(st.debug_cache_added, 1);
		assert_int_equal(compressed_sections(entry), 0);
	}
}

/* No cache (off, or a directory that cannot be made): the frames are the
 * same, from the compressed file. */
static void test_split_debug_no_cache(void **state)
{
	char not_dir[4096];
	struct hl_symbolizer_stats st;
	FILE *f;

	st = symbolize_split("off");
	assert_int_equal(st.debug_cache_hits + st.debug_cache_added, 0);
	snprintf(not_dir, sizeof(not_dir), "%s/plain-file", cache_dir);
	f = fopen(not_dir, "w");
	assert_non_null(f);
	fclose(f);
	strcat(not_dir, "/cache");
	st = symbolize_split(not_dir);
	assert_int_equal(st.debug_cache_hits + st.debug_cache_added, 0);
}

/* The disk fills up while the copy is written (a file size limit stands in
 * for it): the frames are the same, and no partial file is left. */
static void test_split_debug_disk_full(void **state)
{
	char dir[4096], cmd[8192];
	pid_t pid;
	int status;

	snprintf(dir, sizeof(dir), "%s/full", cache_dir);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		/* Room for the copy of the compressed file, not for more. */
		struct stat compressed;
		struct rlimit lim;
		struct hl_symbolizer_stats st;

		if (stat(FIXTURE_SPLIT_DEBUG, &compressed) != 0)
			_exit(2);
		lim.rlim_cur = lim.rlim_max = (rlim_t)compressed.st_size;

		signal(SIGXFSZ, SIG_IGN);
		setrlimit(RLIMIT_FSIZE, &lim);
		st = symbolize_split(dir);
		_exit(st.debug_cache_added == 0 && st.debug_cache_hits == 0 ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	snprintf(cmd, sizeof(cmd), "test -z \"$(ls -A '%s/debug')\"", dir);
	assert_int_equal(system(cmd), 0);
}

/* Adding an entry removes those unused for the maximum age and temporary
 * files older than a day; recent ones stay. A file without compressed
 * sections is not copied. */
static void test_cache_sweep(void **state)
{
	static const struct {
		const char *name;
		int age_days;
		bool stays;
	} files[] = {
		{ "00old.debug", HL_DEBUG_CACHE_MAX_AGE_DAYS + 1, false },
		{ "01recent.debug", HL_DEBUG_CACHE_MAX_AGE_DAYS - 1, true },
		{ ".tmp-dead", 2, false },
		{ ".tmp-writing", 0, true },
	};
	char dir[4096], path[8192], why[256], *entry = NULL;
	uint8_t id[64];
	size_t len = file_build_id(FIXTURE_SPLIT_DEBUG, id);
	int src, fd;

	snprintf(dir, sizeof(dir), "%s/sweep", cache_dir);
	snprintf(path, sizeof(path), "mkdir -p '%s/debug'", dir);
	assert_int_equal(system(path), 0);
	for (size_t i = 0; i < HL_ARRAY_SIZE(files); i++) {
		struct timespec t[2] = { { time(NULL) - files[i].age_days * 86400 - 60, 0 } };
		FILE *f;

		t[1] = t[0];
		snprintf(path, sizeof(path), "%s/debug/%s", dir, files[i].name);
		f = fopen(path, "w");
		assert_non_null(f);
		fclose(f);
		assert_int_equal(utimensat(AT_FDCWD, path, t, 0), 0);
	}
	/* Nothing to inflate: no copy, no reason to complain, no sweep. */
	src = open(fixture_binary, O_RDONLY);
	len = file_build_id(fixture_binary, id);
	assert_int_equal(hl_debug_cache_add(dir, id, len, src, &entry, why, sizeof(why)), -1);
	assert_string_equal(why, "");
	close(src);

	len = file_build_id(FIXTURE_SPLIT_DEBUG, id);
	src = open(FIXTURE_SPLIT_DEBUG, O_RDONLY);
	fd = hl_debug_cache_add(dir, id, len, src, &entry, why, sizeof(why));
	assert_true(fd >= 0);
	close(fd);
	close(src);
	assert_int_equal(compressed_sections(entry), 0);
	free(entry);
	for (size_t i = 0; i < HL_ARRAY_SIZE(files); i++) {
		snprintf(path, sizeof(path), "%s/debug/%s", dir, files[i].name);
		assert_int_equal(access(path, F_OK) == 0, files[i].stays);
	}
	/* And the lookup finds it, by build-id only. */
	fd = hl_debug_cache_open(dir, id, len, &entry);
	assert_true(fd >= 0);
	close(fd);
	free(entry);
	id[0] ^= 1;
	assert_int_equal(hl_debug_cache_open(dir, id, len, &entry), -1);
}

/* Where the cache is: HEAPLEDGER_CACHE_DIR, then the XDG cache, then
 * ~/.cache; off or empty turns it off. */
static void test_cache_dir(void **state)
{
	char *d;

	setenv("HEAPLEDGER_CACHE_DIR", "/somewhere", 1);
	d = hl_debug_cache_dir();
	assert_string_equal(d, "/somewhere");
	free(d);
	setenv("HEAPLEDGER_CACHE_DIR", "", 1);
	assert_null(hl_debug_cache_dir());
	setenv("HEAPLEDGER_CACHE_DIR", "off", 1);
	assert_null(hl_debug_cache_dir());
	unsetenv("HEAPLEDGER_CACHE_DIR");
	setenv("XDG_CACHE_HOME", "/xdg", 1);
	d = hl_debug_cache_dir();
	assert_string_equal(d, "/xdg/heapledger");
	free(d);
	unsetenv("XDG_CACHE_HOME");
	setenv("HOME", "/home/someone", 1);
	d = hl_debug_cache_dir();
	assert_string_equal(d, "/home/someone/.cache/heapledger");
	free(d);
	setenv("HEAPLEDGER_CACHE_DIR", "off", 1);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_direct),
		cmocka_unit_test(test_libc_public_names),
		cmocka_unit_test(test_inlined),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_build_id_mismatch),
		cmocka_unit_test(test_not_elf),
		cmocka_unit_test(test_split_debug_cached),
		cmocka_unit_test(test_split_debug_bad_entry),
		cmocka_unit_test(test_split_debug_no_cache),
		cmocka_unit_test(test_split_debug_disk_full),
		cmocka_unit_test(test_cache_sweep),
		cmocka_unit_test(test_cache_dir),
	};

	if (argc > 1)
		fixture_binary = argv[1];
	return cmocka_run_group_tests(tests, run_fixtures, remove_cache_dir);
}
