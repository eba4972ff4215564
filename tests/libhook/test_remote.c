/*
 * tests/libhook/test_remote.c: blocks freed by a thread of another arena go
 * home (libhook/cache.c): they are not reused by the freeing thread, their
 * own arena's thread takes them back, and they reach their arena when it has
 * no thread left to take them or its thread stops refilling.
 *
 * Linked with the allocator's objects, like test_alloc, so the tests can
 * look at arenas and caches through heap.h.
 */
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "heap.h"

static void *(*volatile malloc_fn)(size_t) = malloc;

#define BLOCK_BYTES 100
#define COUNT 2000

static struct hl_arena *arena_of_block(void *p)
{
	return hl_arena_of(hl_range_of(p));
}

static struct hl_arena *own_arena(void)
{
	free(malloc_fn(1)); /* makes sure the thread has a cache */
	return hl_tcache->arena;
}

static bool contains(void *const *set, size_t n, const void *p)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == p)
			return true;
	return false;
}

/* ---- a thread that frees on request and stays alive --------------------- */

struct freer {
	pthread_mutex_t lock;
	pthread_cond_t cond;
	void **blocks;       /* to free, then NULL */
	size_t count;
	bool done, quit;
	struct hl_arena *arena;
	size_t reused_foreign; /* its own next allocations that were in blocks' arena */
};

static void *freer_main(void *arg)
{
	struct freer *f = arg;
	f->arena = own_arena();
	pthread_mutex_lock(&f->lock);
	for (;;) {
		while (f->blocks == NULL && !f->quit)
			pthread_cond_wait(&f->cond, &f->lock);
		if (f->quit)
			break;
		struct hl_arena *home = arena_of_block(f->blocks[0]);
		for (size_t i = 0; i < f->count; i++)
			free(f->blocks[i]);
		/* Its own allocations of the same size must not take them. */
		void *mine[COUNT];
		f->reused_foreign = 0;
		for (size_t i = 0; i < COUNT; i++) {
			mine[i] = malloc_fn(BLOCK_BYTES);
			if (arena_of_block(mine[i]) == home)
				f->reused_foreign++;
		}
		for (size_t i = 0; i < COUNT; i++)
			free(mine[i]);
		f->blocks = NULL;
		f->done = true;
		pthread_cond_broadcast(&f->cond);
	}
	pthread_mutex_unlock(&f->lock);
	return NULL;
}

static void freer_run(struct freer *f, void **blocks, size_t count)
{
	pthread_mutex_lock(&f->lock);
	f->blocks = blocks;
	f->count = count;
	f->done = false;
	pthread_cond_broadcast(&f->cond);
	while (!f->done)
		pthread_cond_wait(&f->cond, &f->lock);
	pthread_mutex_unlock(&f->lock);
}

static void freer_start(struct freer *f, pthread_t *thread)
{
	*f = (struct freer){ .lock = PTHREAD_MUTEX_INITIALIZER,
			     .cond = PTHREAD_COND_INITIALIZER };
	assert_int_equal(pthread_create(thread, NULL, freer_main, f), 0);
}

static void freer_stop(struct freer *f, pthread_t thread)
{
	pthread_mutex_lock(&f->lock);
	f->quit = true;
	pthread_cond_broadcast(&f->cond);
	pthread_mutex_unlock(&f->lock);
	assert_int_equal(pthread_join(thread, NULL), 0);
}

/* Allocates n blocks here and has a new freer thread free them; the freer
 * stays alive (freer_stop ends it). */
static void free_in_other_thread(void **blocks, size_t n, struct freer *f, pthread_t *thread)
{
	for (size_t i = 0; i < n; i++)
		blocks[i] = malloc_fn(BLOCK_BYTES);
	freer_start(f, thread);
	freer_run(f, blocks, n);
}

/* The freeing thread does not reuse the blocks (they would wander from cache
 * to cache); the allocating thread gets nearly all of them back, all but
 * those still in the freer's unsent packet. */
static void test_freed_blocks_return_to_their_thread(void **state)
{
	struct hl_arena *mine = own_arena();
	static void *blocks[COUNT], *again[COUNT];
	struct freer f;
	pthread_t thread;
	free_in_other_thread(blocks, COUNT, &f, &thread);
	assert_ptr_not_equal(f.arena, mine);
	assert_int_equal(f.reused_foreign, 0);

	size_t returned = 0;
	for (size_t i = 0; i < COUNT; i++) {
		again[i] = malloc_fn(BLOCK_BYTES);
		assert_ptr_equal(arena_of_block(again[i]), mine);
		returned += contains(blocks, COUNT, again[i]);
	}
	assert_true(returned >= COUNT - HL_REMOTE_PACKET_BLOCKS);
	for (size_t i = 0; i < COUNT; i++)
		free(again[i]);
	freer_stop(&f, thread);
}

