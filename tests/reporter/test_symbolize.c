/*
 * tests/reporter/test_symbolize.c: symbolization of a real binary built with
 * -g -O0 (fixture_sym.c): function, file:line, inlined frames; module+offset
 * for a missing file; a changed build-id disables debug info; the cache
 * answers repeated lookups with the same frames.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolize.h"

static uint64_t direct_address, inlined_address, bias;
static char exe[4096];

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

static int run_fixture(void **state)
{
	FILE *p = popen(FIXTURE_BINARY, "r");
	unsigned long long a, b, c;

	if (!p || fscanf(p, "%llx %llx %llx %4095s", &a, &b, &c, exe) != 4)
		return -1;
	pclose(p);
	direct_address = a;
	inlined_address = b;
	bias = c;
	return 0;
}

static struct hl_module fixture_module(void)
{
	struct hl_module m = { 0 };

	m.path = exe;
	m.base = bias;
	m.low = bias;
	m.high = bias + (1ull << 30);
	return m;
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');

	return slash ? slash + 1 : path;
}

static void test_direct(void **state)
{
	struct hl_symbolizer *s = hl_symbolizer_new();
	struct hl_module m = fixture_module();
	const struct hl_frame_info *f, *again;
	size_t n, n2;

	f = hl_symbolize(s, &m, direct_address, &n);
	assert_int_equal(n, 1);
	assert_string_equal(f[0].function, "known_function");
	assert_non_null(f[0].file);
	assert_string_equal(base_name(f[0].file), "fixture_sym.c");
	assert_int_equal(f[0].line, marker_line("MARK-DIRECT"));
	assert_string_equal(f[0].module, exe);
	assert_int_equal(f[0].offset, direct_address - bias);
	again = hl_symbolize(s, &m, direct_address, &n2);
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

	f = hl_symbolize(s, &m, inlined_address, &n);
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
	f = hl_symbolize(s, &m, direct_address, &n);
	assert_int_equal(n, 1);
	assert_null(f[0].function);
	assert_int_equal(f[0].offset, direct_address - bias);
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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_direct),
		cmocka_unit_test(test_inlined),
		cmocka_unit_test(test_missing_file),
		cmocka_unit_test(test_build_id_mismatch),
		cmocka_unit_test(test_not_elf),
	};

	return cmocka_run_group_tests(tests, run_fixture, NULL);
}
