/*
 * tests/libhook/stress_threads.c: 64 threads allocate blocks of random sizes
 * (large ones included), resize them, fill them with a pattern derived from
 * their address, and hand half of them to other threads to check and free.
 * Any overlap between live blocks, lost data or crash fails the test.
 *
 * Run under LD_PRELOAD of libheapledger.so (see meson.build).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <malloc.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define THREADS 64
#define ROUNDS 3000
#define MAILBOX 64
/* Address space the allocator may still hold after malloc_trim: the spare
 * segment each arena keeps (arenas: 4 per CPU, at most 64) and four more for
 * the main thread's live and cached blocks (32-36 MiB seen on 2 CPUs; blocks
 * stranded in unsent packets made it 64). */
static uint64_t mapped_after_trim_max(void)
{
	long arenas = 4 * sysconf(_SC_NPROCESSORS_ONLN);
	if (arenas < 4)
		arenas = 4;
	if (arenas > 64)
		arenas = 64;
	return (uint64_t)(arenas + 4) << 22;
}

struct block {
	unsigned char *p;
	size_t size;
};

struct mailbox {
	pthread_mutex_t lock;
	struct block slots[MAILBOX];
	int count;
};

static struct mailbox boxes[THREADS];
static atomic_int failures;

static uint64_t next_random(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static unsigned char pattern(const struct block *b, size_t i)
{
	return (unsigned char)(((uintptr_t)b->p >> 4) + i * 31 + b->size);
}

static void fill(struct block *b)
{
	for (size_t i = 0; i < b->size; i += (b->size > 4096 ? 509 : 1))
		b->p[i] = pattern(b, i);
	if (b->size)
		b->p[b->size - 1] = pattern(b, b->size - 1);
}

static void check_and_free(struct block *b)
{
	for (size_t i = 0; i < b->size; i += (b->size > 4096 ? 509 : 1))
		if (b->p[i] != pattern(b, i)) {
			atomic_fetch_add(&failures, 1);
			break;
		}
	if (b->size && b->p[b->size - 1] != pattern(b, b->size - 1))
		atomic_fetch_add(&failures, 1);
	free(b->p);
}

static size_t random_size(uint64_t *x)
{
	uint64_t r = next_random(x);
	if (r % 1000 == 0)
		return 1 + (r >> 20) % (4 << 20); /* 0.1%: up to 4 MiB */
	if (r % 50 == 0)
		return 1 + (r >> 20) % 65536;
	return (r >> 20) % 600;
}

/* Post to another thread's mailbox; if full, free it ourselves. */
static void send_to(int target, struct block *b)
{
	struct mailbox *m = &boxes[target];
	pthread_mutex_lock(&m->lock);
	if (m->count < MAILBOX) {
		m->slots[m->count++] = *b;
		b = NULL;
	}
	pthread_mutex_unlock(&m->lock);
	if (b)
		check_and_free(b);
}

static void drain(int self)
{
	struct block local[MAILBOX];
	struct mailbox *m = &boxes[self];
	pthread_mutex_lock(&m->lock);
	int n = m->count;
	memcpy(local, m->slots, sizeof(local[0]) * (size_t)n);
	m->count = 0;
	pthread_mutex_unlock(&m->lock);
	for (int i = 0; i < n; i++)
		check_and_free(&local[i]);
}

static void *worker(void *arg)
{
	int self = (int)(intptr_t)arg;
	uint64_t x = 0x9e3779b97f4a7c15ull * (uint64_t)(self + 1);
	struct block keep[32] = { 0 };
	for (int round = 0; round < ROUNDS; round++) {
		struct block b = { .size = random_size(&x) };
		b.p = malloc(b.size);
		if (b.p == NULL) {
			atomic_fetch_add(&failures, 1);
			continue;
		}
		fill(&b);
		int slot = (int)(next_random(&x) % 32);
		if (keep[slot].p) {
			/* Resize a kept block: contents up to the old size survive. */
			struct block *k = &keep[slot];
			size_t old = k->size;
			size_t grown = random_size(&x);
			unsigned char first = old ? k->p[0] : 0;
			unsigned char *q = realloc(k->p, grown ? grown : 1);
			if (q == NULL) {
				atomic_fetch_add(&failures, 1);
			} else {
				if (old && grown && q[0] != first)
					atomic_fetch_add(&failures, 1);
				k->p = q;
				k->size = grown ? grown : 1;
				fill(k);
			}
		}
		if (round & 1)
			send_to((self + 1 + (int)(next_random(&x) % (THREADS - 1))) % THREADS, &b);
		else if (keep[slot].p == NULL)
			keep[slot] = b;
		else
			check_and_free(&b);
		if (round % 16 == 0)
			drain(self);
	}
	for (int i = 0; i < 32; i++)
		if (keep[i].p)
			check_and_free(&keep[i]);
	return NULL;
}

/* heapledger.h's counters, looked up at run time: this program is not linked
 * with the hook, only run under LD_PRELOAD of it. */
struct hook_stats {
	uint64_t in_use_bytes, in_use_blocks, allocs, frees, bytes_allocated, peak_bytes,
		mapped_bytes;
};

static int hook_stats(struct hook_stats *out)
{
	int (*get)(struct hook_stats *) =
		(int (*)(struct hook_stats *))dlsym(RTLD_DEFAULT, "heapledger_get_stats");
	return get != NULL && get(out) == 0;
}

int main(void)
{
	struct hook_stats after;
	int hooked = hook_stats(&after);
	pthread_t threads[THREADS];
	for (int i = 0; i < THREADS; i++)
		pthread_mutex_init(&boxes[i].lock, NULL);
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&threads[i], NULL, worker, (void *)(intptr_t)i) != 0) {
			fprintf(stderr, "pthread_create failed\n");
			return 1;
		}
	for (int i = 0; i < THREADS; i++)
		pthread_join(threads[i], NULL);
	for (int i = 0; i < THREADS; i++)
		drain(i);
	int f = atomic_load(&failures);
	if (hooked) {
		/* Every block was freed, by whichever thread, and all the
		 * threads are gone: malloc_trim gives the segments back, blocks
		 * freed across threads included (none is left waiting in a
		 * packet for a thread that no longer exists). */
		malloc_trim(0);
		hook_stats(&after);
		printf("stress: %llu KiB mapped after malloc_trim (at most %llu)\n",
		       (unsigned long long)(after.mapped_bytes >> 10),
		       (unsigned long long)(mapped_after_trim_max() >> 10));
		if (after.mapped_bytes > mapped_after_trim_max())
			f++;
	}
	printf("stress: %d threads x %d rounds, %d failures\n", THREADS, ROUNDS, f);
	return f == 0 ? 0 : 1;
}
