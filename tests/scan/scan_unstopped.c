/* tests/scan/scan_unstopped.c: a thread that blocks every signal (so the
 * leak scan's stop signal never reaches it) is still running when main
 * runs an on-demand check and when it returns; main leaks one block. Both
 * scans go on without stopping it and must say so, naming the thread: its
 * kernel thread id is printed first ("blocker TID"). */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "heapledger.h"

#pragma weak heapledger_check_leaks

static int ready[2];
static char *volatile held; /* a root until main drops the block */

static void *blocker(void *arg)
{
	pid_t tid = (pid_t)syscall(SYS_gettid);

	(void)arg;
	if (write(ready[1], &tid, sizeof(tid)) != sizeof(tid))
		abort();
	for (;;)
		pause(); /* no signal can end it: main's exit does */
	return NULL;
}

int main(void)
{
	sigset_t all, old;
	pthread_t t;
	pid_t tid;

	if (pipe(ready))
		return 1;
	/* The new thread inherits the mask: blocked from its first instruction. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&t, NULL, blocker, NULL))
		return 1;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (read(ready[0], &tid, sizeof(tid)) != sizeof(tid))
		return 1;
	printf("blocker %d\n", (int)tid);
	fflush(stdout);
	if (heapledger_check_leaks)
		heapledger_check_leaks();
	held = malloc(48);
	held = NULL;
	puts("done");
	return 0;
}
