/*
 * tests/reporter/test_fingerprint.c: leak site fingerprints ignore
 * addresses, offsets, lines and directories, skip the allocator and libc
 * wrapper frames on top, and tell different sites apart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "fingerprint.h"

#define FRAME(fn, mod, addr, ln) \
	{ .address = (addr), .function = (fn), .file = "/src/x.c", .line = (ln), \
	  .module = (mod), .offset = (addr) & 0xfff }

static const char *fp(const struct hl_frame_info *f, size_t n)
{
	static char out[HL_FINGERPRINT_LEN + 1];

	hl_fingerprint(f, n, out);
	assert_int_equal(strlen(out), HL_FINGERPRINT_LEN);
	return out;
}

static void test_stable_across_addresses_and_builds(void **state)
{
	struct hl_frame_info a[] = {
		FRAME("malloc", "/build/libhook/libheapledger.so", 0x7f00001000, 10),
		FRAME("strdup", "/usr/lib/x86_64-linux-gnu/libc.so.6", 0x7f10002000, 0),
		FRAME("leak_here", "/home/a/build/prog", 0x555500001100, 12),
		FRAME("main", "/home/a/build/prog", 0x555500001200, 40),
	};
	struct hl_frame_info b[] = {
		FRAME("leak_here", "/tmp/other/prog", 0x561200003300, 99),
		FRAME("main", "/tmp/other/prog", 0x561200003400, 140),
	};
	char first[HL_FINGERPRINT_LEN + 1];

	(void)state;
	strcpy(first, fp(a, 4));
	assert_string_equal(first, fp(b, 2));
	assert_int_equal(hl_fingerprint_first_frame(a, 4), 2);
}

static void test_sites_differ(void **state)
{
	struct hl_frame_info a[] = { FRAME("leak_a", "/p/prog", 0x1000, 1),
				     FRAME("main", "/p/prog", 0x2000, 2) };
	struct hl_frame_info b[] = { FRAME("leak_b", "/p/prog", 0x1000, 1),
				     FRAME("main", "/p/prog", 0x2000, 2) };
	struct hl_frame_info c[] = { FRAME("leak_a", "/p/prog", 0x1000, 1),
				     FRAME("other_caller", "/p/prog", 0x2000, 2) };
	char fa[HL_FINGERPRINT_LEN + 1];

	(void)state;
	strcpy(fa, fp(a, 2));
	assert_string_not_equal(fa, fp(b, 2));
	assert_string_not_equal(fa, fp(c, 2));
}

/* Only the top HL_FINGERPRINT_FRAMES frames count: deeper callers (a
 * test harness calling the same leak from many places) do not split it. */
static void test_top_frames_only(void **state)
{
	struct hl_frame_info a[HL_FINGERPRINT_FRAMES + 1], b[HL_FINGERPRINT_FRAMES + 1];
	char fa[HL_FINGERPRINT_LEN + 1];

	(void)state;
	for (int i = 0; i < HL_FINGERPRINT_FRAMES + 1; i++) {
		a[i] = (struct hl_frame_info)FRAME("f", "/p/prog", 0x1000u + (unsigned)i, 1);
		b[i] = a[i];
	}
	b[HL_FINGERPRINT_FRAMES].function = "another_root";
	strcpy(fa, fp(a, HL_FINGERPRINT_FRAMES + 1));
	assert_string_equal(fa, fp(b, HL_FINGERPRINT_FRAMES + 1));
	b[HL_FINGERPRINT_FRAMES - 1].function = "another_caller";
	assert_string_not_equal(fa, fp(b, HL_FINGERPRINT_FRAMES + 1));
}

/* A stack of runtime frames only (libc's own allocations) keeps them. */
static void test_runtime_only_stack(void **state)
{
	struct hl_frame_info a[] = {
		FRAME("_dl_allocate_tls", "/lib64/ld-linux-x86-64.so.2", 0x1000, 0),
		FRAME("pthread_create", "/lib/x86_64-linux-gnu/libc.so.6", 0x2000, 0),
	};
	struct hl_frame_info b[] = {
		FRAME("_dl_allocate_tls", "/lib64/ld-linux-x86-64.so.2", 0x1000, 0),
		FRAME("__libc_start_main", "/lib/x86_64-linux-gnu/libc.so.6", 0x2000, 0),
	};
	char fa[HL_FINGERPRINT_LEN + 1];

	(void)state;
	assert_int_equal(hl_fingerprint_first_frame(a, 2), 0);
	strcpy(fa, fp(a, 2));
	assert_string_not_equal(fa, fp(b, 2));
	assert_string_equal(hl_basename("/a/b/c.so"), "c.so");
	assert_null(hl_basename(NULL));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stable_across_addresses_and_builds),
		cmocka_unit_test(test_sites_differ),
		cmocka_unit_test(test_top_frames_only),
		cmocka_unit_test(test_runtime_only_stack),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
