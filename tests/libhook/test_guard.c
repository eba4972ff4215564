/*
 * tests/libhook/test_guard.c: checks=full, guard bytes and the quarantine.
 *
 * Linked with the allocator's objects (its malloc is ours) and run with
 * HEAPLEDGER_OPTIONS=checks=full:quarantine=1 (meson.build; once more with
 * redzone=1, the smallest guard): every error is counted by
 * hl_misuse_error_count(), the program goes on (on_error=continue) and the
 * heap must stay valid and usable after each one.
 */
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "arenas_valid.h"
#include "fastpath.h"

static void *(*volatile malloc_fn)(size_t) = malloc;
static void *(*volatile memalign_fn)(size_t, size_t) = memalign;
static void *(*volatile realloc_fn)(void *, size_t) = realloc;
static void *(*volatile calloc_fn)(size_t, size_t) = calloc;
static void (*volatile free_fn)(void *) = free;

/* Allocates, fills and frees blocks of many sizes, checking their bytes:
 * the allocator works after an error. No error of its own. */
static void stress(void)
{
	uint64_t errors = hl_misuse_error_count();
	char *slots[64] = { 0 };
	size_t sizes[64] = { 0 };
	unsigned seed = 11;
	for (int i = 0; i < 20000; i++) {
		unsigned k = (unsigned)rand_r(&seed) % 64;
		if (slots[k]) {
			for (size_t j = 0; j < sizes[k]; j++)
				assert_int_equal(slots[k][j], (char)k);
			free_fn(slots[k]);
		}
		sizes[k] = 1 + (size_t)rand_r(&seed) % 3000;
		slots[k] = malloc_fn(sizes[k]);
		assert_non_null(slots[k]);
		memset(slots[k], (int)k, sizes[k]);
	}
	for (int k = 0; k < 64; k++)
		free_fn(slots[k]);
	assert_int_equal(hl_misuse_error_count(), errors);
	assert_true(arenas_valid());
}

/* One byte written past the end of a block of n bytes is reported once by
 * free; a block written only within its n bytes is not. */
static void overflow_by_one(size_t n)
{
	char *p = malloc_fn(n);
	assert_non_null(p);
	assert_int_equal(malloc_usable_size(p), n); /* the guard bytes are not the program's */
	memset(p, 0x11, n);
	uint64_t before = hl_misuse_error_count();
	free_fn(p);
	assert_int_equal(hl_misuse_error_count(), before);

	p = malloc_fn(n);
	assert_non_null(p);
	memset(p, 0x22, n);
	((volatile char *)p)[n] = 0x22;
	free_fn(p);
	if (hl_misuse_error_count() != before + 1)
		fail_msg("a 1-byte overflow of a block of %zu bytes was not reported", n);
}

/* At every size-class boundary: a request that fills its class exactly
 * without the guard bytes, one that fills it exactly with them, one more. */
static void test_overflow_at_every_class_boundary(void **state)
{
	(void)state;
	size_t r = hl_checks_redzone;
	assert_true(r >= 1);
	for (size_t size = HL_RANGE_MIN; size <= HL_CACHE_MAX; size = hl_class_round_up(size + 1)) {
		size_t exact = size - sizeof(struct hl_range);
		overflow_by_one(exact);
		if (exact > r) {
			overflow_by_one(exact - r);
			overflow_by_one(exact - r + 1);
		}
	}
	/* Medium blocks (arena, no cache), the largest segment block, large ones. */
	const size_t big[] = { HL_CACHE_MAX + 1, 100000, HL_LARGE_THRESHOLD - 16,
			       HL_LARGE_THRESHOLD, HL_LARGE_THRESHOLD + 1, 3u << 20 };
	for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++)
		overflow_by_one(big[i]);
	stress();
}

static void test_overflow_by_other_calls(void **state)
{
	(void)state;
	uint64_t before = hl_misuse_error_count();
	/* aligned */
	char *p = memalign_fn(64, 100);
	assert_int_equal((uintptr_t)p % 64, 0);
	((volatile char *)p)[100] = 1;
	free_fn(p);
	assert_int_equal(hl_misuse_error_count(), before + 1);
	/* calloc: zeroed block, intact guard */
	p = calloc_fn(10, 30);
	for (int i = 0; i < 300; i++)
		assert_int_equal(p[i], 0);
	free_fn(p);
	assert_int_equal(hl_misuse_error_count(), before + 1);
	/* realloc moves, checks the old block's guard, keeps the contents */
	p = malloc_fn(100);
	memset(p, 7, 100);
	((volatile char *)p)[105] = 1;
	char *q = realloc_fn(p, 120);
	assert_ptr_not_equal(q, p);
	assert_int_equal(hl_misuse_error_count(), before + 2);
	for (int i = 0; i < 100; i++)
		assert_int_equal(q[i], 7);
	assert_int_equal(malloc_usable_size(q), 120);
	free_fn(q);
	assert_int_equal(hl_misuse_error_count(), before + 2);
	stress();
}

