/*
 * tests/libhook/test_stats.c: the heap counters (libhook/stats.c) read while
 * other threads count. Each thread counts its own allocations; a reader sums
 * every thread's counters while they change. The sums must come out exact
 * once the threads are done, and, in the ThreadSanitizer build
 * (scripts/ci_builds.sh), the reads must not race with the counting (they
 * are relaxed atomics on both sides).
 *
 * Linked with the allocator's objects: its malloc is ours.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "heapledger.h"

#define THREADS 4
#define ROUNDS 20000
#define KEPT 100
#define BLOCK_BYTES 48

static void *(*volatile malloc_fn)(size_t) = malloc;
static _Atomic int running;
static _Atomic bool go, may_exit;
static void *kept[THREADS][KEPT];

/* Counts only between `go` and `may_exit`, so what pthread_create and
 * thread exit allocate stays out of the figures. */
static void *counter(void *arg)
{
	void **mine = arg;

	while (!atomic_load(&go))
		;
	for (int i = 0; i < ROUNDS; i++)
		free(malloc_fn(BLOCK_BYTES + (size_t)(i & 63)));
	for (int i = 0; i < KEPT; i++)
		mine[i] = malloc_fn(BLOCK_BYTES);
	atomic_fetch_sub(&running, 1);
	while (!atomic_load(&may_exit))
		;
	return NULL;
}

/* Totals read while THREADS threads allocate and free; exact after. */
static void test_stats_read_while_counting(void **state)
{
	struct heapledger_stats before, during, after;
	pthread_t t[THREADS];
	uint64_t reads = 0;

	(void)state;
	/* The first allocation happens before any thread, as in a program
	 * (the loader's): it sets the arena count (arena.c). */
	free(malloc_fn(1));
	atomic_store(&running, THREADS);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_create(&t[i], NULL, counter, kept[i]), 0);
	assert_int_equal(heapledger_get_stats(&before), 0);
	atomic_store(&go, true);
	while (atomic_load(&running) > 0 || reads == 0) {
		assert_int_equal(heapledger_get_stats(&during), 0);
		assert_true(during.allocs >= before.allocs);
		reads++;
	}
	assert_int_equal(heapledger_get_stats(&after), 0);
	atomic_store(&may_exit, true);
	for (int i = 0; i < THREADS; i++)
		assert_int_equal(pthread_join(t[i], NULL), 0);
	assert_int_equal(after.allocs - before.allocs, THREADS * (ROUNDS + KEPT));
	assert_int_equal(after.frees - before.frees, THREADS * ROUNDS);
	assert_int_equal(after.in_use_blocks - before.in_use_blocks, THREADS * KEPT);
	assert_int_equal(after.in_use_bytes - before.in_use_bytes,
			 THREADS * KEPT * BLOCK_BYTES);
	for (int i = 0; i < THREADS; i++)
		for (int j = 0; j < KEPT; j++)
			free(kept[i][j]);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_stats_read_while_counting),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
