/* tests/run/progs/busy_exit.c: a process that exits while its threads
 * still allocate. THREADS threads each keep KEEP blocks in a ring they free
 * and replace without end; main waits until every thread has gone round
 * its ring a few times (the counting is per thread by then), leaks one
 * block and calls exit(0) with the threads running. The report must name
 * that block and the stream must agree with the exit's live set but for
 * the operations the threads had in flight at the stop: at most one each
 * (check_busy_exit.py). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#define THREADS 4
#define KEEP 64
#define ROUNDS 20 /* rings gone round before the exit */

static _Atomic unsigned long made[THREADS];

static void *worker(void *arg)
{
	unsigned me = (unsigned)(size_t)arg;
	void *keep[KEEP] = { 0 };
	for (unsigned long i = 0;; i++) {
		unsigned k = (unsigned)((i * 7 + me) % KEEP);
		free(keep[k]);
		keep[k] = malloc(16 + i % 300);
		atomic_store_explicit(&made[me], i + 1, memory_order_relaxed);
	}
	return NULL;
}

void *busy_leak(void);
__attribute__((noinline)) void *busy_leak(void)
{
	return malloc(77); /* BUSY-LEAK */
}

int main(void)
{
	pthread_t t;
	for (unsigned i = 0; i < THREADS; i++)
		if (pthread_create(&t, NULL, worker, (void *)(size_t)i))
			return 1;
	for (unsigned i = 0; i < THREADS; i++)
		while (atomic_load(&made[i]) < ROUNDS * KEEP)
			usleep(1000);
	void *volatile lost = busy_leak();
	lost = NULL;
	exit(0);
}
