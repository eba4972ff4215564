/* tests/run/progs/fork_free.c: allocations, fork, and the child frees every
 * block it inherited (then the parent frees its own): both processes must
 * end with nothing in use and no stream warnings. The child's first events
 * used to look older than the inherited blocks. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	void *blocks[100];

	for (int i = 0; i < 100; i++)
		blocks[i] = malloc(32 + (size_t)i);
	pid_t child = fork();
	if (child == 0) {
		for (int i = 0; i < 100; i++)
			free(blocks[i]);
		_exit(0);
	}
	waitpid(child, NULL, 0);
	for (int i = 0; i < 100; i++)
		free(blocks[i]);
	return 0;
}
