/* tests/scan/scan_unstopped.c: a thread that blocks every signal (so the
 * leak scan's stop signal never reaches it) is still running when main
 * returns; main leaks one block. The exit scan goes on without stopping it
 * and must say so. */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static int ready[2];
static char *volatile held; /* a root until main drops the block */

static void *blocker(void *arg)
{
	char c = 1;

	(void)arg;
	if (write(ready[1], &c, 1) != 1)
		abort();
	for (;;)
		pause(); /* no signal can end it: main's exit does */
	return NULL;
}

int main(void)
{
	sigset_t all, old;
	pthread_t t;
	char c;

	if (pipe(ready))
		return 1;
	/* The new thread inherits the mask: blocked from its first instruction. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, NULL, blocker, NULL))
		return 1;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (read(ready[0], &c, 1) != 1)
		return 1;
	held = malloc(48);
	held = NULL;
	puts("done");
	return 0;
}