/* A write just before a block hits its header: reported, the free refused. */
static void test_underflow_is_caught_by_the_header(void **state)
{
	(void)state;
	char *p = malloc_fn(64);
	uint64_t before = hl_misuse_error_count();
	((volatile char *)p)[-1] ^= 0x5a;
	free_fn(p);
	assert_int_equal(hl_misuse_error_count(), before + 1);
	((volatile char *)p)[-1] ^= 0x5a; /* repaired: now it frees */
	free_fn(p);
	assert_int_equal(hl_misuse_error_count(), before + 1);
	stress();
}

/* Frees `bytes` worth of blocks of 4000 bytes: pushes older blocks out of
 * a 1 MiB quarantine. */
/* The quarantine's bound in bytes (quarantine=MiB, meson.build). */
static uint64_t quarantine_limit(void)
{
	return (uint64_t)hl_options.quarantine_mib << 20;
}

static void churn(size_t bytes)
{
	for (size_t done = 0; done < bytes; done += 4000)
		free_fn(malloc_fn(4000));
}

static void test_write_after_free_is_seen_when_the_block_leaves(void **state)
{
	(void)state;
	char *p = malloc_fn(100);
	free_fn(p);
	uint64_t before = hl_misuse_error_count();
	((volatile char *)p)[50] = 1;
	churn(3 * quarantine_limit());
	assert_int_equal(hl_misuse_error_count(), before + 1);
	/* Untouched freed blocks leave without a word. */
	churn(3 * quarantine_limit());
	assert_int_equal(hl_misuse_error_count(), before + 1);
	stress();
}

/* The block stays in quarantine while blocks of its size are handed out
 * again, so its second free is still a double free, not a free of another
 * block. */
static void test_double_free_caught_in_quarantine_after_reuse(void **state)
{
	(void)state;
	char *p = malloc_fn(48);
	free_fn(p);
	char *again[16];
	for (int i = 0; i < 16; i++) {
		again[i] = malloc_fn(48);
		assert_ptr_not_equal(again[i], p);
		memset(again[i], i, 48);
	}
	uint64_t before = hl_misuse_error_count();
	free_fn(p);
	assert_int_equal(hl_misuse_error_count(), before + 1);
	hl_release(p, HL_KIND_MALLOC);
	assert_int_equal(hl_misuse_error_count(), before + 2);
	for (int i = 0; i < 16; i++) {
		for (int j = 0; j < 48; j++)
			assert_int_equal(again[i][j], i);
		free_fn(again[i]);
	}
	assert_int_equal(hl_misuse_error_count(), before + 2);
	stress();
}

/* Under checks=full the inline paths hand every call to the full ones:
 * both give the same verdicts on the same pointers. */
static void test_fast_and_full_paths_agree(void **state)
{
	(void)state;
	char *live = malloc_fn(200);
	char *freed = malloc_fn(200);
	free_fn(freed);
	char *overrun = malloc_fn(200);
	char *overrun2 = malloc_fn(200);
	((volatile char *)overrun)[200] = 1;
	((volatile char *)overrun2)[200] = 1;
	char *const refused[] = { freed, live + 16, live + 3 };
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		uint64_t before = hl_misuse_error_count();
		hl_free_fast(refused[i], HL_KIND_MALLOC);
		assert_int_equal(hl_misuse_error_count(), before + 1);
		hl_release(refused[i], HL_KIND_MALLOC);
		assert_int_equal(hl_misuse_error_count(), before + 2);
		assert_true(arenas_valid());
	}
	uint64_t before = hl_misuse_error_count();
	hl_free_fast(overrun, HL_KIND_MALLOC);
	assert_int_equal(hl_misuse_error_count(), before + 1);
	hl_release(overrun2, HL_KIND_MALLOC);
	assert_int_equal(hl_misuse_error_count(), before + 2);
	free_fn(live);
	assert_int_equal(hl_misuse_error_count(), before + 2);
	stress();
}

/* A leak check reads every live block's guard bytes and the quarantine;
 * what it reported, it repairs, so the next check reports only new damage. */
