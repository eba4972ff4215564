/* tests/run/progs/idle_kill.c [fork]: a thread leaks 200 blocks of 24 bytes
 * and goes idle; then the process is killed with SIGKILL. The thread's
 * events were committed to its buffer, not sent (nothing sends a buffer of
 * a thread that does not run), so only the shared event buffers bring them
 * to the report: all 200 blocks must be there, not 1.
 *
 * fork: a forked child leaks the 200 blocks and is killed; the parent then
 * leaks one block of its own and exits. The child writes into buffers of
 * its own, never the parent's: the parent reports its one block, the
 * child its 200. */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BLOCKS 200

static int ready[2];

void *idle_leak(void);
__attribute__((noinline)) void *idle_leak(void)
{
	return malloc(24); /* LEAK-IDLE-THREAD */
}

static void *worker(void *arg)
{
	char c = 1;

	for (int i = 0; i < BLOCKS; i++) {
		void *volatile p = idle_leak();
		p = NULL;
	}
	if (write(ready[1], &c, 1) != 1)
		abort();
	for (;;)
		pause(); /* idle until the kill */
	return arg;
}

void *parent_leak(void);
__attribute__((noinline)) void *parent_leak(void)
{
	return malloc(40); /* LEAK-PARENT-AFTER-FORK */
}

static int fork_mode(void)
{
	int status;
	pid_t child = fork();

	if (child == 0) {
		for (int i = 0; i < BLOCKS; i++) {
			void *volatile p = idle_leak();
			p = NULL;
		}
		kill(getpid(), SIGKILL);
		_exit(2);
	}
	if (child < 0 || waitpid(child, &status, 0) != child || !WIFSIGNALED(status))
		return 1;
	void *volatile p = parent_leak();
	p = NULL;
	return 0;
}

int main(int argc, char **argv)
{
	pthread_t t;
	char c;

	if (argc > 1 && !strcmp(argv[1], "fork"))
		return fork_mode();
	if (pipe(ready) != 0 || pthread_create(&t, NULL, worker, NULL) != 0)
		return 1;
	if (read(ready[0], &c, 1) != 1)
		return 1;
	kill(getpid(), SIGKILL);
	return 2;
}
