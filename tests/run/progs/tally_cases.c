/*
 * tests/run/progs/tally_cases.c MODE: one-thread heap work that the
 * hook counts itself (counting in the hook), and the ways that counting
 * ends: a thread, exec, fork, a kill.
 *  - single: several stacks allocating, freeing, reallocating and leaking,
 *    some blocks freed at once (temporaries), enough events for thousands
 *    of timeline samples (the timeline thins);
 *  - thread: the same, then a thread that allocates and leaks, joined, then
 *    more of the same (from pthread_create on each thread counts into a
 *    delta of its own);
 *  - xthread: the same, then two threads, one allocating batches of blocks
 *    the other frees, then more of the same;
 *  - timer: the same, then a POSIX timer whose SIGEV_THREAD function
 *    allocates and leaks: glibc starts that thread itself, unseen by
 *    pthread_create's interposer (handed over at its first allocation);
 *  - exec: the same, then exec of itself in mode single;
 *  - execthreads: THREADS threads each hold HELD blocks and allocate
 *    without end; once each has done some of that, the first thread execs
 *    the program in mode single while they run (their counts go on until
 *    the kernel ends them, and the image is reported from them);
 *  - fork: the same, then a fork child that allocates, leaks and exits;
 *  - kill: leaks from two stacks, then SIGKILLs itself: the stacks' STACK
 *    records were never sent (no batch went out after them), so the report
 *    has them from the tally's stack log;
 *  - killnew: a thread that waits; then a leak from a stack never used
 *    before, and a SIGKILL before any batch took its STACK record out: the
 *    report has it from the tally's stack log, and the leak from the
 *    thread's delta, which it had not merged;
 *  - killthreads: the first of THREADS threads leaks as in kill; each holds
 *    HELD blocks, then allocates and frees without end; once each has done
 *    some of that, the first SIGKILLs the process while the others allocate
 *    (each counting into its delta, one perhaps inside an event or a
 *    merge).
 * Deterministic: the same events in the same order every run (killthreads:
 * each thread's own, and the blocks each holds).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <signal.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define WINDOW 512
static void *window[WINDOW];
void *tally_sink; /* reachable: the last block stored */

__attribute__((noinline)) static void *site_small(size_t n) { return malloc(n); }
__attribute__((noinline)) static void *site_zeroed(size_t n) { return calloc(1, n); }
__attribute__((noinline)) static void *site_grow(void *p, size_t n) { return realloc(p, n); }
__attribute__((noinline)) static void *site_leak(size_t n) { return malloc(n); } /* LEAK-TALLY */
__attribute__((noinline)) static void *site_leak2(size_t n) { return malloc(n); } /* LEAK-TALLY2 */
__attribute__((noinline)) static void site_temporary(size_t n) { free(malloc(n)); }
__attribute__((noinline)) static void *site_leak_late(size_t n) { return malloc(n); } /* LEAK-LATE */

#define THREADS 3
#define HELD 10
static void *thread_window[THREADS][WINDOW];
static void *held[THREADS][HELD];
static atomic_uint threads_busy; /* killthreads: threads well into their loop */

__attribute__((noinline)) static void *site_held(size_t n) { return malloc(n); } /* HELD-THREADS */

/* steps of allocations, frees, reallocs and temporaries in w from seed. */
static void work_in(void **w, unsigned seed, unsigned steps)
{
	for (unsigned i = 0; i < steps; i++) {
		seed = seed * 1103515245u + 12345u;
		unsigned slot = (seed >> 8) % WINDOW;
		size_t n = 8 + (seed >> 16) % 600;
		switch ((seed >> 4) % 4) {
		case 0:
			free(w[slot]);
			w[slot] = site_small(n);
			break;
		case 1:
			free(w[slot]);
			w[slot] = site_zeroed(n);
			break;
		case 2:
			w[slot] = site_grow(w[slot], n);
			break;
		default:
			site_temporary(n);
			break;
		}
	}
}

static void work(unsigned steps)
{
	work_in(window, 12345, steps);
	for (unsigned i = 0; i < 5; i++)
		tally_sink = site_leak(100 + i);
}

/* THREADS threads running start, not joined; false if one could not start. */
static bool threads_start(void *(*start)(void *))
{
	pthread_t t[THREADS];
	for (unsigned i = 0; i < THREADS; i++)
		if (pthread_create(&t[i], NULL, start, (void *)(uintptr_t)i) != 0)
			return false;
	return true;
}

static void *killthreads_main(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	if (i == 0) {
		/* Early: their stacks go out with the batches that follow. */
		for (int k = 0; k < 3; k++)
			tally_sink = site_leak(40);
		tally_sink = site_leak2(24);
	}
	for (unsigned k = 0; k < HELD; k++)
		held[i][k] = site_held(64);
	for (unsigned round = 0;; round++) {
		work_in(thread_window[i], 999 + i, 1000);
		if (round == 20)
			atomic_fetch_add(&threads_busy, 1);
		if (i == 0 && atomic_load(&threads_busy) == THREADS)
			kill(getpid(), SIGKILL);
	}
	return NULL;
}

/* execthreads: each thread holds HELD blocks and allocates without end
 * until the exec ends it. */
