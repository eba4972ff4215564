/* tests/run/progs/leak_direct.c: one 64-byte block leaked from a named
 * function; prints to stdout so the test sees stdout is untouched. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *leak_direct(void);
__attribute__((noinline)) void *leak_direct(void)
{
	void *p = malloc(64); /* LEAK-DIRECT */

	memset(p, 1, 64);
	return p;
}

int main(void)
{
	void *volatile keep = leak_direct();

	keep = NULL;
	free(malloc(10)); /* not a leak */
	printf("hello from leak_direct\n");
	return 0;
}
