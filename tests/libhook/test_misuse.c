/*
 * tests/libhook/test_misuse.c: exact block ownership and the misuse checks.
 *
 * Linked with the allocator's objects (its malloc is ours, as in
 * test_alloc.c): free() here is the inline fast path, hl_release() the full
 * path, and both must turn away the same pointers without touching the heap.
 */
#include <malloc.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <cmocka.h>

#include "arenas_valid.h"
#include "fastpath.h"

static void *(*volatile malloc_fn)(size_t) = malloc;
static void *(*volatile memalign_fn)(size_t, size_t) = memalign;

/* Writes 16 bytes before `at` that pass every in-band test: a header copied
 * from a real block, with the size of a small class and a matching check
 * byte for its new address. */
static void forge_header(char *at, const void *model)
{
	struct hl_range h = *hl_range_of(model);
	h.size = 64;
	h.prev_size = 48;
	h.check = hl_range_check_of(hl_range_of(at), h.size);
	memcpy(at - sizeof(h), &h, sizeof(h));
}

/* No block handed out after a rejected free lies inside the live one. */
static void assert_allocations_outside(const char *live, size_t size)
{
	void *got[512];
	for (int i = 0; i < 512; i++) {
		got[i] = malloc_fn(20 + (size_t)(i % 3) * 16);
		assert_true((char *)got[i] + 20 <= live || (char *)got[i] >= live + size);
	}
	for (int i = 0; i < 512; i++)
		free(got[i]);
}

/* The interior free of the heap-corruption report: free(p + 48) of a live
 * 200-byte block behind 16 plausible header bytes is refused, by the fast
 * path and the full path alike, and malloc never returns memory inside p. */
static void test_forged_interior_free_is_refused(void **state)
{
	char *p = malloc_fn(200);
	char *model = malloc_fn(40);
	memset(p, 0x5a, 200);
	forge_header(p + 48, model);
	uint64_t errors = hl_misuse_error_count();
	free(p + 48);
	assert_int_equal(hl_misuse_error_count(), errors + 1);
	hl_release(p + 48, HL_KIND_MALLOC);
	assert_int_equal(hl_misuse_error_count(), errors + 2);
	assert_int_equal(malloc_usable_size(p + 48), 0);
	assert_int_equal(hl_misuse_error_count(), errors + 3);
	assert_true(arenas_valid());
	assert_allocations_outside(p, 200);
	for (int i = 48; i < 200; i++)
		assert_int_equal((unsigned char)p[i], 0x5a);
	free(model);
	free(p);
	assert_int_equal(hl_misuse_error_count(), errors + 3);
}

/* The same with an over-aligned block and an aligned interior pointer. */
static void test_aligned_interior_free_is_refused(void **state)
{
	char *p = memalign_fn(256, 1024);
	char *model = malloc_fn(40);
	forge_header(p + 256, model);
	uint64_t errors = hl_misuse_error_count();
	free(p + 256);
	assert_int_equal(hl_misuse_error_count(), errors + 1);
	assert_true(arenas_valid());
	assert_allocations_outside(p, 1024);
	free(model);
	free(p);
	assert_int_equal(hl_misuse_error_count(), errors + 1);
}

/* Pointers that no free may accept, of every sort: each is refused once
 * by free() (the inline path) and once by hl_release (the full path),
 * hl_ptr_classify says so, and the heap keeps its invariants. */
