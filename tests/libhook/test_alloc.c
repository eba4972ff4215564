/*
 * tests/libhook/test_alloc.c: unit tests of the allocator core.
 *
 * This binary is linked with the allocator's objects, so its malloc IS the
 * allocator under test (cmocka's own allocations included), and the tests
 * may look at range headers through heap.h.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../expect_abort.h"
#include "heap.h"

/* Calls through a volatile pointer so the compiler cannot fold or elide the
 * calls under test (gcc knows malloc's semantics). */
static void *(*volatile malloc_fn)(size_t) = malloc;
static void *(*volatile realloc_fn)(void *, size_t) = realloc;
static void *(*volatile calloc_fn)(size_t, size_t) = calloc;

static bool is_aligned(const void *p, size_t alignment)
{
	return ((uintptr_t)p & (alignment - 1)) == 0;
}

static void test_every_block_is_16_aligned(void **state)
{
	static const size_t sizes[] = { 0, 1, 8, 15, 16, 17, 31, 32, 100, 1000, 1008, 1009,
					1024, 4096, 32768, 32769, 100000, 1 << 20,
					(1 << 20) + 1, 3 << 20 };
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char *p = malloc_fn(sizes[i]);
		assert_non_null(p);
		assert_true(is_aligned(p, 16));
		assert_true(malloc_usable_size(p) >= sizes[i]);
		memset(p, 0xab, sizes[i]);
		free(p);
	}
}

static void test_malloc_zero_is_unique(void **state)
{
	void *a = malloc_fn(0), *b = malloc_fn(0);
	assert_non_null(a);
	assert_non_null(b);
	assert_ptr_not_equal(a, b);
	free(a);
	free(b);
}

static void test_huge_requests_fail_cleanly(void **state)
{
	errno = 0;
	assert_null(malloc_fn(SIZE_MAX));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(malloc_fn(SIZE_MAX / 2));
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	assert_null(calloc_fn(SIZE_MAX / 2, 3)); /* overflows */
	assert_int_equal(errno, ENOMEM);
	errno = 0;
	void *(*volatile reallocarray_fn)(void *, size_t, size_t) = reallocarray;
	assert_null(reallocarray_fn(NULL, SIZE_MAX / 2, 3));
	assert_int_equal(errno, ENOMEM);
	void *p = malloc_fn(10);
	assert_null(realloc_fn(p, SIZE_MAX - 8)); /* p survives a failed realloc */
	assert_int_equal(errno, ENOMEM);
	free(p);
}

static void test_calloc_zeroes_reused_memory(void **state)
{
	for (size_t size = 16; size <= (4 << 20); size *= 4) {
		char *dirty = malloc_fn(size);
		memset(dirty, 0x5a, size);
		free(dirty);
		unsigned char *p = calloc_fn(1, size);
		assert_non_null(p);
		for (size_t i = 0; i < size; i += 61)
			assert_int_equal(p[i], 0);
		assert_int_equal(p[size - 1], 0);
		free(p);
	}
}

/* Medium blocks from never-used segment memory skip the memset: churn the
 * segments with dirty blocks of random sizes, then check calloc still
 * returns zeros everywhere. */
static void test_calloc_medium_after_churn(void **state)
{
	unsigned seed = 12345;
	enum { SLOTS = 64 };
	unsigned char *slots[SLOTS] = { 0 };
	for (int i = 0; i < 4000; i++) {
		int k = rand_r(&seed) % SLOTS;
		free(slots[k]);
		size_t size = 33000 + (size_t)(rand_r(&seed) % 400000);
		if (rand_r(&seed) % 2) {
			slots[k] = malloc_fn(size);
			memset(slots[k], 0xff, size);
		} else {
			slots[k] = calloc_fn(1, size);
			for (size_t j = 0; j < size; j += 7)
				if (slots[k][j] != 0)
					fail_msg("calloc(%zu) byte %zu is %#x", size, j, slots[k][j]);
			memset(slots[k], 0xee, size);
		}
	}
	for (int k = 0; k < SLOTS; k++)
		free(slots[k]);
}

