/* tests/run/exec_unset.c PROG [ARGS...]: allocates, unsets LD_PRELOAD and
 * execs PROG, so the new image runs without the hook (it never reports). */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	char *volatile held = malloc(64);

	if (argc < 2 || !held)
		return 2;
	unsetenv("LD_PRELOAD");
	execv(argv[1], argv + 1);
	perror(argv[1]);
	return 1;
}
