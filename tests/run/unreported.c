/* tests/run/unreported.c raise|pause: linked statically, so no hook loads
 * into it and it never reports. raise: kills itself with SIGINT (as Ctrl-C
 * would). pause: prints "ready" and waits for a signal (to interrupt the
 * `heapledger run` around it). */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "raise"))
		raise(SIGINT);
	puts("ready");
	fflush(stdout);
	pause();
	return 0;
}
