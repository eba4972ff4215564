/* tests/run/progs/leak_fork.c: a forked child leaks 32 bytes and exits; the
 * parent frees what it allocated and waits. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

void *child_leak(void);
__attribute__((noinline)) void *child_leak(void)
{
	return malloc(32); /* LEAK-FORK-CHILD */
}

int main(void)
{
	void *mine = malloc(100);
	pid_t pid = fork();
	int status = 0;

	if (pid == 0) {
		void *volatile p = child_leak();

		p = NULL;
		free(mine);
		exit(0);
	}
	waitpid(pid, &status, 0);
	free(mine);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
