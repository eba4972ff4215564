/* tests/run/progs/fork_exec.c: a parent holding a block forks twice. The
 * first child leaks a block of its own and exits, keeping the inherited one:
 * its report lists both, the inherited one with the parent's allocation
 * stack. The second child execs the program given as argv[1]: that image
 * reports nothing of the heap it inherited. The parent frees its block. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

void *parent_alloc(void);
__attribute__((noinline)) void *parent_alloc(void)
{
	return malloc(40); /* INHERITED-BLOCK */
}

void *child_leak(void);
__attribute__((noinline)) void *child_leak(void)
{
	return malloc(24); /* FORK-CHILD-LEAK */
}

static int wait_for(pid_t pid)
{
	int status = 0;

	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

int main(int argc, char **argv)
{
	void *mine = parent_alloc();
	pid_t pid;

	if (argc < 2)
		return 2;
	pid = fork();
	if (pid == 0) {
		void *volatile p = child_leak();

		p = NULL;
		exit(0); /* the inherited block is never freed here */
	}
	if (wait_for(pid))
		return 1;
	pid = fork();
	if (pid == 0) {
		execv(argv[1], argv + 1);
		_exit(127);
	}
	if (wait_for(pid))
		return 1;
	free(mine);
	return 0;
}
