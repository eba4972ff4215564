/*
 * tests/libhook/profiled_unwind.c: a program profiled the way gperftools
 * does it, under the hook. A SIGPROF handler unwinds with libunwind, the
 * library the hook captures stacks with, while new threads allocate from
 * many call sites, round after round, so that the hook's captures keep
 * taking libunwind's locks (where a handler that unwinds must not interrupt
 * them: it would wait for a lock its own thread holds) and keep switching
 * between blocking signals around a whole capture and letting libunwind
 * block them itself (libhook/unwind_mask.c).
 *
 * Must finish (a deadlock is the test's timeout), the handler must have run,
 * and each thread's signal mask must be the one it set, after every
 * allocation.
 * Exit 0 and "ok N samples" on success.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

#define ROUNDS_MIN 40
#define SAMPLES_MIN 20
#define SECONDS_MAX 20

static volatile sig_atomic_t samples;

static void on_sigprof(int sig)
{
	void *frames[64];
	if (unw_backtrace(frames, 64) > 0)
		samples++;
}

/* Sixty-four functions, each its own allocation call site. */
#define SITE(i)                                                               \
	static __attribute__((noinline)) void *site_##i(size_t n)             \
	{                                                                     \
		char *p = malloc(n + i);                                      \
		if (p)                                                        \
			memset(p, i, n + i);                                  \
		__asm__ volatile("" ::: "memory");                            \
		return p;                                                     \
	}
#define SITES8(a) SITE(a##0) SITE(a##1) SITE(a##2) SITE(a##3) SITE(a##4) SITE(a##5) SITE(a##6) SITE(a##7)
SITES8(1) SITES8(2) SITES8(3) SITES8(4) SITES8(5) SITES8(6) SITES8(7) SITES8(8)
#define REF(i) site_##i,
#define REFS8(a) REF(a##0) REF(a##1) REF(a##2) REF(a##3) REF(a##4) REF(a##5) REF(a##6) REF(a##7)
static void *(*const sites[])(size_t) = {
	REFS8(1) REFS8(2) REFS8(3) REFS8(4) REFS8(5) REFS8(6) REFS8(7) REFS8(8)
};
#define NSITES (sizeof(sites) / sizeof(sites[0]))

static int same_mask(const sigset_t *a, const sigset_t *b)
{
	for (int sig = 1; sig < NSIG; sig++)
		if (sigismember(a, sig) != sigismember(b, sig))
			return 0;
	return 1;
}

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* One round in a thread of its own: libunwind's trace cache and the hook's
 * stack memo are per thread, so every round's captures start cold and take
 * libunwind's locks. Returns NULL or why not. */
static void *allocate_round(void *arg)
{
	int blocked_signal = *(int *)arg;
	sigset_t mine, now_mask;
	sigemptyset(&mine);
	sigaddset(&mine, blocked_signal);
	if (pthread_sigmask(SIG_BLOCK, &mine, NULL) != 0)
		return "pthread_sigmask";
	pthread_sigmask(SIG_BLOCK, NULL, &mine);
	for (int pass = 0; pass < 4; pass++)
		for (size_t i = 0; i < NSITES; i++) {
			free(sites[i](16 + i));
			pthread_sigmask(SIG_BLOCK, NULL, &now_mask);
			if (!same_mask(&now_mask, &mine))
				return "a thread's signal mask changed";
		}
	return NULL;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = on_sigprof, .sa_flags = SA_RESTART };
	struct itimerval every = { .it_interval = { 0, 200 }, .it_value = { 0, 200 } };
	int blocks[2] = { SIGUSR1, SIGUSR2 };
	const char *failed = NULL;
	double start = now();

	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL) != 0 || setitimer(ITIMER_PROF, &every, NULL) != 0) {
		perror("profiled_unwind: set-up");
		return 1;
	}
	for (int round = 0; !failed && (round < ROUNDS_MIN || samples < SAMPLES_MIN); round++) {
		pthread_t threads[2];
		void *why[2] = { NULL, NULL };
		if (now() - start > SECONDS_MAX) {
			failed = "too few SIGPROF samples in time";
			break;
		}
		for (int t = 0; t < 2; t++)
			if (pthread_create(&threads[t], NULL, allocate_round, &blocks[t]) != 0) {
				perror("profiled_unwind: pthread_create");
				return 1;
			}
		for (int t = 0; t < 2; t++) {
			pthread_join(threads[t], &why[t]);
			if (why[t])
				failed = why[t];
		}
	}
	struct itimerval off = { 0 };
	setitimer(ITIMER_PROF, &off, NULL);
	if (failed) {
		fprintf(stderr, "profiled_unwind: %s\n", failed);
		return 1;
	}
	printf("ok %d samples\n", (int)samples);
	return 0;
}