/* A thread that allocates nothing more does not take its blocks back: what
 * piles up for it goes into its arena past 1 MiB, so the memory can be
 * coalesced and given back. */
static void test_idle_owner_does_not_pin_freed_blocks(void **state)
{
	enum { MANY = 20000 }; /* 128-byte ranges: 2.5 MB */
	static void *blocks[MANY];
	struct hl_arena *mine = own_arena();
	struct freer f;
	pthread_t thread;
	free_in_other_thread(blocks, MANY, &f, &thread);
	int64_t waiting = atomic_load(&mine->remote_bytes);
	assert_true(waiting <= ((int64_t)1 << 20) + 16384);
	assert_true(waiting >= 0);
	freer_stop(&f, thread);
	malloc_trim(0);
	assert_null(atomic_load(&mine->remote_head));
	assert_int_equal(atomic_load(&mine->remote_bytes), 0);
}

struct holder {
	void **blocks;
	pthread_barrier_t allocated, release;
};

static void *allocate_and_wait(void *arg)
{
	struct holder *h = arg;
	for (size_t i = 0; i < COUNT; i++)
		h->blocks[i] = malloc_fn(BLOCK_BYTES);
	pthread_barrier_wait(&h->allocated);
	pthread_barrier_wait(&h->release);
	return NULL;
}

/* Starts a holder thread that allocates COUNT blocks into blocks[] and
 * waits; returns its arena (not ours). */
static struct hl_arena *holder_start(struct holder *h, void **blocks, pthread_t *thread)
{
	*h = (struct holder){ .blocks = blocks };
	pthread_barrier_init(&h->allocated, NULL, 2);
	pthread_barrier_init(&h->release, NULL, 2);
	assert_int_equal(pthread_create(thread, NULL, allocate_and_wait, h), 0);
	pthread_barrier_wait(&h->allocated);
	struct hl_arena *theirs = arena_of_block(blocks[0]);
	assert_ptr_not_equal(theirs, own_arena());
	return theirs;
}

static void holder_stop(struct holder *h, pthread_t thread)
{
	pthread_barrier_wait(&h->release);
	assert_int_equal(pthread_join(thread, NULL), 0);
}

/* Blocks of a thread that has exited go to its arena directly: nothing
 * would ever take them off the arena's stack, and a packet for it would
 * never fill up and leave. Some are freed while it still runs, into a packet
 * that then must not wait either. */
static void test_blocks_of_an_exited_thread_go_to_its_arena(void **state)
{
	enum { EARLY = 10 }; /* fewer than a packet holds */
	static void *blocks[COUNT];
	struct holder h;
	pthread_t thread;
	struct hl_arena *theirs = holder_start(&h, blocks, &thread);
	for (size_t i = 0; i < EARLY; i++)
		free(blocks[i]);
	holder_stop(&h, thread);
	assert_int_equal(atomic_load(&theirs->threads), 0);
	for (size_t i = EARLY; i < COUNT; i++)
		free(blocks[i]);
	assert_null(atomic_load(&theirs->remote_head));
	/* None waits in a packet of ours either: their segments are whole. */
	bool all_spare = true;
	hl_lock(&theirs->lock);
	for (struct hl_segment *seg = theirs->segments; seg != NULL; seg = seg->next)
		all_spare &= hl_segment_is_spare(seg);
	hl_unlock(&theirs->lock);
	assert_true(all_spare);
}

/* Packets waiting for a thread of the parent are given to their arena in a
 * forked child, where that thread does not exist. */
static void test_fork_child_drains_packets_of_absent_threads(void **state)
{
	static void *blocks[COUNT];
	struct holder h;
	pthread_t thread;
	struct hl_arena *theirs = holder_start(&h, blocks, &thread);
	for (size_t i = 0; i < COUNT; i++)
		free(blocks[i]);
	assert_non_null(atomic_load(&theirs->remote_head)); /* their thread lives */
	pid_t child = fork();
	if (child == 0)
		_exit(atomic_load(&theirs->remote_head) == NULL &&
			      atomic_load(&theirs->threads) == 0 ? 0 : 1);
	int status;
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
	holder_stop(&h, thread);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_freed_blocks_return_to_their_thread),
		cmocka_unit_test(test_idle_owner_does_not_pin_freed_blocks),
		cmocka_unit_test(test_blocks_of_an_exited_thread_go_to_its_arena),
		cmocka_unit_test(test_fork_child_drains_packets_of_absent_threads),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