static void test_aligned_apis(void **state)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	for (size_t alignment = 8; alignment <= (1 << 22); alignment *= 2) {
		void *p = NULL;
		assert_int_equal(posix_memalign(&p, alignment, 100), 0);
		assert_true(is_aligned(p, alignment));
		memset(p, 1, 100);
		free(p);
		p = aligned_alloc(alignment, 3 * alignment);
		assert_non_null(p);
		assert_true(is_aligned(p, alignment));
		free(p);
		p = memalign(alignment, 5000);
		assert_non_null(p);
		assert_true(is_aligned(p, alignment));
		memset(p, 2, 5000);
		free(p);
	}
	void *v = valloc(10);
	assert_true(is_aligned(v, page));
	free(v);
	void *pv = pvalloc(0); /* glibc: 0 bytes, page aligned */
	assert_true(is_aligned(pv, page));
	free(pv);
	pv = pvalloc(1);
	assert_true(is_aligned(pv, page));
	assert_true(malloc_usable_size(pv) >= page);
	free(pv);
	pv = pvalloc(page + 1);
	assert_true(malloc_usable_size(pv) >= 2 * page);
	free(pv);
}

static void test_bad_alignments(void **state)
{
	void *p = (void *)0x1;
	assert_int_equal(posix_memalign(&p, 3, 10), EINVAL);
	assert_int_equal(posix_memalign(&p, 4, 10), EINVAL); /* not a multiple of sizeof(void *) */
	assert_int_equal(posix_memalign(&p, 0, 10), EINVAL);
	assert_ptr_equal(p, (void *)0x1);
	/* Not a constant, so compilers that check alignments (clang's
	 * -Wnon-power-of-two-alignment) let the call through to be tested. */
	volatile size_t not_power_of_two = 24;
	errno = 0;
	assert_null(aligned_alloc(not_power_of_two, 48));
	assert_int_equal(errno, EINVAL);
	/* glibc's memalign rounds a bad alignment up instead of failing. */
	void *m = memalign(not_power_of_two, 10);
	assert_non_null(m);
	assert_true(is_aligned(m, 32));
	free(m);
}

/* A private arena: its first segment is cut front to back, so these tests
 * know exactly where each range lands. */
static struct hl_arena test_arena;

static void test_split_and_coalesce(void **state)
{
	struct hl_arena *a = &test_arena;
	size_t size = 4096;
	hl_lock(&a->lock);
	struct hl_range *ra = hl_arena_alloc_locked(a, size);
	struct hl_range *rb = hl_arena_alloc_locked(a, size);
	struct hl_range *rc = hl_arena_alloc_locked(a, size);
	assert_true(ra->flags & HL_RANGE_MAPPING_START);
	assert_int_equal(ra->size, size);
	/* Split off one free range, back to back. */
	assert_ptr_equal(hl_range_next(ra), rb);
	assert_ptr_equal(hl_range_next(rb), rc);
	assert_ptr_equal(hl_range_prev(rc), rb);
	assert_int_equal(rb->prev_size, size);
	struct hl_range *rest = hl_range_next(rc);
	assert_true(hl_block_is_free(rest));
	hl_arena_free_locked(a, rb);
	assert_true(hl_block_is_free(rb));
	assert_int_equal(rb->size, size); /* both neighbours allocated: no merge */
	hl_arena_free_locked(a, ra);      /* merges forward with b */
	assert_int_equal(ra->size, 2 * size);
	assert_int_equal(rc->prev_size, 2 * size);
	/* A request of the merged size is served from the merged range. */
	struct hl_range *again = hl_arena_alloc_locked(a, 2 * size);
	assert_ptr_equal(again, ra);
	hl_arena_free_locked(a, again);
	/* Freeing c merges backward with a+b and forward with the rest: the
	 * whole segment is free again and becomes the arena's newest spare. */
	assert_true(hl_arena_is_valid_locked(a));
	hl_arena_free_locked(a, rc);
	assert_true(hl_arena_is_valid_locked(a));
	assert_ptr_equal(a->spares, hl_segment_of(ra));
	assert_true(hl_segment_is_spare(hl_segment_of(ra)));
	hl_unlock(&a->lock);
}

static void test_grow_and_shrink_in_arena(void **state)
{
	struct hl_arena *a = &test_arena;
	hl_lock(&a->lock);
	struct hl_range *r = hl_arena_alloc_locked(a, 1024);
	struct hl_range *next = hl_arena_alloc_locked(a, 1024);
	struct hl_range *blocker = hl_arena_alloc_locked(a, 1024);
	hl_arena_free_locked(a, next);
	/* Grows into the free right neighbour, leaving the rest free. */
	assert_true(hl_arena_grow_locked(a, r, 1536));
	assert_int_equal(r->size, 1536);
	struct hl_range *tail = hl_range_next(r);
	assert_true(hl_block_is_free(tail));
	assert_int_equal(tail->size, 512);
	assert_ptr_equal(hl_range_next(tail), blocker);
	/* Cannot grow past the allocated blocker. */
	assert_false(hl_arena_grow_locked(a, r, 4096));
	/* Shrinks, and the cut-off tail merges with the free range after it. */
	hl_arena_shrink_locked(a, r, 512);
	assert_int_equal(r->size, 512);
	assert_true(hl_block_is_free(hl_range_next(r)));
	assert_int_equal(hl_range_next(r)->size, 1536);
	assert_true(hl_arena_is_valid_locked(a));
	hl_arena_free_locked(a, r);
	hl_arena_free_locked(a, blocker);
	assert_true(hl_arena_is_valid_locked(a));
	hl_unlock(&a->lock);
}

