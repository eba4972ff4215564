/*
 * tests/libhook/test_delay.c: reuse_delay (libhook/delay.c). A block freed
 * is not handed out again until the thread's next reuse_delay frees of
 * blocks under 1 KiB (run with reuse_delay=64), or its next reuse_delay / 8
 * of blocks of 1 to 8 KiB; bigger blocks, and every block with
 * reuse_delay=0 (the second run), are reused at once, as before. A held block is freed for everything else (a second free is a
 * double free, its bytes are free in mallinfo), and a thread that exits
 * gives its held blocks back.
 *
 * Linked with the allocator's objects, like test_remote, so the tests can
 * look at caches through heap.h.
 */
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "heap.h"

static void *(*volatile malloc_fn)(size_t) = malloc;

static unsigned delay(void)
{
	free(malloc_fn(1)); /* makes sure the thread has a cache */
	return hl_options.reuse_delay;
}

/* The next `count` allocations of n bytes, none of them p? Each is freed
 * at once (so each is a free the delay holds too). */
static bool avoided(void *p, size_t n, unsigned count)
{
	bool none = true;
	for (unsigned i = 0; i < count; i++) {
		void *q = malloc_fn(n);
		none &= q != p;
		free(q);
	}
	return none;
}

static void test_freed_block_waits(void **state)
{
	(void)state;
	unsigned n = delay();
	void *p = malloc_fn(100);
	free(p);
	if (n == 0) {
		void *q = malloc_fn(100);
		assert_ptr_equal(q, p); /* off: the last block freed comes first */
		free(q);
		return;
	}
	/* the next n allocations are made while p is held (n is a power of
	 * two here: the ring's size); the n-th free pushes it out */
	assert_true(avoided(p, 100, n));
	/* into its bin, first in line */
	void *q = malloc_fn(100);
	assert_ptr_equal(q, p);
	free(q);
}

/* Blocks of 1 to 8 KiB wait in a ring of their own, an eighth the size. */
static void test_bigger_block_waits_less(void **state)
{
	(void)state;
	unsigned n = delay();
	void *p = malloc_fn(2000);
	free(p);
	if (n == 0) {
		void *q = malloc_fn(2000);
		assert_ptr_equal(q, p);
		free(q);
		return;
	}
	assert_true(avoided(p, 2000, n / HL_DELAY_BIG_SHARE));
	void *q = malloc_fn(2000);
	assert_ptr_equal(q, p);
	free(q);
}

static void test_big_blocks_are_not_held(void **state)
{
	(void)state;
	delay();
	void *p = malloc_fn(HL_DELAY_BLOCK_MAX); /* its range is bigger */
	free(p);
	void *q = malloc_fn(HL_DELAY_BLOCK_MAX);
	assert_ptr_equal(q, p);
	free(q);
}

static void test_held_block_is_free(void **state)
{
	(void)state;
	if (delay() == 0)
		skip();
	enum { COUNT = 40, SIZE = 1000 };
	static void *blocks[COUNT];
	struct mallinfo2 before = mallinfo2();
	for (int i = 0; i < COUNT; i++)
		blocks[i] = malloc_fn(SIZE);
	for (int i = 0; i < COUNT; i++)
		free(blocks[i]);
	struct mallinfo2 after = mallinfo2();
	/* all held (40 < 64): free in mallinfo's terms, not in use */
	assert_true(after.uordblks <= before.uordblks + 4096);
	assert_true(hl_ptr_classify(blocks[0]) == HL_PTR_FREED);
}

static void *free_many(void *arg)
{
	void **blocks = arg;
	for (int i = 0; i < 32; i++)
		free(blocks[i]);
	return NULL;
}

struct search {
	void **blocks;
	size_t found;
};

static void search_ring(struct hl_thread_cache *tc, void *arg)
{
	struct search *s = arg;
	struct hl_reuse_delay *d = &tc->delay[0]; /* of small blocks */
	for (uint32_t i = 0; d->ring != NULL && i <= d->mask; i++)
		for (int j = 0; j < 32; j++)
			s->found += d->ring[i] == hl_range_of(s->blocks[j]);
}

