/* tests/run/progs/spawn_system.c: a program that starts itself twice, once
 * with posix_spawn (glibc's clone+exec, which runs no fork handlers) and once
 * through system() (sh -c, which forks and execs it again). Each child leaks
 * 77 bytes; every one of the four processes must be reported. */
#include <limits.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

void *spawned_leak(void);
__attribute__((noinline)) void *spawned_leak(void)
{
	return malloc(77); /* LEAK-SPAWNED */
}

int main(int argc, char **argv)
{
	if (argc > 1) {
		void *volatile p = spawned_leak();
		(void)p;
		return 0;
	}
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return 1;
	self[n] = '\0';
	char *child_argv[] = { self, "child", NULL };
	pid_t pid;
	int status;
	if (posix_spawn(&pid, self, NULL, NULL, child_argv, environ) != 0 ||
	    waitpid(pid, &status, 0) != pid || status != 0)
		return 1;
	char command[PATH_MAX + 16];
	snprintf(command, sizeof(command), "'%s' child", self);
	return system(command) == 0 ? 0 : 1;
}
