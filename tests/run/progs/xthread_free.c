/* tests/run/progs/xthread_free.c: 4 threads in a ring, each allocating
 * blocks that the next one frees, 40,000 each; under --checks full the
 * quarantine keeps freed addresses from coming back soon, so nearly every
 * free is remembered by the reporter until no older event can still come
 * (reporter/tombwatch.h), while main waits in pthread_join with events of
 * its own unsent. Each thread leaks one block; the report must name exactly
 * those four, nothing freed. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define THREADS 4
#define BLOCKS 40000
#define SLOTS 256 /* a power of two */

struct link {
	_Atomic unsigned head, tail; /* consumed, produced */
	void *slot[SLOTS];
};

static struct link links[THREADS]; /* links[i]: from thread i to i + 1 */

void *xthread_leaker(void);
__attribute__((noinline)) void *xthread_leaker(void)
{
	return malloc(40); /* LEAK-XTHREAD */
}

static void *worker(void *arg)
{
	unsigned me = (unsigned)(size_t)arg;
	struct link *out = &links[me], *in = &links[(me + THREADS - 1) % THREADS];
	unsigned made = 0, freed = 0;
	void *volatile leak = xthread_leaker();

	leak = NULL;
	while (made < BLOCKS || freed < BLOCKS) {
		unsigned tail = atomic_load(&out->tail);
		if (made < BLOCKS && tail - atomic_load(&out->head) < SLOTS) {
			char *p = malloc(16 + (made * 7) % 200);
			memset(p, (int)me, 16);
			out->slot[tail % SLOTS] = p;
			atomic_store(&out->tail, tail + 1);
			made++;
		}
		unsigned head = atomic_load(&in->head);
		if (head != atomic_load(&in->tail)) {
			free(in->slot[head % SLOTS]);
			atomic_store(&in->head, head + 1);
			freed++;
		}
	}
	return NULL;
}

int main(void)
{
	pthread_t threads[THREADS];
	void *kept = malloc(24); /* freed after the join: unsent meanwhile */

	for (unsigned i = 0; i < THREADS; i++)
		if (pthread_create(&threads[i], NULL, worker, (void *)(size_t)i))
			return 1;
	for (unsigned i = 0; i < THREADS; i++)
		pthread_join(threads[i], NULL);
	free(kept);
	return 0;
}
