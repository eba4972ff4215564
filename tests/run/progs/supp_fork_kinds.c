/* tests/run/progs/supp_fork_kinds.c: one block from one stack, seen by three
 * processes in two leak classes: the parent keeps it reachable, the first
 * child forgets it (definitely lost), the second keeps it (reachable). A
 * suppression's verdict for a stack also depends on the class
 * (check_supp_kinds.py). */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

void *volatile kept;

__attribute__((noinline)) static void *shared_site(void)
{
	return malloc(48); /* SUPP-FORK-KINDS */
}

int main(void)
{
	kept = shared_site();
	for (int c = 0; c < 2; c++) {
		pid_t pid = fork();
		int status = 0;

		if (pid == 0) {
			if (c == 0)
				kept = NULL;
			exit(0);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
			return 1;
	}
	return 0;
}