static struct hl_arena fresh_arena;

static bool all_zero(const unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return false;
	return true;
}

/* The watermark tells calloc which ranges come straight from the kernel. */
static void test_fresh_ranges(void **state)
{
	struct hl_arena *a = &fresh_arena;
	size_t size = 65536;
	hl_lock(&a->lock);
	struct hl_range *r1 = hl_arena_alloc_locked(a, size);
	assert_true(a->last_fresh);
	memset(hl_range_data(r1), 0xff, hl_range_usable(r1));
	struct hl_range *tail = hl_range_next(r1);
	assert_true(hl_block_is_free(tail));
	struct hl_range *r2 = hl_arena_alloc_locked(a, size);
	assert_ptr_equal(r2, tail);
	assert_true(a->last_fresh);
	assert_true(all_zero(hl_range_data(r2), hl_range_usable(r2)));
	/* A range handed out before is not fresh any more. */
	hl_arena_free_locked(a, r1);
	struct hl_range *again = hl_arena_alloc_locked(a, size);
	assert_ptr_equal(again, r1);
	assert_false(a->last_fresh);
	hl_arena_free_locked(a, again);
	hl_arena_free_locked(a, r2);
	hl_unlock(&a->lock);
}

static void test_realloc_in_place(void **state)
{
	size_t n = 120000;
	char *p = malloc_fn(3 * n);
	memset(p, 7, 3 * n);
	/* Shrinks in place, and the tail becomes free. */
	char *q = realloc_fn(p, n);
	assert_ptr_equal(q, p);
	assert_true(hl_block_is_free(hl_range_next(hl_range_of(q))));
	/* Grows back into that free tail: same address, data kept. */
	char *r = realloc_fn(q, 2 * n);
	assert_ptr_equal(r, p);
	for (size_t i = 0; i < n; i += 97)
		assert_int_equal(r[i], 7);
	/* Becoming large moves it, and the contents come along. */
	char *big = realloc_fn(r, 4 << 20);
	assert_true(hl_range_of(big)->flags & HL_RANGE_LARGE);
	for (size_t i = 0; i < n; i += 97)
		assert_int_equal(big[i], 7);
	free(big);
}

/* Resident bytes of this process (/proc/self/statm). */
static size_t resident_bytes(void)
{
	FILE *f = fopen("/proc/self/statm", "r");
	unsigned long size = 0, resident = 0;
	assert_non_null(f);
	assert_int_equal(fscanf(f, "%lu %lu", &size, &resident), 2);
	fclose(f);
	return resident * (size_t)sysconf(_SC_PAGESIZE);
}

/* The realloc benchmark's pattern: builders in random order grow by small
 * appends, each a realloc to the exact length. Blocks that realloc moves
 * must land where they can grow, and the ranges they leave must be reused:
 * the process grows by less than 1.75x the bytes the builders hold (1.43x;
 * 2.55x while moves went through the thread cache). Runs first, on a fresh
 * heap. */
#define BUILDERS 400
static void test_realloc_growth_footprint(void **state)
{
	static char *text[BUILDERS];
	static size_t len[BUILDERS], target[BUILDERS];
	uint64_t rng = 42;
	size_t before = resident_bytes(), held = 0;

#if defined(__SANITIZE_THREAD__)
	skip(); /* ThreadSanitizer's shadow memory is resident too */
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
	skip();
#endif
#endif
	unsigned unfinished = BUILDERS;
	for (int i = 0; i < BUILDERS; i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		target[i] = 2048 + (rng >> 33) % 4096;
	}
	while (unfinished) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		int i = (int)((rng >> 33) % BUILDERS);
		if (len[i] >= target[i])
			continue;
		size_t n = len[i] + 1 + (rng >> 20) % 32;
		char *q = realloc_fn(text[i], n);
		assert_non_null(q);
		memset(q + len[i], 'a' + i % 26, n - len[i]);
		text[i] = q;
		len[i] = n;
		unfinished -= len[i] >= target[i];
	}
	for (int i = 0; i < BUILDERS; i++) {
		held += len[i];
		for (size_t k = 0; k < len[i]; k += 97)
			assert_int_equal(text[i][k], 'a' + i % 26);
	}
	size_t touched = resident_bytes() - before;
	print_message("builders hold %zu bytes, resident memory grew by %zu\n", held, touched);
	assert_true(touched * 4 < held * 7);
	for (int i = 0; i < BUILDERS; i++)
		free(text[i]);
}

