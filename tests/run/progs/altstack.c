/* tests/run/progs/altstack.c: signal handlers on 8 KiB alternate stacks
 * (SIGSTKSZ, each a heap block) that allocate and free, in the main thread
 * and in four threads, and leak one block from the handler. Under
 * checks=full the hook's stack walks must fit or go elsewhere: running off
 * the alternate stack's end wrote over the heap below it (false errors) or
 * crashed. check_altstack.py runs it. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

#define ALT_BYTES 8192

/* atomic: the four workers' handlers count at once (a volatile ++ lost one
 * now and then: "handled 899") */
static _Atomic int handled;
static void *volatile leaked;

__attribute__((noinline)) static void nested(int n)
{
	void *p = malloc(32 + (size_t)n);
	if (n)
		nested(n - 1);
	free(p);
}

__attribute__((noinline)) static void leak_in_handler(void)
{
	if (!leaked)
		leaked = malloc(48);
}

static void handler(int sig)
{
	(void)sig;
	handled++;
	nested(3);
	leak_in_handler();
}

static void use_alt_stack(void)
{
	stack_t ss = { .ss_sp = malloc(ALT_BYTES), .ss_size = ALT_BYTES };
	if (sigaltstack(&ss, NULL) != 0)
		abort();
}

static void *worker(void *arg)
{
	use_alt_stack();
	for (int i = 0; i < 200; i++) {
		void *p = malloc(100 + (size_t)i);
		raise(SIGUSR1);
		free(p);
	}
	return arg;
}

int main(void)
{
	struct sigaction sa = { .sa_handler = handler, .sa_flags = SA_ONSTACK };
	pthread_t threads[4];

	use_alt_stack();
	sigaction(SIGUSR1, &sa, NULL);
	for (int i = 0; i < 100; i++) {
		void *p = malloc(50);
		raise(SIGUSR1);
		free(p);
	}
	for (int i = 0; i < 4; i++)
		pthread_create(&threads[i], NULL, worker, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(threads[i], NULL);
	leaked = NULL;
	printf("handled %d\n", atomic_load(&handled));
	return 0;
}