static void test_fast_and_full_paths_agree(void **state)
{
	static char global[64] __attribute__((aligned(16)));
	char on_stack[64] __attribute__((aligned(16)));
	char *page = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true(page != MAP_FAILED);
	char *live = malloc_fn(200);
	char *big = malloc_fn(2 << 20);
	char *freed = malloc_fn(100);
	free(freed); /* now in this thread's cache */
	char *medium = malloc_fn(100000);
	char *medium_freed = malloc_fn(100000);
	free(medium_freed); /* in its arena: coalesced or filed */
	struct hl_segment *seg = hl_segment_of(live);
	void *bad[] = {
		global, on_stack, page + 16, live + 1, live + 16, live + 48, live + 192,
		(char *)seg + sizeof(struct hl_segment), (char *)hl_segment_first_range(seg),
		big + 16, big + 4096, freed, medium + 4096,
		(char *)hl_range_of(live),
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		enum hl_ptr_class c = hl_ptr_classify(bad[i]);
		assert_true(c != HL_PTR_SMALL && c != HL_PTR_LARGE);
		uint64_t errors = hl_misuse_error_count();
		free(bad[i]);
		assert_int_equal(hl_misuse_error_count(), errors + 1);
		hl_release(bad[i], HL_KIND_MALLOC);
		assert_int_equal(hl_misuse_error_count(), errors + 2);
	}
	assert_int_equal(hl_ptr_classify(live), HL_PTR_SMALL);
	assert_int_equal(hl_ptr_classify(medium), HL_PTR_SMALL);
	assert_int_equal(hl_ptr_classify(big), HL_PTR_LARGE);
	assert_int_equal(hl_ptr_classify(freed), HL_PTR_FREED);
	assert_true(arenas_valid());
	uint64_t errors = hl_misuse_error_count();
	free(live);
	free(big);
	free(medium);
	assert_int_equal(hl_misuse_error_count(), errors);
	munmap(page, 4096);
}

/* Double frees are caught while the block's range still starts there:
 * in the thread cache, and in its arena. */
static void test_double_free_is_refused(void **state)
{
	uint64_t errors = hl_misuse_error_count();
	char *small = malloc_fn(48);
	free(small);
	free(small);
	assert_int_equal(hl_misuse_error_count(), errors + 1);
	char *medium = malloc_fn(200000);
	char *keep = malloc_fn(200000); /* stops medium from merging rightwards */
	free(medium);
	hl_release(medium, HL_KIND_MALLOC);
	assert_int_equal(hl_misuse_error_count(), errors + 2);
	free(keep);
	assert_true(arenas_valid());
}

/* The map's find: every address of a block, its header included, leads to
 * its range; addresses before the first range lead to none. */
static void test_blockmap_find(void **state)
{
	char *p = malloc_fn(300);
	struct hl_range *r = hl_range_of(p);
	for (size_t off = 0; off < r->size; off += 7)
		assert_ptr_equal(hl_blockmap_find((char *)r + off), r);
	struct hl_segment *seg = hl_segment_of(p);
	assert_null(hl_blockmap_find((char *)seg + 100));
	assert_ptr_equal(hl_blockmap_find(hl_segment_first_range(seg)), hl_segment_first_range(seg));
	free(p);
}

/* Every allocation family against every release: the inline path
 * (hl_free_fast_sized) and the full path (hl_release_sized) report the same
 * mismatches and wrong delete sizes, and release the block either way. */
static void test_families_fast_and_full_agree(void **state)
{
	static const unsigned release[] = { HL_KIND_MALLOC, HL_KIND_NEW, HL_KIND_NEW_ARRAY,
					    HL_KIND_NEW_ALIGNED, HL_KIND_NEW_ARRAY_ALIGNED };
	for (unsigned full = 0; full < 2; full++) {
		for (unsigned a = 0; a < HL_KIND_COUNT; a++) {
			for (size_t i = 0; i < sizeof(release) / sizeof(release[0]); i++) {
				for (size_t delete_size = 99; delete_size <= 101; delete_size++) {
					unsigned rk = release[i];
					size_t n = rk == HL_KIND_MALLOC ? HL_SIZE_UNKNOWN : delete_size;
					bool bad = !(rk == HL_KIND_MALLOC ? a == HL_KIND_MALLOC ||
							 a == HL_KIND_ALIGNED || a == HL_KIND_CALLOC
									  : a == rk) ||
						   (n != HL_SIZE_UNKNOWN && n != 100);
					void *p = hl_allocate(100, HL_ALIGN, a);
					uint64_t errors = hl_misuse_error_count();
					if (full)
						hl_release_sized(p, rk, n);
					else
						hl_free_fast_sized(p, rk, n);
					assert_int_equal(hl_misuse_error_count(), errors + bad);
					assert_int_equal(hl_ptr_classify(p), HL_PTR_FREED);
				}
			}
		}
	}
	assert_true(arenas_valid());
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_forged_interior_free_is_refused),
		cmocka_unit_test(test_aligned_interior_free_is_refused),
		cmocka_unit_test(test_fast_and_full_paths_agree),
		cmocka_unit_test(test_double_free_is_refused),
		cmocka_unit_test(test_blockmap_find),
		cmocka_unit_test(test_families_fast_and_full_agree),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
