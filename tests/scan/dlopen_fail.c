/*
 * tests/scan/dlopen_fail.c: a program whose dlopen fails, then exits, as
 * bash does on `enable -f` of a missing builtin. glibc keeps the error
 * message (malloc'd) until the next dl* call or dlerror(); the hook's own
 * lookups at exit used to free it inside the hook, unsent, so the reporter
 * kept it live while the hook had nothing to scan ("not scanned").
 *   dlopen_fail          the error is left pending at exit
 *   dlopen_fail dlerror  the program reads it first (dlerror frees it later)
 *   dlopen_fail fork     a fork child exits with the error pending
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static char *kept; /* still reachable */

int main(int argc, char **argv)
{
	kept = malloc(100);
	char *lost = malloc(40); /* definitely lost */
	if (kept == NULL || lost == NULL)
		return 5;
	lost[0] = 1;
	lost = NULL;
	void *h = dlopen("/nonexistent/libheapledger-test.so", RTLD_NOW);
	if (h != NULL)
		return 2;
	if (argc > 1 && !strcmp(argv[1], "dlerror") && dlerror() == NULL)
		return 3;
	if (argc > 1 && !strcmp(argv[1], "fork")) {
		pid_t pid = fork();
		if (pid == 0)
			exit(0);
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
			return 4;
	}
	return 0;
}
