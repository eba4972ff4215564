/* tests/ui/progs/ui_leaker.c: the program the web UI tests look at. It
 * grows its heap in steps (a timeline to chart), forks a child that leaks
 * (a process tree), and leaks at leak_alpha; given "b" it also leaks at
 * leak_beta, so a diff of an "a" run and a "b" run has one new site; given
 * "c", its child leaks more than it does (at child_big_leak). */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

void *leak_alpha(size_t n);
void *leak_beta(size_t n);
void *child_leak(void);
void *child_big_leak(void);

__attribute__((noinline)) void *leak_alpha(size_t n)
{
	return malloc(n); /* LEAK-ALPHA */
}

__attribute__((noinline)) void *leak_beta(size_t n)
{
	return malloc(n); /* LEAK-BETA */
}

__attribute__((noinline)) void *child_leak(void)
{
	return malloc(48); /* LEAK-CHILD */
}

__attribute__((noinline)) void *child_big_leak(void)
{
	return malloc(5000); /* LEAK-CHILD-BIG */
}

int main(int argc, char **argv)
{
	/* 1,600 events: the reporter samples the heap every 256, so the
	 * timeline has several points, rising then falling. */
	static void *volatile keep[800];
	pid_t pid;

	for (int i = 0; i < 800; i++) {
		keep[i] = malloc(1024);
		memset(keep[i], i, 1024);
	}
	for (int i = 0; i < 800; i++)
		free(keep[i]);
	keep[0] = leak_alpha(300);
	if (argc > 1 && !strcmp(argv[1], "b"))
		keep[1] = leak_beta(700);
	pid = fork();
	if (pid == 0) {
		keep[2] = child_leak();
		if (argc > 1 && !strcmp(argv[1], "c"))
			keep[3] = child_big_leak();
		/* exit, not _exit: after _exit the events of the last
		 * moments may be missing (doc/manual.md, "A process that ends
		 * without running its exit code"), and this test needs them. */
		exit(0);
	}
	waitpid(pid, NULL, 0);
	return 0;
}
