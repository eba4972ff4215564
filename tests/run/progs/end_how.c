/* tests/run/progs/end_how.c MODE [PROGRAM]: leaks 56 bytes from
 * leak_before_end(), then ends the way MODE says. Every ending must still
 * report that leak, marked with how the process ended. */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

void *leak_before_end(void);
__attribute__((noinline)) void *leak_before_end(void)
{
	return malloc(56); /* LEAK-BEFORE-END */
}

static int null_deref(void)
{
	int *volatile p = NULL;

	return *p;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "return";
	struct rlimit no_core = { 0, 0 };
	void *volatile keep = leak_before_end();

	keep = NULL;
	setrlimit(RLIMIT_CORE, &no_core); /* crashing modes: no core file */
	if (!strcmp(mode, "return-7"))
		return 7;
	if (!strcmp(mode, "exit"))
		exit(3);
	if (!strcmp(mode, "_exit"))
		_exit(4);
	if (!strcmp(mode, "abort"))
		abort();
	if (!strcmp(mode, "raise-segv"))
		raise(SIGSEGV);
	if (!strcmp(mode, "null-deref"))
		return null_deref();
	if (!strcmp(mode, "sigkill"))
		kill(getpid(), SIGKILL);
	if (!strcmp(mode, "execv") && argc > 2) {
		execv(argv[2], argv + 2);
		return 126;
	}
	if (!strcmp(mode, "execl") && argc > 2) {
		execl(argv[2], argv[2], (char *)NULL);
		return 126;
	}
	return 0;
}