static void test_realloc_semantics(void **state)
{
	char *p = realloc_fn(NULL, 50); /* realloc(NULL, n) is malloc(n) */
	assert_non_null(p);
	strcpy(p, "heapledger");
	struct heapledger_stats before, after;
	heapledger_get_stats(&before);
	assert_null(realloc_fn(p, 0)); /* frees, as glibc does */
	heapledger_get_stats(&after);
	assert_int_equal(after.in_use_blocks, before.in_use_blocks - 1);
	/* Small growth steps keep the contents. */
	char *s = NULL;
	for (size_t len = 1; len < 100000; len += len / 3 + 1) {
		s = realloc_fn(s, len + 1);
		memset(s + len / 2, 'x', len - len / 2);
		s[len] = 0;
		assert_int_equal(strlen(s + len / 2), len - len / 2);
	}
	free(s);
}

static void test_large_blocks_use_mremap(void **state)
{
	char *p = malloc_fn(2 << 20);
	assert_true(hl_range_of(p)->flags & HL_RANGE_LARGE);
	p[0] = 1;
	p[(2 << 20) - 1] = 2;
	char *q = realloc_fn(p, 64 << 20);
	assert_non_null(q);
	assert_int_equal(q[0], 1);
	assert_int_equal(q[(2 << 20) - 1], 2);
	char *r = realloc_fn(q, 100); /* back into a segment */
	assert_false(hl_range_of(r)->flags & HL_RANGE_LARGE);
	assert_int_equal(r[0], 1);
	free(r);
}

static void test_size_class_edges(void **state)
{
	/* Every size around each class boundary and the thresholds. */
	static const size_t edges[] = { 1008, 1024, 2048, 4096, 32768, 65536,
					HL_LARGE_THRESHOLD };
	for (size_t e = 0; e < sizeof(edges) / sizeof(edges[0]); e++) {
		for (size_t n = edges[e] - 40; n <= edges[e] + 40; n++) {
			unsigned char *p = malloc_fn(n);
			assert_non_null(p);
			assert_true(malloc_usable_size(p) >= n);
			p[0] = 1;
			p[n - 1] = 2;
			free(p);
		}
	}
	for (size_t n = 0; n < 2048; n++) {
		void *p = malloc_fn(n);
		assert_true(malloc_usable_size(p) >= n);
		assert_true(malloc_usable_size(p) < n + 16 + 256);
		free(p);
	}
}

static void test_foreign_and_double_free_are_ignored(void **state)
{
	static char not_heap[64] __attribute__((aligned(16)));
	int on_stack[8] __attribute__((aligned(16)));
	struct heapledger_stats before, after;
	heapledger_get_stats(&before);
	free(not_heap + 16);
	free(on_stack);
	free((char *)malloc_fn(64) + 8);          /* interior, misaligned */
	char *p = malloc_fn(100);
	free(p);
	free(p);                                   /* double free */
	assert_int_equal(malloc_usable_size(not_heap), 0);
	heapledger_get_stats(&after);
	/* One block leaked on purpose (the interior case), one freed once. */
	assert_int_equal(after.in_use_blocks, before.in_use_blocks + 1);
	assert_int_equal(after.frees, before.frees + 1);
	/* The heap still works. */
	void *q = malloc_fn(100);
	assert_non_null(q);
	free(q);
	free(NULL);
}

static void test_counters_are_exact(void **state)
{
	struct heapledger_stats before, after;
	heapledger_get_stats(&before);
	void *blocks[100];
	for (int i = 0; i < 100; i++)
		blocks[i] = malloc_fn((size_t)i * 100 + 1);
	heapledger_get_stats(&after);
	uint64_t bytes = 0;
	for (int i = 0; i < 100; i++)
		bytes += (uint64_t)i * 100 + 1;
	assert_int_equal(after.allocs - before.allocs, 100);
	assert_int_equal(after.in_use_blocks - before.in_use_blocks, 100);
	assert_int_equal(after.in_use_bytes - before.in_use_bytes, bytes);
	assert_int_equal(after.bytes_allocated - before.bytes_allocated, bytes);
	assert_true(after.peak_bytes >= after.in_use_bytes);
	for (int i = 0; i < 100; i++)
		free(blocks[i]);
	heapledger_get_stats(&after);
	assert_int_equal(after.in_use_bytes, before.in_use_bytes);
	assert_int_equal(after.frees - before.frees, 100);
}

