/* tests/run/progs/fork_memo.c N K LIB: the parent leaks one block from each
 * of N different stacks, then forks K children one after the other. Child
 * c frees the parent's block c % N (inherited), leaks 100 + c bytes from a
 * stack of its own (one of 4, by c % 4), and every third child dlopen()s
 * LIB first, so its modules differ from its parent's; then it exits without
 * exec, reporting what it still holds of the parent's heap. The report of
 * such a run symbolizes each distinct stack once (reporter/stack_memo.h):
 * check_fork_memo.py checks each child's loss records for its own frees and
 * leaks, and that the live report is what the database gives back. */
#include <dlfcn.h>
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

__attribute__((noinline)) static void *child_own(int c)
{
	void *volatile p = malloc(100 + (size_t)c); /* MEMO-CHILD-LEAK */
	return p;
}

__attribute__((noinline)) static void *child_leak(int c, int depth)
{
	void *volatile p = depth ? child_leak(c, depth - 1) : child_own(c);
	return p;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 32, k = argc > 2 ? atoi(argv[2]) : 12;
	const char *lib = argc > 3 ? argv[3] : NULL;
	void **kept = calloc((size_t)n, sizeof(*kept));

	if (!kept)
		return 1;
	for (int i = 0; i < n; i++)
		kept[i] = sites[i % 8](i / 8); /* MEMO-PARENT-LEAK */
	for (int c = 0; c < k; c++) {
		pid_t pid = fork();
		int status = 0;

		if (pid == 0) {
			if (lib && c % 3 == 0 && !dlopen(lib, RTLD_NOW))
				_exit(3);
			free(kept[c % n]);
			kept[c % n] = NULL;
			child_leak(c, c % 4);
			exit(0);
		}
		if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
			return 1;
	}
	return 0;
}
