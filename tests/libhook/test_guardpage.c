/*
 * tests/libhook/test_guardpage.c: checks=guard and guard_sample= in one
 * process: where a guarded block lies, what its free leaves, errors found
 * by calls (counted by hl_misuse_error_count), and insn.c's access sizes.
 * The faults themselves are tests/run/check_guard.py's: cmocka puts its own
 * SIGSEGV handler in front of each test.
 *
 * Linked with the allocator's objects (its malloc is ours) and run with
 * HEAPLEDGER_OPTIONS=checks=guard (meson.build; once more with guard_align=1
 * and once with guard_sample=1, where every allocation is sampled).
 */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "heap.h"

static void *(*volatile malloc_fn)(size_t) = malloc;
static void *(*volatile memalign_fn)(size_t, size_t) = memalign;
static void *(*volatile realloc_fn)(void *, size_t) = realloc;
static void *(*volatile calloc_fn)(size_t, size_t) = calloc;
static void (*volatile free_fn)(void *) = free;

static size_t page(void)
{
	return (size_t)sysconf(_SC_PAGESIZE);
}

/* Bytes from p + n to the next page boundary: the gap before the guard. */
static size_t gap_after(const void *p, size_t n)
{
	uintptr_t end = (uintptr_t)p + n;
	return (page() - end % page()) % page();
}

static void test_block_against_the_guard_page(void **state)
{
	(void)state;
	size_t align = hl_options.guard_align;
	for (size_t n = 1; n <= 4096; n = n * 3 + 1) {
		char *p = malloc_fn(n);
		assert_true(hl_guard_owns(p));
		assert_int_equal((uintptr_t)p % align, 0);
		assert_true(gap_after(p, n) < align);
		assert_int_equal(malloc_usable_size(p), n);
		memset(p, 1, n);
		free_fn(p);
	}
	char *big = malloc_fn(hl_options.guard_max + 1);
	assert_false(hl_guard_owns(big));
	free_fn(big);
}

static void test_calloc_memalign_realloc(void **state)
{
	(void)state;
	unsigned char *z = calloc_fn(100, 3);
	assert_true(hl_guard_owns(z));
	for (int i = 0; i < 300; i++)
		assert_int_equal(z[i], 0);
	void *a = memalign_fn(256, 40);
	assert_true(hl_guard_owns(a));
	assert_int_equal((uintptr_t)a % 256, 0);
	free_fn(a);
	memset(z, 7, 300);
	unsigned char *r = realloc_fn(z, 500); /* always moves: z's slot goes PROT_NONE */
	assert_ptr_not_equal(r, z);
	assert_true(hl_guard_owns(r));
	assert_int_equal(r[299], 7);
	r = realloc_fn(r, 20);
	assert_int_equal(r[19], 7);
	free_fn(r);
}

static void test_double_free_from_the_slot_record(void **state)
{
	(void)state;
	uint64_t errors = hl_misuse_error_count();
	char *p = malloc_fn(24);
	free_fn(p);
	free_fn(p); /* the header is PROT_NONE: the slot's record describes it */
	assert_int_equal(hl_misuse_error_count(), errors + 1);
	struct hl_misuse m = { 0 };
	assert_true(hl_guard_describe_freed(p, &m));
	assert_int_equal(m.block_size, 24);
}

static void test_write_into_the_gap_is_found_at_free(void **state)
{
	(void)state;
	if (hl_options.guard_align < 2)
		skip();
	uint64_t errors = hl_misuse_error_count();
	char *p = malloc_fn(10);
	p[10] = 'x'; /* in the gap: no fault */
	assert_int_equal(hl_misuse_error_count(), errors);
	free_fn(p);
	assert_int_equal(hl_misuse_error_count(), errors + 1);
}

/* The gap holds guard bytes: each leak check reads a live block's, reports
 * a write once and repairs it. */
static void test_write_into_the_gap_of_a_live_block_is_found_by_a_check(void **state)
{
	(void)state;
	if (hl_options.guard_align < 2)
		skip();
	uint64_t errors = hl_misuse_error_count();
	char *p = malloc_fn(10);
	p[10] = 'x';
	hl_checks_sweep(HL_CALL_CHECK);
	assert_int_equal(hl_misuse_error_count(), errors + 1);
	hl_checks_sweep(HL_CALL_CHECK);
	free_fn(p);
	assert_int_equal(hl_misuse_error_count(), errors + 1);
}

static void test_freed_slots_wait_in_the_quarantine(void **state)
{
	(void)state;
	enum { N = 64 };
	void *freed[N];
	for (int i = 0; i < N; i++)
		freed[i] = malloc_fn(100);
	for (int i = 0; i < N; i++)
		free_fn(freed[i]);
	/* quarantine=1: 256 pages; while fresh slots last none is reused */
	for (int i = 0; i < N; i++) {
		void *p = malloc_fn(100);
		for (int j = 0; j < N; j++)
			assert_ptr_not_equal(p, freed[j]);
		free_fn(p);
	}
}

static void test_access_sizes(void **state)
{
	(void)state;
	static const struct {
		unsigned char code[8];
		unsigned size;
	} cases[] = {
		{ { 0x0f, 0xb6, 0x40, 0x0a }, 1 },             /* movzx eax, byte [rax+10] */
		{ { 0x88, 0x10 }, 1 },                         /* mov [rax], dl */
		{ { 0xc6, 0x00, 0x78 }, 1 },                   /* mov byte [rax], 0x78 */
		{ { 0x8b, 0x00 }, 4 },                         /* mov eax, [rax] */
		{ { 0x48, 0x8b, 0x00 }, 8 },                   /* mov rax, [rax] */
		{ { 0x66, 0x89, 0x10 }, 2 },                   /* mov [rax], dx */
		{ { 0x0f, 0xb7, 0x00 }, 2 },                   /* movzx eax, word [rax] */
		{ { 0xf3, 0x0f, 0x6f, 0x00 }, 16 },            /* movdqu xmm0, [rax] */
		{ { 0xf2, 0x0f, 0x10, 0x00 }, 8 },             /* movsd xmm0, [rax] */
		{ { 0xc5, 0xfe, 0x6f, 0x00 }, 32 },            /* vmovdqu ymm0, [rax] */
		{ { 0xc5, 0xfa, 0x10, 0x00 }, 4 },             /* vmovss xmm0, [rax] */
		{ { 0x62, 0xf1, 0xfe, 0x48, 0x6f, 0x00 }, 64 }, /* vmovdqu64 zmm0, [rax] */
		{ { 0xf3, 0xa4 }, 1 },                         /* rep movsb */
		{ { 0x48, 0xa5 }, 8 },                         /* movsq */
		{ { 0x80, 0x38, 0x00 }, 1 },                   /* cmp byte [rax], 0 */
		{ { 0x0f, 0x0b }, 0 },                         /* ud2: unknown */
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(hl_insn_access_size(cases[i].code), cases[i].size);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_block_against_the_guard_page),
		cmocka_unit_test(test_calloc_memalign_realloc),
		cmocka_unit_test(test_double_free_from_the_slot_record),
		cmocka_unit_test(test_write_into_the_gap_is_found_at_free),
		cmocka_unit_test(test_write_into_the_gap_of_a_live_block_is_found_by_a_check),
		cmocka_unit_test(test_freed_slots_wait_in_the_quarantine),
		cmocka_unit_test(test_access_sizes),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
