/* tests/run/progs/smallstack.c: threads on PTHREAD_STACK_MIN (16 KiB)
 * stacks that allocate and free ~100 calls deep, while the main thread
 * allocates under a profiling timer whose handler allocates too (many of
 * its signals land inside a capture of the hook) and, raised once from a
 * known place, leaks a block from the handler. A capture's frame buffers
 * on the program's stack (4 KiB at depth=256) overran the small stacks: a
 * crash. check_smallstack.py runs it. */
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#define THREADS 4
#define DEEP 100

static volatile int in_handler;
static void *volatile handler_leak;

__attribute__((noinline)) static void deep_alloc(int n)
{
	if (n > 0) {
		deep_alloc(n - 1);
		__asm__ volatile("" : : : "memory"); /* no tail call */
		return;
	}
	for (int i = 0; i < 50; i++) {
		char *p = malloc(24 + (size_t)i);
		if (p == NULL)
			abort();
		p[0] = (char)i;
		free(p);
	}
}

static void *small_thread(void *arg)
{
	for (int round = 0; round < 20; round++)
		deep_alloc(DEEP);
	return arg;
}

__attribute__((noinline)) static void leak_from_handler(void)
{
	if (handler_leak == NULL)
		handler_leak = malloc(91);
}

static void handler(int sig)
{
	(void)sig;
	in_handler++;
	void *p = malloc(40);
	free(p);
	if (sig == SIGUSR1)
		leak_from_handler();
}

__attribute__((noinline)) static void main_deep(int n)
{
	if (n > 0) {
		main_deep(n - 1);
		__asm__ volatile("" : : : "memory");
		return;
	}
	for (int i = 0; i < 2000; i++)
		free(malloc(16 + (size_t)(i % 64)));
}

int main(void)
{
	struct sigaction sa;
	sigset_t prof;
	pthread_attr_t attr;
	pthread_t threads[THREADS];

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGPROF, &sa, NULL);
	sigaction(SIGUSR1, &sa, NULL);
	/* The timer's signals go to the main thread only: the small threads
	 * start with SIGPROF blocked. */
	sigemptyset(&prof);
	sigaddset(&prof, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &prof, NULL);
	pthread_attr_init(&attr);
	if (pthread_attr_setstacksize(&attr, PTHREAD_STACK_MIN) != 0)
		abort();
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&threads[i], &attr, small_thread, NULL) != 0)
			abort();
	pthread_sigmask(SIG_UNBLOCK, &prof, NULL);

	struct itimerval every = { { 0, 100 }, { 0, 100 } };
	setitimer(ITIMER_PROF, &every, NULL);
	for (int round = 0; round < 30; round++)
		main_deep(150);
	raise(SIGUSR1);
	struct itimerval off = { { 0, 0 }, { 0, 0 } };
	setitimer(ITIMER_PROF, &off, NULL);

	for (int i = 0; i < THREADS; i++)
		pthread_join(threads[i], NULL);
	handler_leak = NULL; /* lost: its stack goes through the handler */
	printf("smallstack done\n");
	return 0;
}