static void test_leak_check_sweeps(void **state)
{
	(void)state;
	char *p = malloc_fn(30);
	char *f = malloc_fn(30);
	free_fn(f);
	uint64_t before = hl_misuse_error_count();
	hl_checks_sweep(HL_CALL_CHECK);
	assert_int_equal(hl_misuse_error_count(), before);
	((volatile char *)p)[31] = 1;
	((volatile char *)f)[20] = 1;
	hl_checks_sweep(HL_CALL_CHECK);
	assert_int_equal(hl_misuse_error_count(), before + 2);
	hl_checks_sweep(HL_CALL_CHECK);
	assert_int_equal(hl_misuse_error_count(), before + 2);
	free_fn(p);
	assert_int_equal(hl_misuse_error_count(), before + 2);
	stress();
}

/* Many threads freeing blocks other threads allocated, into the quarantine
 * at once: each thread's batch joins the global FIFO, and every guarantee
 * holds. */
#define FREERS 8
#define PER_FREER 3000
static char *handed[FREERS][PER_FREER];
static pthread_barrier_t freed_all, damage_done;

static void *freer(void *arg)
{
	char **mine = arg;
	for (int i = 0; i < PER_FREER; i++)
		free_fn(mine[i]);
	pthread_barrier_wait(&freed_all);
	pthread_barrier_wait(&damage_done); /* the last blocks stay in this thread's batch */
	return NULL;
}

static void test_concurrent_frees_keep_the_quarantine_checks(void **state)
{
	(void)state;
	const uint64_t limit = quarantine_limit();
	for (int t = 0; t < FREERS; t++)
		for (int i = 0; i < PER_FREER; i++) {
			size_t n = 16 + (size_t)(t * PER_FREER + i) % 700;
			handed[t][i] = malloc_fn(n);
			memset(handed[t][i], 0x33, n);
		}
	pthread_barrier_init(&freed_all, NULL, FREERS + 1);
	pthread_barrier_init(&damage_done, NULL, FREERS + 1);
	pthread_t threads[FREERS];
	uint64_t before = hl_misuse_error_count();
	for (int t = 0; t < FREERS; t++)
		assert_int_equal(pthread_create(&threads[t], NULL, freer, handed[t]), 0);
	pthread_barrier_wait(&freed_all);
	assert_int_equal(hl_misuse_error_count(), before);
	/* The bound holds within each live thread's batch. */
	assert_true(hl_checks_quarantined_bytes() <=
		    limit + FREERS * (HL_QCACHE_BYTES + HL_CACHE_MAX));
	/* The newest block each thread freed is still quarantined (in its
	 * batch or the FIFO): this thread's write into one of them is caught
	 * by a leak check, and a second free of another is a double free. */
	((volatile char *)handed[0][PER_FREER - 1])[9] = 1;
	hl_checks_sweep(HL_CALL_CHECK);
	assert_int_equal(hl_misuse_error_count(), before + 1);
	free_fn(handed[1][PER_FREER - 1]);
	assert_int_equal(hl_misuse_error_count(), before + 2);
	/* A write into a block of a thread's batch, then the thread exits: its
	 * batch joins the FIFO and the write is still caught. */
	((volatile char *)handed[2][PER_FREER - 1])[3] = 1;
	pthread_barrier_wait(&damage_done);
	for (int t = 0; t < FREERS; t++)
		assert_int_equal(pthread_join(threads[t], NULL), 0);
	pthread_barrier_destroy(&freed_all);
	pthread_barrier_destroy(&damage_done);
	/* With their batches retired, only this thread's batch is over the
	 * FIFO's bound. */
	assert_true(hl_checks_quarantined_bytes() <= limit + HL_QCACHE_BYTES + HL_CACHE_MAX);
	hl_checks_sweep(HL_CALL_CHECK);
	assert_int_equal(hl_misuse_error_count(), before + 3);
	stress();
}

/* fork() while other threads' batches hold blocks they freed: the child
 * has only the forking thread, and adopts the others' batches into its
 * FIFO, so what was quarantined stays quarantined and checked there. */
#define BATCH_HOLDERS 4
#define HELD_PER_THREAD 3
static char *held[BATCH_HOLDERS][HELD_PER_THREAD];
static pthread_barrier_t held_freed, forked;

static void *batch_holder(void *arg)
{
	char **mine = arg;
	for (int i = 0; i < HELD_PER_THREAD; i++)
		free_fn(mine[i]); /* fewer than a batch: they stay in it */
	pthread_barrier_wait(&held_freed);
	pthread_barrier_wait(&forked);
	return NULL;
}

/* The child's verdict as its exit status: 0 when every check held. Its
 * error count starts at 0, as valgrind's child's does. */
