/* tests/run/progs/fork_shared.c N K: the parent leaks one block from each
 * of N different stacks (8 call sites, each at recursion depths 0..N/8-1),
 * then forks K children one after the other; each child leaks one block of
 * its own and exits without exec, so it reports the parent's N records as
 * well. The store keeps those stacks once for the run and the children's
 * records once for all of them (check_store_sharing.py). */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define SITE(k) \
	__attribute__((noinline)) static void *site##k(int depth) \
	{ \
		void *volatile p = depth ? site##k(depth - 1) : malloc(16 + (k)); \
		return p; \
	}
SITE(0) SITE(1) SITE(2) SITE(3) SITE(4) SITE(5) SITE(6) SITE(7)
static void *(*const sites[8])(int) = { site0, site1, site2, site3, site4, site5, site6, site7 };

__attribute__((noinline)) static void *child_leak(void)
{
	void *volatile p = malloc(40); /* SHARED-CHILD-LEAK */
	return p;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 64, k = argc > 2 ? atoi(argv[2]) : 8;
	void *volatile keep;

	for (int i = 0; i < n; i++)
		keep = sites[i % 8](i / 8); /* SHARED-PARENT-LEAK */
	(void)keep;
	for (int c = 0; c < k; c++) {
		pid_t pid = fork();
		int status = 0;

		if (pid == 0) {
			child_leak();
			exit(0);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
			return 1;
	}
	return 0;
}
