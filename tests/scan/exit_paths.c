/*
 * tests/scan/exit_paths.c MODE: programs that end where valgrind still scans
 * (check_exit_paths.py runs each under valgrind and under heapledger and
 * compares the classes of every process). Each leaks a known block and
 * keeps another reachable, so a scan that did not run, or read the wrong
 * roots, shows.
 *
 *   runner    a forking test runner: each child runs a "test" and ends with
 *             _exit (one with _Exit); a child keeps a pointer to a block it
 *             inherited, and the runner itself ends with _exit
 *   threads   a forked child starts and joins threads, then exits
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void *kept;                /* still reachable */
static void *volatile sink;       /* defeats dead-store elimination */

static __attribute__((noinline)) void leak(size_t size)
{
	void *p = malloc(size);
	memset(p, 0x5a, size);
	sink = p;
	sink = NULL; /* the only pointer is gone: definitely lost */
}

static void child_test(int n)
{
	char **inherited = kept;
	kept = malloc(48); /* the child's own, reachable */
	((void **)kept)[0] = inherited; /* the parent's, still reached */
	leak(80 + (size_t)n);
	printf("test %d done\n", n); /* buffered: _exit must not write it */
	if (n == 2)
		_Exit(0);
	_exit(0);
}

static int runner(void)
{
	kept = malloc(200);
	leak(33);
	setenv("EXIT_PATHS_RUNNER", "1", 1); /* glibc's, freed by freeres */
	printf("runner: "); /* pending in the parent: not written by any child */
	for (int n = 0; n < 3; n++) {
		pid_t pid = fork();
		if (pid == 0)
			child_test(n);
		int status;
		waitpid(pid, &status, 0);
	}
	printf("done\n");
	fflush(stdout);
	_exit(0);
}

static void *thread_main(void *arg)
{
	void *p = malloc(24);
	free(p);
	return arg;
}

static int threads(void)
{
	kept = malloc(100);
	pid_t pid = fork();
	if (pid == 0) {
		pthread_t t[4];
		for (int i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, thread_main, NULL);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		leak(56);
		exit(0);
	}
	int status;
	waitpid(pid, &status, 0);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "runner"))
		return runner();
	if (!strcmp(mode, "threads"))
		return threads();
	fprintf(stderr, "usage: exit_paths runner|threads\n");
	return 2;
}