/* A large block shrunk in place by more than 4 GiB keeps its exact size:
 * the slack no longer fits 32 bits, so the block is remapped instead. */
static void test_large_shrink_past_4gib(void **state)
{
	struct heapledger_stats before, after;
	size_t big = (size_t)9 << 30, small = (size_t)5 << 30; /* 4 GiB + a page of slack */
	heapledger_get_stats(&before);
	char *p = malloc_fn(big);
	if (p == NULL)
		skip(); /* the machine refuses 9 GiB of address space */
	char *q = realloc(p, small);
	assert_non_null(q);
	heapledger_get_stats(&after);
	assert_int_equal(after.in_use_bytes - before.in_use_bytes, small);
	assert_true(malloc_usable_size(q) >= small);
	free(q);
	heapledger_get_stats(&after);
	assert_int_equal(after.in_use_bytes, before.in_use_bytes);
	assert_int_equal(after.in_use_blocks, before.in_use_blocks);
}

static void count_block(void *address, size_t size, uint32_t stack_id, unsigned kind, void *arg)
{
	uint64_t *totals = arg;
	totals[0]++;
	totals[1] += size;
}

static void test_heap_walk_and_find(void **state)
{
	uint64_t before[2] = { 0, 0 }, after[2] = { 0, 0 };
	hl_heap_walk(count_block, before);
	char *small = malloc_fn(77), *large = malloc_fn(3 << 20);
	hl_heap_walk(count_block, after);
	assert_int_equal(after[0] - before[0], 2);
	assert_int_equal(after[1] - before[1], 77 + (3 << 20));
	size_t size = 0;
	assert_ptr_equal(hl_heap_find(small + 40, &size), small);
	assert_int_equal(size, 77);
	assert_ptr_equal(hl_heap_find(large + (2 << 20), &size), large);
	assert_null(hl_heap_find(&size, &size));
	free(small);
	free(large);
}

static void test_freed_segments_go_back(void **state)
{
	struct heapledger_stats s0, s1, s2;
	unsigned retain_ms = hl_options.retain_ms;
	malloc_trim(0); /* spares of earlier tests would be reused */
	/* However slow the frees (-Dhl_debug=2 checks each), none ages out
	 * while they run. */
	hl_options.retain_ms = 3600000;
	heapledger_get_stats(&s0);
	enum { COUNT = 2000 };
	static void *blocks[COUNT];
	for (int i = 0; i < COUNT; i++)
		blocks[i] = malloc_fn(40000); /* 80 MB of medium blocks */
	heapledger_get_stats(&s1);
	/* (the one trimmed spare counted in s0 may be reused, hence the slack) */
	assert_true(s1.mapped_bytes >= s0.mapped_bytes + (size_t)COUNT * 40000 - 2 * HL_SEGMENT_SIZE);
	for (int i = 0; i < COUNT; i++)
		free(blocks[i]);
	/* Freed segments stay mapped as spares for a while... */
	heapledger_get_stats(&s2);
	assert_true(s2.mapped_bytes >= s1.mapped_bytes - 2 * HL_SEGMENT_SIZE);
	hl_options.retain_ms = retain_ms;
	/* ...and once older than retain_ms the next segment request of their
	 * arena unmaps all but one. (Not a timing assertion: any delay past
	 * retain_ms gives the same result.) */
	struct timespec nap = { 0, (long)(hl_options.retain_ms + 50) * 1000000L };
	nanosleep(&nap, NULL);
	free(malloc_fn(40000));
	heapledger_get_stats(&s2);
	assert_true(s2.mapped_bytes <= s0.mapped_bytes + HL_MAX_ARENAS * HL_SEGMENT_SIZE);
	assert_true(s2.mapped_bytes < s1.mapped_bytes / 4);
}

/* malloc_trim gives spares and cached large mappings back at once. */
static void test_malloc_trim_unmaps_at_once(void **state)
{
	struct heapledger_stats s1, s2;
	enum { COUNT = 400 };
	static void *blocks[COUNT];
	for (int i = 0; i < COUNT; i++)
		blocks[i] = malloc_fn(40000);
	void *large = malloc_fn(8 << 20);
	assert_non_null(large);
	for (int i = 0; i < COUNT; i++)
		free(blocks[i]);
	free(large);
	heapledger_get_stats(&s1);
	assert_int_equal(malloc_trim(0), 1);
	heapledger_get_stats(&s2);
	assert_true(s2.mapped_bytes + (8u << 20) + 2 * HL_SEGMENT_SIZE <= s1.mapped_bytes);
	assert_int_equal(malloc_trim(0), 0); /* nothing left to give back */
}