static int child_checks(void)
{
	hl_checks_sweep(HL_CALL_CHECK); /* the write into a held block */
	if (hl_misuse_error_count() != 1)
		return 1;
	free_fn(held[3][0]); /* still quarantined: a double free */
	if (hl_misuse_error_count() != 2)
		return 2;
	for (int i = 0; i < 2000; i++)
		free_fn(malloc_fn(1 + (size_t)i % 3000));
	hl_checks_sweep(HL_CALL_CHECK);
	return hl_misuse_error_count() == 2 && arenas_valid() ? 0 : 3;
}

static void test_fork_keeps_other_threads_batches(void **state)
{
	(void)state;
	for (int t = 0; t < BATCH_HOLDERS; t++)
		for (int i = 0; i < HELD_PER_THREAD; i++) {
			held[t][i] = malloc_fn(64);
			memset(held[t][i], 0x44, 64);
		}
	pthread_barrier_init(&held_freed, NULL, BATCH_HOLDERS + 1);
	pthread_barrier_init(&forked, NULL, BATCH_HOLDERS + 1);
	pthread_t threads[BATCH_HOLDERS];
	for (int t = 0; t < BATCH_HOLDERS; t++)
		assert_int_equal(pthread_create(&threads[t], NULL, batch_holder, held[t]), 0);
	pthread_barrier_wait(&held_freed);
	uint64_t before = hl_misuse_error_count();
	((volatile char *)held[1][2])[7] = 1; /* written after its free */
	pid_t child = fork();
	assert_true(child >= 0);
	if (child == 0)
		_exit(child_checks());
	pthread_barrier_wait(&forked);
	for (int t = 0; t < BATCH_HOLDERS; t++)
		assert_int_equal(pthread_join(threads[t], NULL), 0);
	pthread_barrier_destroy(&held_freed);
	pthread_barrier_destroy(&forked);
	int status;
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	/* The parent still holds the same damage (its batches joined the
	 * FIFO as the threads exited). */
	hl_checks_sweep(HL_CALL_CHECK);
	assert_int_equal(hl_misuse_error_count(), before + 1);
	stress();
}

/* A block with a mapping of its own is quarantined like the others while
 * it is at most a quarter of the quarantine's bound (meson.build runs this
 * file with quarantine=8 too): a write into it after its free and a second
 * free are caught. One over that bound goes back at once, as before. */
static void test_large_blocks_in_quarantine(void **state)
{
	(void)state;
	const size_t large = (size_t)3 << 19; /* 1.5 MiB: its own mapping */
	uint64_t limit = quarantine_limit();
	char *p = malloc_fn(large);
	memset(p, 0x55, large);
	free_fn(p);
	uint64_t before = hl_misuse_error_count();
	free_fn(p);
	if (large > limit / 4) {
		/* Not quarantined: its mapping is gone or cached, so the second
		 * free is a free of memory the allocator does not hold. */
		assert_int_equal(hl_misuse_error_count(), before + 1);
		stress();
		return;
	}
	assert_int_equal(hl_misuse_error_count(), before + 1); /* double free */
	((volatile char *)p)[large - 5] = 1; /* write after free, near its end */
	hl_checks_sweep(HL_CALL_CHECK);
	assert_int_equal(hl_misuse_error_count(), before + 2);
	/* The sweep repaired it: leaving the quarantine reports nothing new. */
	churn(limit + (limit >> 1));
	assert_int_equal(hl_misuse_error_count(), before + 2);
	/* A write found when the block leaves. */
	char *q = malloc_fn(large);
	free_fn(q);
	((volatile char *)q)[100] = 1;
	churn(limit + (limit >> 1));
	assert_int_equal(hl_misuse_error_count(), before + 3);
	/* In use counts it freed; the quarantine holds it within its bound. */
	assert_true(hl_checks_quarantined_bytes() <= limit + HL_QCACHE_BYTES + HL_CACHE_MAX);
	stress();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_overflow_at_every_class_boundary),
		cmocka_unit_test(test_overflow_by_other_calls),
		cmocka_unit_test(test_underflow_is_caught_by_the_header),
		cmocka_unit_test(test_write_after_free_is_seen_when_the_block_leaves),
		cmocka_unit_test(test_double_free_caught_in_quarantine_after_reuse),
		cmocka_unit_test(test_fast_and_full_paths_agree),
		cmocka_unit_test(test_leak_check_sweeps),
		cmocka_unit_test(test_concurrent_frees_keep_the_quarantine_checks),
		cmocka_unit_test(test_fork_keeps_other_threads_batches),
		cmocka_unit_test(test_large_blocks_in_quarantine),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
