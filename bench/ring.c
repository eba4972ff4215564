/*
 * ring: N threads in a ring. Thread i allocates blocks of 16..256 bytes and
 * passes them in batches to thread i+1, which frees them, so EVERY free is a
 * cross-thread free. Each link is a single-producer single-consumer lock-free
 * ring of batches, filled in place: moving 64 blocks costs two atomic stores,
 * so the allocator, not the queue, dominates the time.
 *
 * Each block carries its size in its first two bytes and a tag in its last
 * byte; the consumer reads both into its checksum before freeing. A thread's
 * inbox has one producer whose sequence is seeded, so every per-thread
 * checksum, and their sum, is the same under every allocator and schedule.
 *
 * A thread that can neither consume nor produce sleeps on its event count; its
 * neighbours bump it after publishing a batch or freeing a slot.
 *
 * usage: ring THREADS [scale_percent]   (100 = 2M blocks per thread)
 *
 * The size is per thread so both ring sizes run long enough to measure: with
 * glibc on 2 cores, 2 threads x 2M blocks take ~1.9 s, 8 x 2M take ~1 s.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define RING_BLOCKS_PER_THREAD 2000000ull
#define RING_MIN_SIZE 16
#define RING_MAX_SIZE 256
#define RING_BATCH 64
#define RING_SLOTS 32 /* batches per link; a power of two */
#define RING_MAX_THREADS 64
#define CACHE_LINE 64

struct batch {
	uint32_t count;                /* blocks in use */
	unsigned char *blocks[RING_BATCH];
};

/* One link of the ring: written by one thread, read by the next. */
struct link {
	_Alignas(CACHE_LINE) _Atomic uint32_t head; /* next slot to consume */
	_Alignas(CACHE_LINE) _Atomic uint32_t tail; /* next slot to fill */
	_Alignas(CACHE_LINE) struct batch slots[RING_SLOTS];
};

/* An event count: sleep until someone bumps seq past the value seen. */
struct event {
	_Atomic uint32_t seq;     /* bumped by every notify */
	_Atomic uint32_t waiters; /* threads inside event_wait */
	pthread_mutex_t lock;     /* guards the sleep, not seq */
	pthread_cond_t cond;
};

struct worker {
	struct link inbox;   /* batches from the previous thread */
	struct event wake;   /* bumped when inbox fills or next inbox drains */
	struct worker *next; /* consumer of our blocks */
	struct worker *prev; /* producer of our inbox */
	pthread_t thread;
	uint64_t quota;      /* blocks to produce, and to consume */
	uint64_t seed;
	uint64_t sum;        /* checksum of the blocks consumed */
};

static struct worker workers[RING_MAX_THREADS];

static void event_notify(struct event *e)
{
	atomic_fetch_add(&e->seq, 1);
	if (atomic_load(&e->waiters) == 0)
		return;
	pthread_mutex_lock(&e->lock);
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
}

/*
 * seq and waiters are both seq_cst: either the notifier sees our waiters
 * increment and takes the lock to wake us, or we see its seq increment.
 */
static void event_wait(struct event *e, uint32_t seen)
{
	atomic_fetch_add(&e->waiters, 1);
	pthread_mutex_lock(&e->lock);
	while (atomic_load(&e->seq) == seen)
		pthread_cond_wait(&e->cond, &e->lock);
	pthread_mutex_unlock(&e->lock);
	atomic_fetch_sub(&e->waiters, 1);
}

static void batch_fill(struct batch *b, struct bench_rng *rng, uint32_t count)
{
	for (uint32_t i = 0; i < count; i++) {
		uint64_t r = bench_rng_next(rng);
		uint16_t size = RING_MIN_SIZE + r % (RING_MAX_SIZE - RING_MIN_SIZE + 1);
		unsigned char *p = malloc(size);

		if (!p) {
			perror("ring: malloc");
			exit(1);
		}
		memcpy(p, &size, sizeof(size));
		p[size - 1] = (unsigned char)(r >> 32);
		b->blocks[i] = p;
	}
	b->count = count;
}