/* Freed large mappings are kept for reuse up to large_cache MiB (default
 * 256): a working set of 20 buffers of 8 MiB comes back without a single new
 * mapping. (At 128 MiB the last 5 freed were unmapped, and mapping them again
 * made the mixed benchmark 1.4x slower.) */
static void test_large_cache_keeps_a_working_set(void **state)
{
	enum { COUNT = 20 };
	const size_t bytes = (size_t)8 << 20;
	void *blocks[COUNT];
	struct heapledger_stats s0, s1, s2;
	unsigned saved_retain = hl_options.retain_ms;
	hl_options.retain_ms = 3600u * 1000u; /* the byte cap is under test, not the age */
	malloc_trim(0);
	heapledger_get_stats(&s0);
	for (int i = 0; i < COUNT; i++) {
		blocks[i] = malloc_fn(bytes);
		assert_non_null(blocks[i]);
	}
	for (int i = 0; i < COUNT; i++)
		free(blocks[i]);
	heapledger_get_stats(&s1);
	assert_true(s1.mapped_bytes >= s0.mapped_bytes + COUNT * bytes); /* all kept */
	for (int i = 0; i < COUNT; i++) {
		blocks[i] = malloc_fn(bytes);
		assert_non_null(blocks[i]);
	}
	heapledger_get_stats(&s2);
	assert_true(s2.mapped_bytes <= s1.mapped_bytes + HL_SEGMENT_SIZE); /* none mapped anew */
	for (int i = 0; i < COUNT; i++)
		free(blocks[i]);
	hl_options.retain_ms = saved_retain;
	malloc_trim(0);
}

/* A thread's bin never holds more than its limit: freeing past it gives
 * half back to the arena, and the countdown matches the list. */
static void test_cache_bin_stays_within_limit(void **state)
{
	enum { COUNT = 1000 };
	static void *blocks[COUNT];
	for (int i = 0; i < COUNT; i++)
		blocks[i] = malloc_fn(100);
	for (int i = 0; i < COUNT; i++)
		free(blocks[i]);
	struct hl_thread_cache *tc = hl_tcache;
	assert_non_null(tc);
	struct hl_cache_bin *bin = &tc->bins[hl_class_floor(hl_range_size_for(100))];
	assert_true(bin->limit > 0);
	assert_true(bin->room >= 0);
	uint32_t held = 0;
	for (struct hl_range *r = bin->head; r != NULL;
	     r = ((struct hl_free_links *)hl_range_data(r))->next)
		held++;
	assert_int_equal(held, bin->limit - (uint32_t)bin->room);
}

/* Empties tc's bin for requests of n bytes into blocks[], makes sure the
 * next class's bin holds a block, then allocates n bytes: the range size
 * the allocation got. */
static uint32_t size_after_emptying(struct hl_thread_cache *tc, size_t n, void **blocks,
				    unsigned *count, unsigned max)
{
	unsigned cls = hl_class_floor(hl_range_size_for(n));
	size_t next_n = n + HL_ALIGN; /* a request of the next exact class */
	assert_int_equal(hl_class_floor(hl_range_size_for(next_n)), cls + 1);
	while (tc->bins[cls + 1].head == NULL && *count < max)
		blocks[(*count)++] = malloc_fn(next_n); /* carves a batch into the bin */
	while (tc->bins[cls].head != NULL && *count < max)
		blocks[(*count)++] = malloc_fn(n);
	assert_true(*count < max);
	assert_null(tc->bins[cls].head);
	assert_non_null(tc->bins[cls + 1].head);
	void *p = malloc_fn(n);
	blocks[(*count)++] = p;
	return hl_range_of(p)->size;
}

/* An empty exact bin borrows a block of the next class only in a thread that
 * has taken back blocks other threads freed (packets of mixed sizes): in a
 * thread that has not, borrowing wore the small classes away (the borrowed
 * block goes back to its own class), and its refills carve the exact size. */
static void test_borrowing_only_after_packets(void **state)
{
	enum { MAX = 512 };
	static void *blocks[MAX];
	unsigned count = 0;
	struct hl_thread_cache *tc = hl_tcache;
	assert_non_null(tc);
	bool saved = tc->borrows;
	size_t n = 40; /* a 64-byte range; the next class's is 80 */
	tc->borrows = false;
	assert_int_equal(size_after_emptying(tc, n, blocks, &count, MAX), 64);
	tc->borrows = true;
	assert_int_equal(size_after_emptying(tc, n, blocks, &count, MAX), 80);
	tc->borrows = saved;
	for (unsigned i = 0; i < count; i++)
		free(blocks[i]);
}