static void *execthreads_main(void *arg)
{
	unsigned i = (unsigned)(uintptr_t)arg;
	for (unsigned k = 0; k < HELD; k++)
		held[i][k] = site_held(64);
	for (unsigned round = 0;; round++) {
		work_in(thread_window[i], 777 + i, 1000);
		if (round == 5)
			atomic_fetch_add(&threads_busy, 1);
	}
	return NULL;
}

static void *wait_main(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

static void *thread_main(void *arg)
{
	(void)arg;
	for (int i = 0; i < 1000; i++)
		free(site_small((size_t)i + 1));
	tally_sink = site_leak2(77);
	return NULL;
}

/* xthread: a producer allocates batches of blocks, the consumer frees each
 * batch while the next is made: every free is another thread's block. */
#define XBATCH 64
#define XROUNDS 3000
static void *xbatches[2][XBATCH];
static sem_t xfull[2], xempty[2];

static void *xproducer(void *arg)
{
	(void)arg;
	for (unsigned r = 0; r < XROUNDS; r++) {
		unsigned b = r % 2;
		while (sem_wait(&xempty[b]) != 0)
			;
		for (unsigned i = 0; i < XBATCH; i++)
			xbatches[b][i] = site_small(16 + (r * 7 + i * 13) % 240);
		sem_post(&xfull[b]);
	}
	return NULL;
}

static void *xconsumer(void *arg)
{
	(void)arg;
	for (unsigned r = 0; r < XROUNDS; r++) {
		unsigned b = r % 2;
		while (sem_wait(&xfull[b]) != 0)
			;
		for (unsigned i = 0; i < XBATCH; i++)
			free(xbatches[b][i]);
		tally_sink = site_zeroed(8); /* the consumer's own, freed by the next */
		free(tally_sink);
		sem_post(&xempty[b]);
	}
	tally_sink = site_leak2(33);
	return NULL;
}

static bool xthread_ran(void)
{
	pthread_t p, c;
	for (unsigned b = 0; b < 2; b++)
		if (sem_init(&xfull[b], 0, 0) != 0 || sem_init(&xempty[b], 0, 1) != 0)
			return false;
	return pthread_create(&p, NULL, xproducer, NULL) == 0 &&
	       pthread_create(&c, NULL, xconsumer, NULL) == 0 && pthread_join(p, NULL) == 0 &&
	       pthread_join(c, NULL) == 0;
}

static sem_t timer_done;

static void timer_main(union sigval v)
{
	(void)v;
	thread_main(NULL);
	sem_post(&timer_done);
}

/* A SIGEV_THREAD timer fired once; false if it could not be made. */
static bool timer_fired(void)
{
	struct sigevent ev = { .sigev_notify = SIGEV_THREAD, .sigev_notify_function = timer_main };
	struct itimerspec when = { .it_value = { 0, 1000000 } };
	timer_t timer;
	if (sem_init(&timer_done, 0, 0) != 0 || timer_create(CLOCK_MONOTONIC, &ev, &timer) != 0 ||
	    timer_settime(timer, 0, &when, NULL) != 0)
		return false;
	while (sem_wait(&timer_done) != 0)
		;
	return timer_delete(timer) == 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (strcmp(argv[1], "kill") == 0) {
		for (int i = 0; i < 3; i++)
			tally_sink = site_leak(40);
		tally_sink = site_leak2(24);
		kill(getpid(), SIGKILL);
		return 3;
	}
	if (strcmp(argv[1], "killnew") == 0) {
		pthread_t waiter;
		if (pthread_create(&waiter, NULL, wait_main, NULL) != 0)
			return 9;
		tally_sink = site_leak_late(56);
		kill(getpid(), SIGKILL);
		return 3;
	}
	if (strcmp(argv[1], "execthreads") == 0) {
		if (!threads_start(execthreads_main))
			return 8;
		while (atomic_load(&threads_busy) < THREADS)
			sched_yield();
		tally_sink = site_leak2(24);
		execl("/proc/self/exe", argv[0], "single", (char *)NULL);
		return 5;
	}
	if (strcmp(argv[1], "killthreads") == 0) {
		if (!threads_start(killthreads_main))
			return 8;
		for (;;)
			pause();
	}
	work(600000);
	if (strcmp(argv[1], "thread") == 0) {
		pthread_t t;
		if (pthread_create(&t, NULL, thread_main, NULL) != 0 || pthread_join(t, NULL) != 0)
			return 4;
		work(20000);
	} else if (strcmp(argv[1], "xthread") == 0) {
		if (!xthread_ran())
			return 10;
		work(20000);
	} else if (strcmp(argv[1], "timer") == 0) {
		if (!timer_fired())
			return 7;
		work(20000);
	} else if (strcmp(argv[1], "exec") == 0) {
		execl("/proc/self/exe", argv[0], "single", (char *)NULL);
		return 5;
	} else if (strcmp(argv[1], "fork") == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			work(3000);
			_exit(0);
		}
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			return 6;
		work(3000);
	} else if (strcmp(argv[1], "single") != 0) {
		return 2;
	}
	for (unsigned i = 0; i < WINDOW; i += 2) {
		free(window[i]);
		window[i] = NULL;
	}
	return 0;
}
