/* tests/run/progs/fork_snapshot.c MODE: the parent holds BLOCKS blocks and
 * forks once; the child's first call after fork is MODE's. The child's
 * snapshot of the heap it inherited goes out just before its first record
 * other than EXEC (wire.h, HL_HOOK_FORK_SNAPSHOT), so every mode must leave
 * both streams exact:
 *   exec      the child execs /bin/true at once: no snapshot is sent
 *   execfail  an exec that fails, then a free of an inherited block
 *   free      a free of an inherited block first
 *   malloc    an allocation first (left out of the snapshot: its ALLOC follows)
 *   realloc   an inherited block grown (it moves) and one shrunk (in place)
 *   exit      nothing but _exit
 *   vfork     a vfork child that execs /bin/true (it runs in the child's
 *             memory and cannot send: vfork() sends the snapshot first),
 *             then a free of an inherited block
 *   spawn     the same through posix_spawn
 *   kill      SIGKILL before anything: the report says the blocks it held
 *             were not sent (dropped events)
 * The parent frees everything and exits 0 whatever the child did. */
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define BLOCKS 300

extern char **environ;

static void *blocks[BLOCKS];

void *child_alloc(void);
__attribute__((noinline)) void *child_alloc(void)
{
	return malloc(72);
}

static void child(const char *mode)
{
	if (!strcmp(mode, "exec")) {
		execl("/bin/true", "true", (char *)NULL);
	} else if (!strcmp(mode, "execfail")) {
		execl("/nonexistent/heapledger-test", "x", (char *)NULL);
		free(blocks[0]);
	} else if (!strcmp(mode, "free")) {
		free(blocks[0]);
	} else if (!strcmp(mode, "malloc")) {
		if (child_alloc() == NULL)
			_exit(3);
	} else if (!strcmp(mode, "realloc")) {
		void *grown = realloc(blocks[0], 64 * 1024);
		void *shrunk = realloc(blocks[1], 8);
		if (grown == NULL || shrunk == NULL)
			_exit(3);
	} else if (!strcmp(mode, "kill")) {
		raise(SIGKILL);
	} else if (!strcmp(mode, "vfork") || !strcmp(mode, "spawn")) {
		char *args[] = { "true", NULL };
		pid_t pid = -1;
		if (!strcmp(mode, "spawn")) {
			if (posix_spawn(&pid, "/bin/true", NULL, NULL, args, environ) != 0)
				_exit(3);
		} else if ((pid = vfork()) == 0) {
			execv("/bin/true", args);
			_exit(127);
		}
		if (pid < 0 || waitpid(pid, NULL, 0) != pid)
			_exit(3);
		free(blocks[0]);
	}
	_exit(0);
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	for (int i = 0; i < BLOCKS; i++)
		blocks[i] = malloc(40 + (size_t)i % 64);
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0)
		child(argv[1]);
	waitpid(pid, NULL, 0);
	for (int i = 0; i < BLOCKS; i++)
		free(blocks[i]);
	return 0;
}