static void *thread_allocates(void *arg)
{
	void **out = arg;
	for (int i = 0; i < 100; i++)
		free(malloc_fn((size_t)i * 10));
	*out = malloc_fn(1000); /* freed by the main thread after we exit */
	return NULL;
}

/* After all the traffic above, every arena still keeps its invariants. */
static void test_arenas_valid_after_traffic(void **state)
{
	unsigned seed = 99;
	void *slots[256] = { 0 };
	for (int i = 0; i < 20000; i++) {
		int k = rand_r(&seed) % 256;
		free(slots[k]);
		size_t size = (size_t)(rand_r(&seed) % 3 ? rand_r(&seed) % 2000
							: rand_r(&seed) % 300000);
		slots[k] = rand_r(&seed) % 5 ? malloc_fn(size) : memalign(64, size);
		if (rand_r(&seed) % 7 == 0)
			slots[k] = realloc_fn(slots[k], size / 2 + (size_t)(rand_r(&seed) % 5000));
	}
	for (int k = 0; k < 256; k++)
		free(slots[k]);
	for (unsigned i = 0; i < HL_MAX_ARENAS; i++) {
		hl_lock(&hl_arenas[i].lock);
		bool ok = hl_arena_is_valid_locked(&hl_arenas[i]);
		hl_unlock(&hl_arenas[i].lock);
		assert_true(ok);
	}
}

static void test_thread_exit_returns_cache(void **state)
{
	struct heapledger_stats before, after;
	/* glibc keeps a little per-process thread bookkeeping after the first
	 * thread (its stack cache): warm it up first. */
	pthread_t warm;
	void *warm_left = NULL;
	pthread_create(&warm, NULL, thread_allocates, &warm_left);
	pthread_join(warm, NULL);
	free(warm_left);
	heapledger_get_stats(&before);
	for (int i = 0; i < 300; i++) {
		pthread_t thread;
		void *left = NULL;
		assert_int_equal(pthread_create(&thread, NULL, thread_allocates, &left), 0);
		assert_int_equal(pthread_join(thread, NULL), 0);
		assert_non_null(left);
		free(left);
	}
	heapledger_get_stats(&after);
	/* Exact across exited threads, and nothing piles up per thread. */
	assert_int_equal(after.in_use_blocks, before.in_use_blocks);
	assert_int_equal(after.in_use_bytes, before.in_use_bytes);
	assert_int_equal(after.allocs - before.allocs, 300 * 101);
	assert_true(after.mapped_bytes <= before.mapped_bytes + 16 * HL_SEGMENT_SIZE);
}

/* Memory above the registry's reach is refused, never handed out untracked. */
static void test_address_fits(void **state)
{
	uintptr_t limit = (uintptr_t)1 << HL_ADDRESS_BITS;
	assert_true(hl_os_address_fits((void *)(limit - 4096), 4096));
	assert_false(hl_os_address_fits((void *)(limit - 4096), 8192));
	assert_false(hl_os_address_fits((void *)limit, 1));
	assert_false(hl_os_address_fits((void *)(UINTPTR_MAX - 10), 100)); /* wraps */
	int local;
	assert_true(hl_os_address_fits(&local, sizeof(local))); /* this machine */
}

static void test_options_parse(void **state)
{
	struct hl_options saved = hl_options;
	hl_options_parse("depth=12:summary=0:bogus=1:large_cache=7::leaks=x:max_leaks=3");
	assert_int_equal(hl_options.stack_depth, 12);
	assert_false(hl_options.summary);
	assert_int_equal(hl_options.large_cache_mib, 7);
	assert_int_equal(hl_options.max_leaks, 3);
	assert_int_equal(hl_options.leaks, saved.leaks); /* bad value: default kept */
	hl_options_parse("depth=999"); /* out of range: kept */
	assert_int_equal(hl_options.stack_depth, 12);
	hl_options_parse("stacks=0");
	assert_int_equal(hl_options.stack_depth, 0);
	hl_options_parse("stacks=0:depth=5"); /* stacks=0 wins whatever the order */
	assert_int_equal(hl_options.stack_depth, 0);
	hl_options_parse("retain_ms=3600001:max_leaks=-1:stack_cache=3");
	assert_int_equal(hl_options.retain_ms, saved.retain_ms);
	assert_int_equal(hl_options.max_leaks, 3);
	assert_int_equal(hl_options.stack_cache, saved.stack_cache);
	hl_options_parse(NULL);
	hl_options = saved;
}

/* ---- invariants that run (HL_DEBUG >= 1): each violation aborts ---------- */