/* Held blocks in any live thread's ring. */
static size_t held(void **blocks)
{
	struct search s = { blocks, 0 };
	hl_caches_lock();
	hl_caches_each_locked(search_ring, &s);
	hl_caches_unlock();
	return s.found;
}

/* A thread that exits gives its held blocks back (to its bins, flushed to
 * the arenas as its cache goes): they are free again, in no ring. */
static void test_exited_thread_gives_back(void **state)
{
	(void)state;
	if (delay() == 0)
		skip();
	static void *blocks[32];
	for (int i = 0; i < 32; i++)
		blocks[i] = malloc_fn(200);
	struct mallinfo2 with = mallinfo2();
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, free_many, blocks), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(held(blocks), 0);
	struct mallinfo2 after = mallinfo2();
	assert_true(after.uordblks + 32 * 200 <= with.uordblks);
	/* while here, freed by this thread, they are held */
	for (int i = 0; i < 32; i++)
		blocks[i] = malloc_fn(200);
	free_many(blocks);
	assert_int_equal(held(blocks), 32);
}

/* Blocks of the main thread's arena, freed by a thread of another arena:
 * its rings hold them (64 of 900 bytes, 8 of 8000: the rings' sizes at
 * reuse_delay=64), and malloc_info, called by that thread, counts them free
 * in their own arena's <heap>, not in the thread's: an arena's free bytes,
 * cached or not, are some of its system bytes (malloc_stats's in use is
 * the difference, which must not go below 0). The thread allocates
 * nothing before it asks, so its arena has no bytes it could hold. */
enum { HOME_SMALL = 64, HOME_BIG = 8 };
static void *home_blocks[HOME_SMALL + HOME_BIG];
static bool other_arena;

static void *free_home_blocks(void *arg)
{
	struct hl_arena *home = *(struct hl_arena **)arg;
	FILE *fp = ((FILE **)arg)[1];
	for (int i = 0; i < HOME_SMALL + HOME_BIG; i++)
		free(home_blocks[i]);
	other_arena = hl_tcache != NULL && hl_tcache->arena != home;
	malloc_info(0, fp);
	return NULL;
}

static unsigned long long figure(const char *from, const char *key)
{
	const char *at = strstr(from, key);
	return at ? strtoull(at + strlen(key), NULL, 10) : 0;
}

static void test_held_blocks_count_in_their_arena(void **state)
{
	(void)state;
	if (delay() != 64)
		skip(); /* the blocks fill the rings of reuse_delay=64 */
	for (int i = 0; i < HOME_SMALL + HOME_BIG; i++)
		home_blocks[i] = malloc_fn(i < HOME_SMALL ? 900 : 8000);
	char *info = NULL;
	size_t len;
	void *arg[2] = { hl_tcache->arena, open_memstream(&info, &len) };
	assert_non_null(arg[1]);
	pthread_t t;
	assert_int_equal(pthread_create(&t, NULL, free_home_blocks, arg), 0);
	assert_int_equal(pthread_join(t, NULL), 0);
	fclose(arg[1]);
	assert_non_null(info);
	if (!other_arena) {
		free(info);
		skip(); /* one arena for every thread: nothing to tell apart */
	}
	unsigned heaps = 0;
	for (const char *h = strstr(info, "<heap "); h != NULL; h = strstr(h + 1, "<heap ")) {
		const char *fast = strstr(h, "<total type=\"fast\"");
		const char *rest = strstr(h, "<total type=\"rest\"");
		assert_non_null(fast);
		assert_non_null(rest);
		unsigned long long free_bytes = figure(fast, "size=\"") + figure(rest, "size=\"");
		unsigned long long system = figure(h, "<system type=\"current\" size=\"");
		assert_true(free_bytes <= system);
		heaps++;
	}
	assert_true(heaps >= 1);
	free(info);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_freed_block_waits),
		cmocka_unit_test(test_bigger_block_waits_less),
		cmocka_unit_test(test_big_blocks_are_not_held),
		cmocka_unit_test(test_held_block_is_free),
		cmocka_unit_test(test_exited_thread_gives_back),
		cmocka_unit_test(test_held_blocks_count_in_their_arena),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