static uint64_t batch_free(const struct batch *b, uint64_t sum)
{
	for (uint32_t i = 0; i < b->count; i++) {
		unsigned char *p = b->blocks[i];
		uint16_t size;

		memcpy(&size, p, sizeof(size));
		sum = bench_mix(sum, size);
		sum = bench_mix(sum, p[size - 1]);
		free(p);
	}
	return sum;
}

/* Free every batch waiting in our inbox; returns the blocks consumed. */
static uint64_t worker_drain(struct worker *w)
{
	uint32_t head = atomic_load_explicit(&w->inbox.head, memory_order_relaxed);
	uint32_t tail = atomic_load_explicit(&w->inbox.tail, memory_order_acquire);
	uint64_t consumed = 0;

	if (head == tail)
		return 0;
	for (; head != tail; head++) {
		const struct batch *b = &w->inbox.slots[head % RING_SLOTS];

		w->sum = batch_free(b, w->sum);
		consumed += b->count;
	}
	atomic_store_explicit(&w->inbox.head, head, memory_order_release);
	event_notify(&w->prev->wake);
	return consumed;
}

/* Allocate one batch straight into the next thread's inbox, if it has room. */
static uint64_t worker_produce(struct worker *w, struct bench_rng *rng,
			       uint64_t left)
{
	struct link *out = &w->next->inbox;
	uint32_t tail = atomic_load_explicit(&out->tail, memory_order_relaxed);
	uint32_t head = atomic_load_explicit(&out->head, memory_order_acquire);
	uint32_t count = left < RING_BATCH ? (uint32_t)left : RING_BATCH;

	if (tail - head == RING_SLOTS)
		return 0;
	batch_fill(&out->slots[tail % RING_SLOTS], rng, count);
	atomic_store_explicit(&out->tail, tail + 1, memory_order_release);
	event_notify(&w->next->wake);
	return count;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	struct bench_rng rng;
	uint64_t produced = 0, consumed = 0;

	bench_rng_seed(&rng, w->seed);
	while (produced < w->quota || consumed < w->quota) {
		uint32_t seen = atomic_load(&w->wake.seq);
		uint64_t made = 0, freed;

		if (produced < w->quota)
			made = worker_produce(w, &rng, w->quota - produced);
		freed = worker_drain(w);
		produced += made;
		consumed += freed;
		if (!made && !freed)
			event_wait(&w->wake, seen);
	}
	return NULL;
}

static void workers_init(int threads, uint64_t quota)
{
	for (int i = 0; i < threads; i++) {
		struct worker *w = &workers[i];

		w->next = &workers[(i + 1) % threads];
		w->prev = &workers[(i + threads - 1) % threads];
		w->quota = quota;
		w->seed = 1000 + (uint64_t)i;
		pthread_mutex_init(&w->wake.lock, NULL);
		pthread_cond_init(&w->wake.cond, NULL);
	}
}

int main(int argc, char **argv)
{
	int threads = argc > 1 ? atoi(argv[1]) : 0;
	uint64_t quota, sum = 0;

	if (threads < 2 || threads > RING_MAX_THREADS) {
		fprintf(stderr, "usage: ring THREADS(2..%d) [scale_percent]\n",
			RING_MAX_THREADS);
		return 2;
	}
	quota = bench_scaled(RING_BLOCKS_PER_THREAD, argc, argv, 2);
	workers_init(threads, quota);
	for (int i = 0; i < threads; i++) {
		if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i])) {
			fprintf(stderr, "ring: pthread_create failed\n");
			return 1;
		}
	}
	for (int i = 0; i < threads; i++) {
		pthread_join(workers[i].thread, NULL);
		sum += workers[i].sum;
	}
	bench_checksum_print(sum);
	return 0;
}