/* A _locked function called by a caller that took no lock. */
static void free_without_lock(void)
{
	struct hl_arena *a = &test_arena;
	hl_lock(&a->lock);
	struct hl_range *r = hl_arena_alloc_locked(a, 64);
	hl_unlock(&a->lock);
	hl_arena_free_locked(a, r);
}

static void *alloc_on_this_thread(void *arena)
{
	hl_arena_alloc_locked(arena, 64);
	return NULL;
}

/* A _locked call from a thread that took no lock while another thread holds
 * it: the futex word says "held", only the owner says not by the caller. */
static void alloc_under_another_threads_lock(void)
{
	struct hl_arena *a = &test_arena;
	pthread_t thread;
	hl_lock(&a->lock);
	if (pthread_create(&thread, NULL, alloc_on_this_thread, a) == 0)
		pthread_join(thread, NULL);
	hl_unlock(&a->lock);
}

/* A boundary tag that disagrees with the left neighbour's size (types.h:
 * coalescing trusts it to find that neighbour). */
static void free_with_broken_boundary_tag(void)
{
	struct hl_arena *a = &test_arena;
	hl_lock(&a->lock);
	hl_arena_alloc_locked(a, 64);
	struct hl_range *r = hl_arena_alloc_locked(a, 64);
	r->prev_size += HL_ALIGN;
	hl_arena_free_locked(a, r);
	hl_unlock(&a->lock);
}

/* A range filed in a class list twice: its neighbour free is filed already,
 * so filing this one would leave two free ranges touching. */
static void file_beside_a_free_range(void)
{
	struct hl_arena *a = &test_arena;
	hl_lock(&a->lock);
	struct hl_range *left = hl_arena_alloc_locked(a, 64);
	struct hl_range *r = hl_arena_alloc_locked(a, 64);
	hl_arena_alloc_locked(a, 64); /* keeps r's right neighbour allocated */
	hl_arena_free_locked(a, left);
	r->flags = 0;
	hl_bins_insert_locked(a, r);
	hl_unlock(&a->lock);
}

static void test_assertions_fire(void **state)
{
	if (!HL_ASSERTS_ON)
		skip(); /* built with -Dhl_debug=0 */
	assert_true(dies_of_abort_saying(free_without_lock,
					 "assertion failed: hl_lock_is_held(&a->lock)"));
	assert_true(dies_of_abort_saying(alloc_under_another_threads_lock,
					 "assertion failed: hl_lock_is_held(&a->lock) &&"
					 " hl_lock_is_mine(&a->lock)"));
	assert_true(dies_of_abort_saying(free_with_broken_boundary_tag,
					 "assertion failed: range_is_freeable(a, r)"));
	assert_true(dies_of_abort_saying(file_beside_a_free_range,
					 "assertion failed: range_is_fileable(r)"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		/* First: it measures how far a fresh heap grows. */
		cmocka_unit_test(test_realloc_growth_footprint),
		cmocka_unit_test(test_every_block_is_16_aligned),
		cmocka_unit_test(test_malloc_zero_is_unique),
		cmocka_unit_test(test_huge_requests_fail_cleanly),
		cmocka_unit_test(test_calloc_zeroes_reused_memory),
		cmocka_unit_test(test_calloc_medium_after_churn),
		cmocka_unit_test(test_aligned_apis),
		cmocka_unit_test(test_bad_alignments),
		cmocka_unit_test(test_split_and_coalesce),
		cmocka_unit_test(test_grow_and_shrink_in_arena),
		cmocka_unit_test(test_fresh_ranges),
		cmocka_unit_test(test_realloc_in_place),
		cmocka_unit_test(test_realloc_semantics),
		cmocka_unit_test(test_large_blocks_use_mremap),
		cmocka_unit_test(test_size_class_edges),
		cmocka_unit_test(test_foreign_and_double_free_are_ignored),
		cmocka_unit_test(test_counters_are_exact),
		cmocka_unit_test(test_heap_walk_and_find),
		cmocka_unit_test(test_freed_segments_go_back),
		cmocka_unit_test(test_malloc_trim_unmaps_at_once),
		cmocka_unit_test(test_large_cache_keeps_a_working_set),
		cmocka_unit_test(test_cache_bin_stays_within_limit),
		cmocka_unit_test(test_borrowing_only_after_packets),
		cmocka_unit_test(test_arenas_valid_after_traffic),
		cmocka_unit_test(test_thread_exit_returns_cache),
		cmocka_unit_test(test_options_parse),
		cmocka_unit_test(test_address_fits),
		cmocka_unit_test(test_large_shrink_past_4gib),
		cmocka_unit_test(test_assertions_fire),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
