/* tests/scan/scan_threads.c: 64 threads running during an on-demand leak
 * check, each holding its block only on its own stack, and one holding its
 * block only in a register; plus a list dropped by main. The check runs
 * while they spin: VALGRIND_DO_LEAK_CHECK under valgrind,
 * heapledger_check_leaks() under the hook; check_classes.sh compares the
 * classes of every LEAK SUMMARY (the check's and the exit's). */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <valgrind/memcheck.h>

#include "heapledger.h"

#pragma weak heapledger_check_leaks

#define THREADS 64

static atomic_int ready;
static atomic_int stop;

/* Overwrites the stack below the caller (its red zone included), so no
 * stale copy of a pointer is left where a scan would read it. */
__attribute__((noinline)) static void scrub_below(void)
{
	volatile char scratch[4096];
	for (size_t i = 0; i < sizeof(scratch); i++)
		scratch[i] = 0;
}

static void *on_stack(void *arg)
{
	(void)arg;
	void *volatile slot = malloc(24);
	scrub_below();
	atomic_fetch_add(&ready, 1);
	while (!atomic_load(&stop))
		sched_yield();
	free(slot);
	return NULL;
}

#if defined(__x86_64__)
/* The block's only pointer is in r12 while the check runs. */
static void *in_register(void *arg)
{
	(void)arg;
	register uintptr_t keep __asm__("r12") = (uintptr_t)malloc(40);
	__asm__ volatile("" : "+r"(keep));
	scrub_below();
	atomic_fetch_add(&ready, 1);
	while (!atomic_load(&stop)) {
		sched_yield(); /* a system call stub: r12 stays untouched */
		__asm__ volatile("" : "+r"(keep));
	}
	free((void *)keep);
	return NULL;
}
#else
#define in_register on_stack
#endif

__attribute__((noinline)) static void drop_list(void)
{
	void *head = NULL;
	for (int i = 0; i < 3; i++) {
		void **n = malloc(32);
		n[0] = head;
		head = n;
	}
	__asm__ volatile("" : : "r"(head) : "memory");
}

__attribute__((noinline)) static void check(void)
{
	if (RUNNING_ON_VALGRIND)
		VALGRIND_DO_LEAK_CHECK;
	else if (heapledger_check_leaks)
		heapledger_check_leaks();
}

int main(void)
{
	pthread_t threads[THREADS];
	for (int i = 0; i < THREADS; i++)
		if (pthread_create(&threads[i], NULL, i == 0 ? in_register : on_stack, NULL))
			return 1;
	drop_list();
	while (atomic_load(&ready) < THREADS)
		__asm__ volatile("pause");
	scrub_below();
	check();
	atomic_store(&stop, 1);
	for (int i = 0; i < THREADS; i++)
		pthread_join(threads[i], NULL);
	return 0;
}
